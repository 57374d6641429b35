import { Redis, type RedisOptions } from 'ioredis';
import { getConfig } from '@parley/config';

let client: Redis | undefined;

export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3, ...options });
}

/** The process's shared command connection (blocking reads and pub/sub need their own). */
export function getRedis(): Redis {
  client ??= createRedis(getConfig().REDIS_URL);
  return client;
}

export async function disconnectRedis(): Promise<void> {
  const current = client;
  client = undefined;
  if (current) await current.quit().catch(() => current.disconnect());
}

export async function pingRedis(): Promise<boolean> {
  try {
    return (await getRedis().ping()) === 'PONG';
  } catch {
    return false;
  }
}
