// The events tier as its own process (docker-compose runs several behind nginx).
import { stopAuthCache } from '@parley/auth';
import { getConfig } from '@parley/config';
import { disconnectPrisma } from '@parley/db';
import { disconnectRedis } from '@parley/events';
import { serve } from '@parley/http';
import { closeQueues } from '@parley/jobs';
import { createLogger, getLogger, setLogger } from '@parley/logger';
import { initMetrics } from '@parley/metrics';
import { createApp, directRoutes, eventsHandlers, SERVED_BY } from './app';
import { startEventsService } from './service';

async function main(): Promise<void> {
  const config = getConfig();
  setLogger(createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT }));
  initMetrics('events');
  const service = await startEventsService();
  // Answers carry X-Served-By with this id: it names the replica in the logs.
  getLogger().info('events replica', { served_by: SERVED_BY });
  let draining = false;
  const handlers = eventsHandlers(service);
  await serve(createApp(service, { isDraining: () => draining, handlers }), {
    name: 'events',
    directRoutes: directRoutes(handlers),
    port: config.EVENTS_PORT,
    host: config.BIND_HOST,
    onDrainStart: () => {
      draining = true;
      // Parked polls answer now (clients poll again, through another replica).
      service.poller.drain();
    },
    onClosed: async () => {
      await service.stop();
      await Promise.all([disconnectRedis(), disconnectPrisma(), stopAuthCache(), closeQueues()]);
    },
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
