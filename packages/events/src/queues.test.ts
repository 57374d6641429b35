// QueueStore against the real Redis: pruning acknowledged events with Zulip's checks,
// heartbeats as queued events, deletion and expiry.
import { getConfig } from '@parley/config';
import { keys } from './keys';
import { defaultQueueOptions, QueueStore } from './queues';
import { getRedis } from './redis';

const options = defaultQueueOptions();

let nextUser = 900_000_000 + Math.floor(Math.random() * 1_000_000);

async function queueWithEvents(count: number) {
  const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
  const userId = nextUser++;
  const queueId = await store.create(userId, 1, options);
  const meta = (await store.meta(queueId))!;
  for (let i = 0; i < count; i++) await store.heartbeat(meta);
  return { store, meta };
}

describe('QueueStore', () => {
  it('creates a queue owned by the user on the user’s shard', async () => {
    const { meta } = await queueWithEvents(0);
    expect(meta).toMatchObject({ userId: nextUser - 1, realmId: 1, options });
    expect(meta.shard).toBe((nextUser - 1) % getConfig().EVENT_SHARDS);
  });

  it('numbers events from 0 and prunes those acknowledged', async () => {
    const { store, meta } = await queueWithEvents(3);
    expect((await store.events(meta)).map((e) => e.id)).toEqual([0, 1, 2]);
    expect(await store.prune(meta, -1, Date.now() + 1000)).toEqual({ ok: true });
    expect(await store.prune(meta, 1, Date.now() + 1000)).toEqual({ ok: true });
    expect((await store.events(meta)).map((e) => e.id)).toEqual([2]);
    // Acknowledging the same id again is fine; going back is not.
    expect(await store.prune(meta, 1, Date.now() + 1000)).toEqual({ ok: true });
    expect(await store.prune(meta, 0, Date.now() + 1000)).toEqual({
      ok: false,
      error: 'already_pruned',
      lastEventId: 0,
    });
  });

  it('refuses an id the queue never had, after dropping what it acknowledged', async () => {
    const { store, meta } = await queueWithEvents(2);
    expect(await store.prune(meta, 7, Date.now() + 1000)).toEqual({
      ok: false,
      error: 'not_in_queue',
      lastEventId: 7,
    });
    expect(await store.events(meta)).toEqual([]);
  });

  it('refreshes the expiry deadline on prune', async () => {
    const { store, meta } = await queueWithEvents(0);
    const deadline = Date.now() + 123_456;
    await store.prune(meta, -1, deadline);
    expect(Number(await getRedis().zscore(keys.queueExpiry(meta.shard), meta.queueId))).toBe(
      deadline,
    );
  });

  it('deletes a queue with all its keys', async () => {
    const { store, meta } = await queueWithEvents(1);
    expect(await store.delete(meta)).toBe(true);
    expect(await store.meta(meta.queueId)).toBeNull();
    expect(await getRedis().exists(keys.queueEvents(meta.shard, meta.queueId))).toBe(0);
    expect(await getRedis().sismember(keys.userQueues(meta.shard, meta.userId), meta.queueId)).toBe(
      0,
    );
    expect(await store.delete(meta)).toBe(false);
    expect(await store.heartbeat(meta)).toBe(-1);
    expect(await store.prune(meta, -1, Date.now())).toEqual({ ok: false, error: 'missing' });
  });

  it('expires queues past their deadline only', async () => {
    const { store, meta } = await queueWithEvents(0);
    const fresh = await queueWithEvents(0);
    await store.touch(meta, 1);
    const expired = await store.expire(meta.shard, Date.now());
    expect(expired).toContain(meta.queueId);
    expect(expired).not.toContain(fresh.meta.queueId);
    expect(await store.meta(meta.queueId)).toBeNull();
    expect(await store.meta(fresh.meta.queueId)).not.toBeNull();
  });
});
