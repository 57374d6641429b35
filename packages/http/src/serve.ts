// Listening and draining, shared by both tiers: on SIGTERM/SIGINT stop accepting connections,
// let in-flight requests finish (up to a deadline), then run the app's own clean-up.
import type { Server } from 'node:http';
import type { Express } from 'express';
import { getLogger } from '@parley/logger';
import type { DirectRoute } from './direct-route';
import { createExpressServer } from './express-server';

export interface ServeOptions {
  port: number;
  host: string;
  name: string;
  /** Called once shutdown starts: /ready turns 503 so the balancer stops routing here. */
  onDrainStart?: () => void;
  /** Releases what the app holds (database pool, Redis, leases) after the server closed. */
  onClosed?: () => Promise<void>;
  drainTimeoutMs?: number;
  /** Routes served past the app's router (see direct-route.ts). */
  directRoutes?: DirectRoute[];
}

export async function serve(app: Express, options: ServeOptions): Promise<Server> {
  const log = getLogger();
  const server = createExpressServer(app, options.directRoutes);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Long-polls park for up to a minute; keep idle connections shorter than nginx's.
  server.keepAliveTimeout = 65_000;
  log.info(`${options.name} listening`, { port: options.port, host: options.host });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${options.name} draining`, { signal });
    options.onDrainStart?.();
    const deadline = setTimeout(() => {
      log.warn(`${options.name} drain deadline passed, closing remaining connections`);
      server.closeAllConnections();
    }, options.drainTimeoutMs ?? 10_000);
    deadline.unref();
    // Keep-alive connections that go idle after their last response (answered long-polls,
    // load-balancer connections) would hold close() open until the client drops them.
    const sweeper = setInterval(() => server.closeIdleConnections(), 50);
    sweeper.unref();
    server.close(() => {
      clearInterval(sweeper);
      void (async () => {
        try {
          await options.onClosed?.();
        } finally {
          log.info(`${options.name} stopped`);
          process.exit(0);
        }
      })();
    });
    server.closeIdleConnections();
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  return server;
}
