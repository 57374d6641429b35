// Parked long-polls. Every events replica subscribes to every shard's wake-up channel, so any
// replica can serve any queue: the fan-out announces new events with the events themselves
// (`E:…`, see fanout.ts), a newer poll on the same queue announces itself
// (`k:<queue>:<generation>`) so older ones finish, and deleted or expired queues are announced
// (`d:<queue>`). A parked poll without news returns a heartbeat after 45-55 s (Zulip's
// HEARTBEAT_MIN_FREQ_SECS plus up to 10 s).
import type { Redis } from 'ioredis';
import { keys, rawEventId, type QueueMeta, type QueueStore, type RawEvent } from '@parley/events';
import type { Logger } from '@parley/logger';

export interface PollerOptions {
  store: QueueStore;
  /** A dedicated connection for SUBSCRIBE. */
  subscriber: Redis;
  shards: number;
  heartbeatSeconds: number;
  heartbeatJitterSeconds: number;
  log: Logger;
  random?: () => number;
}

interface Waiter {
  meta: Pick<QueueMeta, 'shard' | 'queueId'>;
  /** Unknown (infinite) until the poll's script has answered. */
  generation: number;
  /** The newest generation announced while this one was still unknown. */
  newestSeen: number;
  /** New events were announced: answer if there are any (the announcement may be for
   * events an earlier poll already took). */
  wake: () => void;
  /** New events were announced with their content (the queue's newest, in order). */
  wakeWith: (events: RawEvent[]) => void;
  /** Answer now, whatever the queue holds (newer poll, deletion, heartbeat, shutdown). */
  finish: () => void;
}

/** A poll registered before its queue is read (QueueStore.poll): a wake-up published after that
 * read finds it here, so none is missed and no second read is needed. */
export interface ParkedPoll {
  /** The queue's events once woken (or at the heartbeat), as stored; null if the client went
   * away. */
  readonly answer: Promise<RawEvent[] | null>;
  /** The poll's generation, from the read: newer polls finish this one. */
  setGeneration(generation: number): void;
  /** The read answered by itself (events, an error): nothing to wait for. */
  cancel(): void;
}

/** The heartbeat's jitter comes in steps of this. Node keeps one timer list per distinct
 * delay: jitter to the millisecond gave 10,000 parked polls about as many lists, and each
 * answer's clearTimeout then took its list out of the timers' heap. In steps of 100 ms they
 * share 100 lists; heartbeats still spread, since each fires at its own poll's park time
 * plus its delay. */
export const HEARTBEAT_JITTER_STEP_MS = 100;

/** A parked poll whose heartbeat is due answers within this, with no events if Redis has not
 * answered by then: clients count a poll that outlasts its heartbeat by much as a lost
 * connection. */
export const HEARTBEAT_ANSWER_WITHIN_MS = 1000;

/** Parked polls one wake-up answers in one go; more wait for the next turns of the event loop
 * (see Poller.answerWoken). */
export const ANSWER_BATCH = 256;

export class Poller {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private draining = false;
  /** Queues announced with their events and not yet answered, in announcement order. */
  private woken: [queueId: string, events: RawEvent[] | null][] = [];
  private answering = false;
  /** Queue reads requested in this tick: sent together, one round trip for all. */
  private takes: {
    meta: Pick<QueueMeta, 'shard' | 'queueId'>;
    resolve: (events: RawEvent[]) => void;
    reject: (error: unknown) => void;
  }[] = [];

  constructor(readonly options: PollerOptions) {}

  async start(): Promise<void> {
    const { subscriber, shards } = this.options;
    subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    await subscriber.subscribe(...Array.from({ length: shards }, (_, shard) => keys.wake(shard)));
  }

  /** Milliseconds until a parked poll gets its heartbeat: the base delay plus a jitter in
   * whole HEARTBEAT_JITTER_STEP_MS. */
  heartbeatDelayMs(): number {
    const random = this.options.random ?? Math.random;
    const steps = Math.floor(
      (random() * this.options.heartbeatJitterSeconds * 1000) / HEARTBEAT_JITTER_STEP_MS,
    );
    return this.options.heartbeatSeconds * 1000 + steps * HEARTBEAT_JITTER_STEP_MS;
  }

  /** Registers a poll that may park until the queue has events (or a heartbeat, a newer poll,
   * deletion, shutdown); it answers with the queue's events then, and the queue lives at least
   * its lifespan from that moment. `closed` fires if the client goes away first. */
  park(
    meta: Pick<QueueMeta, 'shard' | 'queueId'>,
    closed: (onClose: () => void) => void,
    /** The poll's last_event_id: an answer never holds an event up to it, whatever the queue
     * held when it was read (as Zulip's fetch_events). */
    lastEventId = -1,
  ): ParkedPoll {
    const parked = new Parked(this, meta, lastEventId);
    const set = this.waiters.get(meta.queueId) ?? new Set<Waiter>();
    set.add(parked);
    this.waiters.set(meta.queueId, set);
    closed(() => parked.clientGone());
    return parked;
  }

  /** A parked poll is done: it no longer listens for its queue. */
  forget(waiter: Waiter): void {
    const set = this.waiters.get(waiter.meta.queueId);
    set?.delete(waiter);
    if (set?.size === 0) this.waiters.delete(waiter.meta.queueId);
  }

  isDraining(): boolean {
    return this.draining;
  }

  async announceDeleted(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<void> {
    await this.options.store.redis.publish(keys.wake(meta.shard), `d:${meta.queueId}`);
  }

  /** A queue's events for a parked poll's answer, read with every other one asked for in the
   * same tick: a fan-out wakes thousands of polls at once. */
  take(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<RawEvent[]> {
    return new Promise((resolve, reject) => {
      if (this.takes.length === 0) setImmediate(() => void this.flushTakes());
      this.takes.push({ meta, resolve, reject });
    });
  }

  private async flushTakes(): Promise<void> {
    const batch = this.takes;
    this.takes = [];
    try {
      const answers = await this.options.store.takeManyRaw(batch.map((take) => take.meta));
      batch.forEach((take, index) => {
        const answer = answers[index]!;
        if (answer instanceof Error) take.reject(answer);
        else take.resolve(answer);
      });
    } catch (error) {
      for (const take of batch) take.reject(error);
    }
  }

  /** Answers every parked poll now (shutdown); new polls answer at once. */
  drain(): void {
    this.draining = true;
    for (const set of this.waiters.values()) for (const waiter of [...set]) waiter.finish();
  }

  parked(): number {
    let count = 0;
    for (const set of this.waiters.values()) count += set.size;
    return count;
  }

  /** `E:…` (the fan-out's), `W:<queue> <queue> …` and `w:<queue>` (earlier versions' fan-out),
   * `d:<queue>` or `k:<queue>:<generation>`; queue ids contain a colon, never a space. */
  private onMessage(message: string): void {
    const kind = message[0];
    if (kind === 'E') return this.onEvents(message);
    if (kind === 'W') {
      for (const queueId of message.slice(2).split(' '))
        for (const waiter of [...(this.waiters.get(queueId) ?? [])]) waiter.wake();
      return;
    }
    let queueId = message.slice(2);
    let generation = Number.POSITIVE_INFINITY;
    if (kind === 'k') {
      const at = queueId.lastIndexOf(':');
      generation = Number(queueId.slice(at + 1));
      queueId = queueId.slice(0, at);
    }
    const set = this.waiters.get(queueId);
    if (!set) return;
    for (const waiter of [...set]) {
      if (kind === 'w') waiter.wake();
      else if (kind !== 'k') waiter.finish();
      else if (waiter.generation === Number.POSITIVE_INFINITY)
        // Its own announcement, or a newer poll's: known once its generation is.
        waiter.newestSeen = Math.max(waiter.newestSeen, generation);
      else if (generation > waiter.generation) waiter.finish();
    }
  }

  /** `E:<queue> <event id> <form> …` then the forms, one per line, each an event's JSON without
   * its opening brace: every event one fan-out appended. Only the queues parked here are
   * looked at, and the forms split only if one is. */
  private onEvents(message: string): void {
    const end = message.indexOf('\n');
    const appended = message.slice(2, end < 0 ? undefined : end).split(' ');
    let forms: string[] | undefined;
    // Per queue parked here, its events; null when one of them is not there (a malformed
    // announcement), which leaves the queue to be read.
    const woken = new Map<string, RawEvent[] | null>();
    for (let i = 0; i + 2 < appended.length; i += 3) {
      const queueId = appended[i]!;
      if (!this.waiters.has(queueId)) continue;
      forms ??= end < 0 ? [] : message.slice(end + 1).split('\n');
      const form = forms[Number(appended[i + 2]) - 1];
      const events = woken.has(queueId) ? woken.get(queueId)! : [];
      if (events && form !== undefined) events.push(`{"id":${appended[i + 1]},${form}`);
      woken.set(queueId, form === undefined ? null : events);
    }
    for (const entry of woken) this.woken.push(entry);
    if (!this.answering) this.answerWoken();
  }

  /** Answers the woken queues' polls, ANSWER_BATCH at a time, each batch in a turn of the event
   * loop of its own. Everything an answer allocates lives until its turn ends (its write's
   * completion runs on the next tick): a message to 10,000 parked polls answered in one turn
   * kept all of them alive at once, and a quarter of the answering went to the garbage
   * collector copying them (docs/events.md). A wake-up that comes meanwhile is answered after
   * the ones before it, so a queue's announcements keep their order. */
  private answerWoken(): void {
    this.answering = true;
    const end = Math.min(this.woken.length, ANSWER_BATCH);
    let next = 0;
    try {
      while (next < end) {
        const [queueId, events] = this.woken[next++]!;
        for (const waiter of [...(this.waiters.get(queueId) ?? [])])
          if (events) waiter.wakeWith(events);
          else waiter.wake();
      }
    } finally {
      // Whatever happened to one poll, the others are still answered, and only what remains
      // is kept (wake-ups that keep coming must not grow the list).
      this.woken = this.woken.slice(next);
      this.answering = this.woken.length > 0;
      if (this.answering) setImmediate(() => this.answerWoken());
    }
  }
}

/** One registered poll (see Poller.park): its state in one object and its behaviour on the
 * prototype, since thousands are parked at once and every closure made per poll is memory
 * held for its whole wait. */
class Parked implements ParkedPoll, Waiter {
  /** Unknown (infinite) until the poll's script has answered. */
  generation = Number.POSITIVE_INFINITY;
  newestSeen = 0;
  readonly answer: Promise<RawEvent[] | null>;
  private resolveAnswer!: (events: RawEvent[] | null) => void;
  private settled = false;
  private taking = false;
  private wokenAgain = false;
  /** The heartbeat's timer, then (once it fired) the one of giveUp. */
  private heartbeat: NodeJS.Timeout | undefined;
  /** Events announced before the poll's read answered, in order (see wakeWith); null once an
   * announcement could not be kept (a gap between two): the queue is read then. */
  private announced: RawEvent[] | null | undefined;

  constructor(
    private readonly poller: Poller,
    readonly meta: Pick<QueueMeta, 'shard' | 'queueId'>,
    private readonly lastEventId: number,
  ) {
    this.answer = new Promise((resolve) => (this.resolveAnswer = resolve));
  }

  setGeneration(generation: number): void {
    if (this.settled) return;
    this.generation = generation;
    if (this.poller.isDraining() || this.newestSeen > generation) return void this.finish();
    const announced = this.announced;
    this.announced = undefined;
    // The read found nothing after lastEventId, so what was announced meanwhile was appended
    // after it: the queue's next events, if they start at the next id.
    if (announced !== undefined) {
      if (announced !== null && rawEventId(announced[0]!) === this.lastEventId + 1) {
        this.done();
        this.resolveAnswer(announced);
        return;
      }
      void this.takeIfAny();
    }
    this.heartbeat = setTimeout(beat, this.poller.heartbeatDelayMs(), this);
  }

  cancel(): void {
    if (this.settled) return;
    this.done();
    this.resolveAnswer(null);
  }

  /** Answer now, whatever the queue holds (newer poll, deletion, heartbeat, shutdown). */
  finish(): void {
    void this.respond();
  }

  /** New events were announced: answer if there are any (the announcement may be for events
   * an earlier poll already took). */
  wake(): void {
    void this.takeIfAny();
  }

  /** Events announced with their content answer the poll without reading the queue when they
   * are exactly what it holds: its read has answered (its generation is known), which found
   * nothing after lastEventId, no read of it is under way, and they start at the next id.
   * Announced before the read has answered, they are kept until it does (setGeneration): a
   * read that finds events answers with them instead, and one that finds none was run before
   * they were appended. Otherwise (a heartbeat another poll appended in between, a read under
   * way) the queue is read. The queue's expiry needs no update here: the poll's read set it
   * past the longest wait plus the queue's lifespan. */
  wakeWith(events: RawEvent[]): void {
    if (this.settled) return;
    if (this.generation === Number.POSITIVE_INFINITY && !this.taking) {
      const kept = this.announced;
      if (kept === undefined) this.announced = events;
      else if (kept !== null)
        this.announced =
          rawEventId(events[0]!) === rawEventId(kept[kept.length - 1]!) + 1
            ? [...kept, ...events]
            : null;
      return;
    }
    if (!this.taking && rawEventId(events[0]!) === this.lastEventId + 1) {
      this.done();
      this.resolveAnswer(events);
      return;
    }
    void this.takeIfAny();
  }

  clientGone(): void {
    if (this.settled) return;
    this.done();
    this.resolveAnswer(null);
    // The queue lives on for its lifespan from now, as after an answer.
    this.poller.take(this.meta).catch(() => undefined);
  }

  async heartbeatNow(): Promise<void> {
    if (this.settled) return;
    // Whatever Redis does, the poll answers soon after its heartbeat is due (giveUp): on the
    // events tier's auto-pipelined connection a command waits for the batch before it, so
    // while Redis is away or reloading the append and the read could each take two command
    // timeouts.
    this.heartbeat = setTimeout(giveUp, HEARTBEAT_ANSWER_WITHIN_MS, this);
    let events: RawEvent[];
    try {
      await this.poller.options.store.heartbeat(this.meta);
      events = await this.poller.take(this.meta);
    } catch (error) {
      // The client polls again and gets a 503 until Redis is back.
      if (this.settled) return;
      this.poller.options.log.warn('answering a heartbeat failed', { error });
      this.done();
      this.resolveAnswer([]);
      return;
    }
    if (this.settled) return;
    this.done();
    this.resolveAnswer(newerThan(events, this.lastEventId));
  }

  /** Redis has not answered the heartbeat in time: the poll answers with no events (the
   * heartbeat, if it was appended, goes with the next answer). */
  giveUp(): void {
    if (this.settled) return;
    this.poller.options.log.warn('Redis did not answer a heartbeat in time; answered empty', {
      queueId: this.meta.queueId,
    });
    this.done();
    this.resolveAnswer([]);
  }

  private done(): void {
    this.settled = true;
    clearTimeout(this.heartbeat);
    this.poller.forget(this);
  }

  private async respond(): Promise<void> {
    if (this.settled) return;
    this.done();
    try {
      this.resolveAnswer(newerThan(await this.poller.take(this.meta), this.lastEventId));
    } catch (error) {
      this.poller.options.log.warn('reading a queue failed', { error });
      this.resolveAnswer([]);
    }
  }

  private async takeIfAny(): Promise<void> {
    if (this.settled) return;
    if (this.taking) return void (this.wokenAgain = true);
    this.taking = true;
    try {
      const events = newerThan(await this.poller.take(this.meta), this.lastEventId);
      if (!this.settled && events.length > 0) {
        this.done();
        this.resolveAnswer(events);
      }
    } catch (error) {
      this.poller.options.log.warn('reading a queue failed', { error });
      if (!this.settled) {
        this.done();
        this.resolveAnswer([]);
      }
    } finally {
      this.taking = false;
      if (this.wokenAgain && !this.settled) {
        this.wokenAgain = false;
        void this.takeIfAny();
      }
    }
  }
}

/** A parked poll's heartbeat timer (one function for all: no closure per poll). */
function beat(parked: Parked): void {
  void parked.heartbeatNow();
}

function giveUp(parked: Parked): void {
  parked.giveUp();
}

function newerThan(events: RawEvent[], lastEventId: number): RawEvent[] {
  return events[0] !== undefined && rawEventId(events[0]) <= lastEventId
    ? events.filter((event) => rawEventId(event) > lastEventId)
    : events;
}
