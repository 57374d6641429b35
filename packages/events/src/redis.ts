import { Redis, type RedisOptions } from 'ioredis';
import { getConfig } from '@parley/config';
import { getLogger } from '@parley/logger';

let client: Redis | undefined;

/** While Redis is unreachable a command fails after one reconnection attempt, or after a
 * second and a half at most, so requests answer 503 quickly instead of hanging; ioredis keeps
 * reconnecting in the background and the connection recovers by itself. */
export const REDIS_COMMAND_TIMEOUT_MS = 1500;

export function createRedis(url: string, options: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    lazyConnect: false,
    maxRetriesPerRequest: 1,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    // Reconnect quickly at first, then every second: Redis restarts take seconds.
    retryStrategy: (times) => Math.min(times * 100, 1000),
    ...options,
  });
  // Without a listener ioredis prints every failed reconnection as an unhandled error; one
  // log line per outage (and one when it is back) says the same.
  let down = false;
  redis.on('error', (error: Error) => {
    if (down) return;
    down = true;
    getLogger().warn('redis unavailable', { error });
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    getLogger().info('redis available again');
  });
  return redis;
}

/** The process's shared command connection (blocking reads and pub/sub need their own). */
export function getRedis(): Redis {
  client ??= createRedis(getConfig().REDIS_URL);
  return client;
}

export async function disconnectRedis(): Promise<void> {
  const current = client;
  client = undefined;
  if (!current) return;
  // QUIT needs a connection; without one it would wait for a reconnection that may never come.
  if (current.status === 'ready') await current.quit().catch(() => current.disconnect());
  else current.disconnect();
}

export async function pingRedis(): Promise<boolean> {
  try {
    return (await getRedis().ping()) === 'PONG';
  } catch {
    return false;
  }
}
