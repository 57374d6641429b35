// Submessages (Zulip's check/do_add_submessage): data added to a message by those who can read
// it, which clients fold into the message's widget (a poll's votes, a todo list's tasks).
import {
  query,
  statement,
  type ActionContext,
  type Message,
  type Stream,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { InvalidMessageError, messageAudience, type AccessedMessage } from '../lib/messages';
import { checkSubmessageContent, widgetStateOf, type WidgetContent } from '../lib/widgets';
import {
  presentSubmessage,
  submessageEvent,
  type PresentedSubmessage,
} from '../presenters/messages';
import { doAutoFollowOnParticipation } from './user-topics';

/** Zulip stores a submessage's content without a bound; a widget's events are short (a vote, a
 * task), so this one only keeps a request from storing megabytes in every message fetch. */
export const MAX_SUBMESSAGE_LENGTH = 10_000;

const insertSubmessage = statement<{ id: number }, [number, number, string, string]>(`
  INSERT INTO submessage (message_id, sender_id, msg_type, content) VALUES ($1, $2, $3, $4)
  RETURNING id`);

/** The widget submessage a /poll or /todo message gets as it is sent, in the send's
 * transaction (Zulip's do_widget_post_save_actions): its message event carries it. */
export async function doAddWidgetSubmessage(
  message: Pick<Message, 'id' | 'senderId'>,
  widget: WidgetContent,
): Promise<PresentedSubmessage> {
  const content = JSON.stringify(widget);
  const [row] = await query(insertSubmessage, [message.id, message.senderId, 'widget', content]);
  return presentSubmessage({
    id: row!.id,
    messageId: message.id,
    senderId: message.senderId,
    msgType: 'widget',
    content,
  });
}

/** POST /submessage's checks, on a message read with its row locked (so submessages to one
 * message are added one after another): not in an archived channel (Zulip's access_message
 * with is_modifying_message); the message's sender attaches the first one, so nobody turns a
 * plain message into a widget, then anyone who can read it may add more; the content fits the
 * widget's shape. */
export async function checkAddSubmessage(
  user: User,
  accessed: AccessedMessage,
  content: string,
): Promise<void> {
  const { message, stream } = accessed;
  if (stream?.deactivated) throw new InvalidMessageError();
  const state = await widgetStateOf(message);
  if (message.senderId !== user.id && !state.senderStarted)
    throw new JsonableError('You cannot attach a submessage to this message.');
  checkSubmessageContent(content, state.widgetType, message.senderId === user.id);
}

/** Adds the submessage and tells everyone who can see the message. */
export async function doAddSubmessage(
  ctx: ActionContext,
  user: User,
  message: Message,
  stream: Stream | null,
  msgType: string,
  content: string,
): Promise<void> {
  const [row] = await query(insertSubmessage, [message.id, user.id, msgType, content]);
  // Voting or adding a task is participating in the topic (before the event, as in Zulip).
  await doAutoFollowOnParticipation(ctx, user, message, stream);
  sendEventOnCommit(
    ctx,
    submessageEvent({ id: row!.id, messageId: message.id, senderId: user.id, msgType, content }),
    await messageAudience(message, stream),
  );
}
