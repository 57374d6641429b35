// Prometheus metrics (prom-client) for every tier: one registry per process, served at
// GET /metrics; each package defines the metrics of what it measures with the helpers here,
// so a name is declared once. docs/metrics.md lists them with the alerts to set.
import { Router, type RequestHandler } from 'express';
import client from 'prom-client';

export const registry = client.register;

let defaultsCollected = false;

/** Process metrics (CPU, memory, event-loop lag, GC) and the tier's name on every series. */
export function initMetrics(tier: 'api' | 'events' | 'worker' | 'standalone'): void {
  registry.setDefaultLabels({ tier });
  if (defaultsCollected) return;
  defaultsCollected = true;
  // The event-loop delay is sampled every 100 ms, not prom-client's 10: each sample is a timer
  // that wakes the process, and 100 wake-ups a second were about half of an idle API replica's
  // CPU on the 2-core machine of issue "Speed" (`pnpm bench:idle`: 19 -> 10 ms per second),
  // and half a millisecond of API and events CPU per message at 10 messages/s. A stall of
  // 100 ms or more, what the alert in docs/metrics.md watches for, still delays a sample.
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
}

/** A metric is made once per process, whoever asks first (modules may be loaded twice in
 * tests, and two apps in one process share the registry). */
function once<M>(name: string, make: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? make();
}

export function histogram<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets?: number[],
): client.Histogram<L> {
  return once(name, () => new client.Histogram({ name, help, labelNames, buckets }));
}

export function counter<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
): client.Counter<L> {
  return once(name, () => new client.Counter({ name, help, labelNames }));
}

/** A gauge read when Prometheus scrapes (`collect` sets its value). */
export function gauge<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  collect?: (this: client.Gauge<L>) => void | Promise<void>,
): client.Gauge<L> {
  return once(
    name,
    () => new client.Gauge({ name, help, labelNames, ...(collect ? { collect } : {}) }),
  );
}

/** Latency buckets for requests and queries: 1 ms to 10 s. */
export const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

const httpDuration = histogram(
  'parley_http_request_duration_seconds',
  'Time to answer an HTTP request, by route pattern and status',
  ['method', 'route', 'status'],
  LATENCY_BUCKETS,
);

/** Observes every answered request under its route pattern (`/api/v1/messages/:message_id`,
 * never the raw path: ids would make a series per message); unmatched paths share one. */
export function httpMetrics(): RequestHandler {
  return (req, res, next) => {
    const stop = httpDuration.startTimer();
    res.on('finish', () => {
      // defineRoute (or a direct route) notes the full pattern (res.locals.routePattern);
      // req.baseUrl is no longer the mount path once an error has left the router.
      const noted = (res.locals as { routePattern?: unknown }).routePattern;
      const pattern = (req.route as { path?: unknown } | undefined)?.path;
      const route =
        typeof noted === 'string'
          ? noted
          : typeof pattern === 'string'
            ? `${req.baseUrl}${pattern}`
            : 'unmatched';
      stop({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}

/** GET /metrics in Prometheus's text format. Scrape each replica directly: a request that
 * came through a proxy (it carries X-Forwarded-For: nginx, an ingress) is refused, so the
 * public entry point never exposes them whatever its configuration. */
export function metricsRouter(): Router {
  const router = Router();
  router.get('/metrics', async (req, res, next) => {
    if (req.headers['x-forwarded-for'] !== undefined) return next();
    res.setHeader('Content-Type', registry.contentType);
    res.send(await registry.metrics());
  });
  return router;
}
