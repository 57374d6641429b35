// Muted users (Zulip's zerver/lib/muted_users.py): whom a user muted, and who muted a sender.
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

/** Users among `recipients` who muted `senderId`: their copies arrive already read. */
export async function mutersAmong(
  senderId: number,
  recipients: number[],
  db: Tx = getPrisma(),
): Promise<Set<number>> {
  if (recipients.length === 0) return new Set();
  const rows = await db.$queryRaw<{ user_profile_id: number }[]>`
    SELECT user_profile_id FROM muted_user
    WHERE muted_user_id = ${senderId} AND user_profile_id = ANY(${recipients}::int[])`;
  return new Set(rows.map((row) => row.user_profile_id));
}
