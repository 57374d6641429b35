// The restart event against the real Redis: a lease holder of another release appends it to
// every queue of its shard that takes it, wakes their parked polls, and records the release;
// the same release, a first record, or a lost lease announce nothing.
import { getConfig } from '@parley/config';
import { createRedis, defaultQueueOptions, keys, QueueStore } from '@parley/events';
import { getLogger } from '@parley/logger';
import type { Redis } from 'ioredis';
import { announceRelease, CURRENT_RELEASE } from './release';

// Far more shards than any replica runs: these shards' keys are this test's alone.
const SHARDS = 4096;
const SHARD_USER_RANGE = 1024;

let redis: Redis;
let subscriber: Redis;
let shard = 3000 + Math.floor(Math.random() * 1000);

beforeAll(() => {
  redis = createRedis(getConfig().REDIS_URL);
  subscriber = createRedis(getConfig().REDIS_URL);
});
afterAll(async () => {
  await Promise.all([redis.quit(), subscriber.quit()]);
});

/** A fresh shard held by `token`, with a queue of each kind of event_types. */
async function shardWithQueues(token: string) {
  shard += 1;
  const store = new QueueStore(redis, SHARDS);
  await redis.set(keys.lease(shard), token, 'PX', 60_000);
  const userId = shard * SHARD_USER_RANGE + 1;
  const create = (eventTypes: string[] | null) =>
    store.create(userId, 1, { ...defaultQueueOptions(), event_types: eventTypes });
  return {
    store,
    all: await create(null),
    restarts: await create(['restart', 'message']),
    messages: await create(['message']),
  };
}

const events = async (store: QueueStore, queueId: string) =>
  store.events((await store.meta(queueId))!);

describe('announceRelease', () => {
  it('records the first release it sees without announcing it', async () => {
    const { store, all } = await shardWithQueues('t1');
    expect(await announceRelease(store, shard, 't1', getLogger())).toBe(true);
    expect(await events(store, all)).toEqual([]);
    expect(JSON.parse((await redis.get(keys.release(shard)))!)).toEqual(CURRENT_RELEASE);
    // A replica of the same release restarting: nothing either.
    expect(await announceRelease(store, shard, 't1', getLogger())).toBe(true);
    expect(await events(store, all)).toEqual([]);
  });

  it('tells the queues that take it of a new release, waking their polls', async () => {
    const { store, all, restarts, messages } = await shardWithQueues('t2');
    const older = {
      ...CURRENT_RELEASE,
      zulip_feature_level: CURRENT_RELEASE.zulip_feature_level - 1,
    };
    await redis.set(keys.release(shard), JSON.stringify(older));
    const wakeUps: string[] = [];
    await subscriber.subscribe(keys.wake(shard));
    subscriber.on('message', (_channel: string, message: string) => wakeUps.push(message));
    const before = Math.floor(Date.now() / 1000);
    expect(await announceRelease(store, shard, 't2', getLogger())).toBe(true);
    const restart = {
      id: 0,
      type: 'restart',
      zulip_version: CURRENT_RELEASE.zulip_version,
      zulip_merge_base: CURRENT_RELEASE.zulip_merge_base,
      zulip_feature_level: CURRENT_RELEASE.zulip_feature_level,
      server_generation: expect.any(Number) as number,
    };
    const [first] = await events(store, all);
    expect(first).toEqual(restart);
    expect(first!.server_generation).toBeGreaterThanOrEqual(before);
    expect(await events(store, restarts)).toEqual([restart]);
    // event_types without `restart`: not for it (Zulip's accepts_event).
    expect(await events(store, messages)).toEqual([]);
    expect(JSON.parse((await redis.get(keys.release(shard)))!)).toEqual(CURRENT_RELEASE);
    // One wake-up in the fan-out's form names both queues with their event ids.
    for (let i = 0; i < 50 && wakeUps.length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(wakeUps).toHaveLength(1);
    const [head] = wakeUps[0]!.split('\n');
    expect(head!.split(' ').sort()).toEqual([`E:${all}`, '0', '0', '1', '1', restarts].sort());
    await subscriber.unsubscribe(keys.wake(shard));
  });

  it('announces nothing once its lease is lost', async () => {
    const { store, all } = await shardWithQueues('t3');
    await redis.set(
      keys.release(shard),
      JSON.stringify({ ...CURRENT_RELEASE, zulip_version: 'x' }),
    );
    await redis.set(keys.lease(shard), 'someone else');
    expect(await announceRelease(store, shard, 't3', getLogger())).toBe(false);
    expect(await events(store, all)).toEqual([]);
    // The new holder announces in its turn.
    expect(JSON.parse((await redis.get(keys.release(shard)))!)).toMatchObject({
      zulip_version: 'x',
    });
  });
});
