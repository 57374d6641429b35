// Who is in a group direct-message conversation: its recipient's subscribers (Zulip's
// get_display_recipient for a direct message group). Read by the push and email
// notifications, and by replies to missed-message emails.
import { query, statement } from '@parley/db';

export interface ConversationMember {
  id: number;
  fullName: string;
}

const membersOf = statement<ConversationMember, [number]>(`
  SELECT u.id, u.full_name AS "fullName" FROM subscription s
  JOIN user_profile u ON u.id = s.user_profile_id
  WHERE s.recipient_id = $1 ORDER BY u.id`);

/** The members of the group conversation whose recipient is `recipientId`, by id. */
export function groupConversationMembers(recipientId: number): Promise<ConversationMember[]> {
  return query(membersOf, [recipientId]);
}
