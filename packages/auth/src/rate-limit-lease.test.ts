// Leased rate-limit rules against the real Redis: one replica's count is exact, replicas
// sharing a key never allow more than the rule, most requests cost no Redis command, a full
// window is refused without one, and refused points are handed back.
import { randomUUID } from 'node:crypto';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { getRedis } from '@parley/events';
import { LeasedRule, MAX_LEASE } from './rate-limit-lease';

const prefix = `ratelimit:lease-test:${randomUUID()}`;

/** A replica's rule over the shared Redis count, with the Redis calls it makes counted. */
function replica(points: number, duration = 60) {
  const limiter = new RateLimiterRedis({
    storeClient: getRedis(),
    keyPrefix: prefix,
    points,
    duration,
  });
  const calls = { consume: 0, reward: 0 };
  const consume = limiter.consume.bind(limiter);
  const reward = limiter.reward.bind(limiter);
  limiter.consume = (key, n) => (calls.consume++, consume(key, n));
  limiter.reward = (key, n) => (calls.reward++, reward(key, n));
  return { rule: new LeasedRule(limiter, points), calls };
}

const shared = async (key: string) => Number(await getRedis().get(`${prefix}:${key}`));

describe('LeasedRule', () => {
  it('counts one replica’s requests exactly, then refuses until the window closes', async () => {
    const { rule } = replica(10);
    const key = randomUUID();
    for (let remaining = 9; remaining >= 0; remaining--) {
      const taken = await rule.take(key);
      expect(taken).toMatchObject({ allowed: true, remaining });
      expect(taken.msBeforeNext).toBeGreaterThan(55_000);
      expect(taken.msBeforeNext).toBeLessThanOrEqual(60_000);
    }
    expect(await rule.take(key)).toMatchObject({ allowed: false, remaining: 0 });
    // Only allowed requests are in the shared count.
    expect(await shared(key)).toBe(10);
  });

  it('counts concurrent requests exactly: one lease at a time per key', async () => {
    const { rule, calls } = replica(50);
    const key = randomUUID();
    await rule.take(key);
    // Many requests of one client at once, as a lease runs out.
    const taken = await Promise.all(Array.from({ length: 80 }, () => rule.take(key)));
    expect(taken.filter((result) => result.allowed)).toHaveLength(49);
    expect(await shared(key)).toBe(50);
    expect(calls.consume).toBeLessThan(20);
  });

  it('spends most requests from its lease, without a Redis command', async () => {
    const { rule, calls } = replica(100_000);
    const key = randomUUID();
    for (let i = 0; i < 1000; i++) expect((await rule.take(key)).allowed).toBe(true);
    // The first request leases one point, later ones up to MAX_LEASE at a time.
    expect(calls.consume).toBeLessThanOrEqual(2 + Math.ceil(1000 / MAX_LEASE));
    expect(await shared(key)).toBeLessThanOrEqual(1000 + MAX_LEASE);
  });

  it('never allows more than the rule to replicas sharing a key', async () => {
    const replicas = [replica(50), replica(50), replica(50)];
    const key = randomUUID();
    let allowed = 0;
    // Interleaved, as a load balancer spreads one client's requests.
    for (let i = 0; i < 90; i++) {
      if ((await replicas[i % 3]!.rule.take(key)).allowed) allowed++;
    }
    expect(allowed).toBeLessThanOrEqual(50);
    // Unspent leases may refuse a little early, not much.
    expect(allowed).toBeGreaterThanOrEqual(40);
    expect(await shared(key)).toBeLessThanOrEqual(50);
  });

  it('refuses a full window without asking Redis again', async () => {
    const { rule, calls } = replica(3);
    const key = randomUUID();
    for (let i = 0; i < 3; i++) await rule.take(key);
    const before = calls.consume;
    // The first refusal learns the window is full; the ones after it ask nothing.
    expect((await rule.take(key)).allowed).toBe(false);
    const learned = calls.consume;
    for (let i = 0; i < 5; i++) expect((await rule.take(key)).allowed).toBe(false);
    expect(learned - before).toBeLessThanOrEqual(1);
    expect(calls.consume).toBe(learned);
    expect(await shared(key)).toBe(3);
  });

  it('hands back the leased points that did not fit under the limit', async () => {
    const a = replica(20);
    const b = replica(20);
    const key = randomUUID();
    await a.rule.take(key); // leases 1
    await a.rule.take(key); // leases a quarter of what is left
    // b uses up what a did not lease.
    let byB = 0;
    while ((await b.rule.take(key)).allowed) byB++;
    expect(await shared(key)).toBe(20);
    // a spends its lease, then is refused: the window is full.
    let byA = 2;
    while ((await a.rule.take(key)).allowed) byA++;
    expect(byA + byB).toBe(20);
    expect(await shared(key)).toBe(20);
  });

  it('gives a point back to its lease when another rule refused the request', async () => {
    const { rule } = replica(5);
    const key = randomUUID();
    await rule.take(key);
    const before = await rule.take(key);
    rule.giveBack(key);
    expect((await rule.take(key)).remaining).toBe(before.remaining);
  });

  it('tells how long a full window stays full, from its lease or the shared count', async () => {
    const { rule } = replica(2);
    const key = randomUUID();
    expect(await rule.fullFor(key)).toBe(0);
    await rule.take(key);
    expect(await rule.fullFor(key)).toBe(0);
    await rule.take(key);
    expect(await rule.fullFor(key)).toBeGreaterThan(55_000);
    // Another replica, which never took a point of this window, reads the shared count.
    expect(await replica(2).rule.fullFor(key)).toBeGreaterThan(55_000);
  });

  it('opens a new window once the old one has closed', async () => {
    const { rule } = replica(2, 1);
    const key = randomUUID();
    await rule.take(key);
    await rule.take(key);
    expect((await rule.take(key)).allowed).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await rule.take(key)).toMatchObject({ allowed: true, remaining: 1 });
  });
});
