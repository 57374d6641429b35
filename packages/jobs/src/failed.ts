// Failed jobs, for operators (`pnpm manage failed-jobs`): a job that used up its attempts (or
// threw BullMQ's UnrecoverableError) stays in its queue's failed set, kept for
// DEFAULT_JOB_OPTIONS.removeOnFail (30 days; a repeating job's failed runs 7 days), until
// retried or removed here.
import type { Job } from 'bullmq';
import { QUEUE_NAMES, queueFor, type QueueName } from './queues';

export interface FailedJob {
  queue: QueueName;
  name: string;
  id: string;
  attemptsMade: number;
  /** Attempts the job was allowed (1 when none were set). */
  attempts: number;
  failedReason: string;
  /** When it last failed (ms since the epoch), and when it was added. */
  finishedOn: number | null;
  createdOn: number;
  data: unknown;
}

export interface FailedJobList {
  /** Failed jobs of each queue listed, however many are shown. */
  counts: Partial<Record<QueueName, number>>;
  /** The newest first, at most `limit`. */
  jobs: FailedJob[];
}

/** A queue or job the operator named that is not there (the message says which). */
export class FailedJobLookupError extends Error {
  override name = 'FailedJobLookupError';
}

function isQueueName(name: string): name is QueueName {
  return (QUEUE_NAMES as readonly string[]).includes(name);
}

/** The queues to look in: one by name, or all. Throws on a name that is not a queue. */
export function failedJobQueues(queue?: string): QueueName[] {
  if (queue === undefined) return [...QUEUE_NAMES];
  if (!isQueueName(queue))
    throw new FailedJobLookupError(`Unknown queue '${queue}' (queues: ${QUEUE_NAMES.join(', ')})`);
  return [queue];
}

function summarize(queue: QueueName, job: Job): FailedJob {
  return {
    queue,
    name: job.name,
    id: job.id ?? '',
    attemptsMade: job.attemptsMade,
    attempts: job.opts.attempts ?? 1,
    failedReason: job.failedReason ?? '',
    finishedOn: job.finishedOn ?? null,
    createdOn: job.timestamp,
    data: job.data as unknown,
  };
}

/** The newest `limit` failed jobs across `queues`, with each queue's count of failed jobs. */
export async function listFailedJobs({
  queues = [...QUEUE_NAMES],
  limit = 50,
}: { queues?: QueueName[]; limit?: number } = {}): Promise<FailedJobList> {
  const counts: Partial<Record<QueueName, number>> = {};
  const jobs: FailedJob[] = [];
  for (const name of queues) {
    const queue = queueFor(name);
    counts[name] = await queue.getFailedCount();
    if (limit <= 0) continue;
    // Newest first: the failed set is ordered by failure time.
    for (const job of await queue.getFailed(0, limit - 1)) if (job) jobs.push(summarize(name, job));
  }
  jobs.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0));
  return { counts, jobs: jobs.slice(0, Math.max(limit, 0)) };
}

/** Failed jobs with this id in `queues` (ids are unique within a queue, not across them). */
async function findFailed(
  id: string,
  queues: QueueName[],
): Promise<{ queue: QueueName; job: Job }[]> {
  const found: { queue: QueueName; job: Job }[] = [];
  for (const name of queues) {
    const job = await queueFor(name).getJob(id);
    if (job && (await job.isFailed())) found.push({ queue: name, job });
  }
  return found;
}

async function oneFailed(id: string, queues: QueueName[]): Promise<{ queue: QueueName; job: Job }> {
  const found = await findFailed(id, queues);
  if (found.length === 0) throw new FailedJobLookupError(`No failed job with id '${id}'`);
  if (found.length > 1)
    throw new FailedJobLookupError(
      `Failed jobs with id '${id}' in several queues (${found.map((f) => f.queue).join(', ')}): name one with --queue`,
    );
  return found[0]!;
}

/** Puts a failed job back in its queue to run once more now: it keeps its attempt count, so a
 * job that fails again goes straight back to the failed set. Returns it as it was. */
export async function retryFailedJob(
  id: string,
  queues: QueueName[] = [...QUEUE_NAMES],
): Promise<FailedJob> {
  const { queue, job } = await oneFailed(id, queues);
  const before = summarize(queue, job);
  await job.retry('failed');
  return before;
}

/** Deletes a failed job for good. Returns it as it was. */
export async function removeFailedJob(
  id: string,
  queues: QueueName[] = [...QUEUE_NAMES],
): Promise<FailedJob> {
  const { queue, job } = await oneFailed(id, queues);
  const before = summarize(queue, job);
  await job.remove();
  return before;
}
