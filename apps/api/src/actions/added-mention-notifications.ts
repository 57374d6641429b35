// Notifications of the mentions an edit adds (Zulip's
// maybe_enqueue_notifications_for_message_update). A user an edit of a channel message
// mentions, who was not mentioned before (wildcard mentions count), is notified as a mention
// sent then would notify them: a mobile push, and an email if idle. Not those the message
// notified anyway when it was sent (the channel's or the followed topic's push or email
// notifications: Zulip takes them to have been notified), never for direct messages (their
// recipients were all notified), the sender, bots, or those who muted the sender.
import { bitmaskToFlags, type ActionContext } from '@parley/db';
import { enqueueJob, type JobData } from '@parley/jobs';
import { emailTrigger, pushTrigger } from '../lib/push-notifications';
import { scheduleEmailNotifications } from './email-notifications';
import { emailSettingsOf, notificationSettings, pushSettingsOf } from './notification-settings';

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

/** The `added-mention-notifications` job: who of the newly mentioned is notified, and how.
 * Returns how many pushes and emails it queued. */
export async function notifyAddedMentions({
  messageId,
  userIds,
  editedAt,
}: JobData['added-mention-notifications']): Promise<{ pushed: number; emailed: number }> {
  const rows = (await notificationSettings(messageId, userIds)).filter((row) => row.is_channel);
  // Notified when it was sent, without any mention: the channel's or the followed topic's
  // notifications, of either kind.
  const notNotifiedAtSend = rows.filter(
    (row) =>
      pushTrigger([], pushSettingsOf(row), true) === null &&
      emailTrigger([], emailSettingsOf(row), true) === null,
  );
  const pushes = notNotifiedAtSend.flatMap((row) => {
    if (!row.has_push_device) return [];
    const trigger = pushTrigger(bitmaskToFlags(row.flags), pushSettingsOf(row), true);
    return trigger ? [{ userId: row.id, trigger }] : [];
  });
  if (pushes.length > 0)
    await enqueueJob(
      'push-notifications',
      { messageId, recipients: pushes, editedAt },
      `push-notifications-${messageId}-mentions-${editedAt}`,
    );
  const emailed =
    notNotifiedAtSend.length > 0
      ? await scheduleEmailNotifications({
          messageId,
          userIds: notNotifiedAtSend.map((row) => row.id),
          editedAt,
        })
      : 0;
  return { pushed: pushes.length, emailed };
}
