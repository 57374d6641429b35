// Channel and subscription rows → the API's channel object (GET /streams, stream events) and
// subscription object (spec 2.7). Pure: callers load group settings and counts first.
import type { Stream, Subscription } from '@parley/db';
import type { GroupSettingValue } from '../lib/groups';

/** Setting name → column of its group id. */
export const STREAM_GROUP_SETTINGS = {
  can_add_subscribers_group: 'canAddSubscribersGroupId',
  can_remove_subscribers_group: 'canRemoveSubscribersGroupId',
  can_administer_channel_group: 'canAdministerChannelGroupId',
  can_delete_any_message_group: 'canDeleteAnyMessageGroupId',
  can_delete_own_message_group: 'canDeleteOwnMessageGroupId',
  can_move_messages_out_of_channel_group: 'canMoveMessagesOutOfChannelGroupId',
  can_move_messages_within_channel_group: 'canMoveMessagesWithinChannelGroupId',
  can_send_message_group: 'canSendMessageGroupId',
  can_subscribe_group: 'canSubscribeGroupId',
  can_resolve_topics_group: 'canResolveTopicsGroupId',
  can_create_topic_group: 'canCreateTopicGroupId',
} as const satisfies Record<string, keyof Stream>;

export type StreamGroupSetting = keyof typeof STREAM_GROUP_SETTINGS;

/** What presenting a channel needs beyond its row. */
export interface StreamContext {
  /** Group id → API value, for every group the channel's settings name. */
  groups: Map<number, GroupSettingValue>;
  subscriberCount: number;
  /** Ids of the system groups by name, to derive the legacy stream_post_policy. */
  systemGroups: Map<string, number>;
}

/** Legacy stream_post_policy from can_send_message_group (Zulip feature level 333): exact for
 * the four role groups it can express, "any user" otherwise. */
export function streamPostPolicy(stream: Stream, systemGroups: Map<string, number>): number {
  const policies: [string, number][] = [
    ['role:administrators', 2],
    ['role:fullmembers', 3],
    ['role:moderators', 4],
  ];
  for (const [name, policy] of policies) {
    if (systemGroups.get(name) === stream.canSendMessageGroupId) return policy;
  }
  return 1;
}

export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

export function presentStream(stream: Stream, context: StreamContext): Record<string, unknown> {
  const policy = streamPostPolicy(stream, context.systemGroups);
  const groupSettings = Object.fromEntries(
    Object.entries(STREAM_GROUP_SETTINGS).map(([setting, column]) => [
      setting,
      context.groups.get(stream[column]) ?? stream[column],
    ]),
  );
  return {
    stream_id: stream.id,
    name: stream.name,
    description: stream.description,
    rendered_description: stream.renderedDescription,
    date_created: unixSeconds(stream.dateCreated),
    creator_id: stream.creatorId,
    invite_only: stream.inviteOnly,
    is_web_public: stream.isWebPublic,
    history_public_to_subscribers: stream.historyPublicToSubscribers,
    message_retention_days: stream.messageRetentionDays,
    stream_post_policy: policy,
    is_announcement_only: policy === 2,
    first_message_id: stream.firstMessageId,
    folder_id: stream.folderId,
    is_recently_active: stream.isRecentlyActive,
    is_archived: stream.deactivated,
    topics_policy: stream.topicsPolicy,
    // No traffic statistics are kept yet: null is the documented "no information".
    stream_weekly_traffic: null,
    subscriber_count: context.subscriberCount,
    ...groupSettings,
  };
}

/** `subscribers` when include_subscribers asks for them. With 'partial' Zulip *may* send a
 * subset as partial_subscribers for large channels; Parley always sends the full list, which
 * every client must accept. */
export type SubscriberLists = { subscribers: number[] } | null;

export function presentSubscription(
  stream: Stream,
  subscription: Subscription,
  context: StreamContext,
  subscribers: SubscriberLists,
): Record<string, unknown> {
  return {
    ...presentStream(stream, context),
    color: subscription.color,
    is_muted: subscription.isMuted,
    in_home_view: !subscription.isMuted,
    pin_to_top: subscription.pinToTop,
    desktop_notifications: subscription.desktopNotifications,
    audible_notifications: subscription.audibleNotifications,
    push_notifications: subscription.pushNotifications,
    email_notifications: subscription.emailNotifications,
    wildcard_mentions_notify: subscription.wildcardMentionsNotify,
    ...(subscribers ?? {}),
  };
}

/** The channel fields of unsubscribed / never_subscribed entries in /register. */
export function presentStreamWithSubscribers(
  stream: Stream,
  context: StreamContext,
  subscribers: SubscriberLists,
): Record<string, unknown> {
  return { ...presentStream(stream, context), ...(subscribers ?? {}) };
}

/** The `stream` delete event; its `streams` holds only ids since feature level 343. */
export function streamDeleteEvent(streamIds: number[]): {
  type: 'stream';
  op: 'delete';
  streams: { stream_id: number }[];
  stream_ids: number[];
} {
  return {
    type: 'stream',
    op: 'delete',
    streams: streamIds.map((id) => ({ stream_id: id })),
    stream_ids: streamIds,
  };
}

/** The `stream` update event; `name` is the channel's name before the change. */
export function streamUpdateEvent(
  stream: Pick<Stream, 'id' | 'name'>,
  property: string,
  value: unknown,
  extra: Record<string, unknown> = {},
): { type: 'stream' } & Record<string, unknown> {
  return {
    type: 'stream',
    op: 'update',
    stream_id: stream.id,
    name: stream.name,
    property,
    value,
    ...extra,
  };
}
