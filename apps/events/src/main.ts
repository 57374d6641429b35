// The events tier as its own process (docker-compose runs several behind nginx).
import { getConfig } from '@parley/config';
import { disconnectRedis } from '@parley/events';
import { serve } from '@parley/http';
import { createLogger, setLogger } from '@parley/logger';
import { createApp } from './app';

async function main(): Promise<void> {
  const config = getConfig();
  setLogger(createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT }));
  let draining = false;
  await serve(createApp({ isDraining: () => draining }), {
    name: 'events',
    port: config.EVENTS_PORT,
    host: config.BIND_HOST,
    onDrainStart: () => {
      draining = true;
    },
    onClosed: disconnectRedis,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
