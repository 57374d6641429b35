// Reading messages and deciding who may see them (Zulip's access_message and
// has_message_access), and turning rows into message objects for one viewer.
import {
  bitmaskToFlags,
  columnsOf,
  getPrisma,
  query,
  RecipientType,
  Role,
  statement,
  type Message,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { topicLinks } from '@parley/markdown';
import {
  presentMessage,
  type DisplayRecipient,
  type DisplayRecipientUser,
  type PresentedReaction,
  type PresentedSubmessage,
} from '../presenters/messages';
import { linkifiersForRealm } from './linkifiers';
import { groupIdsOfUserSql } from './groups';
import {
  hasContentAccess,
  loadPermissions,
  subscribedSql,
  subscriptionOf,
  type ContentAccessStream,
  type Permissions,
} from './streams';
import { canSeeDeliveryEmail, dummyEmail } from './users';
import { inaccessibleUserIds } from './user-access';

export class InvalidMessageError extends JsonableError {
  constructor() {
    super('Invalid message(s)');
  }
}

export interface AccessedMessage {
  message: Message;
  /** The viewer's flags bitmask, or null when the message is only in their history by
   * access to the channel (Zulip's "historical"). */
  flags: bigint | null;
  stream: Stream | null;
}

/** Zulip's access_message: the message if `user` may read it. "Invalid message(s)" also for
 * messages that exist but are not visible, so their ids are not revealed. */
export async function accessMessage(
  user: User,
  messageId: number,
  db: Tx = getPrisma(),
  { lock = false }: { lock?: boolean } = {},
): Promise<AccessedMessage> {
  // Edits and deletions lock the row first, so concurrent ones apply one after another.
  if (lock) await db.$queryRaw`SELECT id FROM message WHERE id = ${messageId} FOR UPDATE`;
  const message = await db.message.findFirst({ where: { id: messageId, realmId: user.realmId } });
  if (!message) throw new InvalidMessageError();
  const row = await db.userMessage.findUnique({
    where: { userId_messageId: { userId: user.id, messageId } },
    select: { flags: true },
  });
  if (!message.isChannelMessage) {
    if (!row) throw new InvalidMessageError();
    return { message, flags: row.flags, stream: null };
  }
  const stream = await db.stream.findFirst({ where: { recipientId: message.recipientId } });
  if (!stream) throw new InvalidMessageError();
  const perms = await loadPermissions(user);
  const subscribed = (await subscriptionOf(user.id, stream, db)) !== null;
  checkReadable(perms, stream, subscribed, row !== null);
  return { message, flags: row?.flags ?? null, stream };
}

/** Zulip's event_recipient_ids_for_action_on_messages for a channel message: its subscribers
 * who may read it (all of them where the channel shares its history, else those with a copy),
 * and in a public channel also the non-guests with a copy (who read it while subscribed, or
 * reacted to it from its history). */
const channelMessageAudience = statement<{ userId: number }, [number, number, boolean, boolean]>(`
  WITH subscribers AS (
    SELECT user_profile_id AS id FROM subscription
    WHERE recipient_id = $2 AND active AND is_user_active
  ), copies AS (
    SELECT um.user_profile_id AS id, u.role FROM user_message um
    JOIN user_profile u ON u.id = um.user_profile_id
    WHERE um.message_id = $1
  )
  SELECT id AS "userId" FROM subscribers WHERE $3 OR id IN (SELECT id FROM copies)
  UNION
  SELECT id FROM copies WHERE $3 AND $4 AND role <> ${Role.GUEST}`);
const messageCopyHolders = statement<{ userId: number }, [number]>(
  `SELECT user_profile_id AS "userId" FROM user_message WHERE message_id = $1`,
);

/** Who is told of an action on a message (a reaction, a submessage): those who can still read
 * it (Zulip's event_recipient_ids_for_action_on_messages). A direct message's participants
 * are its copy holders; a channel's, see channelMessageAudience. */
export async function messageAudience(
  message: Pick<Message, 'id'>,
  stream: Pick<Stream, 'historyPublicToSubscribers' | 'inviteOnly' | 'recipientId'> | null,
): Promise<number[]> {
  const rows = stream
    ? await query(channelMessageAudience, [
        message.id,
        stream.recipientId!,
        stream.historyPublicToSubscribers,
        !stream.inviteOnly,
      ])
    : await query(messageCopyHolders, [message.id]);
  return rows.map((row) => row.userId);
}

/** Zulip's has_message_access for a channel message: a copy of the message is not enough once
 * the user can no longer read the channel (unsubscribed from a private one, or a guest who
 * left); without a copy, the channel must share its history. */
function checkReadable(
  perms: Permissions,
  stream: ContentAccessStream & Pick<Stream, 'historyPublicToSubscribers'>,
  subscribed: boolean,
  received: boolean,
): void {
  if (!hasContentAccess(perms, stream, subscribed)) throw new InvalidMessageError();
  if (!received && !stream.historyPublicToSubscribers) throw new InvalidMessageError();
}

interface ReadAccessRow extends ContentAccessStream {
  isChannelMessage: boolean;
  flags: string | null;
  streamId: number | null;
  historyPublicToSubscribers: boolean;
  subscribed: boolean;
  groupIds: number[] | null;
}

/** Everything accessMessage decides on, in one statement (the viewer's groups only for
 * channel messages). */
const READ_ACCESS = `
  SELECT m.is_channel_message AS "isChannelMessage", um.flags::text AS flags,
    s.id AS "streamId", s.invite_only AS "inviteOnly", s.is_web_public AS "isWebPublic",
    s.history_public_to_subscribers AS "historyPublicToSubscribers",
    s.can_subscribe_group_id AS "canSubscribeGroupId",
    s.can_add_subscribers_group_id AS "canAddSubscribersGroupId",
    ${subscribedSql('$2', 'm.recipient_id')} AS subscribed,
    CASE WHEN m.is_channel_message THEN ${groupIdsOfUserSql('$2')} END AS "groupIds"
  FROM message m
  LEFT JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = $2
  LEFT JOIN stream s ON m.is_channel_message AND s.recipient_id = m.recipient_id
  WHERE m.id = $1 AND m.realm_id = $3`;

/** accessMessage for reading only: the viewer's flags if the access row says they may read
 * the message. */
function readableFlags(user: User, row: ReadAccessRow | null | undefined): bigint | null {
  if (!row) throw new InvalidMessageError();
  const flags = row.flags === null ? null : BigInt(row.flags);
  if (!row.isChannelMessage) {
    if (flags === null) throw new InvalidMessageError();
    return flags;
  }
  if (row.streamId === null) throw new InvalidMessageError();
  checkReadable({ user, groups: new Set(row.groupIds) }, row, row.subscribed, flags !== null);
  return flags;
}

/** Zulip's has_message_access for messages the user did not receive: the channel shares its
 * history with subscribers and the user could read it (subscribed, or a public channel). */
export async function canReadChannelHistory(
  perms: Permissions,
  stream: Stream,
  db: Tx = getPrisma(),
): Promise<boolean> {
  if (!stream.historyPublicToSubscribers) return false;
  const subscribed = (await subscriptionOf(perms.user.id, stream, db)) !== null;
  return channelHistoryReadable(perms, stream, subscribed);
}

/** canReadChannelHistory when the caller already knows whether the user is subscribed. */
export function channelHistoryReadable(
  perms: Permissions,
  stream: ContentAccessStream & Pick<Stream, 'historyPublicToSubscribers'>,
  subscribed: boolean,
): boolean {
  return stream.historyPublicToSubscribers && hasContentAccess(perms, stream, subscribed);
}

/** Whether the viewer can see a message of a topic (Zulip's bulk_access_stream_messages_query):
 * $1 the channel's recipient, $2 the topic (compared case-insensitively, as Zulip does), other
 * than the messages of $3 and, when $6 is not null, older than $6; any message in a channel
 * with shared history ($4), else those the viewer ($5) received. */
const visibleTopicMessage = statement<
  { found: boolean },
  [number, string, number[], boolean, number, number | null]
>(`
  SELECT EXISTS (
    SELECT 1 FROM message m
    WHERE m.recipient_id = $1 AND upper(m.subject) = upper($2) AND m.id <> ALL($3::int[])
      AND ($6::int IS NULL OR m.id < $6::int)
      AND ($4 OR EXISTS (
        SELECT 1 FROM user_message um WHERE um.user_profile_id = $5 AND um.message_id = m.id))
  ) AS found`);

const topicMessageExists = statement<{ found: boolean }, [number, string, number[]]>(`
  SELECT EXISTS (SELECT 1 FROM message
    WHERE recipient_id = $1 AND upper(subject) = upper($2) AND id <> ALL($3::int[])) AS found`);

/** Whether a topic has messages other than those of `except`, whoever may see them (Zulip's
 * messages_for_topic(...).exists()). */
export async function topicHasMessages(
  stream: Pick<Stream, 'recipientId'>,
  topic: string,
  except: number[] = [],
): Promise<boolean> {
  const [row] = await query(topicMessageExists, [stream.recipientId!, topic, except]);
  return row!.found;
}

export async function hasVisibleTopicMessage(
  viewer: Pick<User, 'id'>,
  stream: Stream,
  topic: string,
  except: number[],
  { before = null }: { before?: number | null } = {},
): Promise<boolean> {
  const [row] = await query(visibleTopicMessage, [
    stream.recipientId!,
    topic,
    except,
    stream.historyPublicToSubscribers,
    viewer.id,
    before,
  ]);
  return row!.found;
}

/** Internal flags never shown (Zulip's NON_API_FLAGS). */
const NON_API_FLAGS = new Set(['is_private', 'active_mobile_push_notification']);

/** A user's flags as the API shows them: without internal ones, with the deprecated
 * wildcard_mentioned alias; a message only in their history by channel access is
 * ["read", "historical"]. */
export function flagNames(flags: bigint | null): string[] {
  if (flags === null) return ['read', 'historical'];
  return apiFlags(bitmaskToFlags(flags));
}

export function apiFlags(flags: readonly string[]): string[] {
  const shown = flags.filter((flag) => !NON_API_FLAGS.has(flag));
  if (shown.includes('stream_wildcard_mentioned') || shown.includes('topic_wildcard_mentioned'))
    shown.push('wildcard_mentioned');
  return shown;
}

export interface PresentOptions {
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allowEmptyTopicName: boolean;
}

/** What a message object shows of a user (its sender, or a direct message's participant). */
export type MessageUser = Pick<
  User,
  | 'id'
  | 'fullName'
  | 'deliveryEmail'
  | 'avatarSource'
  | 'avatarVersion'
  | 'avatarHash'
  | 'isBot'
  | 'emailAddressVisibility'
  | 'isMirrorDummy'
>;

interface MessageDisplayRow extends Message {
  recipientType: number;
  recipientTypeId: number;
  streamName: string | null;
  /** A direct-message group's members, by id. */
  groupMembers: number[] | null;
  /** For a 1:1 message the viewer received: the sender's personal recipient id. */
  senderRecipientId: number | null;
  reactions: PresentedReaction[];
  submessages: PresentedSubmessage[];
  /** On one row of the result (null on the others): the users all the messages read together
   * show, senders and direct messages' participants. */
  users: MessageUser[] | null;
}

/** What a message shows of user `u`, as JSON with MessageUser's field names. */
const MESSAGE_USER_JSON = `json_build_object('id', u.id, 'fullName', u.full_name,
  'deliveryEmail', u.delivery_email, 'avatarSource', u.avatar_source,
  'avatarVersion', u.avatar_version, 'avatarHash', u.avatar_hash, 'isBot', u.is_bot,
  'emailAddressVisibility', u.email_address_visibility, 'isMirrorDummy', u.is_mirror_dummy)`;

/** Messages with everything their display needs: recipient, channel name, group members, the
 * viewer's recipient id for incoming 1:1 messages, reactions and submessages oldest first (in
 * presentSubmessage's form), and every user the messages show, read once for all of them and
 * given on one row only (one round trip fewer than reading them apart; on every row, a page
 * of 5,000 messages would repeat them 5,000 times). The ids are joined from `unnest`, which keeps the planned-once (generic) plan on
 * index lookups: with `m.id = ANY($1)` it merged the whole recipient table once that table was
 * large. Each user is read by a lookup of their own (a subquery per id): joined, the generic
 * plan hashed the whole user_profile table once it held a few thousand users (1 ms of a
 * 1.4 ms page on the benchmark's data). */
const displaySql = (wanted: string, { with: before = '', columns = '' } = {}) => `
  WITH ${before} shown AS (
    SELECT ${columnsOf('Message', 'm')},
      r.type AS "recipientType", r.type_id AS "recipientTypeId", s.name AS "streamName",
      CASE WHEN r.type = ${RecipientType.DIRECT_MESSAGE_GROUP} THEN ARRAY(
        SELECT sub.user_profile_id FROM subscription sub WHERE sub.recipient_id = r.id
        ORDER BY sub.user_profile_id) END AS "groupMembers",
      CASE WHEN r.type = ${RecipientType.PERSONAL} AND r.type_id = $2 AND m.sender_id <> $2
        THEN (SELECT pr.id FROM recipient pr
              WHERE pr.type = ${RecipientType.PERSONAL} AND pr.type_id = m.sender_id)
      END AS "senderRecipientId",
      COALESCE((SELECT json_agg(json_build_object('emoji_name', x.emoji_name,
          'emoji_code', x.emoji_code, 'reaction_type', x.reaction_type,
          'user_id', x.user_profile_id) ORDER BY x.id)
        FROM reaction x WHERE x.message_id = m.id), '[]') AS reactions,
      COALESCE((SELECT json_agg(json_build_object('msg_type', sm.msg_type,
          'content', sm.content, 'message_id', sm.message_id, 'sender_id', sm.sender_id,
          'id', sm.id) ORDER BY sm.id)
        FROM submessage sm WHERE sm.message_id = m.id), '[]') AS submessages
    FROM ${wanted}
    JOIN message m ON m.id = wanted.id
    JOIN recipient r ON r.id = m.recipient_id
    LEFT JOIN stream s ON r.type = ${RecipientType.STREAM} AND s.id = r.type_id)
  SELECT shown.*, CASE WHEN row_number() OVER () = 1 THEN (
    SELECT COALESCE(json_agg(found.u) FILTER (WHERE found.u IS NOT NULL), '[]')
    FROM (SELECT (SELECT ${MESSAGE_USER_JSON} FROM user_profile u WHERE u.id = shown_user.id) AS u
      FROM (SELECT "senderId" AS id FROM shown
        UNION SELECT "recipientTypeId" FROM shown
          WHERE "recipientType" = ${RecipientType.PERSONAL}
        UNION SELECT unnest("groupMembers") FROM shown) AS shown_user) AS found) END AS users
    ${columns}
  FROM shown`;
const messagesForDisplay = statement<MessageDisplayRow, [number[], number]>(
  displaySql('unnest($1::int[]) AS wanted(id)'),
);

/** GET /messages/{id}'s one statement: what decides the viewer's access (READ_ACCESS, as JSON)
 * beside the message's display data, which the caller shows only if access allows. */
const messageForReading = statement<
  MessageDisplayRow & { access: ReadAccessRow | null },
  [number, number, number]
>(
  displaySql('(SELECT $1::int AS id) AS wanted', {
    with: `access AS (${READ_ACCESS}),`,
    columns: ', (SELECT row_to_json(access) FROM access) AS access',
  }),
);

export interface PresentedMessage {
  object: Record<string, unknown>;
  message: Message;
}

/** Message objects for `viewer`, in the order of `rows` (ids with the viewer's flags; ids no
 * longer there are skipped). One statement, however many messages: the messages with their
 * display data and users (the organization's linkifiers come from their cache). */
export async function presentMessageRows(
  viewer: User,
  realm: Realm,
  rows: { id: number; flags: bigint | null }[],
  options: PresentOptions,
): Promise<PresentedMessage[]> {
  if (rows.length === 0) return [];
  const loaded = await query(messagesForDisplay, [rows.map((row) => row.id), viewer.id]);
  return presentLoaded(viewer, realm, rows, loaded, options);
}

/** GET /messages/{id}: the message as `viewer` sees it if they may read it (else
 * InvalidMessageError, as for a message that does not exist), in one statement. */
export async function presentReadableMessage(
  viewer: User,
  realm: Realm,
  messageId: number,
  options: PresentOptions,
): Promise<PresentedMessage> {
  const [row] = await query(messageForReading, [messageId, viewer.id, viewer.realmId]);
  const flags = readableFlags(viewer, row?.access);
  return (await presentLoaded(viewer, realm, [{ id: messageId, flags }], [row!], options))[0]!;
}

async function presentLoaded(
  viewer: User,
  realm: Realm,
  rows: { id: number; flags: bigint | null }[],
  loadedRows: MessageDisplayRow[],
  options: PresentOptions,
): Promise<PresentedMessage[]> {
  const loaded = new Map(loadedRows.map((row) => [row.id, row]));
  const users = new Map<number, MessageUser>();
  for (const row of loaded.values())
    if (row.users) for (const user of row.users) users.set(user.id, user);
  const linkifiers = await linkifiersForRealm(realm.id);
  // A guest limited by can_access_all_users_group sees senders they may not access as
  // "Unknown user" (Zulip's messages_for_ids); a statement for guests only.
  const hiddenSenders = await inaccessibleUserIds(realm, viewer, [
    ...new Set([...loaded.values()].map((row) => row.senderId)),
  ]);
  return rows.flatMap(({ id, flags }) => {
    const row = loaded.get(id);
    if (!row) return [];
    const sender = users.get(row.senderId)!;
    const display: RecipientDisplay =
      row.recipientType === RecipientType.STREAM
        ? {
            display: row.streamName ?? '',
            streamId: row.recipientTypeId,
            recipientId: row.recipientId,
          }
        : {
            display: directDisplay(
              row.recipientType,
              participantIds(row).map((p) => displayUser(viewer, users.get(p)!, realm)),
            ),
            streamId: null,
            recipientId: row.senderRecipientId ?? row.recipientId,
          };
    return [
      {
        message: row,
        object: presentMessage(row, realm, {
          sender,
          senderEmailVisible: canSeeDeliveryEmail(viewer, sender),
          senderAccessible: !hiddenSenders.has(sender.id),
          displayRecipient: display.display,
          streamId: display.streamId,
          recipientId: display.recipientId,
          flags: flagNames(flags),
          ...options,
          topicLinks: topicLinks(row.subject, linkifiers),
          editHistoryPolicy: realm.editHistoryVisibilityPolicy,
          reactions: row.reactions,
          submessages: row.submessages,
        }),
      },
    ];
  });
}

/** The users a direct message shows, sender included, sorted by id (directDisplay then puts a
 * 1:1 pair in address order); none for a channel. */
function participantIds(
  row: Pick<MessageDisplayRow, 'recipientType' | 'recipientTypeId' | 'senderId' | 'groupMembers'>,
): number[] {
  if (row.recipientType === RecipientType.STREAM) return [];
  const ids =
    row.recipientType === RecipientType.PERSONAL
      ? [row.recipientTypeId, row.senderId]
      : (row.groupMembers ?? []);
  return [...new Set(ids)].sort((a, b) => a - b);
}

async function usersById(ids: number[], db: Tx): Promise<Map<number, User>> {
  const users = await db.user.findMany({ where: { id: { in: [...new Set(ids)] } } });
  return new Map(users.map((user) => [user.id, user]));
}

interface RecipientDisplay {
  display: DisplayRecipient;
  streamId: number | null;
  /** The conversation's recipient id for this viewer: an incoming 1:1 message shows the
   * sender's personal recipient, so both directions share one id (feature level 327). */
  recipientId: number;
}

/** display_recipient of each message: the channel's name, or the users of a direct message,
 * sender included, as directDisplay orders them (a 1:1 message's recipient row is the other
 * user's; a group's members are the subscribers of its recipient). */
export async function displayRecipients(
  viewer: Pick<User, 'id' | 'role'>,
  realm: Pick<Realm, 'stringId'>,
  messages: Pick<Message, 'recipientId' | 'senderId'>[],
  db: Tx = getPrisma(),
): Promise<(message: Pick<Message, 'recipientId' | 'senderId'>) => RecipientDisplay> {
  // Only 1:1 messages the viewer received have their sender's recipient looked up below.
  const recipientIds = [...new Set(messages.map((m) => m.recipientId))];
  const recipients = new Map(
    (await db.recipient.findMany({ where: { id: { in: recipientIds } } })).map((r) => [r.id, r]),
  );
  const all = [...recipients.values()];
  const streams = new Map(
    (
      await db.stream.findMany({
        where: {
          id: { in: all.filter((r) => r.type === RecipientType.STREAM).map((r) => r.typeId) },
        },
        select: { id: true, name: true },
      })
    ).map((s) => [s.id, s.name]),
  );
  const groupMembers = new Map<number, number[]>();
  const groups = all.filter((r) => r.type === RecipientType.DIRECT_MESSAGE_GROUP).map((r) => r.id);
  if (groups.length > 0) {
    for (const sub of await db.subscription.findMany({
      where: { recipientId: { in: groups } },
      select: { recipientId: true, userId: true },
    })) {
      groupMembers.set(sub.recipientId, [...(groupMembers.get(sub.recipientId) ?? []), sub.userId]);
    }
  }
  const participantsOf = (message: Pick<Message, 'recipientId' | 'senderId'>): number[] => {
    const recipient = recipients.get(message.recipientId)!;
    return participantIds({
      recipientType: recipient.type,
      recipientTypeId: recipient.typeId,
      senderId: message.senderId,
      groupMembers: groupMembers.get(recipient.id) ?? null,
    });
  };
  const incomingSenders = messages
    .filter((m) => {
      const recipient = recipients.get(m.recipientId)!;
      return (
        recipient.type === RecipientType.PERSONAL &&
        recipient.typeId === viewer.id &&
        m.senderId !== viewer.id
      );
    })
    .map((m) => m.senderId);
  const senderRecipients = new Map(
    (incomingSenders.length > 0
      ? await db.recipient.findMany({
          where: { type: RecipientType.PERSONAL, typeId: { in: [...new Set(incomingSenders)] } },
        })
      : []
    ).map((r) => [r.typeId, r.id]),
  );
  const people = await usersById(
    messages.flatMap((m) =>
      recipients.get(m.recipientId)!.type === RecipientType.STREAM ? [] : participantsOf(m),
    ),
    db,
  );
  return (message) => {
    const recipient = recipients.get(message.recipientId)!;
    if (recipient.type === RecipientType.STREAM)
      return {
        display: streams.get(recipient.typeId) ?? '',
        streamId: recipient.typeId,
        recipientId: recipient.id,
      };
    return {
      display: directDisplay(
        recipient.type,
        participantsOf(message).map((id) => displayUser(viewer, people.get(id)!, realm)),
      ),
      streamId: null,
      recipientId: senderRecipients.get(message.senderId) ?? recipient.id,
    };
  };
}

/** A 1:1 message's two users in the order of their addresses, as Zulip's
 * hydrate_recipient_info puts them (a group's stay in id order). */
export function directDisplay(
  recipientType: number,
  users: DisplayRecipientUser[],
): DisplayRecipientUser[] {
  if (recipientType !== RecipientType.PERSONAL || users.length !== 2) return users;
  const [a, b] = users as [DisplayRecipientUser, DisplayRecipientUser];
  return b.email < a.email ? [b, a] : users;
}

export function displayUser(
  viewer: Pick<User, 'id' | 'role'>,
  user: MessageUser,
  realm: Pick<Realm, 'stringId'>,
): DisplayRecipientUser {
  return {
    id: user.id,
    email: canSeeDeliveryEmail(viewer, user) ? user.deliveryEmail : dummyEmail(user, realm),
    full_name: user.fullName,
    is_mirror_dummy: user.isMirrorDummy,
  };
}
