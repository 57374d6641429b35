// Who has read a message (GET /messages/{id}/read_receipts, Zulip's read_receipts view).
import { flagsToBitmask, query, statement, type Message } from '@parley/db';

// Zulip's rules, in one statement: active accounts that share read receipts and have read
// it; never the sender (who read it by writing it), nor anyone who muted the viewer (their
// instant reads would give the muting away) or whom the viewer muted.
const readersOf = statement<{ id: number }, [number, number, number, string]>(
  `SELECT um.user_profile_id AS id FROM user_message um
   JOIN user_profile u ON u.id = um.user_profile_id
   WHERE um.message_id = $1 AND um.user_profile_id <> $2 AND (um.flags & $4::bigint) <> 0
     AND u.is_active AND u.send_read_receipts
     AND NOT EXISTS (SELECT 1 FROM muted_user m
       WHERE (m.user_profile_id = um.user_profile_id AND m.muted_user_id = $3)
          OR (m.user_profile_id = $3 AND m.muted_user_id = um.user_profile_id))
   ORDER BY um.user_profile_id`,
);

const READ = flagsToBitmask(['read']).toString();

/** The ids of those whose read receipts `viewerId` may see for `message`, ascending. */
export async function readReceipts(
  message: Pick<Message, 'id' | 'senderId'>,
  viewerId: number,
): Promise<number[]> {
  const rows = await query(readersOf, [message.id, message.senderId, viewerId, READ]);
  return rows.map((row) => row.id);
}
