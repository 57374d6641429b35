// Zulip's authenticate_by_username rule: 5 failed password logins per username per 30 minutes,
// counted in Redis so every API replica sees the same count.
import { getRedis, rateLimitKeys } from '@parley/events';
import { RateLimitedError } from '@parley/errors';

const WINDOW_MS = 30 * 60 * 1000;
const MAX_FAILURES = 5;

export async function checkLoginRateLimit(realmId: number, username: string): Promise<void> {
  const key = rateLimitKeys.failedLogins(realmId, username);
  const [count, ttl] = await Promise.all([getRedis().get(key), getRedis().pttl(key)]);
  if (Number(count ?? 0) >= MAX_FAILURES) throw new RateLimitedError(Math.max(ttl, 0) / 1000);
}

export async function recordFailedLogin(realmId: number, username: string): Promise<void> {
  const key = rateLimitKeys.failedLogins(realmId, username);
  // The window starts at the first failure (NX keeps later failures from extending it).
  await getRedis().multi().incr(key).pexpire(key, WINDOW_MS, 'NX').exec();
}
