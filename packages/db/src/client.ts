// One Prisma client per process, over node-postgres through @prisma/adapter-pg (Prisma 6's
// "client" engine: no native query engine to download).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { getConfig } from '@parley/config';
import { getLogger } from '@parley/logger';
import { instrumentQueries } from './query-metrics';
import { TransactionAwarePool } from './transaction-pool';
import { typeParsers } from './type-parsers';

export type Db = PrismaClient;

let client: PrismaClient | undefined;
/** The pool under `client`, shared with typed SQL (sql.ts). */
let pool: TransactionAwarePool | undefined;

/** A database that does not answer (rather than refusing) must not hold requests for long:
 * past this, connecting fails and the request answers 503 (packages/http). */
const CONNECT_TIMEOUT_MS = 2000;

/** Session settings of Parley's connections, appended to PGOPTIONS if the operator sets any
 * (an `options` parameter in DATABASE_URL would replace them: node-postgres lets the URL win).
 *
 * Generic plans: our named statements (sql.ts) are planned once per connection, not at every
 * execution. Left to choose, PostgreSQL kept re-planning most of them (their generic plan's
 * estimate loses to the custom ones'), and planning cost more than running them (GET
 * /messages/{id} spent 0.80 ms of PostgreSQL CPU with JIT off alone, 0.22 ms with this). The
 * setting reaches unnamed statements too (narrows, Prisma's): they are still planned at every
 * execution, but without their values. Checked: bench:history's windows at every anchor, with
 * and without a channel narrow, are unchanged, and the hot paths' named statements were
 * compared plan by plan on the benchmark's database (1M messages).
 *
 * No JIT compilation: it pays off for long analytical queries, never for requests that run
 * in a millisecond, yet a pessimistic estimate is enough to trigger it (the /register read of
 * recent conversations, estimated at its LIMIT of 1,000 rows, spent 30-57 ms compiling for a
 * 0.2 ms query). */
const CONNECTION_OPTIONS = [
  process.env.PGOPTIONS,
  '-c plan_cache_mode=force_generic_plan',
  '-c jit=off',
]
  .filter(Boolean)
  .join(' ');

export function createPool(databaseUrl: string, poolSize: number): TransactionAwarePool {
  const pool = new TransactionAwarePool({
    connectionString: databaseUrl,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    options: CONNECTION_OPTIONS,
    types: typeParsers,
  });
  // An idle connection the server ends (a restart) is dropped by the pool; without a listener
  // the 'error' event would end the process.
  pool.on('error', (error) => getLogger().warn('idle database connection lost', { error }));
  pool.on('connect', (client) => {
    // A connection checked out between two statements (a transaction awaiting something) that
    // the server ends (a restart) emits 'error' on its client, and pg-pool listens only on idle
    // ones: unheard, the event would end the process. The statement in progress or the next
    // one fails instead, and the request answers 503.
    client.on('error', (error) => getLogger().warn('database connection lost', { error }));
    // Prisma's queries and typed SQL both go through these connections: timed in one place.
    instrumentQueries(client);
  });
  return pool;
}

export function createPrisma(databaseUrl: string, poolSize: number): PrismaClient {
  return prismaOver(createPool(databaseUrl, poolSize));
}

function prismaOver(over: TransactionAwarePool): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg(over, { disposeExternalPool: true }) });
}

export function getPrisma(): PrismaClient {
  if (!client) {
    const config = getConfig();
    pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
    client = prismaOver(pool);
  }
  return client;
}

/** The connection pool behind getPrisma(), for typed SQL. */
export function getPool(): TransactionAwarePool {
  getPrisma();
  return pool!;
}

export async function disconnectPrisma(): Promise<void> {
  const current = client;
  const currentPool = pool;
  client = undefined;
  pool = undefined;
  await current?.$disconnect();
  // $disconnect ends an external pool only once Prisma has connected through it.
  if (currentPool && !currentPool.ended) await currentPool.end();
}

/** Liveness of the database for /ready. */
export async function pingDatabase(): Promise<boolean> {
  try {
    await getPrisma().$queryRaw`SELECT 1`;
    return true;
  } catch {
    return false;
  }
}
