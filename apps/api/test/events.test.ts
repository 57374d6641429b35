// Both tiers together, as the all-in-one server composes them: POST /register on the API tier,
// GET/DELETE /events on the events tier, the fan-out in between. Served as an events replica
// serves GET /events: past the router (its direct route); other suites poll through the router.
import { get as httpGet, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { getConfig } from '@parley/config';
import { waitUntil } from '@parley/devservices';
import { Role, runAction, type User } from '@parley/db';
import { defaultQueueOptions, getRedis, publishNotification, QueueStore } from '@parley/events';
import {
  directRoutes,
  eventsHandlers,
  eventsRouter,
  startEventsService,
  type EventsService,
} from '@parley/events-app';
import { createExpressServer } from '@parley/http';
import { doChangeFullName } from '../src/actions/users';
import { createApp } from '../src/app';
import {
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

let service: EventsService;
let server: Server;
/** The listening server's address, for supertest. */
let app: string;

beforeAll(async () => {
  service = await startEventsService({
    heartbeatSeconds: 1,
    heartbeatJitterSeconds: 0,
    leaseMs: 1000,
    gcIntervalMs: 200,
  });
  const handlers = eventsHandlers(service);
  server = createExpressServer(
    createApp({ mount: [eventsRouter(service, handlers)] }),
    directRoutes(handlers),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  app = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await service.stop();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

type Event = { id: number; type: string } & Record<string, unknown>;

function client(user: Pick<User, 'deliveryEmail' | 'apiKey'>, host: string) {
  const auth = <T extends request.Test>(test: T) =>
    test.set('Host', host).auth(user.deliveryEmail, user.apiKey);
  const form = (values: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(values).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    );
  return {
    register: (params: Record<string, unknown> = {}) =>
      auth(request(app).post('/api/v1/register')).type('form').send(form(params)),
    events: (params: Record<string, unknown>) =>
      auth(request(app).get('/api/v1/events')).query(form(params)),
    deleteQueue: (queueId: string) =>
      auth(request(app).delete('/api/v1/events')).query({ queue_id: queueId }),
    patch: (url: string, params: Record<string, unknown>) =>
      auth(request(app).patch(`/api/v1${url}`))
        .type('form')
        .send(form(params)),
  };
}

/** Polls like a client (acknowledging what it saw) until `done` holds for the events seen. */
async function pollUntil(
  c: ReturnType<typeof client>,
  queueId: string,
  done: (events: Event[]) => boolean,
  lastEventId = -1,
): Promise<{ events: Event[]; lastEventId: number }> {
  const seen: Event[] = [];
  const deadline = Date.now() + 15_000;
  while (!done(seen)) {
    if (Date.now() > deadline) throw new Error(`gave up waiting; saw ${JSON.stringify(seen)}`);
    const body = expectSuccess(await c.events({ queue_id: queueId, last_event_id: lastEventId }));
    for (const event of body.events as Event[]) {
      seen.push(event);
      lastEventId = event.id;
    }
  }
  return { events: seen, lastEventId };
}

const notHeartbeat = (events: Event[]) => events.filter((e) => e.type !== 'heartbeat');

describe('POST /register', () => {
  it('returns the queue, the server limits and the state of each fetched type', async () => {
    const org = await createTestRealm();
    const body = expectSuccess(await client(org.owner, org.host).register());
    // The owner's own creation may reach the new queue if the fan-out had not handled it yet;
    // it is then folded into the state, so last_event_id is -1 or that event's id.
    expect([-1, 0]).toContain(body.last_event_id);
    expect(body).toMatchObject({
      zulip_feature_level: 496,
      max_message_length: 10000,
      max_topic_length: 60,
      max_file_upload_size_mib: 25,
      realm_empty_topic_display_name: 'general chat',
      event_queue_longpoll_timeout_seconds: 90,
      realm_name: 'Test organization',
      user_id: org.owner.id,
      is_owner: true,
      realm_non_active_users: [],
    });
    expect(body.queue_id).toMatch(/^\d+:[0-9a-f-]{36}$/);
    expect((body.realm_users as { user_id: number }[]).map((u) => u.user_id)).toEqual([
      org.owner.id,
    ]);
    expect(body.user_settings).toMatchObject({ default_language: 'en', enable_sounds: true });
    expect(body.custom_profile_field_types).toMatchObject({ SHORT_TEXT: { id: 1 } });
  });

  it('returns only the sections of fetch_event_types, falling back to event_types', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    const onlySettings = expectSuccess(await c.register({ event_types: ['user_settings'] }));
    expect(onlySettings).toHaveProperty('user_settings');
    expect(onlySettings).not.toHaveProperty('realm_users');
    const fetched = expectSuccess(
      await c.register({ event_types: ['user_settings'], fetch_event_types: ['realm_user'] }),
    );
    expect(fetched).toHaveProperty('realm_users');
    expect(fetched).not.toHaveProperty('user_settings');
  });

  it('keeps settings in user_settings only: the legacy top-level copies went at feature level 439', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    for (const capabilities of [{}, { user_settings_object: true }]) {
      const state = expectSuccess(
        await c.register({
          fetch_event_types: ['user_settings', 'update_display_settings'],
          client_capabilities: capabilities,
        }),
      );
      expect(state.user_settings).toHaveProperty('enable_sounds', true);
      expect(state).not.toHaveProperty('enable_sounds');
    }
  });

  it('lets members but not guests register for all public channels', async () => {
    const org = await createTestRealm();
    const guest = await createTestUser(org.realm, Role.GUEST);
    expectError(
      await client(guest, org.host).register({ all_public_streams: true }),
      'User not authorized for this query',
    );
    expectError(
      await client(guest, org.host).events({ dont_block: true, all_public_streams: true }),
      'User not authorized for this query',
    );
    expectSuccess(await client(org.owner, org.host).register({ all_public_streams: true }));
  });

  it('rejects bad registration parameters', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    expectError(await c.register({ event_types: 'message' }), 'event_types is not valid JSON');
    expectError(await c.register({ narrow: [['channel']] }), 'Invalid narrow[0]');
    expectError(await c.register({ apply_markdown: 'yes' }), 'apply_markdown is not valid JSON');
    // Zulip's check_narrow_for_events: only what a message event alone can decide.
    for (const operator of ['dm', 'search', 'has', 'subject'])
      expectError(
        await c.register({ narrow: [[operator, 'x']] }),
        `Operator ${operator} not supported.`,
      );
    expectError(
      await c.events({ dont_block: true, narrow: [['search', 'x']] }),
      'Operator search not supported.',
    );
    expectError(
      await c.register({ narrow: [['is', 'followed']] }),
      'Operand followed not supported.',
    );
    expectSuccess(
      await c.register({
        narrow: [
          ['stream', 'x'],
          ['is', 'resolved'],
        ],
      }),
    );
  });

  it('registers through GET /events with Zulip defaults and capabilities as parameters', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    const { queue_id: queueId } = expectSuccess(
      await c.events({
        dont_block: true,
        bulk_message_deletion: true,
        empty_topic_name: true,
        client_capabilities: { archived_channels: true },
      }),
    ) as { queue_id: string };
    const meta = await new QueueStore(getRedis(), getConfig().EVENT_SHARDS).meta(queueId);
    expect(meta!.options).toMatchObject({
      client_gravatar: false,
      client_capabilities: {
        bulk_message_deletion: true,
        empty_topic_name: true,
        archived_channels: true,
      },
    });
  });

  it('takes event_types=null, as the Python client sends when no types are named', async () => {
    const org = await createTestRealm();
    const res = await client(org.owner, org.host).register({ event_types: null });
    expectSuccess(res);
    expect(res.body).toHaveProperty('realm_users');
    expect(res.body).toHaveProperty('subscriptions');
  });

  it('folds in events that raced the registration and returns the last one folded', async () => {
    const org = await createTestRealm();
    const target = await createTestUser(org.realm);
    const create = QueueStore.prototype.create;
    // Between the queue's creation and the state read, someone renames a user and the
    // fan-out delivers the event to the new queue.
    const spy = jest.spyOn(QueueStore.prototype, 'create').mockImplementation(async function (
      this: QueueStore,
      ...args
    ) {
      const queueId = await create.apply(this, args);
      await runAction((ctx) => doChangeFullName(ctx, target, 'Raced Name', org.owner.id));
      const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
      const meta = (await store.meta(queueId))!;
      const deadline = Date.now() + 10_000;
      while ((await store.events(meta)).length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      return queueId;
    });
    let body: Record<string, unknown>;
    try {
      body = expectSuccess(
        await client(org.owner, org.host).register({ event_types: ['realm_user'] }),
      );
    } finally {
      spy.mockRestore();
    }
    // Everything queued before the state was read is folded in: the rename, and any earlier
    // notification the fan-out had not reached when the queue was created.
    const queued = await new QueueStore(getRedis(), getConfig().EVENT_SHARDS).events(
      (await new QueueStore(getRedis(), getConfig().EVENT_SHARDS).meta(body.queue_id as string))!,
    );
    expect(queued.length).toBeGreaterThan(0);
    expect(body.last_event_id).toBe(queued[queued.length - 1]!.id);
    expect(
      queued.some(
        (e) =>
          e.type === 'realm_user' &&
          (e.person as { full_name?: string }).full_name === 'Raced Name',
      ),
    ).toBe(true);
    const person = (body.realm_users as { user_id: number; full_name: string }[]).find(
      (u) => u.user_id === target.id,
    );
    expect(person!.full_name).toBe('Raced Name');
    // The folded event is not delivered again.
    const next = expectSuccess(
      await client(org.owner, org.host).events({
        queue_id: body.queue_id,
        last_event_id: body.last_event_id,
        dont_block: true,
      }),
    );
    expect(next.events).toEqual([]);
  });
});

describe('GET /events', () => {
  it('is served past the router, as an events replica serves it', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    const queueId = expectSuccess(await c.register()).queue_id as string;
    // Only the events tier's prelude names the replica: the API app's router does not.
    const direct = await c.events({ queue_id: queueId, last_event_id: -1, dont_block: true });
    expect(direct.headers['x-served-by']).toMatch(/^[0-9a-f]{8}$/);
    expect(expectSuccess(direct)).toEqual({
      result: 'success',
      msg: '',
      events: [],
      queue_id: queueId,
    });
    const routed = await c.deleteQueue(queueId);
    expect(routed.headers['x-served-by']).toBeUndefined();
    expectSuccess(routed);
  });

  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
  });

  it('delivers a change to a parked long-poll', async () => {
    const member = await createTestUser(org.realm);
    const c = client(member, org.host);
    const queueId = expectSuccess(await c.register({ event_types: ['realm_user'] }))
      .queue_id as string;
    const parked = c.events({ queue_id: queueId, last_event_id: -1 });
    const poll = new Promise<request.Response>((resolve, reject) => parked.then(resolve, reject));
    await new Promise((r) => setTimeout(r, 100));
    expectSuccess(
      await client(org.owner, org.host).patch(`/users/${member.id}`, { full_name: 'Woken Up' }),
    );
    const body = expectSuccess(await poll);
    expect(body.queue_id).toBe(queueId);
    const events = notHeartbeat(body.events as Event[]);
    expect(events).toEqual([
      {
        id: 0,
        type: 'realm_user',
        op: 'update',
        person: { user_id: member.id, full_name: 'Woken Up' },
      },
    ]);
  });

  it('answers at once with dont_block, and with an empty list when nothing happened', async () => {
    const c = client(org.owner, org.host);
    const queueId = expectSuccess(await c.register()).queue_id;
    const body = expectSuccess(
      await c.events({ queue_id: queueId, last_event_id: -1, dont_block: true }),
    );
    expect(body).toMatchObject({ events: [], queue_id: queueId });
  });

  it('sends a heartbeat, with its own id, when nothing happens', async () => {
    const c = client(org.owner, org.host);
    const queueId = expectSuccess(await c.register()).queue_id as string;
    const body = expectSuccess(await c.events({ queue_id: queueId, last_event_id: -1 }));
    expect(body.events).toEqual([{ id: 0, type: 'heartbeat' }]);
    const acknowledged = expectSuccess(
      await c.events({ queue_id: queueId, last_event_id: 0, dont_block: true }),
    );
    expect(acknowledged.events).toEqual([]);
  });

  it('keeps unacknowledged events, drops acknowledged ones, and refuses ids it never had', async () => {
    const member = await createTestUser(org.realm);
    const c = client(member, org.host);
    const queueId = expectSuccess(await c.register({ event_types: ['user_settings'] }))
      .queue_id as string;
    for (const value of [true, false, true])
      expectSuccess(await c.patch('/settings', { enable_sounds: !value }));
    // Waited for without acknowledging anything: pollUntil acknowledges what each poll saw, so
    // events fanned out in two batches left the first pruned before the checks below.
    let events: Event[] = [];
    await waitUntil(
      async () => {
        const body = expectSuccess(
          await c.events({ queue_id: queueId, last_event_id: -1, dont_block: true }),
        );
        events = body.events as Event[];
        return notHeartbeat(events).length >= 3;
      },
      15_000,
      'the three settings events in the queue',
    );
    const ids = notHeartbeat(events).map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // Not acknowledged yet: asking again from -1 returns them again.
    const again = expectSuccess(
      await c.events({ queue_id: queueId, last_event_id: -1, dont_block: true }),
    );
    expect((again.events as Event[]).map((e) => e.id)).toEqual(events.map((e) => e.id));
    // Acknowledge the first; the rest remain.
    const rest = expectSuccess(
      await c.events({ queue_id: queueId, last_event_id: events[0]!.id, dont_block: true }),
    );
    expect((rest.events as Event[]).map((e) => e.id)).toEqual(events.slice(1).map((e) => e.id));
    expectError(
      await c.events({ queue_id: queueId, last_event_id: -1, dont_block: true }),
      `An event newer than -1 has already been pruned!`,
    );
    expectError(
      await c.events({ queue_id: queueId, last_event_id: 999, dont_block: true }),
      'Event 999 was not in this queue',
    );
  });

  it('answers unknown, malformed and other users’ queues with BAD_EVENT_QUEUE_ID', async () => {
    const member = await createTestUser(org.realm);
    const ownersQueue = expectSuccess(await client(org.owner, org.host).register())
      .queue_id as string;
    for (const queueId of [
      'nonsense',
      '3:00000000-0000-0000-0000-000000000000',
      '99999:00000000-0000-0000-0000-000000000000',
      ownersQueue,
    ]) {
      const res = await client(member, org.host).events({
        queue_id: queueId,
        last_event_id: -1,
        dont_block: true,
      });
      expectError(res, `Bad event queue ID: ${queueId}`, 400, 'BAD_EVENT_QUEUE_ID');
      expect(res.body.queue_id).toBe(queueId);
    }
  });

  it('requires queue_id unless registering with dont_block, and last_event_id with a queue', async () => {
    const c = client(org.owner, org.host);
    expectError(await c.events({}), "Missing 'queue_id' argument");
    const registered = expectSuccess(
      await c.events({ dont_block: true, event_types: ['user_settings'] }),
    );
    expect(registered.events).toEqual([]);
    expect(registered.queue_id).toMatch(/^\d+:/);
    expectError(
      await c.events({ queue_id: registered.queue_id }),
      "Missing 'last_event_id' argument",
    );
    expectError(
      await c.events({ queue_id: registered.queue_id, last_event_id: 'x' }),
      'last_event_id is not an integer',
    );
    // Before the queue is looked up, as Zulip's fetch_events checks.
    expectError(await c.events({ queue_id: '1:nope' }), "Missing 'last_event_id' argument");
  });

  it('forgets a poll whose client went away, and keeps its events for the next poll', async () => {
    const member = await createTestUser(org.realm);
    const c = client(member, org.host);
    const queueId = expectSuccess(await c.register({ event_types: ['user_settings'] }))
      .queue_id as string;
    // A raw request, so the client really goes away.
    const { port } = server.address() as AddressInfo;
    const abandoned = httpGet({
      host: '127.0.0.1',
      port,
      path: `/api/v1/events?queue_id=${encodeURIComponent(queueId)}&last_event_id=-1`,
      headers: { Host: org.host },
      auth: `${member.deliveryEmail}:${member.apiKey}`,
    });
    abandoned.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 150));
    expect(service.poller.parked()).toBe(1);
    abandoned.destroy();
    await new Promise((r) => setTimeout(r, 150));
    expect(service.poller.parked()).toBe(0);
    expectSuccess(await c.patch('/settings', { enable_sounds: false }));
    const { events } = await pollUntil(c, queueId, (seen) => notHeartbeat(seen).length >= 1);
    expect(notHeartbeat(events)).toEqual([
      expect.objectContaining({ type: 'user_settings', property: 'enable_sounds' }),
    ]);
  });

  it('lets a newer poll finish the older one', async () => {
    const c = client(org.owner, org.host);
    const queueId = expectSuccess(await c.register()).queue_id as string;
    const started = Date.now();
    const first = c.events({ queue_id: queueId, last_event_id: -1 }).then((res) => res);
    await new Promise((r) => setTimeout(r, 150));
    const second = c.events({ queue_id: queueId, last_event_id: -1 }).then((res) => res);
    const firstBody = expectSuccess(await first);
    expect(firstBody.events).toEqual([]);
    expect(Date.now() - started).toBeLessThan(900); // finished by the newer poll, not its heartbeat
    expect(expectSuccess(await second).events).toEqual([{ id: 0, type: 'heartbeat' }]);
  });

  it('expires queues that nobody polls for their lifespan', async () => {
    const c = client(org.owner, org.host);
    const queueId = expectSuccess(await c.register({ queue_lifespan_secs: 1 })).queue_id as string;
    const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
    const deadline = Date.now() + 10_000;
    while ((await store.meta(queueId)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expectError(
      await c.events({ queue_id: queueId, last_event_id: -1, dont_block: true }),
      `Bad event queue ID: ${queueId}`,
      400,
      'BAD_EVENT_QUEUE_ID',
    );
  });

  it('takes idle_queue_timeout, "mobile" or seconds, and says the lifespan it gave', async () => {
    const c = client(org.owner, org.host);
    const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
    const lifespanOf = async (form: Record<string, unknown>) => {
      const body = expectSuccess(await c.register({ fetch_event_types: [], ...form }));
      const meta = await store.meta(body.queue_id as string);
      expect(meta?.options.lifespan_secs).toBe(body.idle_queue_timeout_secs);
      return body.idle_queue_timeout_secs;
    };
    expect(await lifespanOf({})).toBe(600);
    // zulip-flutter sends the JSON string; twelve hours.
    expect(await lifespanOf({ idle_queue_timeout: '"mobile"' })).toBe(43_200);
    expect(await lifespanOf({ idle_queue_timeout: 3600 })).toBe(3600);
    // Capped at a week, as lifespan_secs; it wins over the older name.
    expect(await lifespanOf({ idle_queue_timeout: 10 ** 9 })).toBe(604_800);
    expect(await lifespanOf({ idle_queue_timeout: 90, queue_lifespan_secs: 5000 })).toBe(90);
    // Unquoted "mobile" is taken as the string, as other JSON-or-text parameters.
    expect(await lifespanOf({ idle_queue_timeout: 'mobile' })).toBe(43_200);
    for (const bad of ['desktop', '"weekly"', '1.5'])
      expectError(await c.register({ idle_queue_timeout: bad }), 'Invalid idle_queue_timeout');
    expectError(await c.register({ idle_queue_timeout: -5 }), 'idle_queue_timeout is too small');
  });
});

describe('DELETE /events', () => {
  it('deletes the caller’s queue, and only theirs', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const c = client(org.owner, org.host);
    const queueId = expectSuccess(await c.register()).queue_id as string;
    expectError(
      await client(member, org.host).deleteQueue(queueId),
      `Bad event queue ID: ${queueId}`,
      400,
      'BAD_EVENT_QUEUE_ID',
    );
    expectSuccess(await c.deleteQueue(queueId));
    expectError(
      await c.events({ queue_id: queueId, last_event_id: -1, dont_block: true }),
      `Bad event queue ID: ${queueId}`,
      400,
      'BAD_EVENT_QUEUE_ID',
    );
    expectError(
      await c.deleteQueue(queueId),
      `Bad event queue ID: ${queueId}`,
      400,
      'BAD_EVENT_QUEUE_ID',
    );
  });

  it('finishes a parked poll on the deleted queue', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    const queueId = expectSuccess(await c.register()).queue_id as string;
    const parked = c.events({ queue_id: queueId, last_event_id: -1 }).then((res) => res);
    await new Promise((r) => setTimeout(r, 100));
    expectSuccess(await c.deleteQueue(queueId));
    expect(expectSuccess(await parked).events).toEqual([]);
  });
});

describe('filters', () => {
  it('delivers only the registered event_types', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    const c = client(member, org.host);
    const settingsOnly = expectSuccess(await c.register({ event_types: ['user_settings'] }))
      .queue_id as string;
    const everything = expectSuccess(await c.register()).queue_id as string;
    expectSuccess(await c.patch('/settings', { full_name: 'Filtered', enable_sounds: false }));
    const all = await pollUntil(c, everything, (seen) => notHeartbeat(seen).length >= 2);
    expect(
      notHeartbeat(all.events)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['realm_user', 'user_settings']);
    const filtered = await pollUntil(c, settingsOnly, (seen) => notHeartbeat(seen).length >= 1);
    expect(notHeartbeat(filtered.events)).toEqual([
      expect.objectContaining({ type: 'user_settings', property: 'enable_sounds', value: false }),
    ]);
    const rest = expectSuccess(
      await c.events({
        queue_id: settingsOnly,
        last_event_id: filtered.lastEventId,
        dont_block: true,
      }),
    );
    expect(notHeartbeat(rest.events as Event[])).toEqual([]);
  });

  it('delivers message events only to queues whose narrow matches', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    const c = client(member, org.host);
    const general = expectSuccess(
      await c.register({ event_types: ['message'], narrow: [['channel', 'general']] }),
    ).queue_id as string;
    const dms = expectSuccess(
      await c.register({ event_types: ['message'], narrow: [['is', 'dm']] }),
    ).queue_id as string;
    const message = (id: number, channel: string | null) => ({
      type: 'message',
      message: channel
        ? {
            id,
            type: 'stream',
            stream_id: 1,
            display_recipient: channel,
            subject: 't',
            sender_id: org.owner.id,
            sender_email: org.owner.deliveryEmail,
          }
        : {
            id,
            type: 'private',
            display_recipient: [],
            sender_id: org.owner.id,
            sender_email: org.owner.deliveryEmail,
          },
      flags: [],
    });
    // Message notifications come with the messages issue; published here as the API will.
    for (const [id, channel] of [
      [1, 'General'],
      [2, 'random'],
      [3, null],
    ] as const) {
      await publishNotification(getRedis(), getConfig().EVENT_SHARDS, {
        event: message(id, channel),
        users: [member.id],
      });
    }
    const inGeneral = await pollUntil(c, general, (seen) => notHeartbeat(seen).length >= 1);
    const inDms = await pollUntil(c, dms, (seen) => notHeartbeat(seen).length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    const moreGeneral = expectSuccess(
      await c.events({ queue_id: general, last_event_id: inGeneral.lastEventId, dont_block: true }),
    );
    const moreDms = expectSuccess(
      await c.events({ queue_id: dms, last_event_id: inDms.lastEventId, dont_block: true }),
    );
    const ids = (events: Event[]) =>
      notHeartbeat(events).map((e) => (e.message as { id: number }).id);
    expect([...ids(inGeneral.events), ...ids(moreGeneral.events as Event[])]).toEqual([1]);
    expect([...ids(inDms.events), ...ids(moreDms.events as Event[])]).toEqual([3]);
  });

  it('never gives a queue notifications published before it was created', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
    const publish = (value: string) =>
      publishNotification(getRedis(), getConfig().EVENT_SHARDS, {
        event: { type: 'user_settings', op: 'update', property: 'timezone', value },
        users: [org.owner.id],
      });
    // The first notification is usually still waiting for the fan-out when the queue appears:
    // its change predates the registration, so the state already has it.
    await publish('Europe/Paris');
    const queueId = await store.create(org.owner.id, org.realm.id, {
      ...defaultQueueOptions(),
      event_types: ['user_settings'],
    });
    await publish('Asia/Tokyo');
    const { events } = await pollUntil(c, queueId, (seen) => notHeartbeat(seen).length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    const more = expectSuccess(
      await c.events({ queue_id: queueId, last_event_id: events.at(-1)!.id, dont_block: true }),
    ).events as Event[];
    expect(notHeartbeat([...events, ...more]).map((e) => e.value)).toEqual(['Asia/Tokyo']);
  });

  it('nulls avatar_url in realm_user add events for client_gravatar queues', async () => {
    const org = await createTestRealm();
    const c = client(org.owner, org.host);
    const gravatar = expectSuccess(
      await c.register({ event_types: ['realm_user'], client_gravatar: true }),
    ).queue_id as string;
    const plain = expectSuccess(
      await c.register({ event_types: ['realm_user'], client_gravatar: false }),
    ).queue_id as string;
    const added = await createTestUser(org.realm);
    const person = async (queueId: string) =>
      notHeartbeat(
        (await pollUntil(c, queueId, (seen) => notHeartbeat(seen).length >= 1)).events,
      )[0]!.person as Record<string, unknown>;
    expect(await person(gravatar)).toMatchObject({ user_id: added.id, avatar_url: null });
    expect((await person(plain)).avatar_url).toEqual(expect.stringContaining('gravatar.com'));
    expect(await person(plain)).not.toHaveProperty('internal_data');
  });
});

describe('every event published so far reaches the right queues', () => {
  it('delivers realm_user to everyone, user_settings only to the user, realm_bot to owner and admins', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    const other = await createTestUser(org.realm);
    const queues = new Map<number, string>();
    for (const user of [org.owner, member, other]) {
      queues.set(
        user.id,
        expectSuccess(await client(user, org.host).register()).queue_id as string,
      );
    }
    expectSuccess(
      await client(member, org.host).patch('/settings', { twenty_four_hour_time: true }),
    );
    expectSuccess(
      await client(member, org.host).patch('/settings', { full_name: 'Everyone Sees' }),
    );
    const seen = new Map<number, Event[]>();
    for (const user of [org.owner, member, other]) {
      const { events } = await pollUntil(client(user, org.host), queues.get(user.id)!, (got) =>
        got.some((e) => e.type === 'realm_user'),
      );
      seen.set(user.id, notHeartbeat(events));
    }
    const types = (id: number) => seen.get(id)!.map((e) => e.type);
    expect(types(member.id)).toEqual(['user_settings', 'realm_user']);
    expect(types(org.owner.id)).toEqual(['realm_user']);
    expect(types(other.id)).toEqual(['realm_user']);
  });
});
