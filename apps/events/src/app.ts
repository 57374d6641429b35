// The events tier's Express app, built without listening: /health, /ready and the long-poll
// routes (GET/DELETE /api/v1/events).
import { randomBytes } from 'node:crypto';
import express, { type RequestHandler } from 'express';
import { pingDatabase } from '@parley/db';
import { resolveRealm } from '@parley/auth';
import { pingRedis } from '@parley/events';
import {
  type DirectRoute,
  errorHandler,
  healthRoutes,
  notFound,
  openApiDocument,
  requestContext,
} from '@parley/http';
import { httpMetrics, metricsRouter } from '@parley/metrics';
import { eventsRouter, type EventsHandlers } from './routes';
import type { EventsService } from './service';
import { ZULIP_FEATURE_LEVEL, ZULIP_VERSION } from '@parley/config';

export { eventsHandlers, eventsRouter, type EventsHandlers } from './routes';
export { lastQueueGoneJobId } from './last-queue-gone';
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

/** This process's replica id in X-Served-By (also in its startup log line). */
export const SERVED_BY = randomBytes(4).toString('hex');

/** What every request of this tier goes through first. */
function prelude(): RequestHandler[] {
  return [
    requestContext(),
    // Which replica answered: behind a load balancer, what an operator (or the topology test)
    // needs to follow a client's polls across replicas. Opaque, so clients learn no host names.
    (_req, res, next) => {
      res.setHeader('X-Served-By', SERVED_BY);
      next();
    },
    httpMetrics(),
  ];
}

export function createApp(
  service: EventsService,
  options: { isDraining?: () => boolean; handlers?: EventsHandlers } = {},
): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // Zulip's API sends no ETags; computing one hashes every answer's body.
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(prelude());
  app.use(metricsRouter());
  // Postgres is read only to authenticate; the fan-out never touches it.
  app.use(healthRoutes(readinessChecks(service), options.isDraining ?? (() => false)));
  app.use('/api/v1', eventsRouter(service, options.handlers));
  // This tier's part of the API description (the API tier serves the rest at the same path).
  app.get('/api/v1/openapi.json', (_req, res) => {
    res.json(
      openApiDocument({
        title: 'Parley API: events tier',
        version: `${ZULIP_VERSION} (feature level ${ZULIP_FEATURE_LEVEL})`,
      }),
    );
  });
  app.use(notFound);
  app.use(errorHandler);
  return app;
}

/** The long-poll served past the router (packages/http/src/direct-route.ts): the same prelude,
 * realm and handler as through the app; a poll with a body to parse still goes through it. */
export function directRoutes(handlers: EventsHandlers): DirectRoute[] {
  return [
    {
      method: 'GET',
      path: '/api/v1/events',
      middleware: [...prelude(), resolveRealm],
      handler: handlers.GET,
    },
  ];
}
