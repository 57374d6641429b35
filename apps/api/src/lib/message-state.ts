// The per-user message sections of POST /register read from user_message flags:
// starred_messages and recent_private_conversations (Zulip's get_starred_message_ids and
// get_recent_private_conversations), and how raced message events fold into them.
import { flagBit, query, RecipientType, statement } from '@parley/db';

// Literal bits, not parameters: the partial index on starred rows only serves a query whose
// predicate matches its own text.
const STARRED = flagBit('starred');
const IS_PRIVATE = flagBit('is_private');

/** Zulip reads the user's last 1000 direct messages (RECENT_CONVERSATIONS_LIMIT) and groups
 * them by conversation. */
const RECENT_MESSAGES_LIMIT = 1000;

/** Zulip's get_starred_message_ids sends at most the first 10,000. */
const MAX_STARRED_MESSAGES = 10_000;

const starredOf = statement<{ message_id: number }, [number]>(`
  SELECT message_id FROM user_message
  WHERE user_profile_id = $1 AND (flags & ${STARRED}) <> 0
  ORDER BY message_id LIMIT ${MAX_STARRED_MESSAGES}`);

export async function starredMessageIds(userId: number): Promise<number[]> {
  return (await query(starredOf, [userId])).map((row) => row.message_id);
}

export interface RecentConversation {
  max_message_id: number;
  /** The other participants, sorted; [] for messages to oneself. */
  user_ids: number[];
}

/** The user's direct-message conversations among their last 1000 direct messages, newest
 * first. A 1:1 message is stored against the recipient's personal recipient, so the other
 * participant is the recipient for messages sent and the sender for messages received; a
 * group's participants are the subscribers of its recipient. */
const recentConversationsOf = statement<RecentConversation, [number]>(`
  WITH dms AS (
    SELECT message_id FROM user_message
    WHERE user_profile_id = $1 AND (flags & ${IS_PRIVATE}) <> 0
    ORDER BY message_id DESC LIMIT ${RECENT_MESSAGES_LIMIT}
  ), conversations AS (
    SELECT CASE WHEN r.type = ${RecipientType.PERSONAL} THEN NULL ELSE r.id END AS group_recipient,
           CASE WHEN r.type <> ${RecipientType.PERSONAL} THEN NULL
                WHEN r.type_id = $1 THEN m.sender_id
                ELSE r.type_id END AS other_user,
           max(m.id) AS max_message_id
    FROM dms JOIN message m ON m.id = dms.message_id JOIN recipient r ON r.id = m.recipient_id
    GROUP BY 1, 2
  )
  SELECT c.max_message_id,
         CASE WHEN c.group_recipient IS NOT NULL THEN ARRAY(
                SELECT s.user_profile_id FROM subscription s
                WHERE s.recipient_id = c.group_recipient AND s.user_profile_id <> $1
                ORDER BY 1)
              WHEN c.other_user = $1 THEN '{}'::int[]
              ELSE ARRAY[c.other_user] END AS user_ids
  FROM conversations c
  ORDER BY c.max_message_id DESC`);

export function recentPrivateConversations(userId: number): Promise<RecentConversation[]> {
  return query(recentConversationsOf, [userId]);
}

/** A direct message that raced the registration (Zulip's apply_event for "message"). */
export function applyRecentConversationMessage(
  conversations: RecentConversation[],
  message: { id: number; display_recipient: { id: number }[] },
  userId: number,
): void {
  const others = message.display_recipient
    .map((person) => person.id)
    .filter((id) => id !== userId)
    .sort((a, b) => a - b);
  const key = others.join(',');
  const existing = conversations.find((c) => c.user_ids.join(',') === key);
  if (existing) existing.max_message_id = Math.max(existing.max_message_id, message.id);
  else conversations.push({ max_message_id: message.id, user_ids: others });
  conversations.sort((a, b) => b.max_message_id - a.max_message_id);
}
