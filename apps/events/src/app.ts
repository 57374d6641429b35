// The events tier's Express app, built without listening: /health, /ready and the long-poll
// routes (GET/DELETE /api/v1/events).
import express from 'express';
import { pingDatabase } from '@parley/db';
import { pingRedis } from '@parley/events';
import { errorHandler, healthRoutes, notFound, requestContext } from '@parley/http';
import { httpMetrics, metricsRouter } from '@parley/metrics';
import { eventsRouter } from './routes';
import type { EventsService } from './service';

export { eventsRouter } from './routes';
export { startEventsService, type EventsService, type EventsServiceOptions } from './service';

/** What /ready checks on an events replica: its dependencies, and that it delivers. */
export function readinessChecks(service: EventsService): Record<string, () => Promise<boolean>> {
  const fanout = service.fanout;
  return {
    postgres: pingDatabase,
    redis: pingRedis,
    ...(fanout ? { shards: () => fanout.isServing() } : {}),
  };
}

export function createApp(
  service: EventsService,
  options: { isDraining?: () => boolean } = {},
): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // Zulip's API sends no ETags; computing one hashes every answer's body.
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestContext());
  app.use(httpMetrics());
  app.use(metricsRouter());
  // Postgres is read only to authenticate; the fan-out never touches it.
  app.use(healthRoutes(readinessChecks(service), options.isDraining ?? (() => false)));
  app.use('/api/v1', eventsRouter(service));
  app.use(notFound);
  app.use(errorHandler);
  return app;
}
