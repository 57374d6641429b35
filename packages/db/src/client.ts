// One Prisma client per process, over node-postgres through @prisma/adapter-pg (Prisma 6's
// "client" engine: no native query engine to download).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@prisma/client';
import { getConfig } from '@parley/config';

export type Db = PrismaClient;

let client: PrismaClient | undefined;

/** A database that does not answer (rather than refusing) must not hold requests for long:
 * past this, connecting fails and the request answers 503 (packages/http). */
const CONNECT_TIMEOUT_MS = 2000;

export function createPrisma(databaseUrl: string, poolSize: number): PrismaClient {
  return new PrismaClient({
    adapter: new PrismaPg({
      connectionString: databaseUrl,
      max: poolSize,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    }),
  });
}

export function getPrisma(): PrismaClient {
  if (!client) {
    const config = getConfig();
    client = createPrisma(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  }
  return client;
}

export async function disconnectPrisma(): Promise<void> {
  const current = client;
  client = undefined;
  await current?.$disconnect();
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
