import { Redis, type RedisOptions } from 'ioredis';
import { getConfig } from '@parley/config';
import { getLogger } from '@parley/logger';
import { histogram, LATENCY_BUCKETS } from '@parley/metrics';
import { defineScripts } from './lua';

const commandDuration = histogram(
  'parley_redis_command_duration_seconds',
  'Time from sending a Redis command to its answer, by command (blocking reads wait by design)',
  ['command', 'outcome'],
  LATENCY_BUCKETS,
);

const HANDSHAKE = new Set(['client', 'info', 'select', 'auth', 'hello']);

/** Children bound to their labels once per command name: observing through them skips
 * building and checking the label object on every command (prom-client still hashes the
 * labels at each observation). */
const byCommand = new Map<
  string,
  { ok: { observe(v: number): void }; error: { observe(v: number): void } }
>();

function observerOf(name: string) {
  let children = byCommand.get(name);
  if (!children) {
    children = {
      ok: commandDuration.labels(name, 'ok'),
      error: commandDuration.labels(name, 'error'),
    };
    byCommand.set(name, children);
  }
  return children;
}

/** Times every command the connection sends. */
function instrumentCommands(redis: Redis): void {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    // ioredis's own handshake on each (re)connection, not the application's work (CLIENT
    // SETINFO even fails on Redis 6 by design).
    if (HANDSHAKE.has(command.name)) return send(command, stream);
    const observer = observerOf(command.name);
    const start = performance.now();
    command.promise.then(
      () => observer.ok.observe((performance.now() - start) / 1000),
      () => observer.error.observe((performance.now() - start) / 1000),
    );
    return send(command, stream);
  };
}

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
    // A Redis reloading its data on restart answers LOADING; ioredis looks again after the
    // reload's estimate, at least a second (commands wait meanwhile), unless capped here.
    maxLoadingRetryTime: 100,
    ...options,
  });
  instrumentCommands(redis);
  defineScripts(redis);
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
