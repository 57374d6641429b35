// Zulip's rate limits: api_by_user for authenticated requests (each tier its own budget),
// api_by_ip for unauthenticated ones, the X-RateLimit-* headers, 429 RATE_LIMIT_HIT, the
// switches, and counting in memory while Redis is down.
import request from 'supertest';
import { getConfig, resetConfig } from '@parley/config';
import { disconnectRedis, getRedis, rateLimitKeys } from '@parley/events';
import { eventsRouter, startEventsService, type EventsService } from '@parley/events-app';
import { createApp } from '../src/app';
import {
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const saved = { ...process.env };
let service: EventsService | undefined;
let org: TestRealm;

/** An app built with these settings; it trusts X-Forwarded-For so a test can pick its IP. */
function appWith(env: Record<string, string>) {
  Object.assign(process.env, { TRUST_PROXY: 'true', ...env });
  resetConfig();
  return createApp({ mount: service ? [eventsRouter(service)] : [] });
}

/** An address no earlier run used (the counters outlive a run for a minute). */
const someIp = () =>
  `10.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 254) + 1}`;

const RULES = JSON.stringify({ api_by_user: [[60, 5]], api_by_ip: [[60, 3]] });

beforeAll(async () => {
  org = await createTestRealm();
});

afterEach(() => {
  process.env = { ...saved };
  resetConfig();
});

describe('api_by_user', () => {
  // Only these tests poll; the events service must not outlive them (the last test swaps
  // the Redis connection).
  beforeAll(async () => {
    service = await startEventsService({ leaseMs: 1000, gcIntervalMs: 60_000 });
  });
  afterAll(async () => {
    await service!.stop();
    service = undefined;
  });

  it('allows the rule’s requests with X-RateLimit-* headers, then answers 429', async () => {
    const app = appWith({ RATE_LIMITING_EXEMPT_LOCALHOST: 'false', RATE_LIMITING_RULES: RULES });
    const user = await createTestUser(org.realm);
    const get = () =>
      request(app)
        .get('/api/v1/users/me')
        .set('Host', org.host)
        .auth(user.deliveryEmail, user.apiKey);
    const before = Math.floor(Date.now() / 1000);
    for (let remaining = 4; remaining >= 0; remaining--) {
      const res = await get();
      expectSuccess(res);
      expect(res.headers['x-ratelimit-limit']).toBe('5');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining));
      const reset = Number(res.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(before + 58);
      expect(reset).toBeLessThanOrEqual(before + 61);
    }
    const limited = await get();
    expectError(limited, 'API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT');
    expect(limited.body['retry-after']).toBeGreaterThan(50);
    expect(limited.body['retry-after']).toBeLessThanOrEqual(60);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(50);

    // Another user has a budget of their own.
    const other = await createTestUser(org.realm);
    expectSuccess(
      await request(app)
        .get('/api/v1/users/me')
        .set('Host', org.host)
        .auth(other.deliveryEmail, other.apiKey),
    );
    // The events tier counts its requests apart, as Zulip's Tornado does: long-polls do not
    // use up the API budget, nor the reverse.
    const poll = await request(app)
      .get('/api/v1/events')
      .query({ queue_id: 'no-such-queue', last_event_id: -1 })
      .set('Host', org.host)
      .auth(user.deliveryEmail, user.apiKey);
    expectError(poll, 'Bad event queue ID: no-such-queue', 400, 'BAD_EVENT_QUEUE_ID');
    expect(poll.headers['x-ratelimit-remaining']).toBe('4');
  });

  it('answers a request that fails authentication without counting it', async () => {
    const app = appWith({ RATE_LIMITING_EXEMPT_LOCALHOST: 'false', RATE_LIMITING_RULES: RULES });
    const user = await createTestUser(org.realm);
    for (let i = 0; i < 6; i++) {
      const res = await request(app)
        .get('/api/v1/users/me')
        .set('Host', org.host)
        .auth(user.deliveryEmail, 'x'.repeat(32));
      expect(res.status).toBe(401);
    }
    const res = await request(app)
      .get('/api/v1/users/me')
      .set('Host', org.host)
      .auth(user.deliveryEmail, user.apiKey);
    expectSuccess(res);
    expect(res.headers['x-ratelimit-remaining']).toBe('4');
  });
});

describe('api_by_ip', () => {
  it('limits unauthenticated endpoints per client address', async () => {
    const app = appWith({ RATE_LIMITING_EXEMPT_LOCALHOST: 'false', RATE_LIMITING_RULES: RULES });
    const from = (ip: string, path: string) =>
      request(app).get(`/api/v1${path}`).set('Host', org.host).set('X-Forwarded-For', ip);
    const ip = someIp();
    for (let remaining = 2; remaining >= 0; remaining--) {
      const res = await from(ip, '/server_settings');
      expectSuccess(res);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining));
    }
    expectError(
      await from(ip, '/server_settings'),
      'API usage exceeded rate limit',
      429,
      'RATE_LIMIT_HIT',
    );
    // Logging in from there counts against the same address.
    const login = await request(app)
      .post('/api/v1/fetch_api_key')
      .set('Host', org.host)
      .set('X-Forwarded-For', ip)
      .type('form')
      .send({ username: org.owner.deliveryEmail, password: 'whatever' });
    expectError(login, 'API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT');
    // Another address is not affected.
    expectSuccess(await from(someIp(), '/server_settings'));
  });
});

describe('several rules in one domain', () => {
  it('counts only allowed requests, and a refusal carries the X-RateLimit headers', async () => {
    const app = appWith({
      RATE_LIMITING_EXEMPT_LOCALHOST: 'false',
      RATE_LIMITING_RULES: JSON.stringify({
        api_by_ip: [
          [60, 3],
          [3600, 10],
        ],
      }),
    });
    const ip = someIp();
    const get = () =>
      request(app).get('/api/v1/server_settings').set('Host', org.host).set('X-Forwarded-For', ip);
    for (let i = 0; i < 3; i++) {
      const res = await get();
      expectSuccess(res);
      // The longest window's allowance is the limit Zulip reports.
      expect(res.headers['x-ratelimit-limit']).toBe('10');
    }
    for (let i = 0; i < 5; i++) {
      const refused = await get();
      expectError(refused, 'API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT');
      expect(refused.headers['x-ratelimit-remaining']).toBe('0');
      expect(Number(refused.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
    }
    // The refused requests did not use up the hour.
    expect(await getRedis().get(`${rateLimitKeys.prefix('api_by_ip', 3600)}:${ip}`)).toBe('3');
  });
});

describe('retry-after with several full windows', () => {
  it('covers the longest full window, also when a shorter one refused first', async () => {
    const app = appWith({
      RATE_LIMITING_EXEMPT_LOCALHOST: 'false',
      RATE_LIMITING_RULES: JSON.stringify({
        api_by_ip: [
          [1, 1],
          [3600, 2],
        ],
      }),
    });
    const ip = someIp();
    const get = () =>
      request(app).get('/api/v1/server_settings').set('Host', org.host).set('X-Forwarded-For', ip);
    expectSuccess(await get());
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The second request fills both the new second and the hour.
    expectSuccess(await get());
    // The second refuses first; the hour is full too, and is what the client must wait for.
    const refused = await get();
    expectError(refused, 'API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT');
    expect(refused.body['retry-after']).toBeGreaterThan(3500);
  });
});

describe('switches', () => {
  it('exempts localhost only when RATE_LIMITING_EXEMPT_LOCALHOST is set', async () => {
    const app = appWith({ RATE_LIMITING_EXEMPT_LOCALHOST: 'true', RATE_LIMITING_RULES: RULES });
    for (let i = 0; i < 5; i++) {
      const res = await request(app)
        .get('/api/v1/server_settings')
        .set('Host', org.host)
        .set('X-Forwarded-For', '127.0.0.1');
      expectSuccess(res);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
    const remote = await request(app)
      .get('/api/v1/server_settings')
      .set('Host', org.host)
      .set('X-Forwarded-For', someIp());
    expect(remote.headers['x-ratelimit-limit']).toBe('3');
  });

  it('is on by default, and RATE_LIMITING=false turns every limit off', async () => {
    delete process.env.RATE_LIMITING_EXEMPT_LOCALHOST;
    resetConfig();
    expect(getConfig().RATE_LIMITING).toBe(true);
    expect(getConfig().RATE_LIMITING_EXEMPT_LOCALHOST).toBe(false);
    expect(getConfig().RATE_LIMITING_RULES.api_by_user).toEqual([[60, 200]]);

    const app = appWith({ RATE_LIMITING: 'false', RATE_LIMITING_RULES: RULES });
    for (let i = 0; i < 5; i++) {
      const res = await request(app)
        .get('/api/v1/server_settings')
        .set('Host', org.host)
        .set('X-Forwarded-For', someIp());
      expectSuccess(res);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('while Redis is down', () => {
  it('counts in the replica’s own memory', async () => {
    await disconnectRedis();
    // Nothing listens on port 1: every connection attempt fails.
    const app = appWith({
      RATE_LIMITING_EXEMPT_LOCALHOST: 'false',
      RATE_LIMITING_RULES: RULES,
      REDIS_URL: 'redis://127.0.0.1:1/15',
    });
    try {
      const ip = someIp();
      for (let remaining = 2; remaining >= 0; remaining--) {
        const res = await request(app)
          .get('/api/v1/server_settings')
          .set('Host', org.host)
          .set('X-Forwarded-For', ip);
        expectSuccess(res);
        expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining));
      }
      const limited = await request(app)
        .get('/api/v1/server_settings')
        .set('Host', org.host)
        .set('X-Forwarded-For', ip);
      expectError(limited, 'API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT');
    } finally {
      await disconnectRedis();
    }
  });
});
