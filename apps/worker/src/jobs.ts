// Every background job and the code that runs it. The record is exhaustive over the job
// names (packages/jobs), so a new job cannot be forgotten here; the standalone server and
// the worker tier both start exactly this.
import {
  emailAfterLastQueueGone,
  scheduleEmailNotifications,
  sendMissedMessageEmails,
} from '@parley/api/actions/email-notifications';
import { notifyAddedMentions } from '@parley/api/actions/added-mention-notifications';
import {
  requeueUnsentEmailChangeMails,
  sendEmailChangeMail,
} from '@parley/api/actions/email-change';
import { requeueUnsentInvitationEmails, sendInvitationEmail } from '@parley/api/actions/invites';
import {
  requeueUnsentDeactivationEmails,
  sendDeactivationEmail,
} from '@parley/api/actions/deactivation-notice';
import { registerE2eeDevice } from '@parley/api/actions/client-devices';
import { registerWithBouncer } from '@parley/api/actions/push-devices';
import {
  prunePushNotificationLog,
  pushAfterLastQueueGone,
  sendPushNotificationRemoval,
  sendPushNotifications,
} from '@parley/api/actions/push-notifications';
import { promoteFullMembers } from '@parley/api/actions/realm-settings';
import { runRealmExport, sweepExports } from '@parley/api/actions/realm-exports';
import {
  deliverScheduledMessage,
  requeueScheduledMessages,
} from '@parley/api/actions/scheduled-messages';
import { deleteOldUnclaimedUploads } from '@parley/api/actions/upload-cleanup';
import { deleteExpiredMessages } from '@parley/api/actions/message-retention';
import { deleteExpiredTusUploads } from '@parley/api/lib/tus-store';
import { ensureThumbnails, requeuePendingThumbnails } from '@parley/api/actions/thumbnails';
import {
  scheduleRepeatingJob,
  startJobWorkers,
  type JobHandlers,
  type JobWorkers,
} from '@parley/jobs';
import { getLogger } from '@parley/logger';

export const JOB_HANDLERS: JobHandlers = {
  'invitation-email': sendInvitationEmail,
  'email-change-mail': sendEmailChangeMail,
  'deactivation-email': sendDeactivationEmail,
  'push-notifications': async (data) => {
    await sendPushNotifications(data);
  },
  'email-notifications': async (data) => {
    await scheduleEmailNotifications(data);
  },
  'added-mention-notifications': async (data) => {
    await notifyAddedMentions(data);
  },
  'last-queue-gone': async (data) => {
    // Neither kind holds the other back; a failure retries both (what was sent is no longer
    // set aside).
    const results = await Promise.allSettled([
      emailAfterLastQueueGone(data),
      pushAfterLastQueueGone(data.userId, data.messageIds),
    ]);
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  },
  'missed-message-email': async (data) => {
    await sendMissedMessageEmails(data);
  },
  'push-notification-removal': async (data) => {
    await sendPushNotificationRemoval(data);
  },
  'push-device-registration': registerWithBouncer,
  'e2ee-push-registration': registerE2eeDevice,
  'promote-full-members': async () => {
    const promoted = await promoteFullMembers();
    if (promoted > 0) getLogger().info('members promoted to full members', { count: promoted });
  },
  'deliver-scheduled-message': async (data) => {
    await deliverScheduledMessage(data);
  },
  'delete-unclaimed-uploads': async () => {
    const deleted = await deleteOldUnclaimedUploads();
    if (deleted > 0) getLogger().info('unclaimed uploads deleted', { count: deleted });
    // Resumable uploads never finished (docs/uploads.md): their staged bytes expire.
    const expired = await deleteExpiredTusUploads();
    if (expired > 0) getLogger().info('abandoned resumable uploads deleted', { count: expired });
  },
  'delete-expired-messages': async () => {
    const deleted = await deleteExpiredMessages();
    if (deleted > 0) getLogger().info('messages past their retention period deleted', { deleted });
  },
  'prune-push-log': async () => {
    const deleted = await prunePushNotificationLog();
    if (deleted > 0) getLogger().info('push notification log pruned', { count: deleted });
  },
  thumbnail: async ({ attachmentId }) => {
    await ensureThumbnails(attachmentId);
  },
  'realm-export': runRealmExport,
};

/** The `log` push transport's rows hold message text: kept a day by default, then pruned
 * hourly. */
export const PUSH_LOG_PRUNE_EVERY_MS = 3600_000;

/** Zulip promotes members once a day; hourly keeps a promotion within an hour of its due
 * time at the cost of one indexed query per organization with a waiting period. */
export const FULL_MEMBER_PROMOTION_EVERY_MS = 3600_000;

/** Zulip deletes unclaimed uploads once a day; each run here deletes at most one batch
 * (UPLOAD_CLEANUP_BATCH_SIZE), so hourly runs also work off a backlog within the day. */
export const UPLOAD_CLEANUP_EVERY_MS = 3600_000;

/** Zulip archives expired messages once a day, and so does Parley: a run looks up each scope
 * with a period through the (realm_id, date_sent) index, which holds every old message of the
 * organization, kept ones included, so it is not an hourly cost. */
export const RETENTION_EVERY_MS = 24 * 3600_000;

export interface WorkerOptions {
  concurrency?: number;
  /** How often to queue again the emails whose job was lost and declare the repeating
   * jobs (0: never). */
  sweepIntervalMs?: number;
}

/** Starts the workers, and a periodic sweep that queues again invitation emails asked for
 * but never sent (a job lost between a commit and Redis) and declares the repeating jobs'
 * schedules again (a Redis that lost its data forgets them; declaring is idempotent). */
export function startWorkers({
  concurrency,
  sweepIntervalMs = 60_000,
}: WorkerOptions = {}): JobWorkers {
  const workers = startJobWorkers(JOB_HANDLERS, { concurrency });
  // The sweep in flight: closing waits for it, so nothing it queues outlives the workers (a
  // queue connection opened after closeQueues() would keep the process alive).
  let sweeping: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    sweeping = Promise.all([
      requeueUnsentInvitationEmails().then(
        (count) => {
          if (count > 0) getLogger().info('invitation emails queued again', { count });
        },
        (error: unknown) => getLogger().warn('invitation email sweep failed', { error }),
      ),
      // Email-change mails whose job was lost between COMMIT and Redis.
      requeueUnsentEmailChangeMails().then(
        (count) => {
          if (count > 0) getLogger().info('email change mails queued again', { count });
        },
        (error: unknown) => getLogger().warn('email change mail sweep failed', { error }),
      ),
      // Deactivation emails whose job was lost between COMMIT and Redis.
      requeueUnsentDeactivationEmails().then(
        (count) => {
          if (count > 0) getLogger().info('deactivation emails queued again', { count });
        },
        (error: unknown) => getLogger().warn('deactivation email sweep failed', { error }),
      ),
      // Scheduled messages whose job was lost (a Redis that lost its data, an enqueue lost
      // between COMMIT and Redis): queued again; a job still known is left as it is.
      requeueScheduledMessages().catch((error: unknown) =>
        getLogger().warn('scheduled message sweep failed', { error }),
      ),
      // Data exports whose job was lost, or that a lost job left started.
      sweepExports().then(
        (count) => {
          if (count > 0) getLogger().info('data exports queued again', { count });
        },
        (error: unknown) => getLogger().warn('data export sweep failed', { error }),
      ),
      // Uploaded images whose thumbnail job was lost, or that predate thumbnails.
      requeuePendingThumbnails().catch((error: unknown) =>
        getLogger().warn('thumbnail sweep failed', { error }),
      ),
      scheduleRepeatingJob('promote-full-members', {}, FULL_MEMBER_PROMOTION_EVERY_MS).catch(
        (error: unknown) => getLogger().warn('scheduling full-member promotion failed', { error }),
      ),
      scheduleRepeatingJob('prune-push-log', {}, PUSH_LOG_PRUNE_EVERY_MS).catch((error: unknown) =>
        getLogger().warn('scheduling the push log pruning failed', { error }),
      ),
      scheduleRepeatingJob('delete-expired-messages', {}, RETENTION_EVERY_MS).catch(
        (error: unknown) => getLogger().warn('scheduling message retention failed', { error }),
      ),
      scheduleRepeatingJob('delete-unclaimed-uploads', {}, UPLOAD_CLEANUP_EVERY_MS).catch(
        (error: unknown) => getLogger().warn('scheduling the upload clean-up failed', { error }),
      ),
    ]);
  };
  const timer = sweepIntervalMs > 0 ? setInterval(sweep, sweepIntervalMs) : undefined;
  timer?.unref();
  if (timer) sweep();
  return {
    ready: () => workers.ready(),
    async close() {
      clearInterval(timer);
      await sweeping;
      await workers.close();
    },
  };
}
