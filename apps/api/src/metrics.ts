// The API tier's own gauges, read when Prometheus scrapes: the event outbox's backlog, and
// the job queues' depths (the same from every replica).
import { registerJobQueueMetrics } from '@parley/jobs';
import { gauge } from '@parley/metrics';
import { outboxBacklog } from './lib/outbox';

let registered = false;

export function registerApiMetrics(): void {
  if (registered) return;
  registered = true;
  const rows = gauge(
    'parley_outbox_backlog_rows',
    'Committed event notifications not yet published',
    [],
  );
  gauge(
    'parley_outbox_oldest_seconds',
    'Age of the oldest unpublished notification (the relay takes rows older than 5 s)',
    [],
    async function () {
      const backlog = await outboxBacklog().catch(() => null);
      if (!backlog) return;
      rows.set(backlog.rows);
      this.set(backlog.oldestSeconds);
    },
  );
  registerJobQueueMetrics();
}
