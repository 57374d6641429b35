// Muted users (Zulip's zerver/lib/muted_users.py): whom a user muted. Who muted a sender is
// read with the rest of a send's recipients (actions/messages.ts).
import { getPrisma, type Tx } from '@parley/db';

export async function mutedUsersOf(
  userId: number,
  db: Tx = getPrisma(),
): Promise<{ id: number; timestamp: number }[]> {
  const rows = await db.mutedUser.findMany({ where: { userId }, orderBy: { id: 'asc' } });
  return rows.map((row) => ({
    id: row.mutedUserId,
    timestamp: Math.floor(row.dateMuted.getTime() / 1000),
  }));
}
