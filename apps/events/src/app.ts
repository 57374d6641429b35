// The events tier's Express app, built without listening. It answers /health and /ready now;
// the long-poll routes (GET/DELETE /api/v1/events) and the fan-out arrive with the event-queue
// issue and are mounted through `eventsRouter`.
import express, { Router } from 'express';
import { pingRedis } from '@parley/events';
import { errorHandler, healthRoutes, notFound, requestContext } from '@parley/http';

/** Routes under /api/v1 that this tier serves (the all-in-one server mounts them too). */
export function eventsRouter(): Router {
  return Router();
}

export function createApp(options: { isDraining?: () => boolean } = {}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(requestContext());
  // The events tier never reads Postgres (architecture file): Redis is its only dependency.
  app.use(healthRoutes({ redis: pingRedis }, options.isDraining ?? (() => false)));
  app.use('/api/v1', eventsRouter());
  app.use(notFound);
  app.use(errorHandler);
  return app;
}
