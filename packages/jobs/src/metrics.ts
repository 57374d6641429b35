// Job queue depths for Prometheus, read from Redis when scraped: the same numbers from every
// process that registers them (take the max across replicas, not the sum).
import { gauge } from '@parley/metrics';
import { QUEUE_NAMES, queueFor } from './queues';

const STATES = ['waiting', 'active', 'delayed', 'failed', 'prioritized'] as const;

export function registerJobQueueMetrics(): void {
  gauge(
    'parley_job_queue_jobs',
    'Jobs in each BullMQ queue, by state',
    ['queue', 'state'],
    async function () {
      for (const queue of QUEUE_NAMES) {
        const counts = await queueFor(queue)
          .getJobCounts(...STATES)
          .catch(() => null);
        if (!counts) continue;
        for (const state of STATES) this.set({ queue, state }, counts[state] ?? 0);
      }
    },
  );
}
