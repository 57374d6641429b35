// A notification the fan-out cannot process (here: a log entry that is not JSON) must not stop
// its shard for good: after a few attempts it is set aside in the shard's dead letters, with
// its error, and the notifications after it are delivered.
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
import { Fanout, MAX_DELIVERY_ATTEMPTS } from '../src/fanout';

const SHARDS = 1;
let redis: Redis;
let redisUrl: string;
let fanout: Fanout | undefined;

beforeAll(async () => {
  // A Redis database of this test's own: this fan-out must be the only one on it.
  const url = new URL(getConfig().REDIS_URL);
  url.pathname = '/14';
  redisUrl = url.toString();
  redis = createRedis(redisUrl);
  await redis.flushdb();
});

afterAll(async () => {
  await fanout?.stop();
  await redis.flushdb();
  redis.disconnect();
});

it('sets a poison log entry aside and keeps delivering the ones after it', async () => {
  const store = new QueueStore(redis, SHARDS);
  const queueId = await store.create(7, 1, defaultQueueOptions());
  await redis.xadd(keys.shardLog(0), '*', 'n', '{not json');
  await publishNotification(redis, SHARDS, { event: { type: 'sequence', seq: 1 }, users: [7] });

  const log = getLogger();
  const logged = jest.spyOn(log, 'error');
  fanout = new Fanout({
    redis,
    connect: () => createRedis(redisUrl, { maxRetriesPerRequest: null, commandTimeout: undefined }),
    shards: SHARDS,
    leaseMs: 1000,
    retainMs: 60_000,
    gcIntervalMs: 60_000,
    log,
  });
  fanout.start();

  const deadline = Date.now() + 10_000;
  let events: { type: string; seq?: number }[] = [];
  while (Date.now() < deadline) {
    events = (await store.events({ shard: 0, queueId })) as typeof events;
    if (events.length > 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(events.map((event) => [event.type, event.seq])).toEqual([['sequence', 1]]);
  const dead = await redis.xrange(keys.deadLetters(0), '-', '+');
  expect(dead).toHaveLength(1);
  const fields = Object.fromEntries(
    dead[0]![1].reduce<[string, string][]>(
      (pairs, value, i, all) => (i % 2 === 0 ? [...pairs, [value, all[i + 1]!]] : pairs),
      [],
    ),
  );
  expect(fields).toMatchObject({ n: '{not json', error: expect.stringMatching(/^SyntaxError/) });
  expect(MAX_DELIVERY_ATTEMPTS).toBeGreaterThan(1);
  // Logged once, with its error and the shard's count of dead letters.
  expect(logged).toHaveBeenCalledTimes(1);
  expect(logged.mock.calls[0]).toEqual([
    'log entry set aside after repeated fan-out failures',
    expect.objectContaining({ shard: 0, dead_letter_count: 1, error: expect.any(SyntaxError) }),
  ]);
  logged.mockRestore();
}, 20_000);
