// The fan-out's guarantees, on a shard of its own: every queue gets each event once, in order,
// from its registration on. A notification the fan-out cannot process must not stop its shard
// for good: after a few attempts it is set aside in the shard's dead letters, with its error,
// and the notifications after it are delivered. Entries waiting in the log are fanned out in
// runs (one pipeline for many): here the poison entry sits inside such a run, and none around
// it may be lost or delivered twice.
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
});

beforeEach(() => redis.flushdb());

afterEach(async () => {
  await fanout?.stop();
  fanout = undefined;
});

afterAll(async () => {
  await redis.flushdb();
  redis.disconnect();
});

const sequence = (seq: number, userId: number) =>
  publishNotification(redis, SHARDS, { event: { type: 'sequence', seq }, users: [userId] });

function startFanout(): void {
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
}

/** The queue's events once it holds `count` of them (or after 10 s). */
async function eventsOf(
  store: QueueStore,
  queueId: string,
  count: number,
): Promise<{ id: number; type: string; seq?: number }[]> {
  const deadline = Date.now() + 10_000;
  let events: { id: number; type: string; seq?: number }[] = [];
  while (Date.now() < deadline) {
    events = (await store.events({ shard: 0, queueId })) as typeof events;
    if (events.length >= count) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return events;
}

/** Starts the fan-out on what the log holds, and waits until the queue has `count` events. */
async function fanOut(store: QueueStore, queueId: string, count: number) {
  startFanout();
  return (await eventsOf(store, queueId, count)).map((event) => [event.type, event.seq]);
}

async function deadLetters(): Promise<Record<string, string | undefined>[]> {
  const dead = await redis.xrange(keys.deadLetters(0), '-', '+');
  return dead.map(([, fields]) =>
    Object.fromEntries(fields.flatMap((value, i) => (i % 2 === 0 ? [[value, fields[i + 1]]] : []))),
  );
}

async function expectCheckpointAtNewest(): Promise<void> {
  const [newest] = await redis.xrevrange(keys.shardLog(0), '+', '-', 'COUNT', 1);
  expect(await redis.get(keys.checkpoint(0))).toBe(newest![0]);
}

it('sets a poison log entry aside and keeps delivering the ones after it', async () => {
  const store = new QueueStore(redis, SHARDS);
  const queueId = await store.create(7, 1, defaultQueueOptions());
  await sequence(1, 7);
  await redis.xadd(keys.shardLog(0), '*', 'n', '{not json');
  for (let seq = 2; seq <= 30; seq++) await sequence(seq, 7);
  const logged = jest.spyOn(getLogger(), 'error');

  // Each once, in order.
  expect(await fanOut(store, queueId, 30)).toEqual(
    Array.from({ length: 30 }, (_, i) => ['sequence', i + 1]),
  );
  expect(await deadLetters()).toEqual([
    expect.objectContaining({ n: '{not json', error: expect.stringMatching(/^SyntaxError/) }),
  ]);
  await expectCheckpointAtNewest();
  expect(MAX_DELIVERY_ATTEMPTS).toBeGreaterThan(1);
  // Logged once, with its error and the shard's count of dead letters.
  expect(logged).toHaveBeenCalledTimes(1);
  expect(logged.mock.calls[0]).toEqual([
    'log entry set aside after repeated fan-out failures',
    expect.objectContaining({ shard: 0, dead_letter_count: 1, error: expect.any(SyntaxError) }),
  ]);
  logged.mockRestore();
}, 20_000);

it('appends nothing past an entry that Redis refuses within a run, and nothing twice', async () => {
  const store = new QueueStore(redis, SHARDS);
  const queueId = await store.create(7, 1, defaultQueueOptions());
  // User 8's queue cannot take events: its list is not a list, so appending fails in Redis.
  const broken = await store.create(8, 1, defaultQueueOptions());
  await redis.set(keys.queueEvents(0, broken), 'not a list');
  await sequence(1, 7);
  await sequence(2, 8);
  for (let seq = 3; seq <= 30; seq++) await sequence(seq, 7);

  expect(await fanOut(store, queueId, 29)).toEqual(
    Array.from({ length: 30 }, (_, i) => ['sequence', i + 1]).filter(([, seq]) => seq !== 2),
  );
  expect(await deadLetters()).toEqual([
    expect.objectContaining({ error: expect.stringMatching(/WRONGTYPE/) }),
  ]);
  await expectCheckpointAtNewest();
}, 20_000);

it('resumes from the checkpoint when Redis comes back without its latest writes', async () => {
  const store = new QueueStore(redis, SHARDS);
  const queueId = await store.create(7, 1, defaultQueueOptions());
  await sequence(1, 7);
  const logged = jest.spyOn(getLogger(), 'error');
  expect(await fanOut(store, queueId, 1)).toEqual([['sequence', 1]]);

  // As if restored from an append-only file that ends before message 1's fan-out: the
  // checkpoint, the queue's event and its next id go back together.
  await redis.del(keys.checkpoint(0));
  await redis.del(keys.queueEvents(0, queueId));
  await redis.hset(keys.queueMeta(0, queueId), 'next_id', 0);
  await sequence(2, 7);

  const events = await eventsOf(store, queueId, 2);
  // Neither entry set aside: both delivered, once, in order, with the queue's ids.
  expect(events.map((event) => [event.id, event.seq])).toEqual([
    [0, 1],
    [1, 2],
  ]);
  expect(await deadLetters()).toEqual([]);
  await expectCheckpointAtNewest();
  expect(logged).not.toHaveBeenCalled();
  logged.mockRestore();
}, 20_000);

it('delivers to queues registered and deleted between messages to the same recipients', async () => {
  const store = new QueueStore(redis, SHARDS);
  const seqs = async (queueId: string, count: number) =>
    (await eventsOf(store, queueId, count)).map((event) => event.seq);
  const publish = (seq: number) =>
    publishNotification(redis, SHARDS, { event: { type: 'sequence', seq }, users: [7, 8] });
  const first = await store.create(7, 1, defaultQueueOptions());
  startFanout();
  await publish(1);
  expect(await seqs(first, 1)).toEqual([1]);

  // Registered after message 1 was fanned out: it gets every later event and none before.
  const second = await store.create(8, 1, defaultQueueOptions());
  await publish(2);
  await publish(3);
  expect(await seqs(second, 2)).toEqual([2, 3]);
  expect(await seqs(first, 3)).toEqual([1, 2, 3]);

  await store.delete((await store.meta(first))!);
  const third = await store.create(7, 1, defaultQueueOptions());
  for (let seq = 4; seq <= 20; seq++) await publish(seq);
  const later = Array.from({ length: 17 }, (_, i) => i + 4);
  expect(await seqs(third, 17)).toEqual(later);
  expect(await seqs(second, 19)).toEqual([2, 3, ...later]);
  expect(await redis.exists(keys.queueEvents(0, first))).toBe(0);
}, 20_000);

it('appends to the queues an entry carries, and reads them for an entry that carries none', async () => {
  const store = new QueueStore(redis, SHARDS);
  const queueId = await store.create(7, 1, defaultQueueOptions());
  const entry = (seq: number) => JSON.stringify({ event: { type: 'sequence', seq }, users: [7] });
  // As a publisher older than carried queues wrote it: the fan-out reads user 7's queues.
  await redis.xadd(keys.shardLog(0), '*', 'n', entry(1));
  // Carrying none (as if user 7 had no queue when it was published): it goes nowhere, although
  // the user's queue is there when the fan-out reads the entry.
  await redis.xadd(keys.shardLog(0), '*', 'n', entry(2), 'q', '');
  await sequence(3, 7);
  expect(await fanOut(store, queueId, 2)).toEqual([
    ['sequence', 1],
    ['sequence', 3],
  ]);
  await expectCheckpointAtNewest();
}, 20_000);

it('skips a queue the entry carries that was deleted before its fan-out', async () => {
  const store = new QueueStore(redis, SHARDS);
  const kept = await store.create(7, 1, defaultQueueOptions());
  const deleted = await store.create(8, 1, { ...defaultQueueOptions(), apply_markdown: true });
  await publishNotification(redis, SHARDS, { event: { type: 'sequence', seq: 1 }, users: [7, 8] });
  const [entry] = await redis.xrange(keys.shardLog(0), '-', '+');
  // The entry carries both queues (field `q`).
  expect(entry![1][3]!.split(' ').sort()).toEqual([kept, deleted].sort());
  await store.delete((await store.meta(deleted))!);
  expect(await fanOut(store, kept, 1)).toEqual([['sequence', 1]]);
  await expectCheckpointAtNewest();
  expect(await redis.exists(keys.queueMeta(0, deleted), keys.queueEvents(0, deleted))).toBe(0);
}, 20_000);

it('knows the queues registered on its shard before their first event', async () => {
  const store = new QueueStore(redis, SHARDS);
  const before = await store.create(7, 1, defaultQueueOptions());
  startFanout();
  const after = await store.create(8, 1, { ...defaultQueueOptions(), event_types: ['presence'] });
  // Announced on the shard's stream of created queues with their options and starting points.
  const announced = await redis.xrange(keys.created(0), '-', '+');
  expect(announced.map(([, fields]) => fields.filter((_, i) => i % 2 === 0))).toEqual([
    ['q', 'o', 's'],
    ['q', 'o', 's'],
  ]);
  expect(announced.map(([, fields]) => fields[1])).toEqual([before, after]);
  // Only what the fan-out learnt from the announcements can deliver now: the meta hashes no
  // longer hold the options, so a read of them would find the queues gone. An announcement is
  // read no later than the log entries published after it, whenever the worker reads.
  for (const queueId of [before, after]) await redis.hdel(keys.queueMeta(0, queueId), 'options');
  await publishNotification(redis, SHARDS, { event: { type: 'sequence', seq: 1 }, users: [7, 8] });
  await publishNotification(redis, SHARDS, { event: { type: 'presence' }, users: [7, 8] });
  expect((await eventsOf(store, before, 2)).map((event) => event.type)).toEqual([
    'sequence',
    'presence',
  ]);
  // The second queue's options take presence only.
  expect((await eventsOf(store, after, 1)).map((event) => event.type)).toEqual(['presence']);
  await expectCheckpointAtNewest();
}, 20_000);

it('gives each of many queues the entries after its registration that its options take', async () => {
  const store = new QueueStore(redis, SHARDS);
  // More queues than one read of their options takes (QUEUE_INFOS_BATCH), of three kinds:
  // all events, none of this type, and all events again with their own options text.
  const users = Array.from({ length: 300 }, (_, i) => 100 + i);
  const entry = (seq: number) => JSON.stringify({ event: { type: 'sequence', seq }, users });
  const kinds = [
    defaultQueueOptions(),
    { ...defaultQueueOptions(), event_types: ['presence'] },
    { ...defaultQueueOptions(), apply_markdown: true },
  ];
  const register = () =>
    Promise.all(
      users.flatMap((userId) => kinds.map((options) => store.create(userId, 1, options))),
    );
  // Entry ids set here: the queues of `after` are registered between two entries of the same
  // millisecond, and the log then reaches a millisecond with more digits.
  const before = await register();
  await redis.xadd(keys.shardLog(0), '999-1', 'n', entry(1));
  const after = await register();
  await redis.xadd(keys.shardLog(0), '999-2', 'n', entry(2));
  await redis.xadd(keys.shardLog(0), '1000-0', 'n', entry(3));
  startFanout();
  const seqs = async (queueId: string, count: number) =>
    (await eventsOf(store, queueId, count)).map((event) => event.seq);
  // One script appends an entry to all its queues: once the first queue holds the three
  // entries, every queue holds what it will get.
  for (const [index, queueId] of before.entries())
    expect(await seqs(queueId, index % 3 === 1 ? 0 : 3)).toEqual(index % 3 === 1 ? [] : [1, 2, 3]);
  for (const [index, queueId] of after.entries())
    expect(await seqs(queueId, index % 3 === 1 ? 0 : 2)).toEqual(index % 3 === 1 ? [] : [2, 3]);
  await expectCheckpointAtNewest();
}, 30_000);
