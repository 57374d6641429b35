// The channel sections of POST /register (subscriptions, unsubscribed, never_subscribed,
// streams, realm_default_streams) and how subscription/stream events that raced the
// registration fold into them (Zulip's gather_subscriptions_helper and apply_event).
import {
  columnsOf,
  query,
  RecipientType,
  statement,
  type Realm,
  type Stream,
  type Subscription,
  type User,
} from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { presentStream, presentSubscription } from '../presenters/streams';
import { hasMetadataAccess, loadPermissions, loadStreamDetails, type Permissions } from './streams';
import { isGuest } from './users';

type State = Record<string, unknown>;
type Entry = Record<string, unknown> & { stream_id: number };

export interface ChannelStateOptions {
  /** include_subscribers: true and 'partial' both send full lists (see presenters/streams). */
  includeSubscribers: boolean;
  /** The archived_channels client capability: without it archived channels are left out. */
  archivedChannels: boolean;
  /** Filled by fetchChannelState: each visible channel's subscribers when the state was read.
   * Events that raced the registration may predate the state; these sets let peer events fold
   * in idempotently, so no subscriber_count is counted twice. */
  peers: Map<number, Set<number>>;
}

const defaultStreamIds = statement<{ stream_id: number }, [number]>(
  `SELECT stream_id FROM default_stream WHERE realm_id = $1 ORDER BY stream_id`,
);
// Archived channels only for clients with the archived_channels capability ($2).
const channelsOfRealm = statement<Stream, [number, boolean]>(`
  SELECT ${columnsOf('Stream', 's')} FROM stream s
  WHERE s.realm_id = $1 AND ($2 OR NOT s.deactivated) ORDER BY s.name`);
const subscriptionRowsOf = statement<Subscription, [number]>(`
  SELECT ${columnsOf('Subscription', 's')} FROM subscription s
  JOIN recipient r ON r.id = s.recipient_id AND r.type = ${RecipientType.STREAM}
  WHERE s.user_profile_id = $1`);

/** `groups`: every group the user belongs to, if the caller has read them already. */
export async function fetchChannelState(
  user: User,
  realm: Realm,
  types: Set<string>,
  options: ChannelStateOptions,
  groups?: Set<number>,
): Promise<State> {
  const state: State = {};
  const wantSubscriptions = types.has('subscription');
  const wantStreams = types.has('stream');
  if (types.has('default_streams')) {
    const rows = await query(defaultStreamIds, [realm.id]);
    state.realm_default_streams = isGuest(user) ? [] : rows.map((row) => row.stream_id);
  }
  if (!wantSubscriptions && !wantStreams) return state;

  const perms = groups ? { user, groups } : await loadPermissions(user);
  const streams = await query(channelsOfRealm, [realm.id, options.archivedChannels]);
  const rows = new Map(
    (await query(subscriptionRowsOf, [user.id])).map((row) => [row.recipientId, row]),
  );
  const rowOf = (stream: Stream) => rows.get(stream.recipientId!);
  const visible = streams.filter((stream) =>
    hasMetadataAccess(perms, stream, rowOf(stream)?.active === true),
  );
  const details = await loadStreamDetails(realm.id, visible);
  for (const stream of visible)
    options.peers.set(stream.id, new Set(details.subscribers.get(stream.id) ?? []));
  const subscribersFor = (stream: Stream, subscribed: boolean) =>
    options.includeSubscribers
      ? {
          subscribers: canSeeSubscribers(perms, stream, subscribed)
            ? (details.subscribers.get(stream.id) ?? [])
            : [],
        }
      : null;

  if (wantSubscriptions) {
    const subscriptions: unknown[] = [];
    const unsubscribed: unknown[] = [];
    const neverSubscribed: unknown[] = [];
    for (const stream of visible) {
      const row = rowOf(stream);
      if (row?.active) {
        subscriptions.push(
          presentSubscription(stream, row, details.context(stream), subscribersFor(stream, true)),
        );
      } else if (row) {
        unsubscribed.push(
          presentSubscription(stream, row, details.context(stream), subscribersFor(stream, false)),
        );
      } else {
        neverSubscribed.push({
          ...presentStream(stream, details.context(stream)),
          ...subscribersFor(stream, false),
        });
      }
    }
    Object.assign(state, {
      subscriptions,
      unsubscribed,
      never_subscribed: neverSubscribed,
    });
  }
  if (wantStreams) state.streams = visible.map((s) => presentStream(s, details.context(s)));
  return state;
}

/** Zulip's validate_user_access_to_subscribers, as a yes/no for /register lists. */
function canSeeSubscribers(perms: Permissions, stream: Stream, subscribed: boolean): boolean {
  if (stream.isWebPublic || subscribed) return true;
  if (isGuest(perms.user)) return false;
  return !stream.inviteOnly || hasMetadataAccess(perms, stream, false);
}

const LISTS = ['subscriptions', 'unsubscribed', 'never_subscribed'] as const;

/** Folds a subscription, stream or default_streams event into the channel sections. */
export function applyChannelEvent(
  state: State,
  event: QueuedEvent,
  options: Pick<ChannelStateOptions, 'includeSubscribers' | 'peers'>,
): void {
  const list = (name: string) => state[name] as Entry[] | undefined;
  const entries = (streamId: number) =>
    [...LISTS, 'streams'].flatMap(
      (name) => list(name)?.filter((e) => e.stream_id === streamId) ?? [],
    );
  const remove = (name: string, streamIds: number[]) => {
    const current = list(name);
    if (current) state[name] = current.filter((entry) => !streamIds.includes(entry.stream_id));
  };

  if (event.type === 'default_streams') {
    if ('realm_default_streams' in state) state.realm_default_streams = event.default_streams;
    return;
  }
  if (event.type === 'subscription') {
    switch (event.op) {
      case 'add': {
        const added = event.subscriptions as Entry[];
        const ids = added.map((sub) => sub.stream_id);
        for (const name of LISTS) remove(name, ids);
        for (const sub of added)
          options.peers.set(
            sub.stream_id,
            new Set((sub.subscribers as number[] | undefined) ?? []),
          );
        const subs = list('subscriptions');
        if (!subs) return;
        for (const sub of added) {
          const { subscribers: _subscribers, ...rest } = sub;
          subs.push(options.includeSubscribers ? sub : rest);
        }
        return;
      }
      case 'remove': {
        const ids = (event.subscriptions as Entry[]).map((sub) => sub.stream_id);
        const subs = list('subscriptions');
        const unsubscribed = list('unsubscribed');
        if (!subs) return;
        unsubscribed?.push(...subs.filter((sub) => ids.includes(sub.stream_id)));
        remove('subscriptions', ids);
        return;
      }
      case 'update':
        for (const entry of list('subscriptions') ?? []) {
          if (entry.stream_id === event.stream_id) entry[event.property as string] = event.value;
        }
        return;
      case 'peer_add':
      case 'peer_remove': {
        const adding = event.op === 'peer_add';
        for (const streamId of event.stream_ids as number[]) {
          const peers = options.peers.get(streamId) ?? new Set<number>();
          options.peers.set(streamId, peers);
          let delta = 0;
          for (const id of event.user_ids as number[]) {
            if (adding && !peers.has(id)) {
              peers.add(id);
              delta += 1;
            } else if (!adding && peers.delete(id)) {
              delta -= 1;
            }
          }
          for (const entry of entries(streamId)) {
            entry.subscriber_count = Math.max(0, (entry.subscriber_count as number) + delta);
            if (!Array.isArray(entry.subscribers)) continue;
            const listed = new Set(entry.subscribers as number[]);
            for (const id of event.user_ids as number[]) {
              if (adding) listed.add(id);
              else listed.delete(id);
            }
            entry.subscribers = [...listed].sort((a, b) => a - b);
          }
        }
        return;
      }
      default:
        return;
    }
  }
  if (event.type === 'stream') {
    switch (event.op) {
      case 'create': {
        for (const stream of event.streams as Entry[]) {
          if (entries(stream.stream_id).length > 0) continue;
          list('streams')?.push(stream);
          list('never_subscribed')?.push(
            options.includeSubscribers ? { ...stream, subscribers: [] } : stream,
          );
        }
        for (const name of ['streams', 'never_subscribed'])
          list(name)?.sort((a, b) => String(a.name).localeCompare(String(b.name)));
        return;
      }
      case 'update': {
        const {
          stream_id: streamId,
          property,
          value,
        } = event as unknown as Entry & {
          property: string;
          value: unknown;
        };
        const extras = ['rendered_description', 'history_public_to_subscribers', 'is_web_public'];
        for (const entry of entries(streamId)) {
          entry[property] = value;
          for (const extra of extras) if (extra in event) entry[extra] = event[extra];
        }
        return;
      }
      case 'delete': {
        const ids = event.stream_ids as number[];
        for (const name of [...LISTS, 'streams']) remove(name, ids);
        return;
      }
      default:
        return;
    }
  }
}

const STREAM_NOTIFICATION_SETTINGS = [
  ['desktop_notifications', 'enableStreamDesktopNotifications'],
  ['audible_notifications', 'enableStreamAudibleNotifications'],
  ['push_notifications', 'enableStreamPushNotifications'],
  ['email_notifications', 'enableStreamEmailNotifications'],
] as const satisfies readonly (readonly [string, keyof User])[];

/** Zulip's handle_stream_notifications_compatibility, for clients without the
 * notification_settings_null capability: a channel's notification setting left to the user's
 * default (null) reads as that default. Subscribed and unsubscribed channels only, as Zulip
 * (wildcard_mentions_notify stays null). */
export function fillNotificationDefaults(state: State, user: User): void {
  for (const key of ['subscriptions', 'unsubscribed'] as const) {
    const entries = state[key] as Entry[] | undefined;
    for (const entry of entries ?? [])
      for (const [setting, column] of STREAM_NOTIFICATION_SETTINGS)
        if (entry[setting] === null) entry[setting] = user[column];
  }
}
