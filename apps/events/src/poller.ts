// Parked long-polls. Every events replica subscribes to every shard's wake-up channel, so any
// replica can serve any queue: the fan-out announces new events (`w:<queue>`), a newer poll on
// the same queue announces itself (`k:<queue>:<generation>`) so older ones finish, and deleted
// or expired queues are announced (`d:<queue>`). A parked poll without news returns a
// heartbeat after 45-55 s (Zulip's HEARTBEAT_MIN_FREQ_SECS plus up to 10 s).
import type { Redis } from 'ioredis';
import { keys, type QueuedEvent, type QueueMeta, type QueueStore } from '@parley/events';
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
  meta: QueueMeta;
  generation: number;
  finish: () => void;
}

export class Poller {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private draining = false;

  constructor(private readonly options: PollerOptions) {}

  async start(): Promise<void> {
    const { subscriber, shards } = this.options;
    subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    await subscriber.subscribe(...Array.from({ length: shards }, (_, shard) => keys.wake(shard)));
  }

  /** Seconds until a parked poll gets its heartbeat. */
  heartbeatDelayMs(): number {
    const random = this.options.random ?? Math.random;
    return (this.options.heartbeatSeconds + random() * this.options.heartbeatJitterSeconds) * 1000;
  }

  /** Parks until the queue has events (or a heartbeat, a newer poll, deletion, shutdown);
   * resolves with the queue's events then. `closed` fires if the client goes away first. */
  wait(
    meta: QueueMeta,
    generation: number,
    closed: (onClose: () => void) => void,
  ): Promise<QueuedEvent[] | null> {
    const { store } = this.options;
    return new Promise((resolve) => {
      let settled = false;
      const waiter: Waiter = { meta, generation, finish: () => void respond() };
      const cleanup = () => {
        settled = true;
        clearTimeout(heartbeat);
        const set = this.waiters.get(meta.queueId);
        set?.delete(waiter);
        if (set?.size === 0) this.waiters.delete(meta.queueId);
      };
      const respond = async () => {
        if (settled) return;
        cleanup();
        try {
          resolve(await store.events(meta));
        } catch (error) {
          this.options.log.warn('reading a queue failed', { error });
          resolve([]);
        }
      };
      const heartbeat = setTimeout(() => {
        void (async () => {
          if (settled) return;
          await store.heartbeat(meta).catch(() => -1);
          await respond();
        })();
      }, this.heartbeatDelayMs());

      const set = this.waiters.get(meta.queueId) ?? new Set<Waiter>();
      set.add(waiter);
      this.waiters.set(meta.queueId, set);
      closed(() => {
        if (!settled) {
          cleanup();
          resolve(null);
        }
      });
      if (this.draining) return void respond();
      // Events or a newer poll may have arrived between the caller's read and registration.
      void (async () => {
        const [events, currentGeneration] = await Promise.all([
          store.events(meta),
          store.redis.hget(keys.queueMeta(meta.shard, meta.queueId), 'poll_gen'),
        ]);
        if (
          events.length > 0 ||
          currentGeneration === null ||
          Number(currentGeneration) > generation
        )
          await respond();
      })().catch(() => void respond());
    });
  }

  /** Kicks older polls of the queue on every replica (Zulip: a newer poll finishes the older). */
  async announcePoll(meta: QueueMeta, generation: number): Promise<void> {
    await this.options.store.redis.publish(
      keys.wake(meta.shard),
      `k:${meta.queueId}:${generation}`,
    );
  }

  async announceDeleted(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<void> {
    await this.options.store.redis.publish(keys.wake(meta.shard), `d:${meta.queueId}`);
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

  /** `w:<queue>`, `d:<queue>` or `k:<queue>:<generation>`; queue ids contain a colon. */
  private onMessage(message: string): void {
    const kind = message[0];
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
      if (generation > waiter.generation) waiter.finish();
    }
  }
}
