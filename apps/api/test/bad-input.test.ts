// Bad input of every kind, to every documented route: whatever the values, the answer is the
// Zulip envelope with a status below 500. The routes and their parameters come from the API's
// own OpenAPI description (GET /api/v1/openapi.json), so a new route is covered the day it is
// declared. Each route gets an organization of its own: some requests succeed (a DELETE of
// one's own account, say) and must not change what the next route sees.
import request from 'supertest';
import { createApp } from '../src/app';
import { Role } from '@parley/db';
import { eventsRouter, startEventsService, type EventsService } from '@parley/events-app';
import { as, createTestRealm, createTestUser, expectSuccess } from './helpers';

interface Operation {
  parameters?: { name: string; in: string }[];
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> };
}

/** Values no parameter should fail on: wrong types, out-of-range numbers, malformed JSON,
 * empty and oversized text. */
const BAD_VALUES = [
  '',
  'x',
  '-1',
  '2147483648',
  '1e400',
  '99999999999999999999999',
  'null',
  'true',
  '[]',
  '{}',
  '[{"a":[[[[[]]]]]}]',
  '{"new":{"direct_members":"x"}}',
  '"\\ud800"',
  '[1,"two",null]',
  // Shaped like a narrow, with operands no id can be.
  '[{"operator":"sender","operand":1.5}]',
  '[{"operator":"dm-including","operand":-3000000000}]',
  'x'.repeat(70_000),
];

/** Values sent to one parameter at a time, the others left out: the parameter's checks run
 * when no required parameter is declared before it (parameters are checked in order and the
 * first missing one is the answer). Deeper checks have tests of their own. */
const ONE_AT_A_TIME = ['-1', '2147483648', 'null', '[2147483648]', '{"new":2147483648}', '"x"'];

/** Path segments to put where an id or a name is expected. */
const BAD_SEGMENTS = [
  '0',
  '-1',
  '2147483648',
  '99999999999999999999',
  'abc',
  '%E2%82',
  'x'.repeat(300),
];

// Routes whose bodies are files or streams: their parsers are tested on their own.
const SKIPPED = [/\/tus/, /\/user_uploads$/, /\/realm\/emoji\/\{[^}]+\}$/, /\/users\/me\/avatar/];

describe('bad input to every documented route', () => {
  let doc: { paths: Record<string, Record<string, Operation>> };
  beforeAll(async () => {
    doc = (await request(createApp()).get('/api/v1/openapi.json')).body as typeof doc;
  });

  it('never answers 5xx, always with the envelope', async () => {
    const failures: string[] = [];
    let sent = 0;
    let succeeded = 0;
    let unauthorized = 0;
    const check = (res: request.Response, label: string) => {
      sent += 1;
      if (res.status < 300) succeeded += 1;
      if (res.status === 401) unauthorized += 1;
      if (res.status >= 500) failures.push(`${label}: ${res.status} ${JSON.stringify(res.body)}`);
      else if (typeof res.body?.result !== 'string' || typeof res.body?.msg !== 'string')
        failures.push(`${label}: no envelope (${res.status})`);
    };
    const routes = Object.entries(doc.paths).filter(([path]) => !SKIPPED.some((r) => r.test(path)));
    expect(routes.length).toBeGreaterThan(100);
    for (const [pattern, methods] of routes) {
      const org = await createTestRealm();
      // The owner reaches every check; a guest meets the access checks first.
      const guest = await createTestUser(org.realm, Role.GUEST);
      for (const caller of [org.owner, guest])
        for (const [method, operation] of Object.entries(methods))
          await probe(as(caller, org.host), method, pattern, operation, org.owner.id, check);
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(10_000);
    // Some requests get through whole (lenient parameters, lists, settings), and the callers
    // are real: refused credentials would make the run vacuous. (A few routes refuse the
    // caller's later requests on purpose: DELETE /users/me, a regenerated API key.)
    expect(succeeded).toBeGreaterThan(100);
    expect(unauthorized / sent).toBeLessThan(0.02);
  }, 600_000);
});

describe('bad input to the events tier (GET and DELETE /events)', () => {
  let events: EventsService;
  let app: ReturnType<typeof createApp>;
  beforeAll(async () => {
    events = await startEventsService({ heartbeatSeconds: 1, heartbeatJitterSeconds: 0 });
    app = createApp({ mount: [eventsRouter(events)] });
  });
  afterAll(async () => {
    await events.stop();
  });

  it('never answers 5xx, whatever the queue id and parameters', async () => {
    const org = await createTestRealm();
    const queue = expectSuccess(
      await as(org.owner, org.host).post('/register', { event_types: ['message'] }),
    ).queue_id as string;
    const failures: string[] = [];
    // Every GET first: a DELETE of the live queue ends its part of the run.
    const parsedOnLiveQueue = new Set<number>();
    for (const method of ['get', 'delete'] as const)
      for (const queueId of ['', 'x', queue, `${queue}x`, '1:2', 'x'.repeat(5_000), '\u0000'])
        for (const value of BAD_VALUES.filter((v) => v.length < 8_000)) {
          const form = {
            queue_id: queueId,
            last_event_id: value,
            dont_block: method === 'get' && queueId === queue ? 'true' : value,
          };
          const agent = request(app);
          const call = (
            method === 'get' ? agent.get('/api/v1/events') : agent.delete('/api/v1/events')
          )
            .set('Host', org.host)
            .auth(org.owner.deliveryEmail, org.owner.apiKey);
          const res =
            method === 'get' ? await call.query(form) : await call.type('form').send(form);
          if (res.status >= 500 || typeof res.body?.result !== 'string')
            failures.push(`${method} ${queueId.slice(0, 20)} ${value.slice(0, 20)}: ${res.status}`);
          if (method === 'get' && queueId === queue && res.body?.code !== 'BAD_REQUEST')
            parsedOnLiveQueue.add(res.status);
        }
    expect(failures).toEqual([]);
    // Some requests got past the parameters to the live queue (its events, or its own errors).
    expect(parsedOnLiveQueue.size).toBeGreaterThan(0);
  }, 120_000);
});

/** Every bad value to every parameter of one route and method at once, on bad path segments,
 * then each parameter alone on a path whose ids are the owner's user id (`existingId`: a real
 * id for user routes, an unknown one for the others). */
async function probe(
  client: ReturnType<typeof as>,
  method: string,
  pattern: string,
  operation: Operation,
  existingId: number,
  check: (res: request.Response, label: string) => void,
): Promise<void> {
  const send = (path: string, form: Record<string, string>) =>
    method === 'get'
      ? client.get(path, form)
      : client[method as 'post' | 'patch' | 'put' | 'delete'](path, form);
  const withSegment = (segment: string) =>
    pattern.replace(/^\/api\/v1/, '').replace(/\{[^}]+\}/g, segment);
  const names = new Set<string>();
  for (const parameter of operation.parameters ?? [])
    if (parameter.in !== 'path') names.add(parameter.name);
  for (const content of Object.values(operation.requestBody?.content ?? {}))
    for (const name of Object.keys(content.schema?.properties ?? {})) names.add(name);
  for (const [index, value] of BAD_VALUES.entries()) {
    // A query string past Node's 16 KiB header limit never reaches the app: the server's
    // clientError handler answers it (packages/http/src/client-errors.ts).
    if (method === 'get' && value.length > 8_000) continue;
    const path = withSegment(BAD_SEGMENTS[index % BAD_SEGMENTS.length]!);
    const form = Object.fromEntries([...names].map((name) => [name, value]));
    check(await send(path, form), `${method} ${path.slice(0, 80)} ${value.slice(0, 40)}`);
  }
  const path = withSegment(String(existingId));
  for (const name of names)
    for (const value of ONE_AT_A_TIME)
      check(await send(path, { [name]: value }), `${method} ${path} ${name}=${value}`);
}
