// Subscribing and unsubscribing users, and a user's own subscription settings (Zulip's
// bulk_add_subscriptions, bulk_remove_subscriptions, do_change_subscription_property). Each
// do* writes in the caller's transaction and queues its events for after the commit.
import {
  AuditLogEvent,
  type ActionContext,
  type Realm,
  type Stream,
  type Subscription,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import {
  hasMetadataAccess,
  loadPermissions,
  loadStreamDetails,
  metadataAudience,
  type Permissions,
} from '../lib/streams';
import { isGuest } from '../lib/users';
import { presentStream, presentSubscription, streamDeleteEvent } from '../presenters/streams';

/** Zulip's STREAM_ASSIGNMENT_COLORS: new subscriptions take the first colour the user does not
 * use yet. */
export const STREAM_ASSIGNMENT_COLORS = [
  '#76ce90',
  '#fae589',
  '#a6c7e5',
  '#e79ab5',
  '#bfd56f',
  '#f4ae55',
  '#b0a5fd',
  '#addfe5',
  '#f5ce6e',
  '#c2726a',
  '#94c849',
  '#bd86e5',
  '#ee7e4a',
  '#a6dcbf',
  '#95a5fd',
  '#53a063',
  '#9987e1',
  '#e4523d',
  '#c2c2c2',
  '#4f8de4',
  '#c6a8ad',
  '#e7cc4d',
  '#c8bebf',
  '#a47462',
];

export type Subscriber = Pick<User, 'id' | 'role' | 'realmId'>;

export interface SubscriptionPair {
  user: Subscriber;
  stream: Stream;
}

export interface AddResult {
  subscribed: SubscriptionPair[];
  alreadySubscribed: SubscriptionPair[];
}

/** Subscribes each user to each channel of its pair: reactivates an earlier subscription (it
 * keeps its colour and settings) or creates one, with the requested colour (`colors`, by
 * channel id) or a fresh one. Only rows this call changed count as subscribed, so concurrent
 * requests never announce the same subscription twice. `notifySubscribers` is false while a
 * user is being created: they have no queue yet. */
export async function doAddSubscriptions(
  ctx: ActionContext,
  realm: Realm,
  pairs: SubscriptionPair[],
  actingUserId: number | null,
  {
    notifySubscribers = true,
    colors = new Map<number, string>(),
  }: { notifySubscribers?: boolean; colors?: Map<number, string> } = {},
): Promise<AddResult> {
  const { tx } = ctx;
  const unique = [
    ...new Map(pairs.map((pair) => [`${pair.user.id}:${pair.stream.id}`, pair])).values(),
  ];
  const userIds = [...new Set(unique.map((pair) => pair.user.id))];
  const recipientIds = [...new Set(unique.map((pair) => pair.stream.recipientId!))];
  const rows = await tx.subscription.findMany({
    where: { userId: { in: userIds }, recipientId: { in: recipientIds } },
    select: { id: true, userId: true, recipientId: true },
  });
  const key = (userId: number, recipientId: number) => `${userId}:${recipientId}`;
  const rowOf = new Map(rows.map((row) => [key(row.userId, row.recipientId), row.id]));

  const existing = rows.map((row) => row.id);
  const reactivated = new Set(
    existing.length === 0
      ? []
      : (
          await tx.$queryRaw<{ id: number }[]>`
            UPDATE subscription SET active = TRUE
            WHERE id = ANY(${existing}::int[]) AND NOT active RETURNING id`
        ).map((row) => row.id),
  );
  const usedColors = await colorsInUse(ctx, userIds);
  const fresh = unique.filter((pair) => !rowOf.has(key(pair.user.id, pair.stream.recipientId!)));
  const created = new Set(
    fresh.length === 0
      ? []
      : (
          await tx.subscription.createManyAndReturn({
            data: fresh.map((pair) => ({
              userId: pair.user.id,
              recipientId: pair.stream.recipientId!,
              color:
                colors.get(pair.stream.id) ?? pickColor(usedColors.get(pair.user.id)!, pair.stream),
            })),
            // A concurrent request may have subscribed the same user: its row stands.
            skipDuplicates: true,
            select: { userId: true, recipientId: true },
          })
        ).map((row) => key(row.userId, row.recipientId)),
  );
  const result: AddResult = { subscribed: [], alreadySubscribed: [] };
  for (const pair of unique) {
    const k = key(pair.user.id, pair.stream.recipientId!);
    const id = rowOf.get(k);
    const changed = id === undefined ? created.has(k) : reactivated.has(id);
    (changed ? result.subscribed : result.alreadySubscribed).push(pair);
  }
  if (result.subscribed.length === 0) return result;
  await tx.auditLog.createMany({
    data: result.subscribed.map((pair) => ({
      realmId: realm.id,
      actingUserId,
      modifiedUserId: pair.user.id,
      modifiedStreamId: pair.stream.id,
      eventType: rowOf.has(key(pair.user.id, pair.stream.recipientId!))
        ? AuditLogEvent.SUBSCRIPTION_ACTIVATED
        : AuditLogEvent.SUBSCRIPTION_CREATED,
    })),
  });
  await sendAddEvents(ctx, realm, result.subscribed, notifySubscribers);
  return result;
}

async function colorsInUse(
  ctx: ActionContext,
  userIds: number[],
): Promise<Map<number, Set<string>>> {
  const rows = await ctx.tx.subscription.findMany({
    where: { userId: { in: userIds } },
    select: { userId: true, color: true },
  });
  const used = new Map(userIds.map((id) => [id, new Set<string>()]));
  for (const row of rows) used.get(row.userId)!.add(row.color);
  return used;
}

/** Zulip's pick_colors: the first unused palette colour, else one by recipient id. Marks the
 * colour used so a batch spreads over the palette. */
function pickColor(used: Set<string>, stream: Stream): string {
  const color =
    STREAM_ASSIGNMENT_COLORS.find((candidate) => !used.has(candidate)) ??
    STREAM_ASSIGNMENT_COLORS[stream.recipientId! % STREAM_ASSIGNMENT_COLORS.length]!;
  used.add(color);
  return color;
}

/** Zulip's order: `stream` create to users who could not see the channel before, then each
 * user's `subscription` add (with the subscriber list), then `peer_add` to everyone else who
 * tracks the channel's subscribers. */
async function sendAddEvents(
  ctx: ActionContext,
  realm: Realm,
  added: SubscriptionPair[],
  notifySubscribers: boolean,
): Promise<void> {
  const { tx } = ctx;
  const streams = uniqueStreams(added);
  const details = await loadStreamDetails(realm.id, streams);

  if (notifySubscribers) {
    for (const pair of added) {
      if (await seesWithoutSubscription(ctx, pair)) continue;
      sendEventOnCommit(
        ctx,
        {
          type: 'stream',
          op: 'create',
          streams: [presentStream(pair.stream, details.context(pair.stream))],
        },
        [pair.user.id],
      );
    }
    const subscriptions = await tx.subscription.findMany({
      where: {
        userId: { in: added.map((pair) => pair.user.id) },
        recipientId: { in: streams.map((stream) => stream.recipientId!) },
      },
    });
    for (const [userId, pairs] of groupBy(added, (pair) => pair.user.id)) {
      sendEventOnCommit(
        ctx,
        {
          type: 'subscription',
          op: 'add',
          subscriptions: pairs.map((pair) => {
            const row = subscriptions.find(
              (sub) => sub.userId === userId && sub.recipientId === pair.stream.recipientId,
            )!;
            return presentSubscription(pair.stream, row, details.context(pair.stream), {
              subscribers: details.subscribers.get(pair.stream.id) ?? [],
            });
          }),
        },
        [userId],
      );
    }
  }
  await sendPeerEvents(ctx, 'peer_add', added, details.subscribers);
}

/** peer_add / peer_remove for each channel to those who can see its subscribers, except the
 * users the change is about (they get add/remove). */
async function sendPeerEvents(
  ctx: ActionContext,
  op: 'peer_add' | 'peer_remove',
  changed: SubscriptionPair[],
  subscribersAfter: Map<number, number[]>,
): Promise<void> {
  for (const [, pairs] of groupBy(changed, (pair) => pair.stream.id)) {
    const stream = pairs[0]!.stream;
    const userIds = pairs.map((pair) => pair.user.id).sort((a, b) => a - b);
    const changedIds = new Set(userIds);
    const audience = await metadataAudience(stream, subscribersAfter.get(stream.id) ?? [], ctx.tx);
    sendEventOnCommit(
      ctx,
      { type: 'subscription', op, stream_ids: [stream.id], user_ids: userIds },
      audience.filter((id) => !changedIds.has(id)),
    );
  }
}

export interface RemoveResult {
  removed: SubscriptionPair[];
  notRemoved: SubscriptionPair[];
}

/** Deactivates the subscriptions of the pairs (rows are kept, so a later resubscription keeps
 * colour and settings); pairs without an active subscription, or whose subscription a
 * concurrent request ended first, are "not removed". */
export async function doRemoveSubscriptions(
  ctx: ActionContext,
  realm: Realm,
  pairs: SubscriptionPair[],
  actingUserId: number | null,
): Promise<RemoveResult> {
  const { tx } = ctx;
  const rows = await tx.subscription.findMany({
    where: {
      active: true,
      userId: { in: pairs.map((pair) => pair.user.id) },
      recipientId: { in: pairs.flatMap((pair) => pair.stream.recipientId ?? []) },
    },
    select: { id: true, userId: true, recipientId: true },
  });
  const ids = rows.map((row) => row.id);
  const ended = new Set(
    ids.length === 0
      ? []
      : (
          await tx.$queryRaw<{ id: number }[]>`
            UPDATE subscription SET active = FALSE
            WHERE id = ANY(${ids}::int[]) AND active RETURNING id`
        ).map((row) => row.id),
  );
  const result: RemoveResult = { removed: [], notRemoved: [] };
  const counted = new Set<number>();
  for (const pair of pairs) {
    const row = rows.find(
      (r) => r.userId === pair.user.id && r.recipientId === pair.stream.recipientId,
    );
    if (row && ended.has(row.id) && !counted.has(row.id)) {
      counted.add(row.id);
      result.removed.push(pair);
    } else {
      result.notRemoved.push(pair);
    }
  }
  if (result.removed.length === 0) return result;
  await tx.auditLog.createMany({
    data: result.removed.map((pair) => ({
      realmId: realm.id,
      actingUserId,
      modifiedUserId: pair.user.id,
      modifiedStreamId: pair.stream.id,
      eventType: AuditLogEvent.SUBSCRIPTION_DEACTIVATED,
    })),
  });

  for (const [userId, removed] of groupBy(result.removed, (pair) => pair.user.id)) {
    sendEventOnCommit(
      ctx,
      {
        type: 'subscription',
        op: 'remove',
        subscriptions: removed.map((pair) => ({
          name: pair.stream.name,
          stream_id: pair.stream.id,
        })),
      },
      [userId],
    );
  }
  // Leaving a private channel can take away even the knowledge that it exists.
  for (const pair of result.removed) {
    if (await seesWithoutSubscription(ctx, pair)) continue;
    sendEventOnCommit(ctx, streamDeleteEvent([pair.stream.id]), [pair.user.id]);
  }
  const details = await loadStreamDetails(realm.id, uniqueStreams(result.removed));
  await sendPeerEvents(ctx, 'peer_remove', result.removed, details.subscribers);
  return result;
}

/** A user's (de)activation changes every subscriber list they are on: peer_remove or peer_add
 * for each of their channels, archived ones included. Call after the user row and the
 * subscriptions' is_user_active have been updated. */
export async function sendSubscriberActivityEvents(
  ctx: ActionContext,
  user: Subscriber,
  op: 'peer_add' | 'peer_remove',
): Promise<void> {
  const subscriptions = await ctx.tx.subscription.findMany({
    where: { userId: user.id, active: true },
    select: { recipientId: true },
  });
  if (subscriptions.length === 0) return;
  // Deactivation is told for archived channels too (feature level 428); reactivation, as in
  // Zulip's do_reactivate_user, only for active ones.
  const streams = await ctx.tx.stream.findMany({
    where: {
      recipientId: { in: subscriptions.map((sub) => sub.recipientId) },
      ...(op === 'peer_add' ? { deactivated: false } : {}),
    },
  });
  const details = await loadStreamDetails(user.realmId, streams);
  await sendPeerEvents(
    ctx,
    op,
    streams.map((stream) => ({ user, stream })),
    details.subscribers,
  );
}

// ---- Personal subscription settings (spec 4.12) ----------------------------------------------

export const SUBSCRIPTION_PROPERTIES = [
  'color',
  'is_muted',
  'in_home_view',
  'pin_to_top',
  'desktop_notifications',
  'audible_notifications',
  'push_notifications',
  'email_notifications',
  'wildcard_mentions_notify',
] as const;
export type SubscriptionProperty = (typeof SUBSCRIPTION_PROPERTIES)[number];

const COLUMNS = {
  color: 'color',
  is_muted: 'isMuted',
  pin_to_top: 'pinToTop',
  desktop_notifications: 'desktopNotifications',
  audible_notifications: 'audibleNotifications',
  push_notifications: 'pushNotifications',
  email_notifications: 'emailNotifications',
  wildcard_mentions_notify: 'wildcardMentionsNotify',
} as const;

export const HEX_COLOR = /^#([a-fA-F0-9]{3,6})$/;

/** Validates one property change; `label` names the value in errors (Zulip's wording). */
export function checkSubscriptionProperty(
  property: string,
  value: unknown,
  label: string,
): { property: SubscriptionProperty; value: string | boolean } {
  if (!(SUBSCRIPTION_PROPERTIES as readonly string[]).includes(property))
    throw new JsonableError(`Unknown subscription property: ${property}`);
  if (property === 'color') {
    if (typeof value !== 'string' || !HEX_COLOR.test(value))
      throw new JsonableError(`Invalid ${label}: Value error, color is not a valid hex color code`);
    return { property, value };
  }
  if (typeof value !== 'boolean') throw new JsonableError(`${property} is not a boolean`);
  return { property: property as SubscriptionProperty, value };
}

/** Changes one of the user's own subscription settings. is_muted and its legacy inverse
 * in_home_view are one setting told twice: in_home_view first, then is_muted (feature level
 * 139). */
export async function doChangeSubscriptionProperty(
  ctx: ActionContext,
  user: Pick<User, 'id' | 'realmId'>,
  stream: Stream,
  subscription: Subscription,
  property: SubscriptionProperty,
  value: string | boolean,
): Promise<void> {
  const muting = property === 'is_muted' || property === 'in_home_view';
  const column = muting
    ? 'isMuted'
    : COLUMNS[property as Exclude<SubscriptionProperty, 'in_home_view'>];
  const stored = property === 'in_home_view' ? !value : value;
  await ctx.tx.subscription.update({ where: { id: subscription.id }, data: { [column]: stored } });
  await ctx.tx.auditLog.create({
    data: {
      realmId: user.realmId,
      actingUserId: user.id,
      modifiedUserId: user.id,
      modifiedStreamId: stream.id,
      eventType: AuditLogEvent.SUBSCRIPTION_PROPERTY_CHANGED,
      extraData: {
        property: muting ? 'is_muted' : property,
        old_value: subscription[column],
        new_value: stored,
      },
    },
  });
  const update = (name: string, newValue: unknown) =>
    sendEventOnCommit(
      ctx,
      { type: 'subscription', op: 'update', stream_id: stream.id, property: name, value: newValue },
      [user.id],
    );
  if (muting) {
    update('in_home_view', !stored);
    update('is_muted', stored);
  } else {
    update(property, stored);
  }
}

// ---- Helpers ---------------------------------------------------------------------------------

/** Whether the user sees the channel even when not subscribed: always for public channels
 * (web-public ones for guests); for private ones by role or group. */
async function seesWithoutSubscription(
  ctx: ActionContext,
  { user, stream }: SubscriptionPair,
): Promise<boolean> {
  if (!stream.inviteOnly && !(isGuest(user) && !stream.isWebPublic)) return true;
  return hasMetadataAccess(await loadPermissions(user), stream, false);
}

function uniqueStreams(pairs: SubscriptionPair[]): Stream[] {
  return [...new Map(pairs.map((pair) => [pair.stream.id, pair.stream])).values()];
}

function groupBy<T, K>(items: T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** After a role change (Zulip's send_stream_events_for_role_update): channels that come into
 * the user's sight (an administrator sees every private channel; a guest stops seeing public
 * ones) arrive as stream create plus their subscribers, those that leave it as delete. */
export async function sendChannelVisibilityChanges(
  ctx: ActionContext,
  before: Permissions,
  after: Permissions,
): Promise<void> {
  const { tx } = ctx;
  const user = after.user;
  const streams = await tx.stream.findMany({
    where: { realmId: user.realmId, deactivated: false },
  });
  const subscribed = new Set(
    (
      await tx.subscription.findMany({
        where: { userId: user.id, active: true },
        select: { recipientId: true },
      })
    ).map((row) => row.recipientId),
  );
  const sees = (perms: Permissions, stream: Stream) =>
    hasMetadataAccess(perms, stream, subscribed.has(stream.recipientId!));
  const gained = streams.filter((s) => !sees(before, s) && sees(after, s));
  const lost = streams.filter((s) => sees(before, s) && !sees(after, s));
  if (lost.length > 0)
    sendEventOnCommit(ctx, streamDeleteEvent(lost.map((stream) => stream.id)), [user.id]);
  if (gained.length === 0) return;
  const details = await loadStreamDetails(user.realmId, gained);
  sendEventOnCommit(
    ctx,
    {
      type: 'stream',
      op: 'create',
      streams: gained.map((stream) => presentStream(stream, details.context(stream))),
    },
    [user.id],
  );
  for (const stream of gained) {
    const subscribers = details.subscribers.get(stream.id) ?? [];
    if (subscribers.length > 0)
      sendEventOnCommit(
        ctx,
        { type: 'subscription', op: 'peer_add', stream_ids: [stream.id], user_ids: subscribers },
        [user.id],
      );
  }
}
