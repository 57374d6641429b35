// Message rows → the message object of spec 2.3 (Zulip's MessageDict), as one viewer (or a
// group of viewers with the same flags and email visibility) sees it. Pure: callers load the
// sender, the recipient's display form and the flags first.
import type { Message, Realm } from '@parley/db';
import type { MessageUser } from '../lib/messages';
import type { TopicLink } from '@parley/markdown';
import { dummyEmail } from '../lib/users';
import { avatarUrl, INACCESSIBLE_USER_AVATAR_URL, INACCESSIBLE_USER_NAME } from './users';

export const EMPTY_TOPIC_DISPLAY_NAME = 'general chat';

export interface DisplayRecipientUser {
  id: number;
  email: string;
  full_name: string;
  is_mirror_dummy: boolean;
}

/** A channel's name, or the users of a direct message (sender included), sorted by id. */
export type DisplayRecipient = string | DisplayRecipientUser[];

/** One entry of Message.editHistory (spec 2.4), newest first as stored. */
export interface EditHistoryEntry {
  user_id: number | null;
  timestamp: number;
  prev_content?: string;
  prev_rendered_content?: string;
  prev_stream?: number;
  stream?: number;
  prev_topic?: string;
  topic?: string;
}

export interface MessageView {
  sender: MessageUser;
  /** Whether the viewers may see the sender's real address. */
  senderEmailVisible: boolean;
  /** Whether the viewers may access the sender at all (can_access_all_users_group): if not,
   * the sender shows as Zulip's "Unknown user" (MessageDict.finalize_payload with
   * can_access_sender false): name, dummy address and placeholder avatar. */
  senderAccessible: boolean;
  displayRecipient: DisplayRecipient;
  /** Channel id for channel messages. */
  streamId: number | null;
  /** recipient_id as this viewer sees it (see lib/messages displayRecipients). */
  recipientId: number;
  flags: string[];
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allowEmptyTopicName: boolean;
  /** Realm message_edit_history_visibility_policy: 1 everything, 2 moves only, 3 nothing. */
  editHistoryPolicy: number;
  /** Reactions, oldest first (spec 2.9); none for a new message. */
  reactions?: PresentedReaction[];
  /** Submessages, oldest first (a widget's description, then what its users added). */
  submessages?: PresentedSubmessage[];
  /** Links the organization's linkifiers and plain URLs make of the topic. */
  topicLinks: TopicLink[];
}

export interface PresentedReaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  user_id: number;
}

export interface PresentedSubmessage {
  msg_type: string;
  content: string;
  message_id: number;
  sender_id: number;
  id: number;
}

/** A submessage row as messages and events show it. */
export interface SubmessageRow {
  id: number;
  messageId: number;
  senderId: number;
  msgType: string;
  content: string;
}

export function presentSubmessage(row: SubmessageRow): PresentedSubmessage {
  return {
    msg_type: row.msgType,
    content: row.content,
    message_id: row.messageId,
    sender_id: row.senderId,
    id: row.id,
  };
}

/** Zulip's submessage event (POST /submessage). */
export function submessageEvent(
  row: SubmessageRow,
): { type: 'submessage' } & Record<string, unknown> {
  return {
    type: 'submessage' as const,
    msg_type: row.msgType,
    message_id: row.messageId,
    submessage_id: row.id,
    sender_id: row.senderId,
    content: row.content,
  };
}

export function topicName(subject: string, allowEmpty: boolean): string {
  return subject === '' && !allowEmpty ? EMPTY_TOPIC_DISPLAY_NAME : subject;
}

export function presentMessage(
  message: Message,
  realm: Pick<Realm, 'id' | 'stringId'>,
  view: MessageView,
): Record<string, unknown> {
  const { sender } = view;
  const isChannel = message.isChannelMessage;
  const subject = isChannel ? topicName(message.subject, view.allowEmptyTopicName) : '';
  const result: Record<string, unknown> = {
    id: message.id,
    sender_id: sender.id,
    content: view.applyMarkdown ? (message.renderedContent ?? '') : message.content,
    recipient_id: view.recipientId,
    timestamp: Math.floor(message.dateSent.getTime() / 1000),
    client: message.sendingClient,
    subject,
    topic_links: isChannel ? view.topicLinks : [],
    is_me_message: isMeMessage(message.content),
    reactions: view.reactions ?? [],
    submessages: view.submessages ?? [],
    flags: view.flags,
    sender_full_name: view.senderAccessible ? sender.fullName : INACCESSIBLE_USER_NAME,
    sender_email:
      view.senderEmailVisible && view.senderAccessible
        ? sender.deliveryEmail
        : dummyEmail(sender, realm),
    sender_realm_str: realm.stringId,
    display_recipient: view.displayRecipient,
    type: isChannel ? 'stream' : 'private',
    ...(isChannel ? { stream_id: view.streamId } : {}),
    avatar_url: !view.senderAccessible
      ? INACCESSIBLE_USER_AVATAR_URL
      : view.clientGravatar && view.senderEmailVisible && sender.avatarSource === 'G'
        ? null
        : avatarUrl(sender, view.senderEmailVisible, realm),
    content_type: view.applyMarkdown ? 'text/html' : 'text/x-markdown',
  };
  // Only content edits count as edits (moves and resolving have last_moved_timestamp).
  const contentEdits = ((message.editHistory as EditHistoryEntry[] | null) ?? []).filter(
    (entry) => entry.prev_content !== undefined,
  );
  if (contentEdits.length > 0)
    result.last_edit_timestamp = Math.max(...contentEdits.map((entry) => entry.timestamp));
  if (message.lastMovedTime)
    result.last_moved_timestamp = Math.floor(message.lastMovedTime.getTime() / 1000);
  const history = visibleEditHistory(message, view.editHistoryPolicy, view.allowEmptyTopicName);
  if (history) result.edit_history = history;
  return result;
}

/** Zulip's Message.is_status_message: "/me " and the rest of the line. */
export function isMeMessage(content: string): boolean {
  return content.startsWith('/me ');
}

/** The edit history a message object carries: all of it, only moves, or none (spec 2.3: absent
 * if never edited or moved, or if history viewing is disallowed). Moves only of a message
 * that was only edited is `[]`, as Zulip's messages_for_ids gives it. */
export function visibleEditHistory(
  message: Pick<Message, 'editHistory'>,
  policy: number,
  allowEmptyTopicName: boolean,
): EditHistoryEntry[] | null {
  const entries = (message.editHistory as EditHistoryEntry[] | null) ?? [];
  if (entries.length === 0 || policy >= 3) return null;
  const shown = entries
    .map((entry) => (policy === 2 ? withoutContent(entry) : entry))
    .filter((entry) => Object.keys(entry).length > 2)
    .map((entry) => withTopicNames(entry, allowEmptyTopicName));
  return shown;
}

function withoutContent(entry: EditHistoryEntry): EditHistoryEntry {
  const { prev_content: _content, prev_rendered_content: _rendered, ...rest } = entry;
  return rest;
}

function withTopicNames(entry: EditHistoryEntry, allowEmpty: boolean): EditHistoryEntry {
  const result = { ...entry };
  if (result.topic !== undefined) result.topic = topicName(result.topic, allowEmpty);
  if (result.prev_topic !== undefined) result.prev_topic = topicName(result.prev_topic, allowEmpty);
  return result;
}
