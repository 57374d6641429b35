// GET /metrics (prom-client): what docs/metrics.md promises an operator is there, with values
// from real requests through both tiers' apps.
import request from 'supertest';
import { closeQueues } from '@parley/jobs';
import { initMetrics } from '@parley/metrics';
import {
  createApp as createEventsApp,
  startEventsService,
  type EventsService,
} from '@parley/events-app';
import { createApp } from '../src/app';
import { as, createTestRealm, createTestUser, expectSuccess } from './helpers';

let service: EventsService;

beforeAll(async () => {
  initMetrics('api');
  // No heartbeat during the test: the parked poll must be answered by the event it waits for.
  service = await startEventsService({
    heartbeatSeconds: 300,
    heartbeatJitterSeconds: 0,
    leaseMs: 1000,
  });
});

afterAll(async () => {
  await service.stop();
  await closeQueues();
});

/** The value of one series in Prometheus's text format, or undefined. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('GET /metrics', () => {
  it('reports requests by route pattern and status, SQL and Redis time, outbox and job queues', async () => {
    const { realm, host } = await createTestRealm();
    const user = await createTestUser(realm);
    const app = createApp();
    expectSuccess(await as(user, host).get(`/users/${user.id}`));
    expect((await as(user, host).get('/users/2147483000')).status).toBe(400);
    const res = await request(app).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.text;
    // The route's pattern, not the user's id: one series per endpoint.
    expect(
      sample(text, 'parley_http_request_duration_seconds_count', {
        method: 'GET',
        route: '/api/v1/users/:user',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(`route="/api/v1/users/${user.id}"`);
    // An error answer keeps its route's full pattern too (express resets req.baseUrl when an
    // error leaves the router).
    expect(
      sample(text, 'parley_http_request_duration_seconds_count', {
        method: 'GET',
        route: '/api/v1/users/:user',
        status: '400',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'parley_db_query_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThan(0);
    expect(sample(text, 'parley_redis_command_duration_seconds_count')).toBeGreaterThan(0);
    expect(sample(text, 'parley_outbox_backlog_rows')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'parley_outbox_oldest_seconds')).toBeGreaterThanOrEqual(0);
    expect(
      sample(text, 'parley_job_queue_jobs', { queue: 'mail', state: 'failed' }),
    ).toBeGreaterThanOrEqual(0);
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  it('is not served through a proxy (a request with X-Forwarded-For)', async () => {
    const res = await request(createApp()).get('/metrics').set('X-Forwarded-For', '203.0.113.9');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
  });

  it('counts refused requests in parley_rate_limit_hits_total', async () => {
    const res = await request(createApp()).get('/metrics');
    // Declared from the start (no hits yet in this process is a valid zero, not an absence).
    expect(res.text).toContain('# TYPE parley_rate_limit_hits_total counter');
  });

  it('reports parked polls, shards and fan-out lag on the events tier', async () => {
    const { realm, host } = await createTestRealm();
    const user = await createTestUser(realm);
    const apiApp = createApp();
    const eventsApp = createEventsApp(service);
    const registered = expectSuccess(
      await request(apiApp)
        .post('/api/v1/register')
        .set('Host', host)
        .auth(user.deliveryEmail, user.apiKey)
        .type('form')
        .send({ event_types: '["realm_user"]' }),
    );
    const poll = request(eventsApp)
      .get('/api/v1/events')
      .set('Host', host)
      .auth(user.deliveryEmail, user.apiKey)
      .query({
        queue_id: String(registered.queue_id),
        last_event_id: String(registered.last_event_id),
      })
      .then((answer) => answer);
    // Wait until the poll is parked, then make an event for it.
    for (let i = 0; i < 100 && service.poller.parked() === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    let text = (await request(eventsApp).get('/metrics')).text;
    expect(sample(text, 'parley_events_parked_polls')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'parley_events_shards_held')).toBeGreaterThan(0);
    expect(sample(text, 'parley_events_queues')).toBeGreaterThanOrEqual(1);
    expectSuccess(
      await request(apiApp)
        .patch('/api/v1/settings')
        .set('Host', host)
        .auth(user.deliveryEmail, user.apiKey)
        .type('form')
        .send({ full_name: 'Metric Person' }),
    );
    const answer = await poll;
    expect((answer.body as { events: { type: string }[] }).events[0]?.type).toBe('realm_user');
    text = (await request(eventsApp).get('/metrics')).text;
    const lags = text
      .split('\n')
      .filter((line) => line.startsWith('parley_events_fanout_lag_seconds_count{'));
    expect(
      lags.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0),
    ).toBeGreaterThan(0);
    expect(
      sample(text, 'parley_http_request_duration_seconds_count', {
        route: '/api/v1/events',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(1);
  });
});
