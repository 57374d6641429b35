// Muted users (Zulip's zerver/lib/muted_users.py): whom a user muted. Who muted a sender is
// read with the rest of a send's recipients (actions/messages.ts).
import { query, statement } from '@parley/db';

const mutedUserRowsOf = statement<{ muted_user_id: number; date_muted: Date }, [number]>(
  `SELECT muted_user_id, date_muted FROM muted_user WHERE user_profile_id = $1 ORDER BY id`,
);

/** The users `userId` muted, in the caller's transaction if any. */
export async function mutedUsersOf(userId: number): Promise<{ id: number; timestamp: number }[]> {
  const rows = await query(mutedUserRowsOf, [userId]);
  return rows.map((row) => ({
    id: row.muted_user_id,
    timestamp: Math.floor(row.date_muted.getTime() / 1000),
  }));
}
