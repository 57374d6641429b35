// Messages to the same people, while their queues come and go: a queue registered between two
// of them gets every later event and none before it, a deleted one none, and nobody gets an
// event twice (whether the fan-out takes the entries one by one or in runs).
import { getConfig } from '@parley/config';
import {
  createRedis,
  defaultQueueOptions,
  keys,
  publishNotification,
  QueueStore,
} from '@parley/events';
import { getLogger } from '@parley/logger';
import type { Redis } from 'ioredis';
import { Fanout } from '../src/fanout';

const SHARDS = 1;
let redis: Redis;
let redisUrl: string;
let fanout: Fanout;
let store: QueueStore;

beforeAll(async () => {
  // A Redis database of this test's own: this fan-out must be the only one on it.
  const url = new URL(getConfig().REDIS_URL);
  url.pathname = '/14';
  redisUrl = url.toString();
  redis = createRedis(redisUrl);
  await redis.flushdb();
  store = new QueueStore(redis, SHARDS);
  fanout = new Fanout({
    redis,
    connect: () => createRedis(redisUrl, { maxRetriesPerRequest: null, commandTimeout: undefined }),
    shards: SHARDS,
    leaseMs: 1000,
    retainMs: 60_000,
    gcIntervalMs: 60_000,
    log: getLogger(),
  });
  fanout.start();
});

afterAll(async () => {
  await fanout.stop();
  await redis.flushdb();
  redis.disconnect();
});

const publish = (seq: number) =>
  publishNotification(redis, SHARDS, { event: { type: 'sequence', seq }, users: [7, 8] });

/** The sequence numbers a queue holds once it holds `count` events (or after 10 s). */
async function sequences(queueId: string, count: number): Promise<number[]> {
  const deadline = Date.now() + 10_000;
  let events: { seq?: number }[] = [];
  while (Date.now() < deadline) {
    events = (await store.events({ shard: 0, queueId })) as typeof events;
    if (events.length >= count) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return events.map((event) => event.seq!);
}

it('delivers to queues registered and deleted between messages to the same recipients', async () => {
  const first = await store.create(7, 1, defaultQueueOptions());
  await publish(1);
  expect(await sequences(first, 1)).toEqual([1]);

  // Registered after the union of users 7 and 8 was read for message 1.
  const second = await store.create(8, 1, defaultQueueOptions());
  await publish(2);
  await publish(3);
  expect(await sequences(second, 2)).toEqual([2, 3]);
  expect(await sequences(first, 3)).toEqual([1, 2, 3]);

  const meta = await store.meta(first);
  await store.delete(meta!);
  const third = await store.create(7, 1, defaultQueueOptions());
  for (let seq = 4; seq <= 20; seq++) await publish(seq);
  const later = Array.from({ length: 17 }, (_, i) => i + 4);
  expect(await sequences(third, 17)).toEqual(later);
  expect(await sequences(second, 19)).toEqual([2, 3, ...later]);
  expect(await redis.exists(keys.queueEvents(0, first))).toBe(0);
}, 20_000);
