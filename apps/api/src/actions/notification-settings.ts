// What decides a user's notification of a message once it is sent (the email job, and the
// jobs that look again: an edit's added mentions, a last client gone): the copy's flags,
// whether the user has a device, the push and email settings as the send path reads them, the
// batching period and recent presence.
import { flagBit, getPrisma } from '@parley/db';
import { OFFLINE_THRESHOLD_SECS } from '../lib/presence';
import type { EmailSettings, PushSettings } from '../lib/push-notifications';

export interface NotificationSettingsRow {
  id: number;
  is_channel: boolean;
  flags: bigint;
  has_push_device: boolean;
  offline_push: boolean;
  offline_email: boolean;
  channel_push: boolean;
  channel_email: boolean;
  wildcard_notify: boolean;
  channel_muted: boolean | null;
  topic_policy: number | null;
  followed_push: boolean;
  followed_email: boolean;
  followed_wildcard: boolean;
  /** email_notifications_batching_period_seconds. */
  period: number;
  /** Presence active within OFFLINE_THRESHOLD_SECS. */
  active_recently: boolean;
}

/** Those of `userIds` who may be notified of the message at all (active humans other than the
 * sender, with an unread copy, who did not mute the sender), with their settings. */
export function notificationSettings(
  messageId: number,
  userIds: number[],
): Promise<NotificationSettingsRow[]> {
  return getPrisma().$queryRaw<NotificationSettingsRow[]>`
    SELECT u.id, m.is_channel_message AS is_channel, um.flags, u.has_push_device,
      u.enable_offline_push_notifications AS offline_push,
      u.enable_offline_email_notifications AS offline_email,
      COALESCE(s.push_notifications, u.enable_stream_push_notifications) AS channel_push,
      COALESCE(s.email_notifications, u.enable_stream_email_notifications) AS channel_email,
      COALESCE(s.wildcard_mentions_notify, u.wildcard_mentions_notify) AS wildcard_notify,
      s.is_muted AS channel_muted,
      (SELECT ut.visibility_policy FROM user_topic ut
        WHERE ut.user_profile_id = u.id AND ut.recipient_id = m.recipient_id
          AND lower(ut.topic_name) = lower(m.subject)
        ORDER BY ut.id DESC LIMIT 1) AS topic_policy,
      u.enable_followed_topic_push_notifications AS followed_push,
      u.enable_followed_topic_email_notifications AS followed_email,
      u.enable_followed_topic_wildcard_mentions_notify AS followed_wildcard,
      u.email_notifications_batching_period_seconds AS period,
      COALESCE(p.last_active_time >= now() - make_interval(secs => ${OFFLINE_THRESHOLD_SECS}),
        false) AS active_recently
    FROM message m
    JOIN user_message um ON um.message_id = m.id
    JOIN user_profile u ON u.id = um.user_profile_id
    LEFT JOIN subscription s ON m.is_channel_message
      AND s.user_profile_id = u.id AND s.recipient_id = m.recipient_id
    LEFT JOIN user_presence p ON p.user_profile_id = u.id
    WHERE m.id = ${messageId} AND um.user_profile_id = ANY(${userIds}::int[])
      AND u.is_active AND NOT u.is_bot AND u.id <> m.sender_id
      AND (um.flags & ${flagBit('read')}) = 0
      AND NOT EXISTS (SELECT 1 FROM muted_user mu
        WHERE mu.user_profile_id = u.id AND mu.muted_user_id = m.sender_id)`;
}

function shared(row: NotificationSettingsRow) {
  return {
    wildcardNotify: row.wildcard_notify,
    channelMuted: row.channel_muted,
    topicPolicy: row.topic_policy,
    followedWildcard: row.followed_wildcard,
  };
}

export function pushSettingsOf(row: NotificationSettingsRow): PushSettings {
  return {
    ...shared(row),
    offline: row.offline_push,
    channelPush: row.channel_push,
    followedPush: row.followed_push,
  };
}

export function emailSettingsOf(row: NotificationSettingsRow): EmailSettings {
  return {
    ...shared(row),
    offline: row.offline_email,
    channel: row.channel_email,
    followed: row.followed_email,
  };
}
