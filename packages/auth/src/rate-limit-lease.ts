// One rate-limit rule counted in Redis without a round trip per request. A replica takes
// points from the shared count ahead of use (a lease) and spends them locally; it asks Redis
// again only when its lease is spent or the window has closed. A lease is a quarter of what
// the window has left (at most MAX_LEASE), and the first request of a window leases one point:
// a client nearing its limit is counted request by request, and one replica's count is exact.
//
// With several replicas the shared count includes points other replicas leased and have not
// spent yet, so a client spreading requests over replicas may be refused up to those points
// early (never allowed more than the rule), and X-RateLimit-Remaining is what this replica
// knows. A replica that saw the window full refuses locally until the window closes: only
// allowed requests stay counted, so the count falls back only by the few points a lease
// overshooting the limit hands back, and those are refused a little early.
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';

/** Points a replica may hold unspent per key and rule. */
export const MAX_LEASE = 100;

/** Expired leases are swept once this many keys are held, at most once a second (with more
 * live keys than that, every new key would otherwise walk them all). */
const SWEEP_AT = 10_000;
const SWEEP_EVERY_MS = 1000;

interface Lease {
  /** When the window closes (Date.now() ms). */
  windowEnds: number;
  /** The window's shared count when last read, including this replica's unspent points. */
  counted: number;
  /** Points leased by this replica and not yet spent. */
  unspent: number;
}

export interface Taken {
  allowed: boolean;
  /** Requests left in the window, as far as this replica knows. */
  remaining: number;
  msBeforeNext: number;
}

export class LeasedRule {
  private readonly leases = new Map<string, Lease>();
  /** Keys whose lease is being taken from Redis: concurrent requests for the key wait for it
   * instead of leasing too (a second lease would replace the first and strand its points). */
  private readonly leasing = new Map<string, Promise<unknown>>();
  private lastSweep = 0;

  constructor(
    readonly limiter: RateLimiterAbstract,
    readonly points: number,
  ) {}

  /** Spends one point of `key`'s window, from the lease when it holds one. */
  async take(key: string): Promise<Taken> {
    for (;;) {
      const now = Date.now();
      const lease = this.leases.get(key);
      if (lease && lease.windowEnds > now) {
        if (lease.unspent > 0) {
          lease.unspent -= 1;
          return this.taken(lease, now, true);
        }
        if (lease.counted >= this.points) return this.taken(lease, now, false);
      }
      const pending = this.leasing.get(key);
      if (!pending) break;
      // Another request is leasing for this key: spend from what it brings, or lease after it.
      await pending.catch(() => undefined);
    }
    const leased = this.lease(key);
    this.leasing.set(key, leased);
    try {
      return await leased;
    } finally {
      this.leasing.delete(key);
    }
  }

  /** Takes a lease from Redis and spends its first point (if it got any). */
  private async lease(key: string): Promise<Taken> {
    const now = Date.now();
    const lease = this.leases.get(key);
    const open = lease && lease.windowEnds > now;
    const size = open
      ? Math.min(MAX_LEASE, Math.max(1, Math.floor((this.points - lease.counted) / 4)))
      : 1;
    const answer = await this.limiter.consume(key, size).catch((rejection: unknown) => {
      if (rejection instanceof RateLimiterRes) return rejection;
      throw rejection;
    });
    // What the lease got: the points that fit under the limit. The rest is handed back, so the
    // shared count holds only allowed requests (as Zulip's, which counts no refused one).
    const granted = Math.max(0, Math.min(size, this.points - (answer.consumedPoints - size)));
    if (granted < size) await this.limiter.reward(key, size - granted).catch(() => undefined);
    // A point given back meanwhile (giveBack) stays with the replica, if its window is open.
    const current = this.leases.get(key);
    const carried = current && current.windowEnds > Date.now() ? current.unspent : 0;
    const fresh: Lease = {
      windowEnds: now + answer.msBeforeNext,
      counted: answer.consumedPoints - (size - granted),
      unspent: Math.max(0, granted - 1) + carried,
    };
    if (this.leases.size >= SWEEP_AT && now - this.lastSweep >= SWEEP_EVERY_MS) this.sweep(now);
    this.leases.set(key, fresh);
    return this.taken(fresh, now, granted > 0);
  }

  /** Returns a point taken for a request another rule refused: it stays with this replica. */
  giveBack(key: string): void {
    const lease = this.leases.get(key);
    if (lease && lease.windowEnds > Date.now()) lease.unspent += 1;
  }

  private taken(lease: Lease, now: number, allowed: boolean): Taken {
    return {
      allowed,
      remaining: allowed ? Math.max(0, this.points - (lease.counted - lease.unspent)) : 0,
      msBeforeNext: Math.max(0, lease.windowEnds - now),
    };
  }

  /** Milliseconds until `key`'s window closes if it is full, else 0: from this replica's lease
   * when it has one, else from the shared count (a refusal's Retry-After must cover every full
   * window, also those this request never reached). */
  async fullFor(key: string): Promise<number> {
    const lease = this.leases.get(key);
    const now = Date.now();
    if (lease && lease.windowEnds > now) {
      if (lease.unspent > 0 || lease.counted < this.points) return 0;
      return lease.windowEnds - now;
    }
    const shared = await this.limiter.get(key).catch(() => null);
    return shared && shared.consumedPoints >= this.points ? Math.max(0, shared.msBeforeNext) : 0;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, lease] of this.leases) if (lease.windowEnds <= now) this.leases.delete(key);
  }
}
