// The API tier as its own process (docker-compose runs several behind nginx).
import { stopAuthCache } from '@parley/auth';
import { getConfig } from '@parley/config';
import { disconnectPrisma } from '@parley/db';
import { disconnectRedis } from '@parley/events';
import { serve } from '@parley/http';
import { createLogger, setLogger } from '@parley/logger';
import { initMetrics } from '@parley/metrics';
import { closeQueues } from '@parley/jobs';
import { createApp } from './app';
import { OutboxRelay } from './outbox-relay';
import { stopLinkifierCache } from './lib/linkifier-cache';

async function main(): Promise<void> {
  const config = getConfig();
  setLogger(createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT }));
  initMetrics('api');
  let draining = false;
  const relay = new OutboxRelay();
  relay.start();
  await serve(createApp({ isDraining: () => draining }), {
    name: 'api',
    port: config.PORT,
    host: config.BIND_HOST,
    onDrainStart: () => {
      draining = true;
    },
    onClosed: async () => {
      await relay.stop();
      await Promise.all([
        disconnectPrisma(),
        disconnectRedis(),
        stopAuthCache(),
        stopLinkifierCache(),
        closeQueues(),
      ]);
    },
  });
}

main().catch((error: unknown) => {
  // Config errors list every problem; print them plainly and exit non-zero.
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
