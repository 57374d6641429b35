// QueueStore against the real Redis: a poll's pruning of acknowledged events with Zulip's
// checks, its owner check, generations and expiry; heartbeats as queued events, deletion and
// expiry.
import { getConfig } from '@parley/config';
import { keys, SHARD_USER_RANGE, shardOf } from './keys';
import { defaultQueueOptions, QueueStore, rawEventId } from './queues';
import { createRedis, getRedis } from './redis';

const options = defaultQueueOptions();

let nextUser = 900_000_000 + Math.floor(Math.random() * 1_000_000);

/** A queue of a new user, each in the next range of user ids, so on the next shard. */
async function queueWithEvents(count: number) {
  const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
  const userId = nextUser;
  nextUser += SHARD_USER_RANGE;
  const queueId = await store.create(userId, 1, options);
  const meta = (await store.meta(queueId))!;
  for (let i = 0; i < count; i++) await store.heartbeat(meta);
  return { store, meta };
}

describe('QueueStore', () => {
  it('creates a queue owned by the user on the user’s shard', async () => {
    const { meta } = await queueWithEvents(0);
    const userId = nextUser - SHARD_USER_RANGE;
    expect(meta).toMatchObject({ userId, realmId: 1, options });
    expect(meta.shard).toBe(Math.floor(userId / SHARD_USER_RANGE) % getConfig().EVENT_SHARDS);
  });

  it('treats a queue of an earlier layout of users on shards as missing', async () => {
    const shards = getConfig().EVENT_SHARDS;
    // Created when there were half as many shards: the queue is not on its owner's shard now.
    const range = (Math.floor(nextUser / SHARD_USER_RANGE / shards) + 1) * shards + shards / 2 + 1;
    const userId = range * SHARD_USER_RANGE;
    nextUser = userId + SHARD_USER_RANGE;
    const earlier = new QueueStore(getRedis(), shards / 2);
    const queueId = await earlier.create(userId, 1, options);
    expect(await earlier.meta(queueId)).toMatchObject({ userId });
    const store = new QueueStore(getRedis(), shards);
    expect(shardOf(userId, shards)).not.toBe(shardOf(userId, shards / 2));
    expect(await store.meta(queueId)).toBeNull();
    expect(await store.poll(queueId, userId, -1, 0)).toEqual({ ok: false, error: 'missing' });
  });

  it('numbers events from 0 and prunes those acknowledged', async () => {
    const { store, meta } = await queueWithEvents(3);
    const poll = (last: number) => store.poll(meta.queueId, meta.userId, last, 0);
    expect((await store.events(meta)).map((e) => e.id)).toEqual([0, 1, 2]);
    expect(await poll(-1)).toMatchObject({ ok: true, generation: 1 });
    const polled = await poll(1);
    expect(polled.ok && polled.events.map((e) => e.id)).toEqual([2]);
    expect((await store.events(meta)).map((e) => e.id)).toEqual([2]);
    // Acknowledging the same id again is fine; going back is not.
    expect(await poll(1)).toMatchObject({ ok: true, generation: 3 });
    expect(await poll(0)).toEqual({ ok: false, error: 'already_pruned', lastEventId: 0 });
  });

  it('refuses an id the queue never had, after dropping what it acknowledged', async () => {
    const { store, meta } = await queueWithEvents(2);
    expect(await store.poll(meta.queueId, meta.userId, 7, 0)).toEqual({
      ok: false,
      error: 'not_in_queue',
      lastEventId: 7,
    });
    expect(await store.events(meta)).toEqual([]);
  });

  it("treats another user's queue as missing, and changes nothing in it", async () => {
    const { store, meta } = await queueWithEvents(1);
    expect(await store.poll(meta.queueId, meta.userId + 1, 0, 0)).toEqual({
      ok: false,
      error: 'missing',
    });
    expect(await store.poll('not-a-queue', meta.userId, 0, 0)).toEqual({
      ok: false,
      error: 'missing',
    });
    expect((await store.events(meta)).map((e) => e.id)).toEqual([0]);
  });

  it('announces a new poll only while an older one may still be parked', async () => {
    const { store, meta } = await queueWithEvents(0);
    const subscriber = createRedis(getConfig().REDIS_URL);
    const kicks: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => {
      if (message.startsWith(`k:${meta.queueId}:`)) kicks.push(message);
    });
    await subscriber.subscribe(keys.wake(meta.shard));
    const park = (last: number) => store.poll(meta.queueId, meta.userId, last, 60_000);
    const settle = async () => {
      // A message published before this PING reaches the subscriber before its answer.
      await subscriber.ping();
    };
    try {
      await park(-1); // generation 1 parks: nobody to finish
      await settle();
      expect(kicks).toEqual([]);
      await park(-1); // nothing appended since 1 parked: 1 may still wait
      await settle();
      expect(kicks).toEqual([`k:${meta.queueId}:2`]);
      await store.heartbeat(meta); // an event answers every parked poll
      await park(0);
      await settle();
      expect(kicks).toHaveLength(1);
      // A poll that does not park (dont_block) still finishes one that did.
      await store.poll(meta.queueId, meta.userId, 0, 0);
      await settle();
      expect(kicks).toEqual([`k:${meta.queueId}:2`, `k:${meta.queueId}:4`]);
    } finally {
      subscriber.disconnect();
    }
  });

  it('sets the expiry to the lifespan from now, past the longest wait when parking', async () => {
    const { store, meta } = await queueWithEvents(0);
    const expiry = async () =>
      Number(await getRedis().zscore(keys.queueExpiry(meta.shard), meta.queueId)) - Date.now();
    const lifespan = options.lifespan_secs * 1000;
    await store.poll(meta.queueId, meta.userId, -1, 100_000);
    expect(await expiry()).toBeGreaterThan(lifespan + 90_000);
    // Answering never shortens it: another poll may still be parked on the queue.
    await store.take(meta);
    expect(await expiry()).toBeGreaterThan(lifespan + 90_000);
    await store.poll(meta.queueId, meta.userId, -1, 0);
    expect(await expiry()).toBeLessThanOrEqual(lifespan);
    await getRedis().zadd(keys.queueExpiry(meta.shard), 1, meta.queueId);
    await store.take(meta);
    expect(await expiry()).toBeGreaterThan(lifespan - 10_000);
  });

  it('gives a poll the lifespan the queue was registered with, a queue of an earlier version too', async () => {
    const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
    const userId = nextUser;
    nextUser += SHARD_USER_RANGE;
    const queueId = await store.create(userId, 1, { ...options, lifespan_secs: 1234 });
    const meta = (await store.meta(queueId))!;
    const metaKey = keys.queueMeta(meta.shard, queueId);
    const expiryAfterPoll = async () => {
      const polled = Date.now();
      expect((await store.poll(queueId, userId, -1, 0)).ok).toBe(true);
      return Number(await getRedis().zscore(keys.queueExpiry(meta.shard), queueId)) - polled;
    };
    // Stored apart from the options, so a poll need not decode them.
    expect(await getRedis().hget(metaKey, 'lifespan_ms')).toBe('1234000');
    expect(await expiryAfterPoll()).toBeGreaterThanOrEqual(1_234_000);
    expect(await expiryAfterPoll()).toBeLessThan(1_244_000);
    // A queue registered before the lifespan was stored apart: read from its options.
    await getRedis().hdel(metaKey, 'lifespan_ms');
    expect(await expiryAfterPoll()).toBeGreaterThanOrEqual(1_234_000);
    expect(await expiryAfterPoll()).toBeLessThan(1_244_000);
    await store.delete(meta);
  });

  it('reads many queues at once, across shards, as stored, each in its own place', async () => {
    const queues = await Promise.all([0, 1, 2, 3, 4].map((count) => queueWithEvents(count)));
    const { store } = queues[0]!;
    // Users in consecutive ranges of ids: the queues sit on different shards.
    expect(new Set(queues.map(({ meta }) => meta.shard)).size).toBeGreaterThan(1);
    const gone = queues[2]!.meta;
    await store.delete(gone);
    const lifespan = options.lifespan_secs * 1000;
    await Promise.all(
      queues.map(({ meta }) =>
        getRedis().zadd(keys.queueExpiry(meta.shard), 'XX', 1, meta.queueId),
      ),
    );
    const answers = await store.takeManyRaw(queues.map(({ meta }) => meta));
    expect(answers).toEqual([
      [],
      ['{"id":0,"type":"heartbeat"}'],
      [],
      [0, 1, 2].map((id) => `{"id":${id},"type":"heartbeat"}`),
      [0, 1, 2, 3].map((id) => `{"id":${id},"type":"heartbeat"}`),
    ]);
    expect(answers.flatMap((events) => (events as string[]).map(rawEventId))).toEqual([
      0, 0, 1, 2, 0, 1, 2, 3,
    ]);
    // Each queue still there lives its lifespan from now; the deleted one stays deleted.
    for (const { meta } of queues) {
      const deadline = await getRedis().zscore(keys.queueExpiry(meta.shard), meta.queueId);
      if (meta === gone) expect(deadline).toBeNull();
      else expect(Number(deadline) - Date.now()).toBeGreaterThan(lifespan - 10_000);
    }
  });

  it('reads more queues of one shard than one script takes, each in its own place', async () => {
    const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
    const shards = getConfig().EVENT_SHARDS;
    // Users on one shard (one range of ids): 501 queues, past the 500 one script reads.
    const base = (Math.floor(nextUser / SHARD_USER_RANGE) + 1) * SHARD_USER_RANGE;
    nextUser = base + SHARD_USER_RANGE;
    expect(shards).toBeGreaterThan(1);
    const metas = await Promise.all(
      Array.from({ length: 501 }, async (_, i) => {
        const queueId = await store.create(base + i, 1, options);
        return (await store.meta(queueId))!;
      }),
    );
    expect(new Set(metas.map((meta) => meta.shard))).toEqual(new Set([metas[0]!.shard]));
    await store.heartbeat(metas[0]!);
    await store.heartbeat(metas[500]!);
    const answers = await store.takeManyRaw(metas);
    expect(answers).toHaveLength(501);
    expect(answers[0]).toEqual(['{"id":0,"type":"heartbeat"}']);
    expect(answers[500]).toEqual(['{"id":0,"type":"heartbeat"}']);
    expect(answers.slice(1, 500).every((events) => Array.isArray(events) && !events.length)).toBe(
      true,
    );
  });

  it('deletes a queue with all its keys', async () => {
    const { store, meta } = await queueWithEvents(1);
    expect(await store.delete(meta)).toEqual({
      queueId: meta.queueId,
      userId: meta.userId,
      unreadMessageIds: [],
    });
    expect(await store.meta(meta.queueId)).toBeNull();
    expect(await getRedis().exists(keys.queueEvents(meta.shard, meta.queueId))).toBe(0);
    expect(await getRedis().sismember(keys.userQueues(meta.shard, meta.userId), meta.queueId)).toBe(
      0,
    );
    expect(await store.delete(meta)).toBeNull();
    expect(await store.heartbeat(meta)).toBe(-1);
    expect(await store.poll(meta.queueId, meta.userId, -1, 0)).toEqual({
      ok: false,
      error: 'missing',
    });
  });

  it('expires queues past their deadline only', async () => {
    const { store, meta } = await queueWithEvents(0);
    const fresh = await queueWithEvents(0);
    await store.touch(meta, 1);
    const expired = (await store.expire(meta.shard, Date.now())).map((gone) => gone.queueId);
    expect(expired).toContain(meta.queueId);
    expect(expired).not.toContain(fresh.meta.queueId);
    expect(await store.meta(meta.queueId)).toBeNull();
    expect(await store.meta(fresh.meta.queueId)).not.toBeNull();
  });

  it('reports the unread, set-aside messages a user’s last queue held when it goes (Zulip’s missedmessage_hook)', async () => {
    const { store, meta: first } = await queueWithEvents(0);
    // The user ids are random in a range the suite reuses from run to run on the same Redis: no
    // set-aside list left by an earlier run may count as this one's.
    await getRedis().del(
      keys.setAside(first.shard, 'email', first.userId),
      keys.setAside(first.shard, 'push', first.userId),
    );
    const second = (await store.meta(await store.create(first.userId, 1, options)))!;
    const message = (id: number, flags: string[]) => ({
      type: 'message',
      message: { id, sender_id: 1, content: 'hello' },
      flags,
    });
    for (const meta of [first, second]) {
      const events = [
        message(11, []),
        message(12, ['read']),
        // Another type of event that holds an object of the message type.
        { type: 'submessage', message_id: 14, detail: { type: 'message' } },
        message(13, ['mentioned']),
        message(15, []),
      ];
      await getRedis().rpush(
        keys.queueEvents(meta.shard, meta.queueId),
        ...events.map((event, id) => JSON.stringify({ id, ...event })),
      );
    }
    // Nothing set aside yet: nothing to report, whatever the queue holds.
    const third = (await store.meta(await store.create(first.userId, 1, options)))!;
    await getRedis().rpush(
      keys.queueEvents(third.shard, third.queueId),
      JSON.stringify({ id: 0, ...message(11, []) }),
      // An event that does not decode is skipped, not an error.
      '{"id":1,"type":"message","message":{',
    );
    await store.delete(first);
    await store.delete(second);
    expect(await store.delete(third)).toMatchObject({ unreadMessageIds: [] });

    const fourth = (await store.meta(await store.create(first.userId, 1, options)))!;
    const fifth = (await store.meta(await store.create(first.userId, 1, options)))!;
    for (const meta of [fourth, fifth])
      await getRedis().rpush(
        keys.queueEvents(meta.shard, meta.queueId),
        ...[11, 12, 13, 15].map((id, index) =>
          JSON.stringify({ id: index, ...message(id, id === 12 ? ['read'] : []) }),
        ),
        '{"id":9,"type":"message","message":{',
      );
    const setAside = (kind: 'email' | 'push', ...ids: number[]) =>
      getRedis().zadd(
        keys.setAside(first.shard, kind, first.userId),
        ...ids.flatMap((id) => [Date.now(), id]),
      );
    await setAside('email', 11, 12);
    await setAside('push', 13);
    // Another queue of the user is left: nothing to report.
    expect(await store.delete(fourth)).toMatchObject({ unreadMessageIds: [] });
    // The last one, expired: the unread ones set aside, of either kind.
    await store.touch(fifth, 1);
    const reported: string[] = [];
    const gone = (
      await store.expire(fifth.shard, Date.now(), (queue) => reported.push(queue.queueId))
    ).find((queue) => queue.queueId === fifth.queueId);
    expect(gone).toEqual({
      queueId: fifth.queueId,
      userId: fifth.userId,
      unreadMessageIds: [11, 13],
    });
    expect(reported).toContain(fifth.queueId);
  });
});
