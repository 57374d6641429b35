// Parked polls against the real Redis: a poll is registered before its queue is read, and
// answers on the fan-out's wake-up, at its heartbeat, when a newer poll of the queue comes,
// when its client goes away (not at all), and at shutdown. Heartbeats are shortened; nothing
// here measures time.
import {
  createRedis,
  defaultQueueOptions,
  getRedis,
  keys,
  QueueStore,
  REDIS_COMMAND_TIMEOUT_MS,
  type QueuedEvent,
  type RawEvent,
  type QueueMeta,
} from '@parley/events';
import type { Socket } from 'node:net';
import { getConfig } from '@parley/config';
import { createLogger } from '@parley/logger';
import {
  ANSWER_BATCH,
  HEARTBEAT_ANSWER_WITHIN_MS,
  HEARTBEAT_JITTER_STEP_MS,
  Poller,
} from './poller';

const log = createLogger({ level: 'error', format: 'json', silent: true });
const pollers: Poller[] = [];
const subscribers: ReturnType<typeof createRedis>[] = [];
let userId = 900_000 + Math.floor(Math.random() * 100_000);

async function setup({
  heartbeatSeconds = 60,
  random = (): number => 0.5,
  store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS),
}: { heartbeatSeconds?: number; random?: () => number; store?: QueueStore } = {}) {
  const subscriber = createRedis(getConfig().REDIS_URL, { maxRetriesPerRequest: null });
  subscribers.push(subscriber);
  const poller = new Poller({
    store,
    subscriber,
    shards: getConfig().EVENT_SHARDS,
    heartbeatSeconds,
    heartbeatJitterSeconds: 10 * (heartbeatSeconds / 45),
    log,
    random,
  });
  pollers.push(poller);
  await poller.start();
  const id = ++userId;
  const queueId = await store.create(id, 1, defaultQueueOptions());
  const meta = (await store.meta(queueId))!;
  return { poller, store, meta, userId: id };
}

/** Appends an event to the queue with its next id, as the fan-out's script does (without
 * announcing it); returns the id. */
async function append(store: QueueStore, meta: QueueMeta, type: string): Promise<number> {
  const key = keys.queueMeta(meta.shard, meta.queueId);
  const id = (await store.redis.hincrby(key, 'next_id', 1)) - 1;
  await store.redis.rpush(keys.queueEvents(meta.shard, meta.queueId), JSON.stringify({ id, type }));
  return id;
}

/** What an earlier version's fan-out did for one event (still understood): append it, then
 * wake the queue's polls. */
async function deliver(store: QueueStore, meta: QueueMeta, type: string): Promise<void> {
  await append(store, meta, type);
  await store.redis.publish(keys.wake(meta.shard), `w:${meta.queueId}`);
}

/** A long-poll as GET /events runs it: park, read, then wait if there was nothing. */
async function longPoll(
  setupResult: Awaited<ReturnType<typeof setup>>,
  lastEventId: number,
  closed: (onClose: () => void) => void = () => undefined,
): Promise<QueuedEvent[] | null> {
  const { poller, store, meta, userId: owner } = setupResult;
  const parked = poller.park(meta, closed, lastEventId);
  const polled = await store.poll(meta.queueId, owner, lastEventId, 60_000);
  if (!polled.ok) throw new Error(polled.error);
  if (polled.events.length > 0) {
    parked.cancel();
    return polled.events;
  }
  parked.setGeneration(polled.generation);
  return parsed(await parked.answer);
}

/** A parked poll's answer (events as stored) as a client reads it. */
function parsed(answer: RawEvent[] | null): QueuedEvent[] | null {
  return answer && answer.map((event) => JSON.parse(event) as QueuedEvent);
}

afterAll(() => {
  for (const poller of pollers) poller.drain();
  for (const subscriber of subscribers) subscriber.disconnect();
});

describe('Poller', () => {
  it('never answers an event up to the poll’s last_event_id, whatever the queue holds', async () => {
    const ctx = await setup();
    const { poller, store, meta } = ctx;
    await deliver(store, meta, 'first');
    await deliver(store, meta, 'second');
    // A poll that acknowledged event 1, woken before its own read pruned the queue: the
    // wake-up's read still holds 0 and 1 (the topology test caught a poll answered with the
    // event it had just acknowledged).
    const parked = poller.park(meta, () => undefined, 1);
    parked.setGeneration(1);
    await deliver(store, meta, 'third');
    expect(parsed(await parked.answer)!.map((event) => [event.id, event.type])).toEqual([
      [2, 'third'],
    ]);
  });

  it('schedules the heartbeat 45 s plus up to 10 s of jitter, in steps of 100 ms', async () => {
    const delay = async (random: number) =>
      (await setup({ heartbeatSeconds: 45, random: () => random })).poller.heartbeatDelayMs();
    expect(HEARTBEAT_JITTER_STEP_MS).toBe(100);
    expect(await delay(0)).toBe(45_000);
    expect(await delay(0.5)).toBe(50_000);
    expect(await delay(0.12345)).toBe(46_200);
    // Below 55 s, as before: the jitter's last step starts at 9.9 s.
    expect(await delay(0.999)).toBe(54_900);
  });

  it('answers with a queued heartbeat when nothing happens', async () => {
    const polling = await setup({ heartbeatSeconds: 0.05 });
    await expect(longPoll(polling, -1)).resolves.toEqual([{ id: 0, type: 'heartbeat' }]);
    expect(polling.poller.parked()).toBe(0);
  });

  it('answers at once, without reading the queue, when its heartbeat cannot be appended', async () => {
    const own = createRedis(getConfig().REDIS_URL);
    subscribers.push(own);
    const {
      poller,
      meta,
      userId: owner,
    } = await setup({
      heartbeatSeconds: 0.2,
      store: new QueueStore(own, getConfig().EVENT_SHARDS),
    });
    const takes = jest.spyOn(poller, 'take');
    const parked = poller.park(meta, () => undefined, -1);
    const polled = await poller.options.store.poll(meta.queueId, owner, -1, 60_000);
    if (!polled.ok) throw new Error(polled.error);
    parked.setGeneration(polled.generation);
    // Redis away before the heartbeat: every command of this connection fails.
    own.disconnect();
    await expect(parked.answer).resolves.toEqual([]);
    expect(takes).not.toHaveBeenCalled();
  });

  it('answers with no events when Redis does not answer its heartbeat in time', async () => {
    const own = createRedis(getConfig().REDIS_URL);
    subscribers.push(own);
    const {
      poller,
      meta,
      userId: owner,
    } = await setup({
      heartbeatSeconds: 0.2,
      store: new QueueStore(own, getConfig().EVENT_SHARDS),
    });
    const warnings = jest.spyOn(log, 'warn');
    const parked = poller.park(meta, () => undefined, -1);
    const polled = await poller.options.store.poll(meta.queueId, owner, -1, 60_000);
    if (!polled.ok) throw new Error(polled.error);
    parked.setGeneration(polled.generation);
    // Redis's replies stop coming (a stalled connection, a Redis busy reloading): the commands
    // would fail only at their timeout, later than the poll may wait.
    const socket = (own as unknown as { stream: Socket }).stream;
    socket.pause();
    try {
      await expect(parked.answer).resolves.toEqual([]);
      expect(warnings.mock.calls.map(([message]) => message)).toEqual([
        'Redis did not answer a heartbeat in time; answered empty',
      ]);
      expect(HEARTBEAT_ANSWER_WITHIN_MS).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS);
    } finally {
      socket.resume();
      warnings.mockRestore();
    }
  });

  it('answers as soon as the fan-out announces events', async () => {
    const polling = await setup();
    const answer = longPoll(polling, -1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(polling.poller.parked()).toBe(1);
    await deliver(polling.store, polling.meta, 'realm_user');
    await expect(answer).resolves.toEqual([{ id: 0, type: 'realm_user' }]);
    expect(polling.poller.parked()).toBe(0);
  });

  it('answers every queue one wake-up of an earlier version names', async () => {
    const first = await setup();
    const owner = ++userId;
    const other = {
      ...first,
      meta: (await first.store.meta(await first.store.create(owner, 1, defaultQueueOptions())))!,
      userId: owner,
    };
    const answers = [longPoll(first, -1), longPoll(other, -1)];
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(first.poller.parked()).toBe(2);
    // The events first, then one announcement naming both queues (as the fan-out's script).
    for (const { meta } of [first, other]) await append(first.store, meta, 'message');
    await first.store.redis.publish(
      keys.wake(first.meta.shard),
      `W:${first.meta.queueId} ${other.meta.queueId}`,
    );
    await expect(Promise.all(answers)).resolves.toEqual([
      [{ id: 0, type: 'message' }],
      [{ id: 0, type: 'message' }],
    ]);
    expect(first.poller.parked()).toBe(0);
  });

  it('answers from the events a wake-up carries, without reading the queue', async () => {
    const polling = await setup();
    const { store, meta } = polling;
    const answer = longPoll(polling, -1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Announced but not in Redis: only an answer from the announcement can hold them. Two
    // events for the queue (a bulk deletion split per message) and one for a queue not here.
    await store.redis.publish(
      keys.wake(meta.shard),
      `E:${meta.shard}:other 7 1 ${meta.queueId} 0 2 ${meta.queueId} 1 1\n` +
        `"type":"delete_message","message_id":1}\n"type":"message","flags":[]}`,
    );
    await expect(answer).resolves.toEqual([
      { id: 0, type: 'message', flags: [] },
      { id: 1, type: 'delete_message', message_id: 1 },
    ]);
    expect(polling.poller.parked()).toBe(0);
    await expect(store.events(meta)).resolves.toEqual([]);
  });

  // A wake-up for more polls than one batch answers them over several turns of the event loop;
  // one published right after it waits for them, so each queue's announcements keep their
  // order. The events are announced only (not in Redis): only answers from the announcements,
  // in order, can hold them.
  it('answers a wake-up of many polls in batches, before the wake-up that follows it', async () => {
    const first = await setup();
    const { poller, store } = first;
    const pollings = [first];
    for (let i = 0; i < ANSWER_BATCH + 20; i++) {
      const id = ++userId;
      const meta = (await store.meta(await store.create(id, 1, defaultQueueOptions())))!;
      pollings.push({ poller, store, meta, userId: id });
    }
    const answers = pollings.map((polling) => longPoll(polling, -1));
    // What is still parked when the first answer is in: the polls of the next batch.
    const parkedAfterFirst = answers[0]!.then(() => poller.parked());
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(poller.parked()).toBe(pollings.length);
    const last = pollings.at(-1)!.meta;
    const announced = pollings.map(({ meta }) => `${meta.queueId} 0 1`).join(' ');
    await store.redis
      .pipeline()
      .publish(keys.wake(0), `E:${announced}\n"type":"message"}`)
      .publish(keys.wake(0), `E:${last.queueId} 1 1\n"type":"typing"}`)
      .exec();
    const answered = await Promise.all(answers);
    expect(await parkedAfterFirst).toBe(pollings.length - ANSWER_BATCH);
    expect(answered.slice(0, -1)).toEqual(
      pollings.slice(1).map(() => [{ id: 0, type: 'message' }]),
    );
    expect(answered.at(-1)).toEqual([{ id: 0, type: 'message' }]);
    expect(poller.parked()).toBe(0);
  });

  it('reads the queue when announced events do not follow the poll’s last event', async () => {
    const polling = await setup();
    const { store, meta } = polling;
    const answer = longPoll(polling, -1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // A heartbeat appended by an older poll elsewhere (id 0), then a message (id 1) whose
    // announcement alone would skip the heartbeat.
    await store.heartbeat(meta);
    const id = await append(store, meta, 'message');
    await store.redis.publish(
      keys.wake(meta.shard),
      `E:${meta.queueId} ${id} 1\n"type":"message"}`,
    );
    await expect(answer).resolves.toEqual([
      { id: 0, type: 'heartbeat' },
      { id: 1, type: 'message' },
    ]);
  });

  it('answers from its read when events are announced before the read has answered', async () => {
    const polling = await setup();
    const { poller, store, meta } = polling;
    const parked = poller.park(meta, () => undefined, -1);
    await deliver(store, meta, 'typing');
    // The announcement says something else than the queue holds: the answer must be the
    // queue's, which the poll's own read finds.
    await store.redis.publish(keys.wake(meta.shard), `E:${meta.queueId} 0 1\n"type":"other"}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const polled = await store.poll(meta.queueId, polling.userId, -1, 60_000);
    expect(polled.ok && polled.events.map((event) => event.type)).toEqual(['typing']);
    parked.cancel();
    expect(poller.parked()).toBe(0);
  });

  // The read ran in Redis before the events were appended, but its answer came after their
  // announcement: the announced events are the queue's next ones. They are announced only
  // (not in Redis), so only an answer from the announcements can hold them.
  it('answers from events announced before its read answered empty, without reading the queue', async () => {
    const polling = await setup();
    const { poller, store, meta } = polling;
    const take = jest.spyOn(poller, 'take');
    const parked = poller.park(meta, () => undefined, -1);
    const wake = keys.wake(meta.shard);
    await store.redis.publish(wake, `E:${meta.queueId} 0 1\n"type":"message"}`);
    await store.redis.publish(wake, `E:${meta.queueId} 1 1\n"type":"typing"}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const polled = await store.poll(meta.queueId, polling.userId, -1, 60_000);
    expect(polled.ok && polled.events).toEqual([]);
    parked.setGeneration(polled.ok ? polled.generation : 0);
    expect(parsed(await parked.answer)).toEqual([
      { id: 0, type: 'message' },
      { id: 1, type: 'typing' },
    ]);
    expect(take).not.toHaveBeenCalled();
    expect(poller.parked()).toBe(0);
  });

  it('reads the queue when events announced before its read do not follow its last event', async () => {
    const polling = await setup();
    const { poller, store, meta } = polling;
    const parked = poller.park(meta, () => undefined, -1);
    // A heartbeat appended by an older poll elsewhere (id 0) is not announced; the message
    // after it (id 1) is, before the read has answered.
    await store.redis.publish(keys.wake(meta.shard), `E:${meta.queueId} 1 1\n"type":"message"}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const polled = await store.poll(meta.queueId, polling.userId, -1, 60_000);
    expect(polled.ok && polled.events).toEqual([]);
    await store.heartbeat(meta);
    await append(store, meta, 'message');
    parked.setGeneration(polled.ok ? polled.generation : 0);
    expect(parsed(await parked.answer)).toEqual([
      { id: 0, type: 'heartbeat' },
      { id: 1, type: 'message' },
    ]);
  });

  it('reads the queue when an announcement is malformed', async () => {
    const polling = await setup();
    const { store, meta } = polling;
    const answer = longPoll(polling, -1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await append(store, meta, 'message');
    await store.redis.publish(keys.wake(meta.shard), `E:${meta.queueId} 0 3`);
    await expect(answer).resolves.toEqual([{ id: 0, type: 'message' }]);
  });

  it('stays parked when woken for events an earlier poll already took', async () => {
    const polling = await setup();
    const { store, meta } = polling;
    const answer = longPoll(polling, -1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await store.redis.publish(keys.wake(meta.shard), `w:${meta.queueId}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(polling.poller.parked()).toBe(1);
    await deliver(store, meta, 'typing');
    await expect(answer).resolves.toEqual([{ id: 0, type: 'typing' }]);
  });

  it('misses no wake-up published between parking and reading the queue', async () => {
    const polling = await setup();
    const { poller, store, meta } = polling;
    const parked = poller.park(meta, () => undefined);
    await deliver(store, meta, 'stream');
    // The read that follows finds the event; had it not, the wake-up already answered.
    const polled = await store.poll(meta.queueId, polling.userId, -1, 60_000);
    expect(polled.ok && polled.events.map((event) => event.type)).toEqual(['stream']);
    parked.cancel();
    expect(poller.parked()).toBe(0);
  });

  it('finishes an older poll when a newer one comes, not the newer one', async () => {
    const polling = await setup();
    const older = longPoll(polling, -1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const newer = longPoll(polling, -1);
    await expect(older).resolves.toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(polling.poller.parked()).toBe(1);
    await deliver(polling.store, polling.meta, 'presence');
    await expect(newer).resolves.toEqual([{ id: 0, type: 'presence' }]);
  });

  it('drops the poll without answering when the client goes away', async () => {
    const polling = await setup({ heartbeatSeconds: 0.1 });
    let close = () => undefined as void;
    const answer = longPoll(polling, -1, (onClose) => (close = onClose));
    await new Promise((resolve) => setTimeout(resolve, 20));
    close();
    await expect(answer).resolves.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // No heartbeat was queued for it.
    await expect(polling.store.events(polling.meta)).resolves.toEqual([]);
  });

  it('answers every parked poll when draining, and new ones at once', async () => {
    const polling = await setup();
    const first = longPoll(polling, -1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    polling.poller.drain();
    await expect(first).resolves.toEqual([]);
    await expect(longPoll(polling, -1)).resolves.toEqual([]);
  });
});
