// Typing notifications (POST /typing, Zulip's check_send_typing_notification and
// do_send_stream_typing_notification). Nothing is stored: the events are published at once to
// the people who would see the message, and only to those who want typing notifications.
import type { Message, Stream, User } from '@parley/db';
import { getPrisma, query, statement } from '@parley/db';
import { JsonableError } from '@parley/errors';
import type { ZulipEvent } from '@parley/events';
import { eventsByForm, sendEventNow } from '../lib/events';
import { accessStreamById, loadPermissions } from '../lib/streams';
import { apiEmailFor, canSeeDeliveryEmail } from '../lib/users';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import { checkCanPost } from './messages';
import type { Realm } from '@parley/db';

export type TypingOp = 'start' | 'stop';

/** Which addresses a viewer sees depends on their role, and on whether they are the one user
 * whose own (hidden) address they see anyway: viewers with the same key get the same event. */
function addressKey(viewer: User): string {
  const peerSeesOwnAddress = canSeeDeliveryEmail({ id: -1, role: viewer.role }, viewer);
  return peerSeesOwnAddress ? `role ${viewer.role}` : `role ${viewer.role} self ${viewer.id}`;
}

/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS: larger channels get no typing events. */
export const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

/** The recipients of a direct-message typing notification: `to` in order, the sender last if
 * missing. Deactivated users and bots are accepted, as in Zulip (they are just not told). */
export async function checkDirectTyping(sender: User, to: number[]): Promise<User[]> {
  if (to.length === 0) throw new JsonableError("Empty 'to' list");
  if (!sender.sendPrivateTypingNotifications)
    throw new JsonableError('User has disabled typing notifications for direct messages');
  const unique = [...new Set(to)];
  const ids = unique.includes(sender.id) ? unique : [...unique, sender.id];
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

/** A channel topic the user may post in, with "general chat" and "(no topic)" read as the
 * empty topic. */
export async function checkChannelTyping(
  user: User,
  streamId: number,
  rawTopic: string,
): Promise<{ stream: Stream; topic: string }> {
  if (!user.sendStreamTypingNotifications)
    throw new JsonableError('User has disabled typing notifications for channel messages');
  const perms = await loadPermissions(user);
  const { stream } = await accessStreamById(perms, streamId, { allowArchived: false });
  await checkCanPost(user, stream);
  const trimmed = rawTopic.trim();
  return {
    stream,
    topic: trimmed === EMPTY_TOPIC_DISPLAY_NAME || trimmed === '(no topic)' ? '' : trimmed,
  };
}

export async function doSendDirectTyping(
  realm: Realm,
  sender: User,
  recipients: User[],
  op: TypingOp,
): Promise<void> {
  const notified = recipients.filter((user) => user.isActive && user.receivesTypingNotifications);
  for (const { event, users } of eventsByForm(notified, addressKey, (viewer) => ({
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

/** The active users with a copy of a direct message who want typing notifications. */
const typingParticipants = statement<{ id: number }, [number]>(`
  SELECT u.id FROM user_message um JOIN user_profile u ON u.id = um.user_profile_id
  WHERE um.message_id = $1 AND u.is_active AND u.receives_typing_notifications
  ORDER BY u.id`);

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
  const userIds = (await query(typingParticipants, [message.id])).map((user) => user.id);
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
  for (const { event, users } of eventsByForm(notified, addressKey, (viewer): ZulipEvent => ({
    type: 'typing',
    op,
    message_type: 'stream',
    sender: { user_id: sender.id, email: apiEmailFor(viewer, sender, realm) },
    stream_id: stream.id,
    topic,
  })))
    await sendEventNow(event, users);
}
