// Runs the handlers of every job: one BullMQ worker per queue, dispatching by job name. The
// handler record is exhaustive, so a process that runs the workers runs every job.
import { Worker, type Job } from 'bullmq';
import { getLogger } from '@parley/logger';
import { histogram } from '@parley/metrics';
import { JOB_QUEUES, QUEUE_NAMES, jobsConnection, type JobData, type JobName } from './queues';

const jobDuration = histogram(
  'parley_job_duration_seconds',
  'Time a job handler ran, by job and outcome (failed runs are retried with backoff)',
  ['job', 'outcome'],
  [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
);

export type JobHandlers = { [J in JobName]: (data: JobData[J]) => Promise<void> };

export interface JobWorkers {
  /** Stops taking jobs and waits for the running ones to finish (graceful drain). */
  close(): Promise<void>;
  /** Resolves once every worker is connected and waiting for jobs. */
  ready(): Promise<void>;
}

export function startJobWorkers(
  handlers: JobHandlers,
  { concurrency = 4 }: { concurrency?: number } = {},
): JobWorkers {
  const workers = QUEUE_NAMES.map((queue) => {
    const worker = new Worker(
      queue,
      async (job: Job) => {
        const name = job.name as JobName;
        if (JOB_QUEUES[name] !== queue) throw new Error(`job ${job.name} is not for ${queue}`);
        const handler = handlers[name] as (data: unknown) => Promise<void>;
        const stop = jobDuration.startTimer({ job: name });
        try {
          await handler(job.data);
          stop({ outcome: 'completed' });
        } catch (error) {
          stop({ outcome: 'failed' });
          throw error;
        }
      },
      { connection: jobsConnection(), concurrency },
    );
    worker.on('failed', (job, error) => {
      getLogger().warn('job failed', {
        queue,
        job: job?.name,
        job_id: job?.id,
        attempts: job?.attemptsMade,
        error,
      });
    });
    worker.on('error', (error) => {
      getLogger().warn('job worker error', { queue, error });
    });
    return worker;
  });
  return {
    async close() {
      await Promise.all(workers.map((worker) => worker.close()));
    },
    async ready() {
      await Promise.all(workers.map((worker) => worker.waitUntilReady()));
    },
  };
}
