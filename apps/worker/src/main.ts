// The worker tier as its own process: runs the background jobs (invitation email, …) from
// the BullMQ queues in Redis. Several may run; each job runs once. On SIGTERM/SIGINT it stops
// taking jobs, lets the running ones finish, then closes its connections.
import { getConfig } from '@parley/config';
import { disconnectPrisma } from '@parley/db';
import { disconnectRedis } from '@parley/events';
import { closeMail, closeQueues, registerJobQueueMetrics } from '@parley/jobs';
import { createServer } from 'node:http';
import { createLogger, getLogger, setLogger } from '@parley/logger';
import { initMetrics, registry } from '@parley/metrics';
import { outboxSettled, SETTLE_ON_STOP_MS } from '@parley/api/lib/outbox';
import { startWorkers } from './jobs';

async function main(): Promise<void> {
  const config = getConfig();
  setLogger(createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT }));
  const log = getLogger();
  initMetrics('worker');
  registerJobQueueMetrics();
  // The worker serves nothing else: GET /metrics on a port of its own.
  const metrics = createServer((req, res) => {
    // Scraped directly, never through a proxy (see packages/metrics).
    if (req.method !== 'GET' || req.url !== '/metrics' || req.headers['x-forwarded-for'])
      return void res.writeHead(404).end();
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  }).listen(config.WORKER_METRICS_PORT, config.BIND_HOST);
  const workers = startWorkers();
  await workers.ready();
  log.info('worker running', { email_backend: config.EMAIL_BACKEND });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('worker draining', { signal });
    void (async () => {
      try {
        metrics.close();
        await workers.close();
        await closeQueues();
        closeMail();
        // Jobs publish events too: their outbox rows' deletions finish before the pool closes.
        await outboxSettled(SETTLE_ON_STOP_MS);
        await Promise.all([disconnectPrisma(), disconnectRedis()]);
      } finally {
        log.info('worker stopped');
        process.exit(0);
      }
    })();
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
