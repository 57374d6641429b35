// Typing notifications (POST /typing, Zulip's check_send_typing_notification and
// do_send_stream_typing_notification). Nothing is stored: the events are published at once to
// the people who would see the message, and only to those who want typing notifications.
import type { Message, Stream, User } from '@parley/db';
import { getPrisma } from '@parley/db';
import { JsonableError } from '@parley/errors';
import type { ZulipEvent } from '@parley/events';
import { eventsByForm, sendEventNow } from '../lib/events';
import { apiEmailFor } from '../lib/users';
import type { Realm } from '@parley/db';

export type TypingOp = 'start' | 'stop';

/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS: larger channels get no typing events. */
export const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

/** The recipients of a direct-message typing notification: `to` in order, the sender last if
 * missing. Deactivated users and bots are accepted, as in Zulip (they are just not told). */
export async function checkDirectTyping(sender: User, to: number[]): Promise<User[]> {
  if (to.length === 0) throw new JsonableError("Empty 'to' list");
  if (!sender.sendPrivateTypingNotifications)
    throw new JsonableError('User has disabled typing notifications for direct messages');
  const ids = to.includes(sender.id) ? to : [...to, sender.id];
  const rows = await getPrisma().user.findMany({
    where: { id: { in: ids }, realmId: sender.realmId },
  });
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    const user = byId.get(id);
    if (!user) throw new JsonableError(`Invalid user ID ${id}`);
    return user;
  });
}

export async function doSendDirectTyping(
  realm: Realm,
  sender: User,
  recipients: User[],
  op: TypingOp,
): Promise<void> {
  const notified = recipients.filter((user) => user.isActive && user.receivesTypingNotifications);
  for (const { event, users } of eventsByForm(notified, (viewer) => ({
    type: 'typing',
    op,
    message_type: 'direct',
    sender: { user_id: sender.id, email: apiEmailFor(viewer, sender, realm) },
    recipients: recipients.map((user) => ({
      user_id: user.id,
      email: apiEmailFor(viewer, user, realm),
    })),
  })))
    await sendEventNow(event, users);
}

/** Someone is editing a message (Zulip's do_send_*_message_edit_typing_notification): the
 * people who see the message, among those who want typing notifications. */
export async function doSendEditTyping(
  sender: User,
  message: Message,
  stream: Stream | null,
  op: TypingOp,
): Promise<void> {
  const base = { type: 'typing_edit_message', op, sender_id: sender.id, message_id: message.id };
  if (stream) {
    const notified = await channelAudience(stream);
    if (notified === null) return;
    await sendEventNow(
      {
        ...base,
        recipient: { type: 'channel', channel_id: stream.id, topic: message.subject },
      },
      notified.map((user) => user.id),
    );
    return;
  }
  const participants = await getPrisma().user.findMany({
    where: {
      isActive: true,
      receivesTypingNotifications: true,
      userMessages: { some: { messageId: message.id } },
    },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  const userIds = participants.map((user) => user.id);
  await sendEventNow({ ...base, recipient: { type: 'direct', user_ids: userIds } }, userIds);
}

/** Active subscribers who want typing notifications, or null when the channel is too big for
 * typing notifications to mean anything. */
async function channelAudience(stream: Stream): Promise<User[] | null> {
  const subscribers = await getPrisma().user.findMany({
    where: {
      isActive: true,
      subscriptions: { some: { recipientId: stream.recipientId!, active: true } },
    },
    take: MAX_CHANNEL_SIZE_FOR_TYPING + 1,
  });
  if (subscribers.length > MAX_CHANNEL_SIZE_FOR_TYPING) return null;
  return subscribers.filter((user) => user.receivesTypingNotifications);
}

/** Channel typing goes to the channel's active subscribers (the sender too, if subscribed),
 * and only while the channel is small enough for it to mean something. */
export async function doSendChannelTyping(
  realm: Realm,
  sender: User,
  stream: Stream,
  topic: string,
  op: TypingOp,
): Promise<void> {
  const notified = await channelAudience(stream);
  if (notified === null) return;
  for (const { event, users } of eventsByForm(notified, (viewer): ZulipEvent => ({
    type: 'typing',
    op,
    message_type: 'stream',
    sender: { user_id: sender.id, email: apiEmailFor(viewer, sender, realm) },
    stream_id: stream.id,
    topic,
  })))
    await sendEventNow(event, users);
}
