// Heartbeat scheduling and wake-ups of parked polls, with fake timers and an in-memory stand-in
// for the queue store (the Redis behaviour itself is covered by the integration tests).
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import {
  defaultQueueOptions,
  type QueuedEvent,
  type QueueMeta,
  type QueueStore,
} from '@parley/events';
import { createLogger } from '@parley/logger';
import { Poller } from './poller';

const meta: QueueMeta = {
  queueId: '3:00000000-0000-0000-0000-000000000000',
  shard: 3,
  userId: 3,
  realmId: 1,
  options: defaultQueueOptions(),
};

async function setup(random = () => 0.5) {
  const queued: QueuedEvent[] = [];
  let nextId = 0;
  const subscriber = Object.assign(new EventEmitter(), { subscribe: jest.fn(async () => 16) });
  const store = {
    events: jest.fn(async () => [...queued]),
    heartbeat: jest.fn(async () => {
      queued.push({ id: nextId, type: 'heartbeat' });
      return nextId++;
    }),
    redis: { hget: jest.fn(async () => '1'), publish: jest.fn(async () => 1) },
  };
  const poller = new Poller({
    store: store as unknown as QueueStore,
    subscriber: subscriber as unknown as Redis,
    shards: 16,
    heartbeatSeconds: 45,
    heartbeatJitterSeconds: 10,
    log: createLogger({ level: 'error', format: 'json', silent: true }),
    random,
  });
  await poller.start();
  const deliver = (event: QueuedEvent) => {
    queued.push(event);
    subscriber.emit('message', '{ev:3}:wake', `w:${meta.queueId}`);
  };
  return { poller, store, subscriber, deliver };
}

const never = () => undefined;

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('Poller', () => {
  it('schedules the heartbeat 45 s plus up to 10 s of jitter after parking', async () => {
    expect((await setup(() => 0)).poller.heartbeatDelayMs()).toBe(45_000);
    expect((await setup(() => 0.5)).poller.heartbeatDelayMs()).toBe(50_000);
    expect((await setup(() => 0.999)).poller.heartbeatDelayMs()).toBeCloseTo(54_990);
  });

  it('answers with a queued heartbeat when nothing happens', async () => {
    const { poller, store } = await setup();
    const answer = poller.wait(meta, 1, never);
    await jest.advanceTimersByTimeAsync(49_999);
    expect(store.heartbeat).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    await expect(answer).resolves.toEqual([{ id: 0, type: 'heartbeat' }]);
    expect(poller.parked()).toBe(0);
  });

  it('answers as soon as the fan-out announces events, and cancels the heartbeat', async () => {
    const { poller, store, deliver } = await setup();
    const answer = poller.wait(meta, 1, never);
    await jest.advanceTimersByTimeAsync(1_000);
    deliver({ id: 0, type: 'realm_user' });
    await expect(answer).resolves.toEqual([{ id: 0, type: 'realm_user' }]);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(store.heartbeat).not.toHaveBeenCalled();
  });

  it('finishes an older poll when a newer one announces itself, not the newer one', async () => {
    const { poller, subscriber } = await setup();
    const older = poller.wait(meta, 1, never);
    await jest.advanceTimersByTimeAsync(10);
    subscriber.emit('message', '{ev:3}:wake', `k:${meta.queueId}:1`); // its own announcement
    expect(poller.parked()).toBe(1);
    subscriber.emit('message', '{ev:3}:wake', `k:${meta.queueId}:2`);
    await expect(older).resolves.toEqual([]);
    expect(poller.parked()).toBe(0);
  });

  it('answers at once if a newer poll came before parking', async () => {
    const { poller, store } = await setup();
    store.redis.hget.mockResolvedValueOnce('5');
    await expect(poller.wait(meta, 4, never)).resolves.toEqual([]);
  });

  it('drops the poll without answering when the client goes away', async () => {
    const { poller, store } = await setup();
    let close = () => undefined as void;
    const answer = poller.wait(meta, 1, (onClose) => (close = onClose));
    await jest.advanceTimersByTimeAsync(10);
    close();
    await expect(answer).resolves.toBeNull();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(store.heartbeat).not.toHaveBeenCalled();
  });

  it('answers every parked poll when draining, and new ones at once', async () => {
    const { poller } = await setup();
    const first = poller.wait(meta, 1, never);
    await jest.advanceTimersByTimeAsync(10);
    poller.drain();
    await expect(first).resolves.toEqual([]);
    await expect(poller.wait(meta, 2, never)).resolves.toEqual([]);
  });
});
