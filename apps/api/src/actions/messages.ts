// Sending messages (Zulip's check_message / do_send_messages): resolve the addressee, check
// the sender may post there, write the message and every recipient's row in one transaction
// (most often a single statement), and queue the message event, formatted per group of
// recipients, for after the commit.
import { createHash } from 'node:crypto';
import { startedAuthCache } from '@parley/auth';
import {
  afterAnswer,
  afterStatementCommitted,
  columnsOf,
  currentTransaction,
  flagsToBitmask,
  intArrayLiteral,
  MessageType,
  query,
  RecipientType,
  runAction,
  Role,
  statement,
  type ActionContext,
  type Message,
  type MessageTypeValue,
  type Realm,
  type Stream,
  type Tx,
  type User,
  type UserMessageFlag,
  SYSTEM_GROUPS,
} from '@parley/db';
import {
  JsonableError,
  StreamDoesNotExistError,
  StreamWildcardMentionNotAllowedError,
  StreamWithIDDoesNotExistError,
  TopicWildcardMentionNotAllowedError,
} from '@parley/errors';
import { parseJsonOrText } from '@parley/http';
import { renderMarkdown, topicLinks, type Rendered, type TopicLink } from '@parley/markdown';
import { allPublicStreamsKey, getRedis, type Notification } from '@parley/events';
import { linkedPathIds } from '../lib/attachments';
import { containsAlertWord, searchableText } from '../lib/alert-words';
import { sendEventOnCommit } from '../lib/events';
import {
  outboxParams,
  outboxSql,
  outboxWriteOf,
  outboxWriteInFlight,
  publishWithoutWaiting,
  type OutboxColumns,
} from '../lib/outbox';
import { assertGroupMentionsAllowed } from '../lib/user-group-permissions';
import {
  policyOnSend,
  sendContextColumns,
  sendContextOf,
  setsPolicyOnSend,
  type SendContext,
  type SendContextRow,
  VisibilityPolicy,
  type VisibilityPolicyValue,
} from '../lib/user-topics';
import { doAutoFollowOnSend, mentionedWhoWillFollow } from './user-topics';
import { queueEmailNotifications } from './email-notifications';
import { queuePushNotifications } from './push-notifications';
import { pushTrigger, type PushSettings } from '../lib/push-notifications';
import { activeMemberIds, groupIdsOfUser, groupIdsOfUserSql } from '../lib/groups';
import { inRealmGroups, realmGroupId } from '../lib/realm-state';
import { apiFlags, directDisplay, displayUser } from '../lib/messages';
import { loadMentionData, messageRenderOptions, type NamedGroup } from '../lib/rendering';
import { loadPermissions, subscribedSql, subscriptionOf, type Permissions } from '../lib/streams';
import { apiEmailFor, canSeeDeliveryEmail, dummyEmailUserId, isGuest } from '../lib/users';
import {
  accessOnSend,
  checkSenderCanAccessRecipients,
  type AccessOnSend,
} from '../lib/user-access';
import {
  EMPTY_TOPIC_DISPLAY_NAME,
  presentMessage,
  type DisplayRecipient,
  type PresentedSubmessage,
} from '../presenters/messages';
import { doUpdateAttachmentLinks } from './uploads';
import { doAddWidgetSubmessage } from './submessages';
import { widgetOf, type WidgetContent } from '../lib/widgets';
import { truncateText } from '../lib/text';

export const MAX_MESSAGE_LENGTH = 10000;
export const MAX_TOPIC_LENGTH = 60;

export type Addressee =
  { kind: 'channel'; stream: Stream; topic: string } | { kind: 'direct'; users: User[] };

/** Zulip's normalize_body: trailing whitespace and leading newlines go, empty is refused, too
 * long is cut. */
export function checkContent(raw: string): string {
  const content = raw.trimEnd().replace(/^\n+/, '');
  if (content.trim() === '') throw new JsonableError('Message must not be empty');
  return truncateText(content, MAX_MESSAGE_LENGTH, '\n[message truncated]');
}

/** Zulip's check_topic plus truncation: "(no topic)" and the display name of the empty topic
 * mean the empty topic (feature levels 334, 370). */
export function checkTopic(raw: string): string {
  let topic = raw.trim();
  if (topic === '(no topic)' || topic === EMPTY_TOPIC_DISPLAY_NAME) topic = '';
  const bad = [...topic].findIndex((char) => /[\p{Cc}\p{Cs}]/u.test(char));
  if (bad !== -1) throw new JsonableError(`Invalid character in topic, at position ${bad + 1}!`);
  return truncateText(topic, MAX_TOPIC_LENGTH, '...');
}

/** The channel's topics_policy, else the organization's (mandatory_topics is Zulip's older
 * form of disable_empty_topic). */
function topicsPolicyOf(realm: Realm, stream: Stream): string {
  if (stream.topicsPolicy !== 'inherit') return stream.topicsPolicy;
  return realm.mandatoryTopics ? 'disable_empty_topic' : 'allow_empty_topic';
}

/** A channel whose policy is empty_topic_only takes no other topic: Zulip's
 * build_message_edit_request refuses even a content edit of a message left in another topic. */
export function checkEmptyTopicOnly(realm: Realm, stream: Stream, topic: string): void {
  if (topicsPolicyOf(realm, stream) === 'empty_topic_only' && topic !== '')
    throw new JsonableError(
      `Only the ${EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.`,
    );
}

/** The topic a message may go to: none but general chat where the policy is
 * empty_topic_only, not general chat where it is disable_empty_topic. */
export function checkTopicPolicy(realm: Realm, stream: Stream, topic: string): void {
  if (topicsPolicyOf(realm, stream) === 'disable_empty_topic' && topic === '')
    throw new JsonableError(
      `Sending messages to the ${EMPTY_TOPIC_DISPLAY_NAME} topic is not allowed in this channel.`,
    );
  checkEmptyTopicOnly(realm, stream, topic);
}

/** Where a message goes, as the client named it (`to` raw, as sent). */
export type SendTarget =
  { kind: 'channel'; to: string; topic: string } | { kind: 'direct'; to: string };

/** A message with everything decided before the transaction: the addressee and its
 * permissions, the rendering, every recipient's flags and the events' audiences. The
 * transaction then only writes (Zulip's do_send_messages also builds its message dicts and
 * recipient lists first). */
export interface PreparedMessage {
  realm: Realm;
  sender: User;
  addressee: Addressee;
  /** Null for the first message of a direct-message group: the transaction creates it. */
  recipientId: number | null;
  messageId: number;
  /** When it was prepared: the time of a send written in one statement (one written in a
   * transaction takes the transaction's). */
  dateSent: Date;
  /** What decides the sender's automatic topic policy (channel messages from senders whose
   * settings may set one), read with the channel: before the insert, so the new message is
   * not among the topic's messages. */
  policyContext: SendContext | null;
  content: string;
  rendered: Rendered;
  topicLinks: TopicLink[];
  /** Recipients with the same flags share one list (recipientFlags): never changed in place. */
  flags: ReadonlyMap<number, readonly UserMessageFlag[]>;
  /** Every recipient's role (events differ in which addresses a viewer may see). */
  viewers: Viewer[];
  /** Users whose all_public_streams queues see this public-channel message without having
   * received it. */
  publicStreamsViewers: Viewer[];
  /** A 1:1 message: the sender's personal recipient (the conversation's id for the other
   * user, feature level 327). */
  senderRecipientId: number | null;
  options: SendOptions;
  /** Recipients to notify on their mobile devices, with the reason (Zulip's trigger). */
  pushRecipients: { userId: number; trigger: string }[];
  /** Recipients who may get a missed-message email if idle (the job decides, docs/email-
   * notifications.md): none for most channel messages. */
  emailCandidates: number[];
  /** What can_access_all_users_group hides from or grants to guests among the recipients. */
  access: AccessOnSend;
  /** The widget a /poll or /todo message starts, or the sender's `widget_content`: its
   * submessage is written with it. */
  widget: WidgetContent | null;
}

type Viewer = { id: number; role: number };

export async function prepareMessage(
  realm: Realm,
  sender: User,
  target: SendTarget,
  content: string,
  options: SendOptions,
): Promise<PreparedMessage> {
  // Redis answers while PostgreSQL reads; its answer counts only for a public channel (the read
  // tells), and a private channel's send never waits for it.
  const allPublic =
    target.kind === 'channel' ? getRedis().smembers(allPublicStreamsKey(realm.id)) : undefined;
  allPublic?.catch(() => undefined);
  // What the content names is read, and the content rendered, while PostgreSQL reads the
  // recipients: rendering needs none of them. The resolution's own errors still come first.
  const resolving =
    target.kind === 'channel'
      ? resolveChannel(realm, sender, target.to, target.topic, options.bySystemBot ?? false)
      : resolveDirect(realm, sender, target.to, options.bySystemBot ?? false);
  resolving.catch(() => undefined);
  const rendering = loadMentionData(realm.id, content, undefined, {
    author: { realm, user: sender },
  }).then((mentionData) => ({
    mentionData,
    rendered: renderMarkdown(content, mentionData, messageRenderOptions(realm, sender)),
  }));
  rendering.catch(() => undefined);
  const resolved = await resolving;
  const { mentionData, rendered } = await rendering;
  const { addressee } = resolved;
  const publicStreamsUsers =
    addressee.kind === 'channel' && !addressee.stream.inviteOnly ? await allPublic! : [];
  const { messageId, dateSent } = resolved.recipients;
  const recipients = recipientsOf(resolved.recipients);
  const groups = [...mentionData.groupsByName.values()].filter((group) =>
    rendered.mentions.groupIds.has(group.id),
  );
  // Zulip's get_recipient_info: read only for a topic wildcard, and the sender counts (their
  // message is not in the topic yet).
  const topicParticipants =
    rendered.mentions.wildcard === 'topic' && addressee.kind === 'channel'
      ? new Set([
          ...(await topicParticipantIds(addressee.stream.recipientId!, addressee.topic)),
          sender.id,
        ])
      : NO_PARTICIPANTS;
  const flags = recipientFlags(
    sender,
    addressee,
    recipients,
    content,
    rendered,
    groups,
    topicParticipants,
    options,
  );
  if (addressee.kind === 'channel')
    checkWildcardMention(realm, resolved.senderGroups, rendered, recipients.ids, topicParticipants);
  // After the wildcard check, as Zulip orders them.
  assertGroupMentionsAllowed(sender, resolved.senderGroups, groups);
  const viewers = recipients.ids.map((id, index) => ({ id, role: recipients.roles[index]! }));
  const access = accessOnSend(
    realm,
    sender,
    viewers,
    addressee.kind === 'direct'
      ? { participants: uniqueUsers([sender, ...addressee.users]) }
      : { senderSubscribed: resolved.senderSubscribed ?? false },
  );
  access.catch(() => undefined);
  return {
    realm,
    sender,
    addressee,
    recipientId: resolved.recipientId,
    messageId,
    dateSent,
    policyContext: resolved.policyContext ?? null,
    content,
    rendered,
    topicLinks:
      addressee.kind === 'channel' ? topicLinks(addressee.topic, mentionData.linkifiers ?? []) : [],
    flags,
    viewers,
    publicStreamsViewers: await publicStreamsViewers(realm, publicStreamsUsers, flags),
    senderRecipientId: resolved.senderRecipientId,
    options,
    ...(options.disableExternalNotifications
      ? { pushRecipients: [], emailCandidates: [] }
      : {
          pushRecipients: pushRecipients(recipients, flags, addressee.kind === 'channel'),
          emailCandidates: emailCandidates(sender, recipients, flags, addressee.kind === 'channel'),
        }),
    access: await access,
    widget: options.widgetContent ?? widgetOf(content),
  };
}

/** Who gets a mobile notification and why: recipients with a registered device (the only
 * ones whose `push` settings were read), other than the sender and those who muted them. */
function pushRecipients(
  recipients: Recipients,
  flags: ReadonlyMap<number, readonly UserMessageFlag[]>,
  isChannel: boolean,
): { userId: number; trigger: string }[] {
  const notified: { userId: number; trigger: string }[] = [];
  for (const [id, push] of recipients.push) {
    if (recipients.mutedSender.has(id)) continue;
    const trigger = pushTrigger(flags.get(id) ?? [], push, isChannel);
    if (trigger) notified.push({ userId: id, trigger });
  }
  return notified;
}

const MENTION_FLAGS: readonly UserMessageFlag[] = [
  'mentioned',
  'stream_wildcard_mentioned',
  'topic_wildcard_mentioned',
];

/** Who could be emailed of the message if idle: every human recipient of a direct message, and
 * of a channel message those it mentions, the topic's followers and those who asked for the
 * channel's emails (`emailed`); never the sender, bots, or those who muted the sender. Their
 * settings and idleness are the job's to read (most of them have a client open). */
function emailCandidates(
  sender: User,
  recipients: Recipients,
  flags: ReadonlyMap<number, readonly UserMessageFlag[]>,
  isChannel: boolean,
): number[] {
  const candidates: number[] = [];
  for (const id of recipients.ids) {
    if (id === sender.id || recipients.bots.has(id) || recipients.mutedSender.has(id)) continue;
    const mentioned = flags.get(id)?.some((flag) => MENTION_FLAGS.includes(flag)) ?? false;
    if (!isChannel || mentioned || recipients.emailed.has(id)) candidates.push(id);
  }
  return candidates;
}

interface Resolved {
  addressee: Addressee;
  recipientId: number | null;
  /** The recipients, read with the channel or the conversation. */
  recipients: RecipientsRow;
  senderRecipientId: number | null;
  /** Every group the sender belongs to. */
  senderGroups: Set<number>;
  /** Channel messages from a sender whose settings may set a topic policy on send. */
  policyContext?: SendContext | null;
  /** Channel messages: whether the sender is subscribed (then every recipient shares the
   * channel with them). */
  senderSubscribed?: boolean;
}

type ChannelForSend = Stream &
  SendContextRow &
  RecipientsRow & {
    subscribed: boolean;
    groupIds: number[];
    topicExists: boolean;
  };

/** The channel (`ch`) with whether the sender ($2) is subscribed, the sender's groups, whether
 * the topic ($4) exists yet (can_create_topic_group), when $5 asks for it what decides the
 * sender's automatic topic policy, and its subscribers as recipients (recipientsSql): one
 * statement, one round trip, for everything a channel message's checks, flags and events
 * need. A channel the sender may not post to is read all the same (nothing of it leaves the
 * server: the checks refuse first); a missing one gives no row. */
const CHANNEL_RECIPIENTS = recipientsSql({
  users: `ARRAY(SELECT sub.user_profile_id FROM subscription sub
    WHERE sub.recipient_id = (SELECT recipient_id FROM ch) AND sub.active AND sub.is_user_active)`,
  realm: '$1',
  sender: '$2',
  recipient: 'ch.recipient_id',
  topic: '$4::text',
});
const channelForSend = (condition: string) => `
  WITH ch AS (SELECT * FROM stream WHERE realm_id = $1 AND ${condition}), ${CHANNEL_RECIPIENTS.cte}
  SELECT ${columnsOf('Stream', 'ch')},
    ${subscribedSql('$2', 'ch.recipient_id')} AS subscribed,
    ${groupIdsOfUserSql('$2')} AS "groupIds",
    EXISTS (SELECT 1 FROM message WHERE recipient_id = ch.recipient_id
      AND upper(subject) = upper($4)) AS "topicExists",
    ${sendContextColumns({
      wanted: '$5::boolean',
      user: '$2',
      recipient: 'ch.recipient_id',
      topic: '$4',
      sharedHistory: 'ch.history_public_to_subscribers',
    })},
    ${CHANNEL_RECIPIENTS.columns}
  FROM ch, ${CHANNEL_RECIPIENTS.from}`;
const channelForSendById = statement<ChannelForSend, [number, number, number, string, boolean]>(
  channelForSend('id = $3'),
);
const channelForSendByName = statement<ChannelForSend, [number, number, string, string, boolean]>(
  channelForSend('lower(name) = lower($3)'),
);

/** The `to` of a channel message: an id or a name, raw or JSON (a one-element list too). */
async function resolveChannel(
  realm: Realm,
  sender: User,
  to: string,
  topic: string,
  bySystemBot: boolean,
): Promise<Resolved> {
  // A bare channel name, or JSON.
  let target = parseJsonOrText(to);
  if (Array.isArray(target)) {
    if (target.length !== 1) throw new JsonableError('Expected exactly one channel');
    target = target[0];
  }
  let found: ChannelForSend | undefined;
  const policyWanted = setsPolicyOnSend(sender);
  if (typeof target === 'number' && Number.isInteger(target)) {
    if (target > 0 && target <= 2 ** 31 - 1)
      [found] = await query(channelForSendById, [realm.id, sender.id, target, topic, policyWanted]);
    if (!found) throw new StreamWithIDDoesNotExistError(target);
  } else if (typeof target === 'string') {
    const name = target.trim();
    // Zulip's check_stream_name on the name sent (an absent `to` is the route's "Missing
    // channel").
    if (name === '') throw new JsonableError("Channel name can't be empty.");
    [found] = await query(channelForSendByName, [realm.id, sender.id, name, topic, policyWanted]);
    if (!found) throw new StreamDoesNotExistError(name);
  } else {
    throw new JsonableError('Invalid data type for channel');
  }
  const {
    subscribed,
    groupIds,
    topicExists,
    send_topic_policy,
    send_channel_muted,
    send_topic_had_messages,
    messageId,
    dateSent,
    ids,
    roles,
    mutedSender,
    alertWords,
    push,
    bots,
    emailed,
    ...stream
  } = found;
  const perms = { user: sender, groups: new Set(groupIds) };
  if (!bySystemBot) await checkMayPost(sender, perms, stream, subscribed);
  checkTopicPolicy(realm, stream, topic);
  if (!bySystemBot && !topicExists) await checkCanCreateTopic(sender, perms.groups, stream);
  // An unsubscribed sender (public channels allow that) gets no copy, as in Zulip.
  return {
    addressee: { kind: 'channel', stream, topic },
    recipientId: stream.recipientId!,
    recipients: { messageId, dateSent, ids, roles, mutedSender, alertWords, push, bots, emailed },
    senderRecipientId: null,
    senderGroups: perms.groups,
    senderSubscribed: subscribed,
    policyContext: policyWanted
      ? sendContextOf({ send_topic_policy, send_channel_muted, send_topic_had_messages })
      : null,
  };
}

/** Zulip's check_for_can_create_topic_group_violation, for a topic without messages: the
 * channel's can_create_topic_group, which for a bot may be met by its owner. */
export async function checkCanCreateTopic(
  user: User,
  groups: ReadonlySet<number>,
  stream: Pick<Stream, 'canCreateTopicGroupId'>,
): Promise<void> {
  if (groups.has(stream.canCreateTopicGroupId)) return;
  if (
    user.isBot &&
    user.botOwnerId !== null &&
    (await groupIdsOfUser(user.botOwnerId)).has(stream.canCreateTopicGroupId)
  )
    return;
  throw new JsonableError('You do not have permission to create new topics in this channel.');
}

/** Zulip's access_stream_for_send_message and can_send_message_group. */
export async function checkCanPost(sender: User, stream: Stream): Promise<void> {
  const perms = await loadPermissions(sender);
  await checkMayPost(sender, perms, stream, (await subscriptionOf(sender.id, stream)) !== null);
}

/** Zulip's access_stream_for_send_message, in its order: the channel's can_send_message_group
 * (a bot may also post where its owner may), then the channel itself: archived channels take
 * nothing; web-public and public ones (but for guests) take anyone; a private one its
 * subscribers, a bot whose owner is subscribed, and, when its history is shared, the members
 * of the groups that may subscribe to it or add subscribers. Only a bot's failing first look
 * reads anything more. */
async function checkMayPost(
  sender: User,
  perms: Permissions,
  stream: Stream,
  subscribed: boolean,
): Promise<void> {
  const owner = sender.isBot ? sender.botOwnerId : null;
  if (
    !perms.groups.has(stream.canSendMessageGroupId) &&
    (owner === null || !(await groupIdsOfUser(owner)).has(stream.canSendMessageGroupId))
  )
    throw new JsonableError('You do not have permission to post in this channel.');
  const refused = new JsonableError(`Not authorized to send to channel '${stream.name}'`);
  if (stream.deactivated) throw refused;
  if (stream.isWebPublic || subscribed) return;
  if (!stream.inviteOnly && !isGuest(sender)) return;
  if (owner !== null && (await subscriptionOf(owner, stream)) !== null) return;
  if (
    stream.historyPublicToSubscribers &&
    !isGuest(sender) &&
    (perms.groups.has(stream.canSubscribeGroupId) ||
      perms.groups.has(stream.canAddSubscribersGroupId))
  )
    return;
  throw refused;
}

/** The users a direct message names, in organization $2: by id ($1: ids, and the ids of dummy
 * addresses), and by delivery address ($3, compared as lookup.ts does), each with the address
 * that named it (`named`, null for an id). */
const usersNamed = statement<User & { named: string | null }, [number[], number, string[]]>(`
  SELECT NULL::text AS named, ${columnsOf('User', 'u')} FROM user_profile u
  WHERE u.id = ANY($1::int[]) AND u.realm_id = $2
  UNION ALL
  SELECT v AS named, ${columnsOf('User', 'u')} FROM unnest($3::text[]) v
  JOIN user_profile u ON u.realm_id = $2 AND lower(u.delivery_email) = lower(v)`);

/** The `to` of a direct message: user ids or emails, as a JSON list or comma-separated. A
 * constant number of statements whatever the group's size. */
async function resolveDirect(
  realm: Realm,
  sender: User,
  to: string,
  bySystemBot: boolean,
): Promise<Resolved> {
  let targets = parseJsonOrText(to);
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
  // Zulip's access_user_by_email: a dummy address names its user by id; a real one must be
  // visible to the sender (else it is as unknown as an address nobody has).
  const dummyIds = new Map(emails.map((email) => [email, dummyEmailUserId(realm, email)]));
  const addresses = emails.filter((email) => dummyIds.get(email) === null);
  const byId = [
    ...ids.filter((id) => Number.isInteger(id) && id > 0 && id <= 2 ** 31 - 1),
    ...[...dummyIds.values()].filter((id) => id !== null),
  ];
  // Users who authenticated here lately are in memory; the others are read together.
  const cache = startedAuthCache();
  const found = new Map<number, User>();
  for (const id of byId) {
    const user = cache?.peekUserById(realm.id, id);
    if (user) found.set(id, user);
  }
  const byAddress = new Map<string, User>();
  for (const email of addresses) {
    const user = cache?.peekUserByEmail(realm, email);
    if (user) byAddress.set(email, user);
  }
  const unreadIds = byId.filter((id) => !found.has(id));
  const unreadAddresses = addresses.filter((email) => !byAddress.has(email));
  const rows =
    unreadIds.length + unreadAddresses.length > 0
      ? await query(usersNamed, [unreadIds, realm.id, unreadAddresses])
      : [];
  for (const { named: address, ...user } of rows) {
    if (address === null) found.set(user.id, user);
    else byAddress.set(address, user);
  }
  const users: User[] = [];
  for (const id of ids) {
    const user = found.get(id);
    if (!user) throw new JsonableError(`Invalid user ID ${id}`);
    users.push(user);
  }
  for (const email of emails) {
    const dummyId = dummyIds.get(email);
    const user = dummyId != null ? found.get(dummyId) : byAddress.get(email);
    if (!user || (dummyId == null && !canSeeDeliveryEmail(sender, user)))
      throw new JsonableError(`Invalid email '${email}'`);
    users.push(user);
  }
  // Before the deactivated check, as in Zulip's check_message. The organization's system bots
  // reach everyone, whatever its direct-message settings (Zulip's cross-realm bots do).
  if (!bySystemBot) await checkSenderCanAccessRecipients(realm, sender, users);
  for (const user of users) {
    if (!user.isActive && user.id !== sender.id)
      throw new JsonableError(`'${apiEmailFor(sender, user, realm)}' is no longer using Zulip.`);
  }
  const addressee: Addressee = { kind: 'direct', users: uniqueUsers(users) };
  const userIds = [...new Set([sender.id, ...users.map((u) => u.id)])].sort((a, b) => a - b);
  // 1:1 messages (and messages to oneself) go to the other user's personal recipient.
  const other = userIds.length <= 2 ? (userIds.find((id) => id !== sender.id) ?? sender.id) : null;
  const [conversation] = await query(directForSend, [
    intArrayLiteral(userIds),
    sender.id,
    realm.id,
    other === null ? groupHash(userIds) : null,
    other,
  ]);
  const { recipientId, senderRecipientId, senderGroups, ...recipients } = conversation!;
  const groups = new Set(senderGroups);
  const dmCheck = bySystemBot
    ? { mayNotInitiate: false }
    : await checkDirectMessagePolicy(realm, sender, addressee.users, groups);
  if (dmCheck.mayNotInitiate) {
    const [row] =
      other !== null
        ? await query(personalConversationExists, [
            recipientId!,
            sender.id,
            senderRecipientId ?? -1,
            other,
          ])
        : recipientId !== null
          ? await query(conversationExists, [recipientId])
          : [{ exists: false }];
    if (!row?.exists) throw new JsonableError(MAY_NOT_INITIATE);
  }
  return { addressee, recipientId, recipients, senderRecipientId, senderGroups: groups };
}

// Zulip's DirectMessageInitiationError.
const MAY_NOT_INITIATE = 'You do not have permission to initiate direct message conversations.';

const conversationExists = statement<{ exists: boolean }, [number]>(
  `SELECT EXISTS (SELECT 1 FROM message WHERE recipient_id = $1) AS exists`,
);
const personalConversationExists = statement<{ exists: boolean }, [number, number, number, number]>(
  `SELECT EXISTS (SELECT 1 FROM message WHERE (recipient_id = $1 AND sender_id = $2)
     OR (recipient_id = $3 AND sender_id = $4)) AS exists`,
);

/** The organization's direct_message_permission_group (a conversation needs someone in it
 * among its participants) and direct_message_initiator_group (others may only reply to an
 * existing conversation: `mayNotInitiate` asks the caller to check). Bots, and conversations
 * with only bots or oneself, are always allowed. */
async function checkDirectMessagePolicy(
  realm: Realm,
  sender: User,
  recipients: User[],
  senderGroups: Set<number>,
): Promise<{ mayNotInitiate: boolean }> {
  // Zulip's check_can_send_direct_message: bots are never limited.
  if (sender.isBot) return { mayNotInitiate: false };
  const others = recipients.filter((user) => user.id !== sender.id);
  if (others.every((user) => user.isBot)) return { mayNotInitiate: false };
  if (!inRealmGroups(realm, 'direct_message_permission_group', senderGroups)) {
    const groupId = realmGroupId(realm, 'direct_message_permission_group');
    const authorized = groupId === null ? [] : await activeMemberIds([groupId]);
    if (!others.some((user) => authorized.includes(user.id))) {
      const nobody = groupId !== null && (await isNobodyGroup(groupId));
      throw new JsonableError(
        nobody
          ? 'Direct messages are disabled in this organization.'
          : 'This conversation does not include any users who can authorize it.',
      );
    }
  }
  return {
    mayNotInitiate: !inRealmGroups(realm, 'direct_message_initiator_group', senderGroups),
  };
}

const groupName = statement<{ name: string | null }, [number]>(
  `SELECT name FROM user_group WHERE id = $1`,
);

async function isNobodyGroup(groupId: number): Promise<boolean> {
  const [row] = await query(groupName, [groupId]);
  return row?.name === SYSTEM_GROUPS.NOBODY;
}

function groupHash(userIds: number[]): string {
  return createHash('sha1').update(userIds.join(',')).digest('hex');
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
  /** Sent by one of the organization's system bots (system-bots.ts), which post in any
   * channel and write to anyone, as Zulip's cross-realm bots do: no posting, topic-creation,
   * user-access or direct-message permission checks. */
  bySystemBot?: boolean;
  /** Recipients whose copy arrives read (Zulip's mark_as_read_user_ids: the user whose action
   * a notice reports). */
  readFor?: ReadonlySet<number>;
  /** When given, the only recipients whose copy arrives unread (Zulip's
   * limit_unread_user_ids). */
  unreadOnlyFor?: ReadonlySet<number>;
  /** Zulip's Message.type (default: normal). */
  type?: MessageTypeValue;
  /** No mobile or email notification of it (Zulip's disable_external_notifications). */
  disableExternalNotifications?: boolean;
  /** A widget the sender describes (`widget_content`, checked by checkWidgetContent): it
   * stands instead of a /poll or /todo the content may start. */
  widgetContent?: WidgetContent;
}

export interface SentMessage {
  message: Message;
  /** The sender's new policy for the topic, when sending changed it (Zulip's
   * automatic_new_visibility_policy). */
  automaticPolicy: VisibilityPolicyValue | null;
}

/** The message row and every recipient's copy. */
const MESSAGE_WRITES = `
  inserted AS (
    INSERT INTO message (id, realm_id, sender_id, recipient_id, subject, content, rendered_content,
      rendered_content_version, date_sent, sending_client, is_channel_message, has_link, has_image,
      type)
    VALUES ($1, $2, $3, $4, $5, $6, $7, 1, COALESCE($8, now()), $9, $10, $11, $12, $15)
    RETURNING *
  ), copies AS (
    INSERT INTO user_message (user_profile_id, message_id, flags)
    SELECT u, inserted.id, f FROM inserted, unnest($13::int[], $14::bigint[]) AS t(u, f)
  )`;
type MessageParams = [
  number,
  number,
  number,
  number,
  string,
  string,
  string,
  Date | null,
  string,
  boolean,
  boolean,
  boolean,
  string,
  string,
  number,
];

/** `dateSent` null: the transaction's time (a scheduled message's delivery compares it with
 * the time it was due, in the same transaction). */
function messageParams(
  prepared: PreparedMessage,
  recipientId: number,
  dateSent: Date | null,
): MessageParams {
  const { realm, sender, addressee, rendered, content, flags, options } = prepared;
  const entries = [...flags];
  return [
    prepared.messageId,
    realm.id,
    sender.id,
    recipientId,
    addressee.kind === 'channel' ? addressee.topic : '',
    content,
    rendered.html,
    dateSent,
    options.client,
    addressee.kind === 'channel',
    hasLink(rendered),
    rendered.hasImage,
    intArrayLiteral(entries.map(([userId]) => userId)),
    intArrayLiteral(entries.map(([, userFlags]) => flagsToBitmask(userFlags))),
    options.type ?? MessageType.NORMAL,
  ];
}

const hasLink = (rendered: Rendered) => /<a /.test(rendered.html);

const insertMessage = statement<Message, MessageParams>(`
  WITH ${MESSAGE_WRITES}
  SELECT ${columnsOf('Message', 'inserted')} FROM inserted`);

const OUTBOX = outboxSql('$16', '$17');
/** The message, its copies and its events' outbox rows: the whole of most sends. */
const insertMessageAlone = statement<OutboxColumns, [...MessageParams, string, string[]]>(`
  WITH ${MESSAGE_WRITES}, ${OUTBOX.cte}
  SELECT ${OUTBOX.columns} FROM inserted`);

/** Sends a prepared message. Most sends write only the message, its copies and its events
 * (see `writesAlone`): one statement, which PostgreSQL runs as a transaction of its own, so
 * the send spends no round trips on BEGIN and COMMIT, and it answers without waiting for its
 * events' publish (publishWithoutWaiting). The others run in a transaction: through
 * Prisma's when they make one of its rare writes (a new direct-message group, attachment
 * links, a channel's first message), else on a pooled connection directly. */
export async function sendPreparedMessage(prepared: PreparedMessage): Promise<SentMessage> {
  if (await writesAlone(prepared)) return sendAlone(prepared);
  const { addressee, recipientId, content } = prepared;
  const prisma =
    recipientId === null ||
    linkedPathIds(content).length > 0 ||
    (addressee.kind === 'channel' && addressee.stream.firstMessageId === null);
  return runAction((ctx) => doSendMessage(ctx, prepared), { prisma });
}

/** Whether the send writes nothing beyond the message, its copies and its events: its
 * conversation exists, it links no uploads, it starts no widget (/poll, /todo: a submessage
 * to write), it is not a channel's first message, and no topic
 * policy changes: not the sender's, by their settings, nor a mentioned subscriber's who
 * follows topics where they are mentioned. Only a statement tells the latter, read only when
 * nothing else needs the transaction: a send that mentions users who already follow or muted
 * the topic, or never follow on mention, needs none (one that makes a user follow reads them
 * again in it, doAutoFollowOnSend). */
async function writesAlone(prepared: PreparedMessage): Promise<boolean> {
  const { addressee, sender, policyContext, rendered, flags } = prepared;
  // Inside a caller's transaction the statement would join it, and its events would go out
  // before that transaction commits.
  if (currentTransaction()) return false;
  if (prepared.recipientId === null || linkedPathIds(prepared.content).length > 0) return false;
  if (prepared.widget !== null) return false;
  if (addressee.kind === 'direct') return true;
  if (addressee.stream.firstMessageId === null) return false;
  if (policyContext !== null && policyOnSend(sender, policyContext) !== null) return false;
  const mentioned = [...rendered.mentions.userIds].filter((id) => flags.has(id));
  return (
    (await mentionedWhoWillFollow(sender, addressee.stream, addressee.topic, mentioned)).length ===
    0
  );
}

async function sendAlone(prepared: PreparedMessage): Promise<SentMessage> {
  const message = messageRow(prepared, prepared.recipientId!);
  const notifications = messageNotifications(prepared, message);
  const writing = outboxWriteInFlight();
  try {
    const [row] = await query(insertMessageAlone, [
      ...messageParams(prepared, message.recipientId, message.dateSent),
      ...outboxParams(notifications),
    ]);
    await afterStatementCommitted([
      () => {
        publishWithoutWaiting(outboxWriteOf(row!, notifications, writing.started));
        writing.done();
      },
    ]);
    // Queued once the answer is written: the answer need not wait for a job's round trip to
    // Redis (docs/push-notifications.md).
    if (prepared.pushRecipients.length > 0)
      queuePushNotifications({ onCommit: afterAnswer }, message.id, prepared.pushRecipients);
    if (prepared.emailCandidates.length > 0)
      queueEmailNotifications({ onCommit: afterAnswer }, message.id, prepared.emailCandidates);
  } finally {
    writing.done();
  }
  return { message, automaticPolicy: null };
}

/** The row `insertMessage` returns, built without it: a message's events are written in the
 * statement that inserts it. The columns the insert leaves to their defaults are the
 * defaults. */
function messageRow(prepared: PreparedMessage, recipientId: number): Message {
  const { realm, sender, addressee, rendered, content, options } = prepared;
  return {
    id: prepared.messageId,
    realmId: realm.id,
    senderId: sender.id,
    recipientId,
    subject: addressee.kind === 'channel' ? addressee.topic : '',
    content,
    renderedContent: rendered.html,
    renderedContentVersion: 1,
    dateSent: prepared.dateSent,
    sendingClient: options.client,
    lastEditTime: null,
    lastMovedTime: null,
    editHistory: null,
    isChannelMessage: addressee.kind === 'channel',
    hasAttachment: false,
    hasImage: rendered.hasImage,
    hasLink: hasLink(rendered),
    type: options.type ?? MessageType.NORMAL,
  };
}

/** The writes of a send in a transaction, and its events queued for after the commit. */
export async function doSendMessage(
  ctx: ActionContext,
  prepared: PreparedMessage,
): Promise<SentMessage> {
  const { tx } = ctx;
  const { realm, sender, addressee, rendered, content, flags } = prepared;
  const recipientId =
    prepared.recipientId ??
    (await createDirectMessageGroup(
      tx,
      realm,
      [...flags.keys()].sort((a, b) => a - b),
    ));
  const [message] = await query(insertMessage, messageParams(prepared, recipientId, null));
  if (
    linkedPathIds(content).length > 0 &&
    (await doUpdateAttachmentLinks(ctx, sender, message!, content)).linked
  )
    message!.hasAttachment = (
      await tx.message.update({ where: { id: message!.id }, data: { hasAttachment: true } })
    ).hasAttachment;
  if (addressee.kind === 'channel' && addressee.stream.firstMessageId === null)
    await tx.stream.update({
      where: { id: addressee.stream.id },
      data: { firstMessageId: message!.id },
    });
  const submessages = prepared.widget
    ? [await doAddWidgetSubmessage(message!, prepared.widget)]
    : NO_SUBMESSAGES;
  for (const { event, users } of messageNotifications(prepared, message!, submessages))
    sendEventOnCommit(ctx, event, users);
  if (prepared.pushRecipients.length > 0)
    queuePushNotifications(ctx, message!.id, prepared.pushRecipients);
  if (prepared.emailCandidates.length > 0)
    queueEmailNotifications(ctx, message!.id, prepared.emailCandidates);
  const automaticPolicy =
    addressee.kind === 'channel'
      ? await doAutoFollowOnSend(
          ctx,
          sender,
          addressee.stream,
          addressee.topic,
          prepared.policyContext,
          [...rendered.mentions.userIds].filter((id) => flags.has(id)),
        )
      : null;
  return { message: message!, automaticPolicy };
}

/** The first message to a group of three or more creates its direct-message group, with its
 * members subscribed. ON CONFLICT DO NOTHING, then read: a concurrent first message to the
 * same group waits for the other transaction and then uses the group it created. */
async function createDirectMessageGroup(tx: Tx, realm: Realm, ids: number[]): Promise<number> {
  const hash = groupHash(ids);
  await tx.directMessageGroup.createMany({
    data: [{ realmId: realm.id, hash, groupSize: ids.length }],
    skipDuplicates: true,
  });
  const group = await tx.directMessageGroup.findUniqueOrThrow({
    where: { realmId_hash: { realmId: realm.id, hash } },
  });
  if (group.recipientId) return group.recipientId;
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
  return recipient.id;
}

/** Zulip's WILDCARD_MENTION_THRESHOLD: wildcards reaching more people than this need the
 * organization's can_mention_many_users_group (administrators by default). */
const WILDCARD_MENTION_THRESHOLD = 15;

function checkWildcardMention(
  realm: Realm,
  senderGroups: Set<number>,
  rendered: Rendered,
  recipients: number[],
  topicParticipants: ReadonlySet<number>,
): void {
  if (inRealmGroups(realm, 'can_mention_many_users_group', senderGroups)) return;
  const { wildcard } = rendered.mentions;
  if (wildcard === 'channel' && recipients.length > WILDCARD_MENTION_THRESHOLD)
    throw new StreamWildcardMentionNotAllowedError();
  if (wildcard === 'topic' && topicParticipants.size > WILDCARD_MENTION_THRESHOLD)
    throw new TopicWildcardMentionNotAllowedError();
}

const activeSubscriberCount = statement<{ count: number }, [number]>(`
  SELECT count(*)::int AS count FROM subscription
  WHERE recipient_id = $1 AND active AND is_user_active`);

/** Zulip's participants_for_topic: who sent a message in the topic or reacted to one. */
const topicParticipantsStatement = statement<{ id: number }, [number, string]>(`
  WITH topic AS (SELECT id, sender_id FROM message
    WHERE recipient_id = $1 AND upper(subject) = upper($2))
  SELECT sender_id AS id FROM topic
  UNION SELECT r.user_profile_id FROM reaction r JOIN topic ON topic.id = r.message_id`);

export async function topicParticipantIds(recipientId: number, topic: string): Promise<number[]> {
  return (await query(topicParticipantsStatement, [recipientId, topic])).map((row) => row.id);
}

const NO_PARTICIPANTS: ReadonlySet<number> = new Set();

/** An edit's wildcard mention (Zulip's check_update_message with
 * stream_wildcard_mention_allowed and topic_wildcard_mention_allowed): as at sending, a
 * wildcard reaching more than the threshold (the channel's active subscribers, the topic's
 * participants) needs the organization's can_mention_many_users_group. */
export async function checkEditWildcardMention(
  realm: Realm,
  senderGroups: Set<number>,
  rendered: Rendered,
  conversation: { recipientId: number; topic: string },
): Promise<void> {
  const { wildcard } = rendered.mentions;
  if (wildcard === null || inRealmGroups(realm, 'can_mention_many_users_group', senderGroups))
    return;
  if (wildcard === 'channel') {
    const [row] = await query(activeSubscriberCount, [conversation.recipientId]);
    if (row!.count > WILDCARD_MENTION_THRESHOLD) throw new StreamWildcardMentionNotAllowedError();
  } else {
    const participants = await topicParticipantIds(conversation.recipientId, conversation.topic);
    if (participants.length > WILDCARD_MENTION_THRESHOLD)
      throw new TopicWildcardMentionNotAllowedError();
  }
}

/** A message's recipients, compactly: a channel of a thousand members is one row of arrays,
 * not a thousand rows to parse, with the few recipients that differ named apart. */
interface Recipients {
  /** Ascending; `roles` in the same order (events differ in which addresses a viewer may
   * see). */
  ids: number[];
  roles: number[];
  /** Users who muted the sender (a few, recipients or not: read by the sender's index rather
   * than once per recipient). */
  mutedSender: Set<number>;
  /** Recipients' alert words (only those who have some). */
  alertWords: Map<number, string[]>;
  /** Push settings of recipients other than the sender with a registered device (computed for
   * nobody else: the subscription and topic lookups cost only them). */
  push: Map<number, PushSettings>;
  bots: Set<number>;
  /** Channel messages: subscribers who follow the topic or asked for the channel's emails. */
  emailed: Set<number>;
}

interface RecipientsRow {
  /** The message's id and time, taken when it is prepared: its events are built before the
   * statement that writes it (see sendAlone). An id taken by a message that is then refused is
   * never used, as with any sequence. */
  messageId: number;
  dateSent: Date;
  /** Null when there are none (an unsubscribed sender to a channel nobody follows). */
  ids: number[] | null;
  roles: number[] | null;
  mutedSender: number[];
  alertWords: { id: number; word: string }[] | null;
  push: { id: number; settings: PushSettings }[] | null;
  bots: number[] | null;
  emailed: number[];
}

/** Everything each recipient's flags and events depend on, with the new message's id and time,
 * in one row: `cte` goes in a statement's WITH, `columns` in its select list, `from` in its
 * FROM. `users` is the recipients' ids (an int[] expression); `realm`, `sender`, `recipient`
 * and `topic` give the organization's id, the sender's id, the conversation's recipient id (NULL
 * for direct messages: no subscription settings or topic policies apply) and its topic. Alert
 * words are read by organization as well as by user: where few of its members have any (most
 * organizations), PostgreSQL reads them through the organization's index instead of probing
 * once per recipient (2,002 buffer hits and 1 ms for a channel of 1,001). The recipients' rows
 * are read once: push settings are read again only for those with a device
 * (user_profile.has_push_device), not probed for in push_device_token once per recipient. */
function recipientsSql(p: {
  users: string;
  realm: string;
  sender: string;
  recipient: string;
  topic: string;
}): {
  cte: string;
  columns: string;
  from: string;
} {
  return {
    cte: `r AS (
      SELECT u.id, u.role, u.is_bot, u.has_push_device
      FROM user_profile u WHERE u.id = ANY(${p.users}))`,
    columns: `(SELECT nextval('message_id_seq'))::int AS "messageId", now() AS "dateSent",
      a.ids, a.roles,
      ARRAY(SELECT mu.user_profile_id FROM muted_user mu WHERE mu.muted_user_id = ${p.sender})
        AS "mutedSender",
      (SELECT json_agg(json_build_object('id', aw.user_profile_id, 'word', aw.word))
        FROM alert_word aw WHERE aw.realm_id = ${p.realm} AND aw.user_profile_id = ANY(a.ids))
        AS "alertWords",
      (SELECT json_agg(json_build_object('id', pu.id, 'settings', json_build_object(
          'offline', pu.enable_offline_push_notifications,
          'channelPush', COALESCE(s.push_notifications, pu.enable_stream_push_notifications),
          'wildcardNotify', COALESCE(s.wildcard_mentions_notify, pu.wildcard_mentions_notify),
          'channelMuted', s.is_muted,
          'topicPolicy', (SELECT ut.visibility_policy FROM user_topic ut
            WHERE ut.user_profile_id = pu.id AND ut.recipient_id = ${p.recipient}
              AND lower(ut.topic_name) = lower(${p.topic})
            ORDER BY ut.id DESC LIMIT 1),
          'followedPush', pu.enable_followed_topic_push_notifications,
          'followedWildcard', pu.enable_followed_topic_wildcard_mentions_notify)))
        FROM user_profile pu LEFT JOIN subscription s
          ON s.user_profile_id = pu.id AND s.recipient_id = ${p.recipient}
        WHERE pu.id = ANY(a.pushed)) AS push,
      a.bots,
      ARRAY(SELECT ut.user_profile_id FROM user_topic ut
          WHERE ut.recipient_id = ${p.recipient} AND lower(ut.topic_name) = lower(${p.topic})
            AND ut.visibility_policy = ${VisibilityPolicy.FOLLOWED}
        UNION SELECT s.user_profile_id FROM subscription s
          WHERE s.recipient_id = ${p.recipient} AND s.email_notifications AND s.active
        UNION SELECT s.user_profile_id FROM user_profile eu JOIN subscription s
            ON s.user_profile_id = eu.id AND s.recipient_id = ${p.recipient}
          WHERE eu.realm_id = ${p.realm} AND eu.enable_stream_email_notifications
            AND eu.is_active AND s.email_notifications IS NULL AND s.active) AS emailed`,
    from: `(SELECT array_agg(r.id) AS ids, array_agg(r.role) AS roles,
        array_agg(r.id) FILTER (WHERE r.has_push_device AND NOT r.is_bot AND r.id <> ${p.sender})
          AS pushed, array_agg(r.id) FILTER (WHERE r.is_bot) AS bots
      FROM (SELECT * FROM r ORDER BY r.id) r) a`,
  };
}

const DIRECT_RECIPIENTS = recipientsSql({
  users: '$1::int[]',
  realm: '$3',
  sender: '$2',
  recipient: 'NULL::int',
  topic: "''",
});
/** A direct message's conversation and recipients in one read: the recipients ($1, the sender
 * $2 among them, recipientsSql); the conversation's recipient, a 1:1's (or a note to oneself)
 * being the other user's ($5) personal recipient and a group's its direct_message_group (by
 * hash $4 in organization $3; null before its first message); for a 1:1 the sender's own
 * personal recipient; and the sender's groups (the organization's direct-message settings and
 * group mentions need them). */
const directForSend = statement<
  RecipientsRow & {
    recipientId: number | null;
    senderRecipientId: number | null;
    senderGroups: number[];
  },
  [string, number, number, string | null, number | null]
>(`
  WITH ${DIRECT_RECIPIENTS.cte}
  SELECT CASE WHEN $4::text IS NULL
      THEN (SELECT id FROM recipient WHERE type = ${RecipientType.PERSONAL} AND type_id = $5::int)
      ELSE (SELECT recipient_id FROM direct_message_group WHERE realm_id = $3 AND hash = $4::text)
    END AS "recipientId",
    CASE WHEN $4::text IS NULL
      THEN (SELECT id FROM recipient WHERE type = ${RecipientType.PERSONAL} AND type_id = $2)
    END AS "senderRecipientId",
    ${groupIdsOfUserSql('$2')} AS "senderGroups",
    ${DIRECT_RECIPIENTS.columns}
  FROM ${DIRECT_RECIPIENTS.from}`);

function recipientsOf(row: RecipientsRow): Recipients {
  const alertWords = new Map<number, string[]>();
  for (const { id, word } of row.alertWords ?? []) {
    const words = alertWords.get(id);
    if (words) words.push(word);
    else alertWords.set(id, [word]);
  }
  return {
    ids: row.ids ?? [],
    roles: row.roles ?? [],
    mutedSender: new Set(row.mutedSender),
    alertWords,
    push: new Map((row.push ?? []).map(({ id, settings }) => [id, settings])),
    bots: new Set(row.bots),
    emailed: new Set(row.emailed),
  };
}

/** Each recipient's flags: read for the sender when sent by a person and for those who muted
 * the sender, is_private for direct messages, mentioned for direct mentions and the members of
 * `mentionedGroups` (the groups mentioned with notification, read with their members), the
 * wildcard flags for everyone a wildcard reaches (a topic wildcard: `topicParticipants`), and
 * has_alert_word for those with one of their alert words in it. */
function recipientFlags(
  sender: User,
  addressee: Addressee,
  recipients: Recipients,
  content: string,
  rendered: Rendered,
  mentionedGroups: readonly NamedGroup[],
  topicParticipants: ReadonlySet<number>,
  options: SendOptions,
): ReadonlyMap<number, readonly UserMessageFlag[]> {
  const { mentions } = rendered;
  const isChannel = addressee.kind === 'channel';
  const mentioned = new Set(mentions.userIds);
  for (const group of mentionedGroups) for (const id of group.members) mentioned.add(id);
  const text = recipients.alertWords.size > 0 ? searchableText(content) : '';
  const flags = new Map<number, UserMessageFlag[]>();
  // Recipients with the same flags share one list (a channel's members nearly all have the
  // same), so what is derived from a list later is derived once per list (messageNotifications).
  const shared = new Map<bigint, UserMessageFlag[]>();
  for (const userId of recipients.ids) {
    const muted = recipients.mutedSender.has(userId);
    const alertWords = recipients.alertWords.get(userId) ?? NO_ALERT_WORDS;
    const list: UserMessageFlag[] = [];
    if (
      (userId === sender.id && options.readBySender) ||
      muted ||
      options.readFor?.has(userId) ||
      (options.unreadOnlyFor && !options.unreadOnlyFor.has(userId))
    )
      list.push('read');
    if (mentioned.has(userId)) list.push('mentioned');
    if (mentions.wildcard === 'channel') list.push('stream_wildcard_mentioned');
    if (mentions.wildcard === 'topic' && (!isChannel || topicParticipants.has(userId)))
      list.push('topic_wildcard_mentioned');
    if (!isChannel) list.push('is_private');
    if (alertWords.some((word) => containsAlertWord(text, word))) list.push('has_alert_word');
    const bits = flagsToBitmask(list);
    const same = shared.get(bits);
    if (same) flags.set(userId, same);
    else {
      shared.set(bits, list);
      flags.set(userId, list);
    }
  }
  return flags;
}

const NO_ALERT_WORDS: readonly string[] = [];

const activeViewers = statement<Viewer, [number[], number]>(`
  SELECT id, role FROM user_profile
  WHERE id = ANY($1::int[]) AND realm_id = $2 AND is_active AND role <> ${Role.GUEST}`);

/** Queues registered with all_public_streams see public-channel messages their users did not
 * receive, with no flags (Zulip's process_message_event). `listed`: the organization's users
 * with such queues (allPublicStreamsKey), read for public-channel messages only. */
async function publicStreamsViewers(
  realm: Realm,
  listed: string[],
  recipients: ReadonlyMap<number, readonly UserMessageFlag[]>,
): Promise<Viewer[]> {
  const candidates = listed.map(Number).filter((id) => Number.isInteger(id) && !recipients.has(id));
  if (candidates.length === 0) return [];
  return query(activeViewers, [candidates, realm.id]);
}

/** One `message` event per distinct form: recipients differ in flags and in which addresses
 * they may see. Raw Markdown and the avatar's computability travel in internal_data for the
 * events tier's per-queue formatting. */
function messageNotifications(
  prepared: PreparedMessage,
  message: Message,
  submessages: readonly PresentedSubmessage[] = NO_SUBMESSAGES,
): Notification[] {
  const { flags, options } = prepared;
  const forms = messageEventForms(prepared, message, submessages);
  // Guests learn of the people this message lets them see before they see it.
  const notifications: Notification[] = [...prepared.access.accessGrants];
  // This runs once per recipient, so recipients alike are found by identity, with no string
  // built per recipient: a form is one object per distinct form (messageEventForms), a flag
  // list one per distinct list (recipientFlags), shown and keyed once by what it shows, and
  // internal data one object per kind.
  const shownFlags = new Map<readonly UserMessageFlag[], { shown: string[]; key: string }>();
  const alike = new Map<EventForm, Map<string, Map<Record<string, unknown>, Notification>>>();
  const add = (
    viewer: Viewer,
    viewerFlags: readonly UserMessageFlag[],
    internal: Record<string, unknown>,
  ) => {
    const form = forms(viewer);
    let flagsForm = shownFlags.get(viewerFlags);
    if (!flagsForm) {
      const shown = apiFlags(viewerFlags);
      flagsForm = { shown, key: shown.join(',') };
      shownFlags.set(viewerFlags, flagsForm);
    }
    let byFlags = alike.get(form);
    if (!byFlags) alike.set(form, (byFlags = new Map()));
    let byInternal = byFlags.get(flagsForm.key);
    if (!byInternal) byFlags.set(flagsForm.key, (byInternal = new Map()));
    const group = byInternal.get(internal);
    if (group) {
      group.users.push(viewer.id);
      return;
    }
    const event = {
      type: 'message',
      message: form.message,
      flags: flagsForm.shown,
      internal_data: {
        raw_content: message.content,
        avatar_gravatar: form.avatarGravatar,
        ...internal,
      },
    };
    const notification = { event, users: [viewer.id] };
    byInternal.set(internal, notification);
    notifications.push(notification);
  };
  const senderData = options.localEcho
    ? { sender_queue_id: options.localEcho.queueId, local_id: options.localEcho.localId }
    : NO_INTERNAL_DATA;
  for (const viewer of prepared.viewers)
    add(
      viewer,
      flags.get(viewer.id)!,
      viewer.id === message.senderId ? senderData : NO_INTERNAL_DATA,
    );
  const publicStreamsOnly = { all_public_streams_only: true };
  for (const viewer of prepared.publicStreamsViewers) add(viewer, NO_FLAGS, publicStreamsOnly);
  return notifications;
}

const NO_INTERNAL_DATA: Record<string, unknown> = {};
const NO_SUBMESSAGES: readonly PresentedSubmessage[] = [];
const NO_FLAGS: readonly UserMessageFlag[] = [];

/** The forms of one message for its recipients' events: rendered HTML, the empty topic as ""
 * (the events tier substitutes the display name for clients without empty_topic_name), and
 * whether a client_gravatar queue may compute the avatar. Built from what prepareMessage
 * read: no statements per viewer. */
function messageEventForms(
  prepared: PreparedMessage,
  message: Message,
  submessages: readonly PresentedSubmessage[],
): (viewer: Viewer) => EventForm {
  const { realm, sender, addressee } = prepared;
  const form = (
    visible: boolean,
    display: DisplayRecipient,
    recipientId: number,
    accessible = true,
  ): EventForm => {
    const presented = presentMessage(message, realm, {
      sender,
      senderEmailVisible: visible,
      senderAccessible: accessible,
      displayRecipient: display,
      streamId: addressee.kind === 'channel' ? addressee.stream.id : null,
      recipientId,
      flags: [],
      applyMarkdown: true,
      clientGravatar: false,
      allowEmptyTopicName: true,
      editHistoryPolicy: realm.editHistoryVisibilityPolicy,
      topicLinks: prepared.topicLinks,
      submessages: [...submessages],
    });
    // Flags travel beside the message in the event, not inside it.
    delete presented.flags;
    return {
      message: presented,
      avatarGravatar: accessible && visible && sender.avatarSource === 'G',
    };
  };
  if (addressee.kind === 'channel') {
    // Viewers of a channel message differ only in whether they may see the sender's address,
    // and, for guests limited by can_access_all_users_group, the sender at all.
    const { senderHiddenFrom } = prepared.access;
    const byVisibility = new Map<boolean, EventForm>();
    let hiddenForm: EventForm | undefined;
    return (viewer) => {
      if (senderHiddenFrom.has(viewer.id))
        return (hiddenForm ??= form(false, addressee.stream.name, message.recipientId, false));
      const visible = canSeeDeliveryEmail(viewer, sender);
      let found = byVisibility.get(visible);
      if (!found)
        byVisibility.set(
          visible,
          (found = form(visible, addressee.stream.name, message.recipientId)),
        );
      return found;
    };
  }
  const forms = new Map<string, EventForm>();
  const participants = uniqueUsers([sender, ...addressee.users]).sort((a, b) => a.id - b.id);
  // A 1:1 message's recipient is the other user's personal recipient: for that user, the
  // conversation is the sender's.
  const incomingTo =
    prepared.senderRecipientId === null ? null : participants.find((u) => u.id !== sender.id)?.id;
  return (viewer) => {
    const visible = canSeeDeliveryEmail(viewer, sender);
    const display = directDisplay(
      // A 1:1 message is the one with the sender's personal recipient beside the other's.
      prepared.senderRecipientId === null
        ? RecipientType.DIRECT_MESSAGE_GROUP
        : RecipientType.PERSONAL,
      participants.map((user) => displayUser(viewer, user, realm)),
    );
    const recipientId =
      viewer.id === incomingTo ? prepared.senderRecipientId! : message.recipientId;
    const key = `${visible}:${recipientId}:${JSON.stringify(display)}`;
    let found = forms.get(key);
    if (!found) forms.set(key, (found = form(visible, display, recipientId)));
    return found;
  };
}

/** A message as one group of its recipients sees it (see messageEventForms). */
interface EventForm {
  message: Record<string, unknown>;
  avatarGravatar: boolean;
}
