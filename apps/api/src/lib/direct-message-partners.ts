// Who exchanged 1:1 direct messages with whom, as SQL for the statements of the user-access
// rule (lib/user-access.ts and lib/users.ts): a guest limited by can_access_all_users_group
// may still see the people they wrote to or heard from directly. A module of its own because
// both of those modules build statements from it when they load.
import { RecipientType } from '@parley/db';

/** SQL: whether users `a` and `b` exchanged a 1:1 direct message, either way (Zulip's
 * get_users_involved_in_dms_with_target_users). Each way is one lookup in the partial index
 * of direct messages by sender and recipient (migration 20261213000000). */
export function exchangedDirectMessagesSql(a: string, b: string): string {
  const sentTo = (from: string, to: string) => `EXISTS (SELECT 1 FROM message dm
      WHERE NOT dm.is_channel_message AND dm.sender_id = ${from}
        AND dm.recipient_id = (SELECT pr.id FROM recipient pr
          WHERE pr.type = ${RecipientType.PERSONAL} AND pr.type_id = ${to}))`;
  return `(${sentTo(a, b)} OR ${sentTo(b, a)})`;
}

/** SQL: the users `user` exchanged a 1:1 direct message with, either way: the direct messages
 * they sent (that index again), and those to their personal recipient. */
export function directMessagePartnersSql(user: string): string {
  return `SELECT pr.type_id FROM message dm
      JOIN recipient pr ON pr.id = dm.recipient_id AND pr.type = ${RecipientType.PERSONAL}
      WHERE NOT dm.is_channel_message AND dm.sender_id = ${user}
    UNION
    SELECT dm.sender_id FROM message dm
      WHERE dm.recipient_id = (SELECT pr.id FROM recipient pr
        WHERE pr.type = ${RecipientType.PERSONAL} AND pr.type_id = ${user})`;
}
