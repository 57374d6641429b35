import { getPrisma, Role, type User } from '@parley/db';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);
const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

describe('presence', () => {
  let org: TestRealm;
  let alice: User;
  let bob: User;
  beforeAll(async () => {
    org = await createTestRealm();
    alice = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Alice' });
    bob = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Bob' });
  });
  const ping = (user: User, form: Record<string, unknown>) =>
    as(user, org.host).post('/users/me/presence', form);
  /** Moves a user's stored presence into the past, as if time had passed. */
  const age = (user: User, minutes: number) =>
    getPrisma().userPresence.update({
      where: { userId: user.id },
      data: { lastActiveTime: minutesAgo(minutes), lastConnectedTime: minutesAgo(minutes) },
    });

  it("records a first ping, tells the organization, and answers with everyone's presence", async () => {
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(await ping(alice, { status: 'active' }));
      const mine = (body.presences as Record<string, Record<string, { status: string }>>)[
        alice.deliveryEmail
      ]!;
      expect(mine.aggregated).toEqual({
        client: 'website',
        status: 'active',
        timestamp: expect.any(Number),
      });
      expect(mine.website).toMatchObject({ client: 'website', status: 'active', pushable: false });
      expect(typeof body.server_timestamp).toBe('number');
      expect(body.presence_last_update_id).toEqual(expect.any(Number));
    });
    expect(published).toHaveLength(1);
    expect(published[0]!.event).toMatchObject({
      type: 'presence',
      user_id: alice.id,
      email: alice.deliveryEmail,
      presence: { website: { client: 'website', status: 'active', pushable: false } },
      internal_data: { modern_presence: expect.any(Object) },
    });
    expect(published[0]!.users).toEqual(sorted([org.owner.id, alice.id, bob.id]));
  });

  it('writes nothing and tells nobody when a ping changes nothing', async () => {
    const first = expectSuccess(await ping(alice, { status: 'active', last_update_id: -1 }));
    const published = await captureEvents(org.realm.id, async () => {
      const again = expectSuccess(
        await ping(alice, { status: 'idle', last_update_id: first.presence_last_update_id }),
      );
      // Nothing changed since the client's id: an empty dict and the same id back.
      expect(again.presences).toEqual({});
      expect(again.presence_last_update_id).toBe(first.presence_last_update_id);
    });
    expect(published).toEqual([]);
  });

  it('uses the modern form, by user id, when asked by change id', async () => {
    const body = expectSuccess(await ping(bob, { status: 'active', last_update_id: -1 }));
    const presences = body.presences as Record<string, unknown>;
    expect(presences[String(bob.id)]).toEqual({
      active_timestamp: expect.any(Number),
      idle_timestamp: expect.any(Number),
    });
    expect(presences[bob.deliveryEmail]).toBeUndefined();
    // Only what changed after the id comes back.
    await age(alice, 10);
    await ping(alice, { status: 'active' });
    const later = expectSuccess(
      await ping(bob, { status: 'active', last_update_id: body.presence_last_update_id }),
    );
    expect(Object.keys(later.presences as object)).toEqual([String(alice.id)]);
    expect(later.presence_last_update_id as number).toBeGreaterThan(
      body.presence_last_update_id as number,
    );
  });

  it('tells the organization when someone comes back online, not while they stay online', async () => {
    await age(bob, 5);
    const back = await captureEvents(org.realm.id, () => ping(bob, { status: 'active' }));
    expect(back.map((entry) => entry.event.type)).toEqual(['presence']);
    await getPrisma().userPresence.update({
      where: { userId: bob.id },
      data: { lastActiveTime: minutesAgo(1.5), lastConnectedTime: minutesAgo(1.5) },
    });
    const refresh = await captureEvents(org.realm.id, () => ping(bob, { status: 'active' }));
    expect(refresh).toEqual([]);
    const row = await getPrisma().userPresence.findUniqueOrThrow({ where: { userId: bob.id } });
    expect(Date.now() - row.lastActiveTime!.getTime()).toBeLessThan(10_000);
  });

  it('refreshes only the connection time on an idle ping', async () => {
    await age(bob, 3);
    await ping(bob, { status: 'idle' });
    const row = await getPrisma().userPresence.findUniqueOrThrow({ where: { userId: bob.id } });
    expect(Date.now() - row.lastConnectedTime!.getTime()).toBeLessThan(10_000);
    expect(Date.now() - row.lastActiveTime!.getTime()).toBeGreaterThan(2.5 * 60_000);
    const body = expectSuccess(await as(alice, org.host).get(`/users/${bob.id}/presence`));
    expect(body.presence).toEqual({
      website: { status: 'idle', timestamp: expect.any(Number) },
      aggregated: { status: 'idle', timestamp: expect.any(Number) },
    });
  });

  it('answers ping_only with the envelope alone, and history_limit_days=0 with no data', async () => {
    const body = expectSuccess(await ping(alice, { status: 'active', ping_only: true }));
    expect(Object.keys(body).sort()).toEqual(['msg', 'result']);
    const none = expectSuccess(
      await ping(alice, { status: 'active', slim_presence: true, history_limit_days: 0 }),
    );
    expect(none.presences).toEqual({});
    expect(none.presence_last_update_id).toBe(-1);
  });

  it('serves GET /realm/presence in the legacy form without a change id', async () => {
    const body = expectSuccess(await as(org.owner, org.host).get('/realm/presence'));
    expect(Object.keys(body.presences as object).sort()).toEqual(
      [alice.deliveryEmail, bob.deliveryEmail].sort(),
    );
    expect(body.presence_last_update_id).toBeUndefined();
  });

  it('shows one user by id or email, offline once the last ping is old', async () => {
    await age(alice, 30);
    for (const key of [String(alice.id), alice.deliveryEmail]) {
      const body = expectSuccess(await as(bob, org.host).get(`/users/${key}/presence`));
      expect(body.presence).toEqual({
        website: { status: 'active', timestamp: expect.any(Number) },
        aggregated: { status: 'offline', timestamp: expect.any(Number) },
      });
    }
    expectError(
      await as(bob, org.host).get(`/users/${org.owner.id}/presence`),
      `No presence data for ${org.owner.id}`,
    );
    expectError(await as(bob, org.host).get('/users/999999999/presence'), 'No such user');
    expectError(await as(bob, org.host).get('/users/nobody@nowhere.test/presence'), 'No such user');
  });

  it('keys the legacy form by the address each viewer may see', async () => {
    const shy = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await as(shy, org.host).patch('/settings', { email_address_visibility: 4 }));
    await ping(shy, { status: 'active' });
    const seen = expectSuccess(await as(bob, org.host).get('/realm/presence'));
    const dummy = `user${shy.id}@${org.host.replace(/:\d+$/, '')}`;
    expect(seen.presences).toHaveProperty([dummy]);
    expect(seen.presences).not.toHaveProperty([shy.deliveryEmail]);
  });

  it('stops recording users who turn presence off, and backdates them at once', async () => {
    const hidden = await createTestUser(org.realm, Role.MEMBER);
    await ping(hidden, { status: 'active' });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(hidden, org.host).patch('/settings', { presence_enabled: false }));
    });
    // (Different shards: the log gives no order between the two.)
    expect(published.map((entry) => entry.event.type).sort()).toEqual([
      'presence',
      'user_settings',
    ]);
    const row = await getPrisma().userPresence.findUniqueOrThrow({ where: { userId: hidden.id } });
    expect(Date.now() - row.lastActiveTime!.getTime()).toBeGreaterThan(200_000);
    await ping(hidden, { status: 'active' });
    const after = await getPrisma().userPresence.findUniqueOrThrow({
      where: { userId: hidden.id },
    });
    expect(after.lastActiveTime).toEqual(row.lastActiveTime);
  });

  it('bounds the history a registration may ask for', async () => {
    expectError(
      await as(alice, org.host).post('/register', {
        fetch_event_types: ['presence'],
        presence_history_limit_days: 800000,
      }),
      'presence_history_limit_days is too large',
    );
  });

  it('refuses bad input and bots', async () => {
    expectError(await ping(alice, { status: 'away' }), 'Invalid status: away');
    expectError(
      await ping(alice, {}),
      "Missing 'status' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await ping(alice, { status: 'active', last_update_id: 'x' }),
      'last_update_id is not valid JSON',
    );
    const bot = expectSuccess(
      await as(alice, org.host).post('/bots', { full_name: 'Presence bot', short_name: 'pres' }),
    );
    const botUser = await getPrisma().user.findUniqueOrThrow({
      where: { id: bot.user_id as number },
    });
    expectError(
      await ping(botUser, { status: 'active' }),
      'This endpoint does not accept bot requests.',
    );
    expectError(
      await as(alice, org.host).get(`/users/${botUser.id}/presence`),
      'Presence is not supported for bot users.',
    );
  });
});
