// Reading channels and deciding who may see or change what (Zulip's zerver/lib/streams.py):
// content access, metadata access, channel administration, and the audiences of channel and
// subscription events.
import {
  getPrisma,
  idsByLowerEquals,
  Prisma,
  query,
  Role,
  statement,
  type Stream,
  type Subscription,
  type Tx,
  type User,
} from '@parley/db';
import { CannotAdministerChannelError, JsonableError } from '@parley/errors';
import { STREAM_GROUP_SETTINGS, type StreamContext } from '../presenters/streams';
import { activeMemberIds, groupIdsOfUser, presentGroupSettings, systemGroupIds } from './groups';
import { isAdmin, isGuest } from './users';

export type Actor = Pick<User, 'id' | 'role' | 'realmId'>;

/** What permission checks about one user need, loaded once per request. */
export interface Permissions {
  user: Actor;
  /** Every group the user belongs to, through subgroups. */
  groups: Set<number>;
}

export async function loadPermissions(user: Actor): Promise<Permissions> {
  return { user, groups: await groupIdsOfUser(user.id) };
}

/** Zulip's user_has_content_access: may read the channel's messages and subscribe themself.
 * Organization administrators get no implicit content access to private channels. */
export type ContentAccessStream = Pick<
  Stream,
  'isWebPublic' | 'inviteOnly' | 'canSubscribeGroupId' | 'canAddSubscribersGroupId'
>;

export function hasContentAccess(
  perms: Permissions,
  stream: ContentAccessStream,
  subscribed: boolean,
): boolean {
  if (stream.isWebPublic || subscribed) return true;
  if (isGuest(perms.user)) return false;
  if (!stream.inviteOnly) return true;
  return (
    perms.groups.has(stream.canSubscribeGroupId) ||
    perms.groups.has(stream.canAddSubscribersGroupId)
  );
}

/** Zulip's can_administer_channel: organization administrators always count; guests never. */
export function canAdministerChannel(perms: Permissions, stream: Stream): boolean {
  if (isGuest(perms.user)) return false;
  return isAdmin(perms.user) || perms.groups.has(stream.canAdministerChannelGroupId);
}

/** Zulip's user_has_metadata_access: may see that the channel exists, its settings and its
 * subscribers. */
export function hasMetadataAccess(
  perms: Permissions,
  stream: Stream,
  subscribed: boolean,
): boolean {
  return hasContentAccess(perms, stream, subscribed) || canAdministerChannel(perms, stream);
}

/** May subscribe other users to a channel they can read: organization administrators, the
 * organization's can_add_subscribers_group, and the channel's administrators and
 * can_add_subscribers_group. */
export function canAddSubscribers(
  perms: Permissions,
  stream: Stream,
  realmGroupId: number | null,
): boolean {
  if (isGuest(perms.user)) return false;
  return (
    isAdmin(perms.user) ||
    (realmGroupId !== null && perms.groups.has(realmGroupId)) ||
    perms.groups.has(stream.canAdministerChannelGroupId) ||
    perms.groups.has(stream.canAddSubscribersGroupId)
  );
}

/** May unsubscribe other users (Zulip's bulk_can_remove_subscribers_from_streams). */
export function canRemoveSubscribers(
  perms: Permissions,
  stream: Stream,
  subscribed: boolean,
): boolean {
  if (isAdmin(perms.user)) return true;
  if (isGuest(perms.user)) return false;
  if (perms.groups.has(stream.canAdministerChannelGroupId)) return true;
  return (
    hasMetadataAccess(perms, stream, subscribed) &&
    perms.groups.has(stream.canRemoveSubscribersGroupId)
  );
}

/** SQL for whether the user `$param` has an active subscription to `recipient` (a column),
 * for typed statements that need it beside their own columns (subscriptionOf's rule). */
export function subscribedSql(param: string, recipient: string): string {
  return `EXISTS (SELECT 1 FROM subscription sub WHERE sub.user_profile_id = ${param}
    AND sub.recipient_id = ${recipient} AND sub.active)`;
}

export async function subscriptionOf(
  userId: number,
  stream: Stream,
  db: Tx = getPrisma(),
): Promise<Subscription | null> {
  if (stream.recipientId === null) return null;
  return db.subscription.findFirst({
    where: { userId, recipientId: stream.recipientId, active: true },
  });
}

export interface AccessedStream {
  stream: Stream;
  subscription: Subscription | null;
}

/** Zulip's access_stream_by_id. "Invalid channel ID" both for a missing channel and for one
 * the user may not see, so ids of private channels are not revealed. */
export async function accessStreamById(
  perms: Permissions,
  streamId: number,
  {
    requireContentAccess = true,
    allowArchived = true,
    db = getPrisma(),
  }: { requireContentAccess?: boolean; allowArchived?: boolean; db?: Tx } = {},
): Promise<AccessedStream> {
  const stream = await db.stream.findFirst({
    where: { id: streamId, realmId: perms.user.realmId },
  });
  if (!stream || (!allowArchived && stream.deactivated))
    throw new JsonableError('Invalid channel ID');
  const subscription = await subscriptionOf(perms.user.id, stream, db);
  const allowed = requireContentAccess
    ? hasContentAccess(perms, stream, subscription !== null)
    : hasMetadataAccess(perms, stream, subscription !== null);
  if (!allowed) throw new JsonableError('Invalid channel ID');
  return { stream, subscription };
}

/** Zulip's access_stream_by_name: an active channel the user can read, else
 * "Invalid channel name '…'" (whether it exists or not). */
export async function accessStreamByName(
  perms: Permissions,
  name: string,
  db: Tx = getPrisma(),
): Promise<AccessedStream> {
  const [id] = await idsByLowerEquals(db, 'stream', 'name', perms.user.realmId, [name.trim()]);
  const stream =
    id === undefined ? null : await db.stream.findFirst({ where: { id, deactivated: false } });
  const subscription = stream ? await subscriptionOf(perms.user.id, stream, db) : null;
  if (!stream || !hasContentAccess(perms, stream, subscription !== null))
    throw new JsonableError(`Invalid channel name '${name}'`);
  return { stream, subscription };
}

/** accessStreamByName for each name, in order: the first one that does not name an active
 * channel the actor can read is refused as it would be. Three statements, however many
 * names. */
export async function accessStreamsByName(
  perms: Permissions,
  names: string[],
  db: Tx = getPrisma(),
): Promise<Stream[]> {
  // Matched by PostgreSQL's lower(), as accessStreamByName matches (JavaScript lowercases some
  // letters otherwise, a final sigma for one).
  const matches = await db.$queryRaw<{ name: string; id: number }[]>`
    SELECT v AS name, s.id FROM unnest(${names.map((name) => name.trim())}::text[]) v
    JOIN stream s ON s.realm_id = ${perms.user.realmId} AND lower(s.name) = lower(v)`;
  const rows = await db.stream.findMany({ where: { id: { in: matches.map((m) => m.id) } } });
  const byId = new Map(rows.map((row) => [row.id, row]));
  const found = new Map(matches.map((match) => [match.name, byId.get(match.id)!]));
  const recipientIds = [...found.values()].flatMap((stream) =>
    stream.recipientId === null ? [] : [stream.recipientId],
  );
  const subscribed = new Set(
    (
      await db.subscription.findMany({
        where: { userId: perms.user.id, recipientId: { in: recipientIds }, active: true },
        select: { recipientId: true },
      })
    ).map((sub) => sub.recipientId),
  );
  return names.map((name) => {
    const stream = found.get(name.trim());
    const isSubscribed = stream?.recipientId != null && subscribed.has(stream.recipientId);
    if (!stream || stream.deactivated || !hasContentAccess(perms, stream, isSubscribed))
      throw new JsonableError(`Invalid channel name '${name}'`);
    return stream;
  });
}

/** A channel of the organization by id or name, archived or not, visible or not: enough to
 * take back a personal setting about it (Zulip's access_stream_to_remove_visibility_policy). */
export async function channelInRealm(
  realmId: number,
  where: { id: number } | { name: string },
  db: Tx = getPrisma(),
): Promise<Stream | null> {
  if ('id' in where) return db.stream.findFirst({ where: { id: where.id, realmId } });
  const [id] = await idsByLowerEquals(db, 'stream', 'name', realmId, [where.name.trim()]);
  return id === undefined ? null : db.stream.findUnique({ where: { id } });
}

/** Active channels by name, case-insensitively, in the order of `names`. */
export async function streamsByName(
  realmId: number,
  names: string[],
  db: Tx = getPrisma(),
): Promise<Map<string, Stream>> {
  if (names.length === 0) return new Map();
  const ids = await idsByLowerEquals(db, 'stream', 'name', realmId, names);
  const rows = await db.stream.findMany({ where: { id: { in: ids } } });
  const byLower = new Map(rows.map((row) => [row.name.toLowerCase(), row]));
  const result = new Map<string, Stream>();
  for (const name of names) {
    const row = byLower.get(name.toLowerCase());
    if (row) result.set(name, row);
  }
  return result;
}

const subscribersOfRecipients = statement<{ recipient_id: number; ids: number[] }, [number[]]>(`
  SELECT recipient_id, array_agg(user_profile_id ORDER BY user_profile_id) AS ids
  FROM subscription
  WHERE recipient_id = ANY($1::int[]) AND active AND is_user_active
  GROUP BY recipient_id`);

/** Active subscribers (active users) of each channel, ascending. */
export async function subscriberIdsByStream(
  streams: Pick<Stream, 'id' | 'recipientId'>[],
): Promise<Map<number, number[]>> {
  const byRecipient = new Map(streams.map((s) => [s.recipientId, s.id]));
  const result = new Map<number, number[]>(streams.map((s) => [s.id, []]));
  const recipientIds = streams.flatMap((s) => (s.recipientId === null ? [] : [s.recipientId]));
  if (recipientIds.length === 0) return result;
  for (const row of await query(subscribersOfRecipients, [recipientIds]))
    result.set(byRecipient.get(row.recipient_id)!, row.ids);
  return result;
}

/** Active subscribers of one channel, ascending. */
export async function subscribersOf(stream: Stream): Promise<number[]> {
  return (await subscriberIdsByStream([stream])).get(stream.id) ?? [];
}

/** Users who can see that the channel exists (Zulip's can_access_stream_metadata_user_ids):
 * its subscribers, plus everyone for web-public channels, everyone but guests for public
 * ones, and for private ones the organization's administrators and the (non-guest) members of
 * the channel's administer and subscribe groups. */
export async function metadataAudience(
  stream: Stream,
  subscriberIds: number[],
  db: Tx = getPrisma(),
): Promise<number[]> {
  const ids = new Set(subscriberIds);
  if (stream.isWebPublic || !stream.inviteOnly) {
    const users = await db.user.findMany({
      where: {
        realmId: stream.realmId,
        isActive: true,
        ...(stream.isWebPublic ? {} : { role: { not: Role.GUEST } }),
      },
      select: { id: true },
    });
    users.forEach((user) => ids.add(user.id));
  } else {
    const admins = await db.user.findMany({
      where: { realmId: stream.realmId, isActive: true, role: { lte: Role.ADMINISTRATOR } },
      select: { id: true },
    });
    admins.forEach((user) => ids.add(user.id));
    const groupIds = [
      stream.canAdministerChannelGroupId,
      stream.canSubscribeGroupId,
      stream.canAddSubscribersGroupId,
    ];
    const members = await db.user.findMany({
      where: { id: { in: await activeMemberIds(groupIds) }, role: { not: Role.GUEST } },
      select: { id: true },
    });
    members.forEach((user) => ids.add(user.id));
  }
  return [...ids];
}

export interface StreamDetails {
  /** Active subscribers per channel id, ascending. */
  subscribers: Map<number, number[]>;
  context(stream: Stream): StreamContext;
}

/** Everything presenting `streams` needs, loaded in three queries: the groups their settings
 * name, their subscribers (the lists only when `withSubscribers`; counts otherwise), and the
 * system groups (for the legacy stream_post_policy). */
export async function loadStreamDetails(
  realmId: number,
  streams: Stream[],
  { withSubscribers = true }: { withSubscribers?: boolean } = {},
): Promise<StreamDetails> {
  const groupIds = streams.flatMap((stream) =>
    Object.values(STREAM_GROUP_SETTINGS).map((column) => stream[column]),
  );
  const groups = await presentGroupSettings(groupIds);
  const subscribers = withSubscribers
    ? await subscriberIdsByStream(streams)
    : new Map<number, number[]>();
  const counts = withSubscribers
    ? new Map([...subscribers].map(([id, ids]) => [id, ids.length]))
    : await subscriberCounts(streams);
  const systemGroups = await systemGroupIds(realmId);
  return {
    subscribers,
    context: (stream) => ({
      groups,
      systemGroups,
      subscriberCount: counts.get(stream.id) ?? 0,
    }),
  };
}

const subscriberCountsOfRecipients = statement<
  { recipient_id: number; count: number },
  [number[]]
>(`
  SELECT recipient_id, count(*)::int AS count FROM subscription
  WHERE recipient_id = ANY($1::int[]) AND active AND is_user_active
  GROUP BY recipient_id`);

async function subscriberCounts(streams: Stream[]): Promise<Map<number, number>> {
  const byRecipient = new Map(streams.map((s) => [s.recipientId, s.id]));
  const rows = await query(subscriberCountsOfRecipients, [
    streams.flatMap((s) => s.recipientId ?? []),
  ]);
  return new Map(rows.map((row) => [byRecipient.get(row.recipient_id)!, row.count]));
}

/** Which channels GET /streams lists (Zulip's get_streams_for_user): the flags as the
 * endpoint takes them. */
export interface ChannelListFlags {
  include_public: boolean;
  include_web_public: boolean;
  include_subscribed: boolean;
  exclude_archived: boolean;
  include_all_active: boolean;
  include_all: boolean;
  include_owner_subscribed: boolean;
  include_can_access_content: boolean;
}

export async function listChannels(
  user: User,
  realmId: number,
  params: ChannelListFlags,
): Promise<Stream[]> {
  const perms = await loadPermissions(user);
  const all = await getPrisma().stream.findMany({
    where: { realmId, ...(params.exclude_archived ? { deactivated: false } : {}) },
    orderBy: { name: 'asc' },
  });
  const subscribed = await subscribedRecipientIds(user.id);
  const ownerSubscribed =
    params.include_owner_subscribed && user.isBot && user.botOwnerId !== null
      ? await subscribedRecipientIds(user.botOwnerId)
      : new Set<number>();
  const isSubscribed = (stream: Stream) => subscribed.has(stream.recipientId!);
  const wanted = (stream: Stream): boolean => {
    if (params.include_all || params.include_all_active)
      return hasMetadataAccess(perms, stream, isSubscribed(stream));
    if (params.include_can_access_content)
      return hasContentAccess(perms, stream, isSubscribed(stream));
    // Guests never list public channels they are not in.
    if (params.include_public && !isGuest(user) && !stream.inviteOnly) return true;
    if (params.include_web_public && stream.isWebPublic && !stream.deactivated) return true;
    if (params.include_subscribed && isSubscribed(stream)) return true;
    // Every channel the bot's owner is in, as Zulip's get_streams_for_user.
    return ownerSubscribed.has(stream.recipientId!);
  };
  return all.filter(wanted);
}

/** GET /get_stream_id: a channel the user may read, by name (case-insensitive). */
export async function channelIdByName(user: User, realmId: number, name: string): Promise<number> {
  const prisma = getPrisma();
  const [id] = await idsByLowerEquals(prisma, 'stream', 'name', realmId, [name.trim()]);
  const stream =
    id === undefined ? null : await prisma.stream.findFirst({ where: { id, deactivated: false } });
  const perms = await loadPermissions(user);
  if (!stream || !hasContentAccess(perms, stream, (await subscriptionOf(user.id, stream)) !== null))
    throw new JsonableError(`Invalid channel name '${name}'`);
  return stream.id;
}

/** Zulip's get_topic_history_for_stream: topics grouped case-insensitively, newest first,
 * each named as in its latest message. Without shared history only the messages the user
 * received count. */
export async function topicHistory(
  stream: Stream,
  user: User,
): Promise<{ name: string; max_id: number }[]> {
  const onlyReceived = stream.historyPublicToSubscribers
    ? Prisma.empty
    : Prisma.sql`AND id IN (SELECT message_id FROM user_message WHERE user_profile_id = ${user.id})`;
  return getPrisma().$queryRaw<{ name: string; max_id: number }[]>`
    SELECT m.subject AS name, t.max_id
    FROM (
      SELECT max(id) AS max_id FROM message
      WHERE recipient_id = ${stream.recipientId} ${onlyReceived}
      GROUP BY upper(subject)
    ) t JOIN message m ON m.id = t.max_id
    ORDER BY t.max_id DESC`;
}

/** PATCH and DELETE /streams/{id}: channel administrators only. Others who can read the channel
 * learn they lack the permission; the rest that the id is invalid. */
export async function accessStreamForUpdate(
  tx: Tx,
  perms: Permissions,
  streamId: number,
): Promise<Stream> {
  const stream = await tx.stream.findFirst({
    where: { id: streamId, realmId: perms.user.realmId },
  });
  if (!stream) throw new JsonableError('Invalid channel ID');
  if (canAdministerChannel(perms, stream)) return stream;
  const subscribed = (await subscriptionOf(perms.user.id, stream, tx)) !== null;
  if (hasContentAccess(perms, stream, subscribed)) throw new CannotAdministerChannelError();
  throw new JsonableError('Invalid channel ID');
}

/** Zulip's validate_user_access_to_subscribers. */
export function checkSubscriberAccess(
  perms: Permissions,
  stream: Stream,
  subscribed: boolean,
): void {
  if (stream.isWebPublic || subscribed) return;
  if (isGuest(perms.user))
    throw new JsonableError('Subscriber data is not available for this channel');
  if (!stream.inviteOnly) return;
  if (hasMetadataAccess(perms, stream, false)) return;
  throw new JsonableError('Unable to retrieve subscribers for private channel');
}

async function subscribedRecipientIds(userId: number): Promise<Set<number>> {
  const rows = await getPrisma().subscription.findMany({
    where: { userId, active: true },
    select: { recipientId: true },
  });
  return new Set(rows.map((row) => row.recipientId));
}

/** Zulip's Realm.allow_web_public_streams_access: spectators are let in only when the
 * organization allows them and has a web-public channel (not archived) for them to read. */
export async function webPublicAccessEnabled(realm: {
  id: number;
  webPublicAccessEnabled: boolean;
}): Promise<boolean> {
  if (!realm.webPublicAccessEnabled) return false;
  const channel = await getPrisma().stream.findFirst({
    where: { realmId: realm.id, isWebPublic: true, deactivated: false },
    select: { id: true },
  });
  return channel !== null;
}
