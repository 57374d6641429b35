// Sending messages (Zulip's check_message / do_send_messages): resolve the addressee, check
// the sender may post there, write the message and every recipient's row in one transaction,
// and queue the message event, formatted per group of recipients, for after the commit.
import { createHash } from 'node:crypto';
import {
  flagsToBitmask,
  idsByLowerEquals,
  RecipientType,
  type ActionContext,
  type Message,
  type Realm,
  type Stream,
  type Tx,
  type User,
  type UserMessageFlag,
} from '@parley/db';
import {
  JsonableError,
  StreamDoesNotExistError,
  StreamWildcardMentionNotAllowedError,
  StreamWithIDDoesNotExistError,
  TopicWildcardMentionNotAllowedError,
} from '@parley/errors';
import type { Rendered } from '@parley/markdown';
import { allPublicStreamsKey, getRedis } from '@parley/events';
import { linkedPathIds } from '../lib/attachments';
import { usersAlertedBy } from '../lib/alert-words';
import { sendEventOnCommit } from '../lib/events';
import { mutersAmong } from '../lib/muted-users';
import type { VisibilityPolicyValue } from '../lib/user-topics';
import { doAutoFollowOnSend } from './user-topics';
import { activeMemberIds } from '../lib/groups';
import { apiFlags, presentMessagesForEvent } from '../lib/messages';
import { loadPermissions, hasContentAccess, subscriptionOf } from '../lib/streams';
import { accessUserByEmail, apiEmailFor } from '../lib/users';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import { doUpdateAttachmentLinks } from './uploads';

export const MAX_MESSAGE_LENGTH = 10000;
export const MAX_TOPIC_LENGTH = 60;

export type Addressee =
  { kind: 'channel'; stream: Stream; topic: string } | { kind: 'direct'; users: User[] };

/** Zulip's normalize_body: trailing whitespace and leading newlines go, empty is refused, too
 * long is cut. */
export function checkContent(raw: string): string {
  const content = raw.trimEnd().replace(/^\n+/, '');
  if (content.trim() === '') throw new JsonableError('Message must not be empty');
  return truncate(content, MAX_MESSAGE_LENGTH, '\n[message truncated]');
}

/** Zulip's check_topic plus truncation: "(no topic)" and the display name of the empty topic
 * mean the empty topic (feature levels 334, 370). */
export function checkTopic(raw: string): string {
  let topic = raw.trim();
  if (topic === '(no topic)' || topic === EMPTY_TOPIC_DISPLAY_NAME) topic = '';
  const bad = [...topic].findIndex((char) => /[\p{Cc}\p{Cs}]/u.test(char));
  if (bad !== -1) throw new JsonableError(`Invalid character in topic, at position ${bad + 1}!`);
  return truncate(topic, MAX_TOPIC_LENGTH, '...');
}

/** The channel's topics_policy, else the organization's (mandatory_topics is Zulip's older
 * form of disable_empty_topic). */
export function checkTopicPolicy(realm: Realm, stream: Stream, topic: string): void {
  const policy =
    stream.topicsPolicy === 'inherit'
      ? realm.mandatoryTopics
        ? 'disable_empty_topic'
        : 'allow_empty_topic'
      : stream.topicsPolicy;
  if (policy === 'disable_empty_topic' && topic === '')
    throw new JsonableError(
      `Sending messages to the ${EMPTY_TOPIC_DISPLAY_NAME} topic is not allowed in this channel.`,
    );
  if (policy === 'empty_topic_only' && topic !== '')
    throw new JsonableError(
      `Only the ${EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.`,
    );
}

function truncate(text: string, max: number, suffix: string): string {
  if (text.length <= max) return text;
  // Code points never outnumber code units: twice the limit is enough to count them.
  const chars = [...text.slice(0, max * 2)];
  if (chars.length <= max) return text;
  return chars.slice(0, max - suffix.length).join('') + suffix;
}

/** The `to` of a channel message: an id or a name, raw or JSON (a one-element list too). */
export async function checkChannelAddressee(
  tx: Tx,
  sender: User,
  to: string,
  topic: string,
): Promise<Addressee> {
  let target: unknown = to;
  try {
    target = JSON.parse(to) as unknown;
  } catch {
    // A bare channel name.
  }
  if (Array.isArray(target)) {
    if (target.length !== 1) throw new JsonableError('Expected exactly one channel');
    target = target[0];
  }
  let stream: Stream | null;
  if (typeof target === 'number' && Number.isInteger(target)) {
    stream =
      target > 0 && target <= 2 ** 31 - 1
        ? await tx.stream.findFirst({ where: { id: target, realmId: sender.realmId } })
        : null;
    if (!stream) throw new StreamWithIDDoesNotExistError(target);
  } else if (typeof target === 'string') {
    const name = target.trim();
    if (name === '') throw new JsonableError('Missing channel');
    const [id] = await idsByLowerEquals(tx, 'stream', 'name', sender.realmId, [name]);
    stream = id === undefined ? null : await tx.stream.findUnique({ where: { id } });
    if (!stream) throw new StreamDoesNotExistError(name);
  } else {
    throw new JsonableError('Invalid data type for channel');
  }
  await checkCanPost(tx, sender, stream);
  return { kind: 'channel', stream, topic };
}

/** Zulip's access_stream_for_send_message and can_send_message_group. */
export async function checkCanPost(tx: Tx, sender: User, stream: Stream): Promise<void> {
  const perms = await loadPermissions(sender, tx);
  const subscribed = (await subscriptionOf(sender.id, stream, tx)) !== null;
  if (stream.deactivated || !hasContentAccess(perms, stream, subscribed))
    throw new JsonableError(`Not authorized to send to channel '${stream.name}'`);
  if (!perms.groups.has(stream.canSendMessageGroupId))
    throw new JsonableError('You do not have permission to post in this channel.');
}

/** can_create_topic_group (feature level 441): a topic nobody has posted in yet is new. */
export async function checkCanCreateTopic(
  tx: Tx,
  sender: User,
  stream: Stream,
  topic: string,
): Promise<void> {
  const perms = await loadPermissions(sender, tx);
  if (perms.groups.has(stream.canCreateTopicGroupId)) return;
  const [existing] = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM message
    WHERE recipient_id = ${stream.recipientId} AND upper(subject) = upper(${topic}) LIMIT 1`;
  if (!existing)
    throw new JsonableError('You do not have permission to create new topics in this channel.');
}

/** The `to` of a direct message: user ids or emails, as a JSON list or comma-separated. */
export async function checkDirectAddressee(
  tx: Tx,
  sender: User,
  realm: Realm,
  to: string,
): Promise<Addressee> {
  let targets: unknown;
  try {
    targets = JSON.parse(to) as unknown;
  } catch {
    targets = to.split(',');
  }
  if (typeof targets === 'string') targets = targets.split(',');
  if (!Array.isArray(targets)) throw new JsonableError('Invalid data type for recipients');
  const kind = typeof targets[0];
  if (targets.length > 0 && kind !== 'string' && kind !== 'number')
    throw new JsonableError('Invalid data type for recipients');
  if (targets.some((t) => typeof t !== kind))
    throw new JsonableError('Recipient lists may contain emails or user IDs, but not both.');
  const ids = targets.filter((t): t is number => typeof t === 'number');
  const emails = [
    ...new Set(targets.filter((t): t is string => typeof t === 'string').map((t) => t.trim())),
  ].filter((email) => email !== '');
  if (ids.length + emails.length === 0) throw new JsonableError('Message must have recipients');
  const users: User[] = [];
  for (const id of ids) {
    const user =
      Number.isInteger(id) && id > 0 && id <= 2 ** 31 - 1
        ? await tx.user.findFirst({ where: { id, realmId: sender.realmId } })
        : null;
    if (!user) throw new JsonableError(`Invalid user ID ${id}`);
    users.push(user);
  }
  for (const email of emails) {
    const user = await accessUserByEmail(sender, realm, email, { db: tx }).catch(() => null);
    if (!user) throw new JsonableError(`Invalid email '${email}'`);
    users.push(user);
  }
  for (const user of users) {
    if (!user.isActive && user.id !== sender.id)
      throw new JsonableError(`'${apiEmailFor(sender, user, realm)}' is no longer using Zulip.`);
  }
  return { kind: 'direct', users: uniqueUsers(users) };
}

function uniqueUsers(users: User[]): User[] {
  return [...new Map(users.map((user) => [user.id, user])).values()];
}

export interface SendOptions {
  client: string;
  /** Whether the sender has read it (Zulip: sent by a human-operated client, or read_by_sender). */
  readBySender: boolean;
  /** Local echo: the sender's queue gets local_message_id on this message's event. */
  localEcho?: { queueId: string; localId: string };
}

export interface SentMessage {
  message: Message;
  /** The sender's new policy for the topic, when sending changed it (Zulip's
   * automatic_new_visibility_policy). */
  automaticPolicy: VisibilityPolicyValue | null;
}

export async function doSendMessage(
  ctx: ActionContext,
  realm: Realm,
  sender: User,
  addressee: Addressee,
  content: string,
  rendered: Rendered,
  options: SendOptions,
): Promise<SentMessage> {
  const { tx } = ctx;
  const { recipientId, userIds } =
    addressee.kind === 'channel'
      ? await channelRecipients(tx, addressee.stream)
      : await directRecipients(tx, realm, sender, addressee.users);
  const message = await tx.message.create({
    data: {
      realmId: realm.id,
      senderId: sender.id,
      recipientId,
      subject: addressee.kind === 'channel' ? addressee.topic : '',
      content,
      renderedContent: rendered.html,
      renderedContentVersion: 1,
      sendingClient: options.client,
      isChannelMessage: addressee.kind === 'channel',
      hasLink: /<a /.test(rendered.html),
      hasImage: rendered.hasImage,
    },
  });
  if (
    linkedPathIds(content).length > 0 &&
    (await doUpdateAttachmentLinks(ctx, sender, message, content)).linked
  )
    message.hasAttachment = (
      await tx.message.update({ where: { id: message.id }, data: { hasAttachment: true } })
    ).hasAttachment;
  const flags = await recipientFlags(tx, message, sender, userIds, rendered, options);
  if (addressee.kind === 'channel') checkWildcardMention(sender, rendered, userIds, flags);
  // One INSERT … SELECT unnest(…) for every recipient's row: Prisma's createMany costs
  // ~0.1 ms per row, which dominated sends to large channels.
  const entries = [...flags];
  await tx.$executeRaw`
    INSERT INTO user_message (user_profile_id, message_id, flags)
    SELECT u, ${message.id}, f
    FROM unnest(${entries.map(([userId]) => userId)}::int[],
                ${entries.map(([, userFlags]) => flagsToBitmask(userFlags).toString())}::bigint[]) AS t(u, f)`;
  if (addressee.kind === 'channel' && addressee.stream.firstMessageId === null)
    await tx.stream.update({
      where: { id: addressee.stream.id },
      data: { firstMessageId: message.id },
    });
  await sendMessageEvents(ctx, realm, message, flags, options);
  if (addressee.kind === 'channel' && !addressee.stream.inviteOnly)
    await sendToAllPublicStreamsQueues(ctx, realm, message, flags);
  const automaticPolicy =
    addressee.kind === 'channel'
      ? await doAutoFollowOnSend(
          ctx,
          sender,
          addressee.stream,
          addressee.topic,
          message.id,
          [...rendered.mentions.userIds].filter((id) => flags.has(id)),
        )
      : null;
  return { message, automaticPolicy };
}

async function channelRecipients(
  tx: Tx,
  stream: Stream,
): Promise<{ recipientId: number; userIds: number[] }> {
  const subs = await tx.subscription.findMany({
    where: { recipientId: stream.recipientId!, active: true, isUserActive: true },
    select: { userId: true },
  });
  // An unsubscribed sender (public channels allow that) gets no copy, as in Zulip.
  return { recipientId: stream.recipientId!, userIds: subs.map((s) => s.userId) };
}

/** 1:1 messages (and messages to oneself) go to the other user's personal recipient; groups of
 * three or more to a direct-message group, created on first use with its members
 * subscribed. */
async function directRecipients(
  tx: Tx,
  realm: Realm,
  sender: User,
  users: User[],
): Promise<{ recipientId: number; userIds: number[] }> {
  const ids = [...new Set([sender.id, ...users.map((u) => u.id)])].sort((a, b) => a - b);
  if (ids.length <= 2) {
    const other = ids.find((id) => id !== sender.id) ?? sender.id;
    const recipient = await tx.recipient.findUniqueOrThrow({
      where: { type_typeId: { type: RecipientType.PERSONAL, typeId: other } },
    });
    return { recipientId: recipient.id, userIds: ids };
  }
  const hash = createHash('sha1').update(ids.join(',')).digest('hex');
  const existing = await tx.directMessageGroup.findUnique({
    where: { realmId_hash: { realmId: realm.id, hash } },
  });
  if (existing?.recipientId) return { recipientId: existing.recipientId, userIds: ids };
  // ON CONFLICT DO NOTHING, then read: a concurrent first message to the same group waits
  // for the other transaction and then uses the group it created.
  await tx.directMessageGroup.createMany({
    data: [{ realmId: realm.id, hash, groupSize: ids.length }],
    skipDuplicates: true,
  });
  const group = await tx.directMessageGroup.findUniqueOrThrow({
    where: { realmId_hash: { realmId: realm.id, hash } },
  });
  if (group.recipientId) return { recipientId: group.recipientId, userIds: ids };
  await tx.recipient.createMany({
    data: [{ type: RecipientType.DIRECT_MESSAGE_GROUP, typeId: group.id }],
    skipDuplicates: true,
  });
  const recipient = await tx.recipient.findUniqueOrThrow({
    where: { type_typeId: { type: RecipientType.DIRECT_MESSAGE_GROUP, typeId: group.id } },
  });
  await tx.directMessageGroup.update({
    where: { id: group.id },
    data: { recipientId: recipient.id },
  });
  await tx.subscription.createMany({
    data: ids.map((userId) => ({ userId, recipientId: recipient.id })),
    skipDuplicates: true,
  });
  return { recipientId: recipient.id, userIds: ids };
}

/** Zulip's WILDCARD_MENTION_THRESHOLD: wildcards reaching more people than this need the
 * organization's can_mention_many_users_group, administrators by default (not stored yet). */
const WILDCARD_MENTION_THRESHOLD = 15;

function checkWildcardMention(
  sender: User,
  rendered: Rendered,
  recipients: number[],
  flags: Map<number, UserMessageFlag[]>,
): void {
  if (sender.role <= 200) return;
  const { wildcard } = rendered.mentions;
  if (wildcard === 'channel' && recipients.length > WILDCARD_MENTION_THRESHOLD)
    throw new StreamWildcardMentionNotAllowedError();
  if (wildcard === 'topic') {
    const reached = [...flags.values()].filter((f) => f.includes('topic_wildcard_mentioned'));
    if (reached.length > WILDCARD_MENTION_THRESHOLD)
      throw new TopicWildcardMentionNotAllowedError();
  }
}

/** Each recipient's flags: read for the sender when sent by a person and for those who muted
 * the sender, is_private for direct messages, mentioned for direct and group mentions, the
 * wildcard flags for everyone a wildcard reaches (a topic wildcard: those who have posted in
 * the topic), has_alert_word for those with one of their alert words in it. */
async function recipientFlags(
  tx: Tx,
  message: Message,
  sender: User,
  userIds: number[],
  rendered: Rendered,
  options: SendOptions,
): Promise<Map<number, UserMessageFlag[]>> {
  const { mentions } = rendered;
  const mentioned = new Set(mentions.userIds);
  if (mentions.groupIds.size > 0)
    for (const id of await activeMemberIds([...mentions.groupIds], tx)) mentioned.add(id);
  let topicParticipants = new Set<number>();
  if (mentions.wildcard === 'topic' && message.isChannelMessage) {
    const posters = await tx.$queryRaw<{ sender_id: number }[]>`
      SELECT DISTINCT sender_id FROM message
      WHERE recipient_id = ${message.recipientId} AND upper(subject) = upper(${message.subject})`;
    topicParticipants = new Set(posters.map((p) => p.sender_id));
  }
  const muters = await mutersAmong(sender.id, userIds, tx);
  const alerted = await usersAlertedBy(message.content, userIds, tx);
  const flags = new Map<number, UserMessageFlag[]>();
  for (const userId of userIds) {
    const list: UserMessageFlag[] = [];
    if ((userId === sender.id && options.readBySender) || muters.has(userId)) list.push('read');
    if (mentioned.has(userId)) list.push('mentioned');
    if (mentions.wildcard === 'channel') list.push('stream_wildcard_mentioned');
    if (
      mentions.wildcard === 'topic' &&
      (!message.isChannelMessage || topicParticipants.has(userId))
    )
      list.push('topic_wildcard_mentioned');
    if (!message.isChannelMessage) list.push('is_private');
    if (alerted.has(userId)) list.push('has_alert_word');
    flags.set(userId, list);
  }
  return flags;
}

/** Queues registered with all_public_streams see public-channel messages their users did not
 * receive, with no flags (Zulip's process_message_event). */
async function sendToAllPublicStreamsQueues(
  ctx: ActionContext,
  realm: Realm,
  message: Message,
  recipients: Map<number, UserMessageFlag[]>,
): Promise<void> {
  const listed = (await getRedis().smembers(allPublicStreamsKey(realm.id))).map(Number);
  const candidates = listed.filter((id) => Number.isInteger(id) && !recipients.has(id));
  if (candidates.length === 0) return;
  const viewers = await ctx.tx.user.findMany({
    where: { id: { in: candidates }, realmId: realm.id, isActive: true, role: { not: 600 } },
    select: { id: true, role: true },
  });
  await publishMessageForms(ctx, realm, message, viewers, () => ({
    flags: [],
    internal: { all_public_streams_only: true },
  }));
}

/** One `message` event per distinct form: recipients differ in flags and in which addresses
 * they may see. Raw Markdown and the avatar's computability travel in internal_data for the
 * events tier's per-queue formatting. */
async function sendMessageEvents(
  ctx: ActionContext,
  realm: Realm,
  message: Message,
  flags: Map<number, UserMessageFlag[]>,
  options: SendOptions,
): Promise<void> {
  const viewers = await ctx.tx.user.findMany({
    where: { id: { in: [...flags.keys()] } },
    select: { id: true, role: true },
  });
  await publishMessageForms(ctx, realm, message, viewers, (viewer) => ({
    flags: apiFlags(flags.get(viewer.id)!),
    internal:
      viewer.id === message.senderId && options.localEcho
        ? { sender_queue_id: options.localEcho.queueId, local_id: options.localEcho.localId }
        : {},
  }));
}

async function publishMessageForms(
  ctx: ActionContext,
  realm: Realm,
  message: Message,
  viewers: Pick<User, 'id' | 'role'>[],
  perViewer: (viewer: Pick<User, 'id' | 'role'>) => {
    flags: string[];
    internal: Record<string, unknown>;
  },
): Promise<void> {
  const forms = await presentMessagesForEvent(ctx.tx, realm, message, viewers);
  const groups = new Map<string, { event: { type: string }; users: number[] }>();
  for (const viewer of viewers) {
    const form = forms(viewer);
    const { flags, internal } = perViewer(viewer);
    // Keyed without serializing the message: this runs once per recipient.
    const key = `${form.key}|${flags.join(',')}|${JSON.stringify(internal)}`;
    const group = groups.get(key);
    if (group) {
      group.users.push(viewer.id);
      continue;
    }
    const event = {
      type: 'message',
      message: form.message,
      flags,
      internal_data: {
        raw_content: message.content,
        avatar_gravatar: form.avatarGravatar,
        ...internal,
      },
    };
    groups.set(key, { event, users: [viewer.id] });
  }
  for (const { event, users } of groups.values()) sendEventOnCommit(ctx, event, users);
}
