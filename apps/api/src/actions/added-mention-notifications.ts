// Notifications of the mentions an edit adds (Zulip's
// maybe_enqueue_notifications_for_message_update). A user an edit of a channel message
// mentions, who was not mentioned before (wildcard mentions count), is notified as a mention
// sent then would notify them: a mobile push, and an email if idle. Not those the message
// notified anyway when it was sent (the channel's or the followed topic's push or email
// notifications: Zulip takes them to have been notified), never for direct messages (their
// recipients were all notified), the sender, bots, or those who muted the sender.
import { bitmaskToFlags, flagBit, getPrisma, type ActionContext } from '@parley/db';
import { enqueueJob, type JobData } from '@parley/jobs';
import { emailTrigger, pushTrigger } from '../lib/push-notifications';
import { scheduleEmailNotifications } from './email-notifications';

/** Queues the notifications of `userIds`, the users the edit at `editedAt` newly mentions,
 * once it commits. */
export function queueAddedMentionNotifications(
  ctx: Pick<ActionContext, 'onCommit'>,
  messageId: number,
  userIds: number[],
  editedAt: Date,
): void {
  const data = { messageId, userIds, editedAt: editedAt.getTime() };
  ctx.onCommit(() =>
    enqueueJob(
      'added-mention-notifications',
      data,
      `added-mention-notifications-${messageId}-${data.editedAt}`,
    ),
  );
}

interface MentionedRow {
  id: number;
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
}

/** The `added-mention-notifications` job: who of the newly mentioned is notified, and how.
 * Returns how many pushes and emails it queued. */
export async function notifyAddedMentions({
  messageId,
  userIds,
  editedAt,
}: JobData['added-mention-notifications']): Promise<{ pushed: number; emailed: number }> {
  // Still mentioned, with their copy unread; their settings as scheduleEmailNotifications reads
  // them, and the push ones.
  const rows = await getPrisma().$queryRaw<MentionedRow[]>`
    SELECT u.id, um.flags, u.has_push_device,
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
      u.enable_followed_topic_wildcard_mentions_notify AS followed_wildcard
    FROM message m
    JOIN user_message um ON um.message_id = m.id
    JOIN user_profile u ON u.id = um.user_profile_id
    LEFT JOIN subscription s ON s.user_profile_id = u.id AND s.recipient_id = m.recipient_id
    WHERE m.id = ${messageId} AND m.is_channel_message
      AND um.user_profile_id = ANY(${userIds}::int[])
      AND u.is_active AND NOT u.is_bot AND u.id <> m.sender_id
      AND (um.flags & ${flagBit('read')}) = 0
      AND NOT EXISTS (SELECT 1 FROM muted_user mu
        WHERE mu.user_profile_id = u.id AND mu.muted_user_id = m.sender_id)`;
  const shared = (row: MentionedRow) => ({
    wildcardNotify: row.wildcard_notify,
    channelMuted: row.channel_muted,
    topicPolicy: row.topic_policy,
    followedWildcard: row.followed_wildcard,
  });
  const pushSettings = (row: MentionedRow) => ({
    ...shared(row),
    offline: row.offline_push,
    channelPush: row.channel_push,
    followedPush: row.followed_push,
  });
  const emailSettings = (row: MentionedRow) => ({
    ...shared(row),
    offline: row.offline_email,
    channel: row.channel_email,
    followed: row.followed_email,
  });
  // Notified when it was sent, without any mention: the channel's or the followed topic's
  // notifications, of either kind.
  const fresh = rows.filter(
    (row) =>
      pushTrigger([], pushSettings(row), true) === null &&
      emailTrigger([], emailSettings(row), true) === null,
  );
  const pushes = fresh.flatMap((row) => {
    if (!row.has_push_device) return [];
    const trigger = pushTrigger(bitmaskToFlags(row.flags), pushSettings(row), true);
    return trigger ? [{ userId: row.id, trigger }] : [];
  });
  if (pushes.length > 0)
    await enqueueJob(
      'push-notifications',
      { messageId, recipients: pushes },
      `push-notifications-${messageId}-mentions-${editedAt}`,
    );
  const emailed =
    fresh.length > 0
      ? await scheduleEmailNotifications({ messageId, userIds: fresh.map((row) => row.id) })
      : 0;
  return { pushed: pushes.length, emailed };
}
