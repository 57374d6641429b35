// The locks of resumable uploads (@tus/server's Locker) in Redis, so that they hold across API
// replicas: the PATCH writing an upload on one replica and the HEAD or PATCH of the same
// upload arriving on another (a client resuming after a broken connection) take turns, as
// they would with the in-memory locker inside one process.
//
// A lock is a key holding its owner's random token, set only if absent and expiring after
// LOCK_TTL_MS unless its holder renews it (a replica that dies holding one frees it by then).
// tus's protocol asks the holder to let go when another request wants the lock (the old
// request is most likely a connection the client already gave up on): the waiter publishes the
// upload id on a channel every replica listens to, and the replica holding it calls the
// holder's release callback, which ends that request within tus's lockDrainTimeout.
import { randomBytes } from 'node:crypto';
import type { Lock, Locker, RequestRelease } from '@tus/utils';
import { ERRORS } from '@tus/utils';
import { getConfig } from '@parley/config';
import { createRedis, getRedis, RELEASE_IF_HELD, RENEW_IF_HELD, tusKeys } from '@parley/events';
import { getLogger } from '@parley/logger';

/** A lock not renewed for this long is free (its holder's process is gone). */
export const LOCK_TTL_MS = 10_000;
/** How long a request waits for a lock before giving up (answered 423, retried by clients). */
export const LOCK_ACQUIRE_TIMEOUT_MS = 20_000;
const RETRY_MS = 50;
/** How often a waiter asks the holder again to let go (a release request may race the lock's
 * taking). */
const ASK_AGAIN_MS = 1000;

type Subscriber = ReturnType<typeof createRedis>;

export class RedisLocker implements Locker {
  /** Release callbacks of the locks this process holds, by upload id. */
  readonly held = new Map<string, RequestRelease>();
  private subscriber: Subscriber | undefined;
  private listening: Promise<void> | undefined;

  newLock(id: string): Lock {
    return new RedisLock(id, this);
  }

  /** Subscribes (once per process) to the release requests of other replicas' waiters. */
  listen(): Promise<void> {
    this.listening ??= (async () => {
      const subscriber = createRedis(getConfig().REDIS_URL);
      this.subscriber = subscriber;
      subscriber.on('message', (_channel: string, id: string) => {
        const release = this.held.get(id);
        if (release) void Promise.resolve(release()).catch(() => undefined);
      });
      await subscriber.subscribe(tusKeys.releaseChannel);
    })().catch((error: unknown) => {
      // Not listening costs waiters time (until the holder finishes), never correctness:
      // try again with the next lock.
      this.listening = undefined;
      this.subscriber?.disconnect();
      this.subscriber = undefined;
      getLogger().warn('tus lock release channel unavailable', { error });
    });
    return this.listening;
  }

  /** Closes the subscription (tests; a server exiting simply drops it). */
  async close(): Promise<void> {
    await this.listening;
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.listening = undefined;
  }
}

class RedisLock implements Lock {
  private readonly token = randomBytes(16).toString('hex');
  private renewal: NodeJS.Timeout | undefined;
  /** This lock's entry in the locker's `held` (its own function, even if two requests pass
   * the same callback), so that unlock removes its own entry and no other. */
  private release: RequestRelease | undefined;

  constructor(
    private readonly id: string,
    private readonly locker: RedisLocker,
  ) {}

  async lock(signal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    await this.locker.listen();
    const redis = getRedis();
    const key = tusKeys.lock(this.id);
    const deadline = Date.now() + LOCK_ACQUIRE_TIMEOUT_MS;
    let askedAt = 0;
    for (;;) {
      if (signal.aborted) throw ERRORS.ABORTED;
      if ((await redis.set(key, this.token, 'PX', LOCK_TTL_MS, 'NX')) === 'OK') break;
      if (Date.now() - askedAt >= ASK_AGAIN_MS) {
        askedAt = Date.now();
        await redis.publish(tusKeys.releaseChannel, this.id);
      }
      if (Date.now() > deadline) throw ERRORS.ERR_LOCK_TIMEOUT;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
    const release: RequestRelease = () => requestRelease();
    this.release = release;
    this.locker.held.set(this.id, release);
    this.renewal = setInterval(() => {
      RENEW_IF_HELD.run(redis, 1, key, this.token, LOCK_TTL_MS).then(
        (renewed) => {
          // Lost (expired while Redis was away, now someone else's): stop writing.
          if (renewed === 0) void Promise.resolve(requestRelease()).catch(() => undefined);
        },
        (error: unknown) => getLogger().warn('tus lock renewal failed', { error }),
      );
    }, LOCK_TTL_MS / 3);
    this.renewal.unref();
  }

  async unlock(): Promise<void> {
    clearInterval(this.renewal);
    this.renewal = undefined;
    // Only its own entry: after this lock expired (renewal failed) another request of this
    // process may have taken it, and that holder's release callback must stay.
    if (this.release && this.locker.held.get(this.id) === this.release)
      this.locker.held.delete(this.id);
    this.release = undefined;
    await RELEASE_IF_HELD.run(getRedis(), 1, tusKeys.lock(this.id), this.token);
  }
}

let locker: RedisLocker | undefined;

/** The process's locker. */
export function tusLocker(): RedisLocker {
  locker ??= new RedisLocker();
  return locker;
}

export async function stopTusLocker(): Promise<void> {
  await locker?.close();
  locker = undefined;
}
