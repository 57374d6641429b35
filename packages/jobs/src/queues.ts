// Background jobs on BullMQ, in the same Redis as the events. Every job names its queue in
// one exhaustive record, so adding a job without deciding where it runs does not compile.
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { getConfig } from '@parley/config';

export const QUEUE_NAMES = ['mail', 'maintenance', 'scheduled', 'push', 'thumbnail'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/** Each job's data. Jobs carry ids, never secrets: the worker reads the rest from the
 * database (a confirmation key never sits in Redis). */
export interface JobData {
  /** The `sequence`-th invitation email of an invitation (a resend is the next one). */
  'invitation-email': { invitationId: number; sequence: number };
  /** A change of a user's own email address: the link to the new address (`confirm`), or
   * the notice to the old one once it was confirmed (`notice`). */
  'email-change-mail': { changeId: number; kind: 'confirm' | 'notice' };
  /** The email telling a deactivated user so, with the administrators' comment. */
  'deactivation-email': { noticeId: number };
  /** Members whose waiting period has passed join role:fullmembers (periodic). */
  'promote-full-members': Record<string, never>;
  /** Uploads no message links, older than the grace period, are deleted (periodic). */
  'delete-unclaimed-uploads': Record<string, never>;
  /** Messages past their channel's or organization's message_retention_days are deleted
   * (periodic). */
  'delete-expired-messages': Record<string, never>;
  /** Rows of the `log` push transport older than PUSH_LOG_RETENTION_HOURS go (periodic). */
  'prune-push-log': Record<string, never>;
  /** A scheduled message or reminder, at its time; `version` is the row's version when the
   * job was queued (an edit queues another job; this one then does nothing). */
  'deliver-scheduled-message': { scheduledMessageId: number; version: number };
  /** Mobile push notifications of a sent message: each user with the reason they are
   * notified (Zulip's NotificationTriggers value). `editedAt` (ms): for the mentions an edit
   * added, whose clients are those open at the edit; `clientsGone`: the users' last clients
   * went, they are idle. */
  'push-notifications': {
    messageId: number;
    recipients: { userId: number; trigger: string }[];
    editedAt?: number;
    clientsGone?: boolean;
  };
  /** Who of a sent message's recipients (`userIds`, the send path's candidates) is emailed if
   * idle: their settings and presence decide (docs/email-notifications.md). `editedAt` as for
   * pushes. */
  'email-notifications': { messageId: number; userIds: number[]; editedAt?: number };
  /** A user's missed-message emails, once the earliest waiting message is due. */
  'missed-message-email': { userId: number };
  /** The user's last event queue went (deleted, or expired) holding these unread messages:
   * those not emailed or pushed because a client was open are looked at again (Zulip's
   * missedmessage_hook). */
  'last-queue-gone': { userId: number; messageIds: number[] };
  /** The users an edit of a channel message at `editedAt` (ms) newly mentions: notified as of
   * a mention (Zulip's maybe_enqueue_notifications_for_message_update). */
  'added-mention-notifications': { messageId: number; userIds: number[]; editedAt: number };
  /** The user read or lost messages whose mobile notifications are showing: they go. */
  'push-notification-removal': { userId: number; messageIds: number[] };
  /** A device registered with this server, to register with the push bouncer too. */
  'push-device-registration': { deviceId: number };
  /** A client device's FCM/APNs token, sealed by the app for the push bouncer, to register
   * there for end-to-end encrypted notifications (the token id in decimal: a BigInt). */
  'e2ee-push-registration': {
    deviceId: number;
    tokenId: string;
    bouncerPublicKey: string;
    encryptedPushRegistration: string;
  };
  /** The thumbnails of an uploaded image (Zulip's `thumbnail` queue), then the messages that
   * show its loading placeholder. */
  thumbnail: { attachmentId: number };
  /** A data export an administrator asked for (POST /export/realm), made and stored. */
  'realm-export': { exportId: number };
}
export type JobName = keyof JobData;

export const JOB_QUEUES: Record<JobName, QueueName> = {
  'invitation-email': 'mail',
  'email-change-mail': 'mail',
  'deactivation-email': 'mail',
  'promote-full-members': 'maintenance',
  'delete-unclaimed-uploads': 'maintenance',
  'delete-expired-messages': 'maintenance',
  'prune-push-log': 'maintenance',
  'deliver-scheduled-message': 'scheduled',
  'push-notifications': 'push',
  'email-notifications': 'mail',
  'missed-message-email': 'mail',
  'last-queue-gone': 'mail',
  'added-mention-notifications': 'push',
  'push-notification-removal': 'push',
  'push-device-registration': 'push',
  'e2ee-push-registration': 'push',
  // Its own queue, as in Zulip: decoding large images must not hold up mail or pushes.
  thumbnail: 'thumbnail',
  // Zulip's deferred_work: minutes of work that must not hold up mail or pushes.
  'realm-export': 'maintenance',
};

/** Retries with backoff; finished jobs are kept a while so that an id seen again (a retried
 * enqueue) is recognized and not run twice. */
const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: { age: 7 * 24 * 3600 },
  removeOnFail: { age: 30 * 24 * 3600 },
};

/** Connection options for a queue or a worker (workers need maxRetriesPerRequest null). */
export function jobsConnection(): ConnectionOptions {
  return { url: getConfig().REDIS_URL, maxRetriesPerRequest: null };
}

const queues = new Map<QueueName, Queue>();

export function queueFor(name: QueueName): Queue {
  let queue = queues.get(name);
  if (!queue) {
    queue = new Queue(name, {
      connection: { url: getConfig().REDIS_URL, maxRetriesPerRequest: 3 },
    });
    queues.set(name, queue);
  }
  return queue;
}

/** Adds a job under `jobId`: adding the same id again while it is known does nothing, so an
 * enqueue repeated after a crash cannot run the job twice. Call only for committed data
 * (from an action's onCommit). */
/** Removes the job if it failed for good (its attempts used up), so that adding its id again
 * queues it afresh: a sweep making good a lost job would otherwise find the failed one and add
 * nothing. True if it was removed. */
export async function removeIfFailed(job: JobName, jobId: string): Promise<boolean> {
  const found = await queueFor(JOB_QUEUES[job]).getJob(jobId);
  if (!found || !(await found.isFailed())) return false;
  await found.remove();
  return true;
}

/** Whether a worker holds the job now (BullMQ's active state). */
export async function jobIsRunning(job: JobName, jobId: string): Promise<boolean> {
  const found = await queueFor(JOB_QUEUES[job]).getJob(jobId);
  return found ? found.isActive() : false;
}

export async function enqueueJob<J extends JobName>(
  job: J,
  data: JobData[J],
  jobId: string,
  { delayMs }: { delayMs?: number } = {},
): Promise<void> {
  await queueFor(JOB_QUEUES[job]).add(job, data, {
    ...DEFAULT_JOB_OPTIONS,
    jobId,
    ...(delayMs !== undefined && delayMs > 0 ? { delay: Math.ceil(delayMs) } : {}),
  });
}

/** Runs `job` every `everyMs` (a BullMQ job scheduler: one schedule in Redis however many
 * processes declare it, each run taken by one worker). Declaring it again with another
 * period replaces the period. */
export async function scheduleRepeatingJob<J extends JobName>(
  job: J,
  data: JobData[J],
  everyMs: number,
): Promise<void> {
  await queueFor(JOB_QUEUES[job]).upsertJobScheduler(
    job,
    { every: everyMs },
    {
      name: job,
      data,
      opts: { removeOnComplete: { count: 10 }, removeOnFail: { age: 7 * 24 * 3600 } },
    },
  );
}

/** The schedule of `job`, if one is declared (for operators' tools and tests). */
export async function repeatingJobSchedule(
  job: JobName,
): Promise<{ every?: number | null; next?: number | null } | undefined> {
  const scheduler = await queueFor(JOB_QUEUES[job]).getJobScheduler(job);
  return scheduler ? { every: scheduler.every ?? null, next: scheduler.next ?? null } : undefined;
}

export async function closeQueues(): Promise<void> {
  const open = [...queues.values()];
  queues.clear();
  await Promise.all(open.map((queue) => queue.close()));
}
