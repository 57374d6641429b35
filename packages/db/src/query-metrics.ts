// Time spent in PostgreSQL as the application sees it (round trip included), for every
// statement on a pooled connection: Prisma's and typed SQL's alike.
import type pg from 'pg';
import { histogram, LATENCY_BUCKETS } from '@parley/metrics';

const queryDuration = histogram(
  'parley_db_query_duration_seconds',
  'Time from sending a statement to PostgreSQL to its answer, by outcome',
  ['outcome'],
  LATENCY_BUCKETS,
);

type QueryFn = (...args: unknown[]) => unknown;

// Children bound to their label once: observing through them skips hashing the labels, which
// on a statement of a tenth of a millisecond is not free.
const ok = queryDuration.labels('ok');
const failed = queryDuration.labels('error');

/** Wraps a new connection's query(): promise-style calls (Prisma's adapter, typed SQL) and
 * callback-style ones are both timed. */
export function instrumentQueries(client: pg.PoolClient): void {
  // The class's method, looked up at each call rather than kept: whatever replaces it later
  // (a test's spy counting statements) still sees every statement.
  const proto = Object.getPrototypeOf(client) as { query: QueryFn };
  const timed: QueryFn = function (this: unknown, ...args: unknown[]) {
    const original = proto.query;
    const start = performance.now();
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: unknown, ...rest: unknown[]) => {
        (error ? failed : ok).observe((performance.now() - start) / 1000);
        return (callback as QueryFn)(error, ...rest);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (result instanceof Promise)
      result.then(
        () => ok.observe((performance.now() - start) / 1000),
        () => failed.observe((performance.now() - start) / 1000),
      );
    return result;
  };
  (client as unknown as { query: QueryFn }).query = timed;
}
