// Zulip's rate limits (its DEFAULT_RATE_LIMITING_RULES, overridable by RATE_LIMITING_RULES):
// authenticated requests per user, unauthenticated ones per IP, failed password logins per
// username. Counted in Redis by rate-limiter-flexible, so every replica of a tier shares one
// count. Fixed windows: a window opens with the first request it counts.
//
// While Redis is down a replica counts in its own memory instead (the library's insurance
// limiter): requests that do not otherwise need Redis keep working, still limited.
//
// A replica leases points from the shared count ahead of use (rate-limit-lease.ts), so most
// requests cost no Redis round trip for their count.
//
// Long-polls are counted in each events replica's memory, as Zulip's Tornado counts them in its
// own process (RATE_LIMITING_DOMAINS_FOR_TORNADO): a poll then costs no Redis round trip for
// its count, and a client spreading polls over N replicas gets at most N times its budget.
import type { Request, Response } from 'express';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { getConfig, type Config, type RateLimitDomain } from '@parley/config';
import { RateLimitedError } from '@parley/errors';
import { getRedis, rateLimitKeys } from '@parley/events';
import { counter } from '@parley/metrics';
import { LeasedRule, type Taken } from './rate-limit-lease';

const rateLimitHits = counter(
  'parley_rate_limit_hits_total',
  'Requests refused with RATE_LIMIT_HIT, by limit domain',
  ['domain'],
);

/** Each domain's rules, shortest window first; a request must pass all of them. The events
 * tier's own count of api_by_user is `events_by_user`, in memory. */
type Limiters = Record<RateLimitDomain | 'events_by_user', { seconds: number; rule: LeasedRule }[]>;

let built: { config: Config; redis: ReturnType<typeof getRedis>; limiters: Limiters } | undefined;

function limiters(): Limiters {
  const config = getConfig();
  const redis = getRedis();
  if (built?.config === config && built.redis === redis) return built.limiters;
  const limitersByDomain = Object.fromEntries(
    Object.entries(config.RATE_LIMITING_RULES).map(([domain, rules]) => [
      domain,
      rules.map(([seconds, points]) => ({
        seconds,
        rule: new LeasedRule(
          new RateLimiterRedis({
            storeClient: redis,
            keyPrefix: rateLimitKeys.prefix(domain, seconds),
            points,
            duration: seconds,
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory({ points, duration: seconds }),
          }),
          points,
        ),
      })),
    ]),
  ) as Limiters;
  limitersByDomain.events_by_user = config.RATE_LIMITING_RULES.api_by_user.map(
    ([seconds, points]) => ({
      seconds,
      rule: new LeasedRule(new RateLimiterMemory({ points, duration: seconds }), points),
    }),
  );
  built = { config, redis, limiters: limitersByDomain };
  return limitersByDomain;
}

/** What Zulip's X-RateLimit-* headers report for the rules a request passed. */
interface RateLimitState {
  /** The request allowance of the longest window. */
  limit: number;
  remaining: number;
  /** Seconds until every window that counted this request has closed. */
  secondsToFreedom: number;
}

/** Counts one request for `key` under every rule of `domain`; throws RateLimitedError when a
 * rule is exceeded, and then counts nothing (as Zulip, which records only allowed requests:
 * retrying against a short window must not use up a long one). */
async function consume(
  domain: RateLimitDomain | 'events_by_user',
  key: string,
  res: Response,
): Promise<void> {
  const rules = limiters()[domain];
  if (rules.length === 0) return;
  // Shortest window first, stopping at a refusal: a longer window is not spent for a request
  // a shorter one refuses, and the points already taken go back to their leases.
  const taken: Taken[] = [];
  for (const { rule } of rules) {
    const result = await rule.take(key);
    if (!result.allowed) {
      for (let i = 0; i < taken.length; i++) rules[i]!.rule.giveBack(key);
      // Retry after every full window has closed, not only this one.
      const others = await Promise.all(
        rules.slice(taken.length + 1).map(({ rule: later }) => later.fullFor(key)),
      );
      const seconds = Math.max(result.msBeforeNext, ...others) / 1000;
      setHeaders(res, {
        limit: rules[rules.length - 1]!.rule.points,
        remaining: 0,
        secondsToFreedom: seconds,
      });
      rateLimitHits.inc({ domain });
      throw new RateLimitedError(seconds);
    }
    taken.push(result);
  }
  setHeaders(res, {
    limit: rules[rules.length - 1]!.rule.points,
    remaining: Math.min(...taken.map((result) => result.remaining)),
    secondsToFreedom: Math.max(...taken.map((result) => result.msBeforeNext)) / 1000,
  });
}

function exempt(req: Request, config: Config): boolean {
  if (!config.RATE_LIMITING) return true;
  return config.RATE_LIMITING_EXEMPT_LOCALHOST && isLocalAddress(req.ip);
}

function isLocalAddress(ip: string | undefined): boolean {
  return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';
}

function setHeaders(res: Response, state: RateLimitState): void {
  res.set({
    'X-RateLimit-Limit': String(state.limit),
    'X-RateLimit-Remaining': String(state.remaining),
    'X-RateLimit-Reset': String(Math.floor(Date.now() / 1000 + state.secondsToFreedom)),
  });
}

/** Zulip's api_by_user. `scope` separates the tiers' budgets: as in Zulip, where Tornado
 * counts its own long-polls (in memory), polling for events does not use up the budget for API
 * calls. */
export async function rateLimitUser(
  req: Request,
  res: Response,
  userId: number,
  scope: 'api' | 'events',
): Promise<void> {
  const config = getConfig();
  if (exempt(req, config)) return;
  if (scope === 'events') await consume('events_by_user', String(userId), res);
  else await consume('api_by_user', `api:${userId}`, res);
}

/** Zulip's api_by_ip, for requests made without credentials. */
export async function rateLimitIp(req: Request, res: Response): Promise<void> {
  const config = getConfig();
  if (exempt(req, config)) return;
  await consume('api_by_ip', req.ip ?? 'unknown', res);
}

/** Zulip's authenticate_by_username: only failures count, and localhost is never exempt
 * (a guessed password is as bad from anywhere). */
export async function checkLoginRateLimit(realmId: number, username: string): Promise<void> {
  if (!getConfig().RATE_LIMITING) return;
  const key = loginKey(realmId, username);
  // Failed logins are few and must be exact: counted in Redis directly, without leases.
  for (const { rule } of limiters().authenticate_by_username) {
    const res = await rule.limiter.get(key);
    if (res && res.consumedPoints >= rule.points) {
      rateLimitHits.inc({ domain: 'authenticate_by_username' });
      throw new RateLimitedError(res.msBeforeNext / 1000);
    }
  }
}

export async function recordFailedLogin(realmId: number, username: string): Promise<void> {
  if (!getConfig().RATE_LIMITING) return;
  const key = loginKey(realmId, username);
  await Promise.all(
    limiters().authenticate_by_username.map(({ rule }) =>
      rule.limiter.consume(key).catch((rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
      }),
    ),
  );
}

/** Zulip's RateLimitedRealmMirror (its RATE_LIMITING_MIRROR_REALM_RULES): mail posted to an
 * organization's channels by the email gateway. A mail counts when it arrives, before its
 * content is read (as Zulip counts at the mail's RCPT). */
export function rateLimitEmailMirror(realmId: number): Promise<void> {
  return consumeExactly('email_mirror_by_realm', String(realmId));
}

/** Zulip's email_change_by_user: confirmation mails a user has asked to be sent to a new
 * address. Never exempt (Zulip's RateLimitedUser here skips the localhost exemption). */
export function rateLimitEmailChange(userId: number): Promise<void> {
  return consumeExactly('email_change_by_user', String(userId));
}

/** Counted in Redis directly, like failed logins, for rare actions whose count must be exact
 * across replicas and processes (a lease's unspent points would leave with a short-lived
 * process): one the limit refuses does not count (two at the same moment may both pass the
 * last point). */
async function consumeExactly(domain: RateLimitDomain, key: string): Promise<void> {
  if (!getConfig().RATE_LIMITING) return;
  const rules = limiters()[domain];
  for (const { rule } of rules) {
    const res = await rule.limiter.get(key);
    if (res && res.consumedPoints >= rule.points) {
      rateLimitHits.inc({ domain });
      throw new RateLimitedError(res.msBeforeNext / 1000);
    }
  }
  await Promise.all(
    rules.map(({ rule }) =>
      rule.limiter.consume(key).catch((rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
      }),
    ),
  );
}

/** Forgets a user's failed logins (tests, and an operator unlocking an account). */
export async function clearFailedLogins(realmId: number, username: string): Promise<void> {
  const key = loginKey(realmId, username);
  await Promise.all(
    limiters().authenticate_by_username.map(({ rule }) => rule.limiter.delete(key)),
  );
}

const loginKey = (realmId: number, username: string) => `${realmId}:${username.toLowerCase()}`;
