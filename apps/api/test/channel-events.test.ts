// Channel state in POST /register and channel events through a real queue: the sections a
// client starts from, and the events that keep them current.
import request from 'supertest';
import { getPrisma, Role, type User } from '@parley/db';
import { eventsRouter, startEventsService, type EventsService } from '@parley/events-app';
import { createApp } from '../src/app';
import { applyChannelEvent } from '../src/lib/channel-state';
import { as, createTestRealm, createTestUser, expectSuccess, type TestRealm } from './helpers';

let service: EventsService;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  service = await startEventsService({ heartbeatSeconds: 1, heartbeatJitterSeconds: 0 });
  app = createApp({ mount: [eventsRouter(service)] });
});

afterAll(async () => {
  await service.stop();
});

type Event = { id: number; type: string } & Record<string, unknown>;
const form = (values: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(values).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );

function register(user: User, host: string, params: Record<string, unknown>) {
  return request(app)
    .post('/api/v1/register')
    .set('Host', host)
    .auth(user.deliveryEmail, user.apiKey)
    .type('form')
    .send(form(params));
}

/** Polls until `count` events pass `wanted` (tests pass a filter to skip events of other
 * changes they are not about). */
async function nextEvents(
  user: User,
  host: string,
  queueId: string,
  count: number,
  wanted: (event: Event) => boolean = () => true,
) {
  const seen: Event[] = [];
  let last = -1;
  const deadline = Date.now() + 15_000;
  while (seen.length < count) {
    if (Date.now() > deadline) throw new Error(`saw only ${JSON.stringify(seen)}`);
    const body = expectSuccess(
      await request(app)
        .get('/api/v1/events')
        .set('Host', host)
        .auth(user.deliveryEmail, user.apiKey)
        .query({ queue_id: queueId, last_event_id: last }),
    );
    for (const event of body.events as Event[]) {
      last = event.id;
      if (event.type !== 'heartbeat' && wanted(event)) seen.push(event);
    }
  }
  return seen;
}

interface Org extends TestRealm {
  admin: User;
  member: User;
  guest: User;
}

async function createOrg(): Promise<Org> {
  const org = await createTestRealm();
  return {
    ...org,
    admin: await createTestUser(org.realm, Role.ADMINISTRATOR),
    member: await createTestUser(org.realm, Role.MEMBER),
    guest: await createTestUser(org.realm, Role.GUEST),
  };
}

const subscribe = (org: TestRealm, user: User, name: string, extra: Record<string, unknown> = {}) =>
  as(user, org.host).post('/users/me/subscriptions', { subscriptions: [{ name }], ...extra });

describe('POST /register channel sections', () => {
  it('returns subscriptions, unsubscribed, never_subscribed and streams as each user sees them', async () => {
    const org = await createOrg();
    expectSuccess(
      await subscribe(org, org.member, 'zeta', { principals: [org.member.id, org.guest.id] }),
    );
    expectSuccess(await subscribe(org, org.member, 'alpha'));
    expectSuccess(await subscribe(org, org.member, 'left'));
    expectSuccess(await subscribe(org, org.owner, 'hush', { invite_only: true }));
    expectSuccess(await subscribe(org, org.owner, 'gone'));
    expectSuccess(
      await as(org.member, org.host).delete('/users/me/subscriptions', { subscriptions: ['left'] }),
    );
    const gone = await getPrisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'gone' },
    });
    expectSuccess(await as(org.owner, org.host).delete(`/streams/${gone.id}`));
    await getPrisma().defaultStream.create({
      data: {
        realmId: org.realm.id,
        streamId: (
          await getPrisma().stream.findFirstOrThrow({
            where: { realmId: org.realm.id, name: 'alpha' },
          })
        ).id,
      },
    });

    const fetch = async (user: User, extra: Record<string, unknown> = {}) =>
      expectSuccess(
        await register(user, org.host, {
          fetch_event_types: ['subscription', 'stream', 'default_streams'],
          event_types: ['subscription'],
          ...extra,
        }),
      );
    const list = (state: Record<string, unknown>, key: string) =>
      (state[key] as { name: string }[]).map((s) => s.name);

    const member = await fetch(org.member, { include_subscribers: true });
    expect(list(member, 'subscriptions')).toEqual(['alpha', 'zeta']);
    expect(list(member, 'unsubscribed')).toEqual(['left']);
    expect(list(member, 'never_subscribed')).toEqual([]);
    expect(list(member, 'streams')).toEqual(['alpha', 'left', 'zeta']);
    expect((member.subscriptions as { subscribers: number[] }[])[1]!.subscribers).toEqual(
      [org.member.id, org.guest.id].sort((a, b) => a - b),
    );
    expect(member.realm_default_streams).toHaveLength(1);

    const admin = await fetch(org.admin);
    expect(list(admin, 'never_subscribed')).toEqual(['alpha', 'hush', 'left', 'zeta']);
    expect(admin.subscriptions).toEqual([]);
    expect(admin.never_subscribed as object[]).not.toContainEqual(
      expect.objectContaining({ subscribers: expect.anything() as unknown }),
    );

    const guest = await fetch(org.guest);
    expect(list(guest, 'subscriptions')).toEqual(['zeta']);
    expect(list(guest, 'never_subscribed')).toEqual([]);
    expect(list(guest, 'streams')).toEqual(['zeta']);
    expect(guest.realm_default_streams).toEqual([]);

    // Clients that understand archived channels see them too.
    const owner = await fetch(org.owner, { client_capabilities: { archived_channels: true } });
    expect(list(owner, 'subscriptions')).toEqual(['gone', 'hush']);
    expect(list(await fetch(org.owner), 'subscriptions')).toEqual(['hush']);
  });
});

describe('channel events through a queue', () => {
  it('tells archiving as an update to capable clients and as a delete to the others', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org, org.member, 'archive-me'));
    const stream = await getPrisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'archive-me' },
    });
    const capable = expectSuccess(
      await register(org.member, org.host, {
        event_types: ['stream'],
        client_capabilities: { archived_channels: true },
      }),
    ).queue_id as string;
    const legacy = expectSuccess(await register(org.member, org.host, { event_types: ['stream'] }))
      .queue_id as string;
    expectSuccess(await as(org.member, org.host).delete(`/streams/${stream.id}`));
    // The creation of the channel itself may arrive first (see nextEvents).
    const archival = (event: Event) => event.op !== 'create';
    expect(await nextEvents(org.member, org.host, capable, 1, archival)).toMatchObject([
      {
        type: 'stream',
        op: 'update',
        stream_id: stream.id,
        name: 'archive-me',
        property: 'is_archived',
        value: true,
      },
    ]);
    expect(await nextEvents(org.member, org.host, legacy, 1, archival)).toEqual([
      {
        id: expect.any(Number) as number,
        type: 'stream',
        op: 'delete',
        streams: [{ stream_id: stream.id }],
        stream_ids: [stream.id],
      },
    ]);
  });

  it('delivers subscription add, update and remove to the subscriber', async () => {
    const org = await createOrg();
    const queueId = expectSuccess(
      await register(org.member, org.host, { event_types: ['subscription'] }),
    ).queue_id as string;
    expectSuccess(await subscribe(org, org.member, 'live'));
    const stream = await getPrisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'live' },
    });
    expectSuccess(
      await as(org.member, org.host).patch(`/users/me/subscriptions/${stream.id}`, {
        property: 'pin_to_top',
        value: 'true',
      }),
    );
    expectSuccess(
      await as(org.member, org.host).delete('/users/me/subscriptions', { subscriptions: ['live'] }),
    );
    const events = await nextEvents(org.member, org.host, queueId, 3);
    expect(events.map((e) => e.op)).toEqual(['add', 'update', 'remove']);
    expect(
      (events[0]!.subscriptions as { name: string; subscribers: number[] }[])[0],
    ).toMatchObject({
      name: 'live',
      subscribers: [org.member.id],
    });
  });
});

describe('applyChannelEvent', () => {
  const entry = (id: number, extra: Record<string, unknown> = {}) => ({
    stream_id: id,
    name: `s${id}`,
    subscriber_count: 1,
    ...extra,
  });

  it('moves channels between the subscription lists', () => {
    const state: Record<string, unknown> = {
      subscriptions: [entry(1, { subscribers: [5] })],
      unsubscribed: [entry(2, { subscribers: [] })],
      never_subscribed: [entry(3, { subscribers: [] })],
      streams: [entry(1), entry(2), entry(3)],
    };
    // Subscribers when the state was read; the peer_add below partly predates it (5).
    const peers = new Map([
      [1, new Set([5])],
      [2, new Set<number>()],
      [3, new Set<number>()],
    ]);
    const options = { includeSubscribers: true, peers };
    const apply = (event: Record<string, unknown>) =>
      applyChannelEvent(state, { id: 0, ...event } as never, options);
    apply({ type: 'subscription', op: 'add', subscriptions: [entry(3, { subscribers: [5] })] });
    apply({ type: 'subscription', op: 'remove', subscriptions: [{ stream_id: 1, name: 's1' }] });
    apply({ type: 'subscription', op: 'peer_add', stream_ids: [3], user_ids: [6, 5] });
    apply({ type: 'subscription', op: 'update', stream_id: 3, property: 'color', value: '#fff' });
    apply({ type: 'stream', op: 'update', stream_id: 3, property: 'name', value: 'renamed' });
    apply({ type: 'stream', op: 'create', streams: [entry(4)] });
    apply({ type: 'stream', op: 'delete', stream_ids: [2] });
    expect(state).toEqual({
      subscriptions: [
        { stream_id: 3, name: 'renamed', subscriber_count: 2, subscribers: [5, 6], color: '#fff' },
      ],
      unsubscribed: [entry(1, { subscribers: [5] })],
      never_subscribed: [entry(4, { subscribers: [] })],
      // Sorted by name, as Zulip keeps them.
      streams: [{ ...entry(3), name: 'renamed', subscriber_count: 2 }, entry(1), entry(4)],
    });
  });
});

describe('message events through a queue', () => {
  it('reaches all_public_streams queues of users who were not recipients, with no flags', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org, org.member, 'open'));
    expectSuccess(await subscribe(org, org.member, 'closed', { invite_only: true }));
    const watcher = await createTestUser(org.realm, Role.MEMBER);
    const everything = expectSuccess(
      await register(watcher, org.host, { event_types: ['message'], all_public_streams: true }),
    ).queue_id as string;
    const ordinary = expectSuccess(await register(watcher, org.host, { event_types: ['message'] }))
      .queue_id as string;
    const post = (to: string) =>
      as(org.member, org.host).post('/messages', { type: 'stream', to, topic: 't', content: to });
    expectSuccess(await post('closed'));
    const open = expectSuccess(await post('open')).id as number;
    const [event] = await nextEvents(watcher, org.host, everything, 1);
    expect(event).toMatchObject({
      type: 'message',
      flags: [],
      message: { id: open, content: 'open' },
    });
    const quiet = expectSuccess(
      await request(app)
        .get('/api/v1/events')
        .set('Host', org.host)
        .auth(watcher.deliveryEmail, watcher.apiKey)
        .query({ queue_id: ordinary, last_event_id: -1, dont_block: 'true' }),
    );
    expect(quiet.events).toEqual([]);
  });

  it('echoes local_id to the sending queue only, with raw Markdown where asked', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org, org.member, 'echo'));
    const queueId = expectSuccess(
      await register(org.member, org.host, { event_types: ['message'], apply_markdown: false }),
    ).queue_id as string;
    expectSuccess(
      await as(org.member, org.host).post('/messages', {
        type: 'stream',
        to: 'echo',
        topic: 't',
        content: '**hi**',
        queue_id: queueId,
        local_id: '12.01',
      }),
    );
    const [event] = await nextEvents(org.member, org.host, queueId, 1);
    expect(event).toMatchObject({
      local_message_id: '12.01',
      message: { content: '**hi**', content_type: 'text/x-markdown' },
    });
    const state = expectSuccess(
      await register(org.member, org.host, { fetch_event_types: ['message'] }),
    );
    expect(state.max_message_id).toBe((event!.message as { id: number }).id);
  });
});
