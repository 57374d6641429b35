// Submessages (Zulip's check/do_add_submessage): data added to a message by those who can read
// it, which clients fold into the message's widget (a poll's votes, a todo list's tasks).
import { query, statement, type ActionContext, type Message, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { messageAudience, type AccessedMessage } from '../lib/messages';
import type { PresentedSubmessage } from '../presenters/messages';
import { doAutoFollowOnParticipation } from './user-topics';
import { checkSubmessageContent, widgetTypeOf, type WidgetContent } from '../lib/widgets';

/** Zulip stores a submessage's content without a bound; a widget's events are short (a vote, a
 * task), so this one only keeps a request from storing megabytes in every message fetch. */
export const MAX_SUBMESSAGE_LENGTH = 10_000;

const insertSubmessage = statement<{ id: number }, [number, number, string, string]>(`
  INSERT INTO submessage (message_id, sender_id, msg_type, content) VALUES ($1, $2, $3, $4)
  RETURNING id`);

/** Whether the message's sender has attached a submessage, and the content of its first
 * widget submessage (which names the widget's type). */
const submessageState = statement<
  { senderStarted: boolean; widget: string | null },
  [number, number]
>(`
  SELECT EXISTS (SELECT 1 FROM submessage WHERE message_id = $1 AND sender_id = $2)
      AS "senderStarted",
    (SELECT content FROM submessage WHERE message_id = $1 AND msg_type = 'widget'
      ORDER BY id LIMIT 1) AS widget`);

/** The widget submessage a /poll or /todo message gets as it is sent, in the send's
 * transaction (Zulip's do_widget_post_save_actions): its message event carries it. */
export async function addWidgetSubmessage(
  message: Pick<Message, 'id' | 'senderId'>,
  widget: WidgetContent,
): Promise<PresentedSubmessage> {
  const content = JSON.stringify(widget);
  const [row] = await query(insertSubmessage, [message.id, message.senderId, 'widget', content]);
  return {
    msg_type: 'widget',
    content,
    message_id: message.id,
    sender_id: message.senderId,
    id: row!.id,
  };
}

/** POST /submessage: `accessed` was read with its row locked, so submessages to one message
 * are added one after another. The message's sender must attach the first one (so nobody turns
 * a plain message into a widget); then anyone who can read it may add more, checked against
 * the widget's shape. Everyone who can see the message is told. */
export async function doAddSubmessage(
  ctx: ActionContext,
  user: User,
  accessed: AccessedMessage,
  msgType: string,
  content: string,
): Promise<void> {
  const { message, stream } = accessed;
  // Zulip's access_message(is_modifying_message=True): an archived channel's messages stay
  // as they are.
  if (stream?.deactivated) throw new JsonableError('Invalid message(s)');
  const [state] = await query(submessageState, [message.id, message.senderId]);
  if (message.senderId !== user.id && !state!.senderStarted)
    throw new JsonableError('You cannot attach a submessage to this message.');
  checkSubmessageContent(content, widgetTypeOf(state!.widget), message.senderId === user.id);
  const [row] = await query(insertSubmessage, [message.id, user.id, msgType, content]);
  // Voting or adding a task is participating in the topic.
  await doAutoFollowOnParticipation(ctx, user, message, stream);
  sendEventOnCommit(
    ctx,
    {
      type: 'submessage',
      msg_type: msgType,
      message_id: message.id,
      submessage_id: row!.id,
      sender_id: user.id,
      content,
    },
    await messageAudience(ctx.tx, message, stream),
  );
}

const widgetSubmessageExists = statement<{ exists: boolean }, [number]>(
  `SELECT EXISTS (SELECT 1 FROM submessage WHERE message_id = $1) AS exists`,
);

/** Zulip's is_widget_message: every message with submessages is a widget, whose content
 * cannot change ("Widgets cannot be edited."). */
export async function isWidgetMessage(messageId: number): Promise<boolean> {
  const [row] = await query(widgetSubmessageExists, [messageId]);
  return row!.exists;
}
