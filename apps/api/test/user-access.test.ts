// The organization setting can_access_all_users_group (Zulip's "who can see all users"):
// limited to members, a guest sees only themselves, bots, the users they share a channel or a
// direct-message group with and those they exchanged a 1:1 direct message with; in GET /users,
// GET /users/{id|email}, /register's realm_users ("Unknown user" placeholders, or nothing with
// user_list_incomplete) and in the audiences of realm_user events; in presence when the
// deployment says so (Zulip's CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE); in the recipients a
// guest may send direct messages to and the users they may mention; in the senders of the
// messages they read ("Unknown user"); in the realm_user add events a direct message sends
// when it lets them see someone; and, as Zulip has it already, in the subscriber lists a guest
// can read.
import { resetConfig } from '@parley/config';
import { getPrisma, Role, type User } from '@parley/db';
import {
  as,
  captureEvents,
  createTestUser,
  expectError,
  expectSuccess,
  setGuestAccess,
} from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, postProcessState, type StateOptions } from '../src/lib/initial-state';

const prisma = () => getPrisma();

/** The server setting CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE, for this process. */
function limitPresence(on: boolean): void {
  process.env.CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE = on ? 'true' : 'false';
  resetConfig();
}

const restrict = setGuestAccess;

async function listedIds(user: User, host: string, query: Record<string, unknown> = {}) {
  const body = expectSuccess(await as(user, host).get('/users', query));
  return (body.members as { user_id: number }[]).map((member) => member.user_id);
}

async function realmUsers(user: User, host: string, capabilities: Record<string, boolean> = {}) {
  const body = expectSuccess(
    await as(user, host, { atOnce: true }).post('/register', {
      fetch_event_types: ['realm_user'],
      client_capabilities: capabilities,
    }),
  );
  return {
    active: body.realm_users as Record<string, unknown>[],
    inactive: body.realm_non_active_users as Record<string, unknown>[],
  };
}

const byId = (people: Record<string, unknown>[], id: number) =>
  people.find((person) => person.user_id === id);

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

/** #general holds owner, member, other and guest; the administrator, `stranger` and `gone`
 * (deactivated) share nothing with the guest; `bot` belongs to the member. */
interface AccessOrg extends MessageOrg {
  stranger: User;
  gone: User;
  botId: number;
}

async function createAccessOrg(): Promise<AccessOrg> {
  const org = await createMessageOrg();
  const stranger = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Sam Stranger' });
  const gone = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Gil Gone' });
  expectSuccess(await as(org.owner, org.host).delete(`/users/${gone.id}`));
  const bot = expectSuccess(
    await as(org.member, org.host).post('/bots', { full_name: 'Helper Bot', short_name: 'helper' }),
  );
  return { ...org, stranger, gone, botId: bot.user_id as number };
}

describe('can_access_all_users_group: role:everyone (the default)', () => {
  it('lets a guest see every user', async () => {
    const org = await createAccessOrg();
    const everyone = (
      await prisma().user.findMany({ where: { realmId: org.realm.id }, select: { id: true } })
    ).map((user) => user.id);
    expect(sorted(await listedIds(org.guest, org.host))).toEqual(sorted(everyone));
    expectSuccess(await as(org.guest, org.host).get(`/users/${org.stranger.id}`));
    const { active, inactive } = await realmUsers(org.guest, org.host);
    expect(active.some((person) => person.full_name === 'Unknown user')).toBe(false);
    expect(byId(active, org.stranger.id)).toMatchObject({ full_name: 'Sam Stranger' });
    expect(byId(inactive, org.gone.id)).toMatchObject({ full_name: 'Gil Gone' });
  });
});

describe('can_access_all_users_group: role:members', () => {
  let org: AccessOrg;
  beforeAll(async () => {
    org = await createAccessOrg();
    await restrict(org, 'role:members');
  });

  describe('GET /users', () => {
    it('lists for a guest only themselves, their channels’ subscribers and bots', async () => {
      expect(sorted(await listedIds(org.guest, org.host))).toEqual(
        sorted([org.owner.id, org.member.id, org.other.id, org.guest.id, org.botId]),
      );
    });

    it('leaves inaccessible users out of a user_ids request', async () => {
      expect(
        await listedIds(org.guest, org.host, { user_ids: [org.stranger.id, org.member.id] }),
      ).toEqual([org.member.id]);
    });

    it('still refuses ids of no user', async () => {
      expectError(
        await as(org.guest, org.host).get('/users', { user_ids: [2 ** 31 - 1] }),
        `Invalid user ID: ${2 ** 31 - 1}`,
      );
    });

    it('lists everyone for members and administrators', async () => {
      for (const viewer of [org.member, org.admin]) {
        const ids = await listedIds(viewer, org.host);
        expect(ids).toEqual(expect.arrayContaining([org.stranger.id, org.gone.id, org.guest.id]));
      }
    });
  });

  describe('GET /users/{user_id} and /users/{email}', () => {
    it('refuses a guest a user they cannot access', async () => {
      expectError(
        await as(org.guest, org.host).get(`/users/${org.stranger.id}`),
        'Insufficient permission',
      );
      expectError(
        await as(org.guest, org.host).get(`/users/${org.gone.id}`),
        'Insufficient permission',
      );
      const dummy = `user${org.stranger.id}@${org.host.split(':')[0]}`;
      expectError(
        await as(org.guest, org.host).get(`/users/${encodeURIComponent(dummy)}`),
        'Insufficient permission',
      );
    });

    it('answers a guest about themselves, shared subscribers and bots', async () => {
      for (const id of [org.guest.id, org.member.id, org.botId]) {
        const body = expectSuccess(await as(org.guest, org.host).get(`/users/${id}`));
        expect((body.user as { user_id: number }).user_id).toBe(id);
      }
    });

    it('still says "No such user" for ids of no user', async () => {
      expectError(await as(org.guest, org.host).get(`/users/${2 ** 31 - 1}`), 'No such user');
    });

    it('answers members about anyone', async () => {
      expectSuccess(await as(org.member, org.host).get(`/users/${org.stranger.id}`));
    });
  });

  describe('POST /register realm_users', () => {
    it('shows a guest inaccessible users as active "Unknown user" placeholders', async () => {
      const { active, inactive } = await realmUsers(org.guest, org.host);
      for (const id of [org.stranger.id, org.admin.id, org.gone.id])
        expect(byId(active, id)).toEqual({
          user_id: id,
          delivery_email: null,
          email: expect.stringMatching(new RegExp(`^user${id}@`)),
          full_name: 'Unknown user',
          date_joined: new Date(0).toISOString(),
          is_owner: false,
          is_admin: false,
          is_guest: false,
          is_bot: false,
          role: Role.MEMBER,
          timezone: '',
          avatar_url: '/static/images/unknown-user-avatar.png',
          avatar_version: 1,
          is_imported_stub: false,
          profile_data: {},
        });
      expect(byId(inactive, org.gone.id)).toBeUndefined();
      expect(byId(active, org.member.id)).toMatchObject({ full_name: 'Mia Member' });
      expect(byId(active, org.botId)).toMatchObject({ full_name: 'Helper Bot' });
    });

    it('leaves them out for clients with user_list_incomplete', async () => {
      const { active, inactive } = await realmUsers(org.guest, org.host, {
        user_list_incomplete: true,
      });
      const ids = (people: Record<string, unknown>[]) => people.map((p) => p.user_id as number);
      expect(sorted(ids(active))).toEqual(
        sorted([org.owner.id, org.member.id, org.other.id, org.guest.id, org.botId]),
      );
      expect(ids(inactive)).toEqual([]);
    });

    it('leaves members’ realm_users complete', async () => {
      const { active, inactive } = await realmUsers(org.member, org.host);
      expect(byId(active, org.stranger.id)).toMatchObject({ full_name: 'Sam Stranger' });
      expect(byId(inactive, org.gone.id)).toMatchObject({ full_name: 'Gil Gone' });
    });
  });

  describe('realm_user events', () => {
    it('skip guests who cannot access the changed user', async () => {
      const published = await captureEvents(org.realm.id, async () =>
        expectSuccess(
          await as(org.owner, org.host).patch(`/users/${org.stranger.id}`, {
            full_name: 'Sam Renamed',
          }),
        ),
      );
      const update = published.find((p) => p.event.type === 'realm_user')!;
      expect(update.event).toEqual({
        type: 'realm_user',
        op: 'update',
        person: { user_id: org.stranger.id, full_name: 'Sam Renamed' },
      });
      expect(update.users).toEqual(
        expect.arrayContaining([org.owner.id, org.admin.id, org.member.id, org.stranger.id]),
      );
      expect(update.users).not.toContain(org.guest.id);
    });

    it('reach guests who share a channel with the changed user', async () => {
      const published = await captureEvents(org.realm.id, async () =>
        expectSuccess(
          await as(org.owner, org.host).patch(`/users/${org.other.id}`, {
            full_name: 'Otto Renamed',
          }),
        ),
      );
      const update = published.find((p) => p.event.type === 'realm_user')!;
      expect(update.users).toContain(org.guest.id);
    });

    it('tell of a deactivation only those who can access the user', async () => {
      const target = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Dee Parting' });
      const published = await captureEvents(org.realm.id, async () =>
        expectSuccess(await as(org.owner, org.host).delete(`/users/${target.id}`)),
      );
      const deactivation = published.find(
        (p) => p.event.type === 'realm_user' && p.event.op === 'update',
      )!;
      expect(deactivation.event.person).toEqual({ user_id: target.id, is_active: false });
      expect(deactivation.users).toEqual(expect.arrayContaining([org.member.id, target.id]));
      expect(deactivation.users).not.toContain(org.guest.id);
    });

    it("tell guests without access of the groups a deactivated user left (Zulip's send_events_for_user_deactivation)", async () => {
      const target = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Cy Leaving' });
      const group = expectSuccess(
        await as(org.owner, org.host).post('/user_groups/create', {
          name: `leavers ${target.id}`,
          description: '',
          members: [target.id],
        }),
      ).group_id as number;
      // Every named group the user is directly in: role:members, role:fullmembers and the new one.
      const direct = (
        await getPrisma().userGroupMembership.findMany({
          where: { userId: target.id, userGroup: { name: { not: null } } },
          orderBy: { userGroupId: 'asc' },
        })
      ).map((row) => row.userGroupId);
      expect(direct).toContain(group);
      expect(direct.length).toBeGreaterThan(1);
      const published = await captureEvents(org.realm.id, async () =>
        expectSuccess(await as(org.owner, org.host).delete(`/users/${target.id}`)),
      );
      const toGuest = published.filter((p) => p.users.includes(org.guest.id)).map((p) => p.event);
      expect(toGuest).toEqual(
        direct.map((id) => ({
          type: 'user_group',
          op: 'remove_members',
          group_id: id,
          user_ids: [target.id],
        })),
      );
      // Those with access hear the deactivation itself, which tells them the same.
      const toMember = published.filter((p) => p.users.includes(org.member.id)).map((p) => p.event);
      expect(toMember).toContainEqual({
        type: 'realm_user',
        op: 'update',
        person: { user_id: target.id, is_active: false },
      });
      expect(toMember.filter((event) => event.type === 'user_group')).toEqual([]);
    });

    it('give guests an "Unknown user" for a new user they cannot access', async () => {
      let created: User | undefined;
      const published = await captureEvents(org.realm.id, async () => {
        created = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Nina New' });
      });
      const adds = published.filter((p) => p.event.type === 'realm_user' && p.event.op === 'add');
      const real = adds.filter(
        (p) => (p.event.person as { full_name: string }).full_name === 'Nina New',
      );
      expect(real.flatMap((p) => p.users)).toEqual(
        expect.arrayContaining([org.member.id, org.admin.id, created!.id]),
      );
      expect(real.flatMap((p) => p.users)).not.toContain(org.guest.id);
      const placeholder = adds.find(
        (p) => (p.event.person as { full_name: string }).full_name === 'Unknown user',
      )!;
      expect(placeholder.users).toEqual([org.guest.id]);
      expect(placeholder.event.person).toMatchObject({ user_id: created!.id, is_active: true });
    });
  });

  it('gives a guest access to the members of a direct-message group they are in', async () => {
    expect(await listedIds(org.guest, org.host)).not.toContain(org.admin.id);
    expectSuccess(
      await send(org.admin, org.host, {
        type: 'direct',
        to: [org.guest.id, org.member.id],
        content: 'three of us',
      }),
    );
    expect(await listedIds(org.guest, org.host)).toContain(org.admin.id);
    expectSuccess(await as(org.guest, org.host).get(`/users/${org.admin.id}`));
  });

  it('gives everything back when set to role:everyone again', async () => {
    await restrict(org, 'role:everyone');
    expect(await listedIds(org.guest, org.host)).toEqual(
      expect.arrayContaining([org.stranger.id, org.gone.id]),
    );
    expectSuccess(await as(org.guest, org.host).get(`/users/${org.stranger.id}`));
    const { active } = await realmUsers(org.guest, org.host);
    expect(active.some((person) => person.full_name === 'Unknown user')).toBe(false);
  });
});

const NO_ACCESS = 'You do not have permission to access some of the recipients.';

/** The user ids a presence dict names: by id (modern) or by the address the viewer sees
 * (legacy: the real one, or the dummy user{id}@… one). */
function presenceIds(presences: unknown, org: AccessOrg): number[] {
  const people = [org.owner, org.admin, org.member, org.other, org.guest, org.stranger, org.gone];
  return sorted(
    Object.keys(presences as Record<string, unknown>).map((key) => {
      if (/^\d+$/.test(key)) return Number(key);
      const dummy = /^user(\d+)@/.exec(key);
      if (dummy) return Number(dummy[1]);
      return people.find((user) => user.deliveryEmail === key)!.id;
    }),
  );
}

describe('can_access_all_users_group beyond the user list', () => {
  let org: AccessOrg;
  const ping = (user: User) =>
    as(user, org.host).post('/users/me/presence', { status: 'active', slim_presence: true });
  beforeAll(async () => {
    org = await createAccessOrg();
    await restrict(org, 'role:members');
  });

  describe('presence, with CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE on', () => {
    beforeAll(() => {
      limitPresence(true);
    });
    afterAll(() => {
      limitPresence(false);
    });

    it('tells a guest of a user coming online only when they can access the user', async () => {
      const strangerOnline = await captureEvents(org.realm.id, () => ping(org.stranger));
      const forStranger = strangerOnline.filter((p) => p.event.type === 'presence');
      expect(forStranger.flatMap((p) => p.users)).toEqual(
        expect.arrayContaining([org.owner.id, org.member.id, org.stranger.id]),
      );
      expect(forStranger.flatMap((p) => p.users)).not.toContain(org.guest.id);

      const otherOnline = await captureEvents(org.realm.id, () => ping(org.other));
      const forOther = otherOnline.filter((p) => p.event.type === 'presence');
      expect(forOther.flatMap((p) => p.users)).toEqual(
        expect.arrayContaining([org.guest.id, org.member.id, org.other.id]),
      );
    });

    it('leaves inaccessible users out of a guest’s presence reads', async () => {
      for (const user of [org.owner, org.admin, org.member, org.guest])
        expectSuccess(await ping(user));
      const accessible = sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]);

      const realm = expectSuccess(await as(org.guest, org.host).get('/realm/presence'));
      expect(presenceIds(realm.presences, org)).toEqual(accessible);
      const own = expectSuccess(await ping(org.guest));
      expect(presenceIds(own.presences, org)).toEqual(accessible);
      const registered = expectSuccess(
        await as(org.guest, org.host, { atOnce: true }).post('/register', {
          fetch_event_types: ['presence'],
          slim_presence: true,
        }),
      );
      expect(presenceIds(registered.presences, org)).toEqual(accessible);
    });

    it('refuses a guest one inaccessible user’s presence', async () => {
      expectError(
        await as(org.guest, org.host).get(`/users/${org.stranger.id}/presence`),
        'Insufficient permission',
      );
      expectSuccess(await as(org.guest, org.host).get(`/users/${org.member.id}/presence`));
    });

    it('leaves members’ presence complete', async () => {
      const realm = expectSuccess(await as(org.member, org.host).get('/realm/presence'));
      expect(presenceIds(realm.presences, org)).toEqual(
        expect.arrayContaining([org.stranger.id, org.admin.id, org.guest.id]),
      );
      expectSuccess(await as(org.member, org.host).get(`/users/${org.stranger.id}/presence`));
    });
  });

  describe('presence, with CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE off (Zulip’s default)', () => {
    it('still shows a restricted guest everyone’s availability', async () => {
      expectSuccess(await ping(org.stranger));
      const realm = expectSuccess(await as(org.guest, org.host).get('/realm/presence'));
      expect(presenceIds(realm.presences, org)).toContain(org.stranger.id);
      expectSuccess(await as(org.guest, org.host).get(`/users/${org.stranger.id}/presence`));
    });
  });

  describe('POST /messages (direct)', () => {
    it('refuses a guest a direct message to a user they cannot access', async () => {
      expectError(
        await send(org.guest, org.host, { type: 'direct', to: [org.stranger.id], content: 'hi' }),
        NO_ACCESS,
      );
      expectError(
        await send(org.guest, org.host, {
          type: 'direct',
          to: [org.member.id, org.stranger.id],
          content: 'hi all',
        }),
        NO_ACCESS,
      );
    });

    it('says so before saying a recipient is deactivated', async () => {
      expectError(
        await send(org.guest, org.host, { type: 'direct', to: [org.gone.id], content: 'hi' }),
        NO_ACCESS,
      );
    });

    it('lets a guest write to accessible users, bots and themselves', async () => {
      for (const to of [
        [org.member.id],
        [org.member.id, org.other.id],
        [org.botId],
        [org.guest.id],
      ])
        expectSuccess(await send(org.guest, org.host, { type: 'direct', to, content: 'hello' }));
    });

    it('lets members write to anyone', async () => {
      expectSuccess(
        await send(org.member, org.host, {
          type: 'direct',
          to: [org.stranger.id],
          content: 'hello',
        }),
      );
    });
  });

  describe('POST /typing', () => {
    it('does not check access, as in Zulip (typing only reaches active recipients)', async () => {
      const published = await captureEvents(org.realm.id, async () =>
        expectSuccess(
          await as(org.guest, org.host).post('/typing', { op: 'start', to: [org.admin.id] }),
        ),
      );
      expect(published.find((p) => p.event.type === 'typing')?.users).toEqual(
        sorted([org.admin.id, org.guest.id]),
      );
    });
  });

  describe('channel subscribers', () => {
    const accessible = () =>
      new Set([org.owner.id, org.member.id, org.other.id, org.guest.id, org.botId]);
    let lobby: number;
    beforeAll(async () => {
      const created = expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name: 'lobby' }],
          principals: [org.owner.id, org.stranger.id],
        }),
      );
      expect(created.subscribed).toBeDefined();
      lobby = (
        await prisma().stream.findFirstOrThrow({ where: { realmId: org.realm.id, name: 'lobby' } })
      ).id;
    });

    it('shows a guest only subscribers of their own channels, all accessible', async () => {
      const members = expectSuccess(
        await as(org.guest, org.host).get(`/streams/${org.general.id}/members`),
      );
      expect((members.subscribers as number[]).every((id) => accessible().has(id))).toBe(true);
      const lobbyMembers = await as(org.guest, org.host).get(`/streams/${lobby}/members`);
      expect(lobbyMembers.body.result).toBe('error');
      const secret = await as(org.guest, org.host).get(`/streams/${org.secret.id}/members`);
      expect(secret.body.result).toBe('error');
    });

    it('gives a guest no inaccessible subscribers in their subscriptions', async () => {
      const listed = expectSuccess(
        await as(org.guest, org.host).get('/users/me/subscriptions', { include_subscribers: true }),
      );
      const registered = expectSuccess(
        await as(org.guest, org.host, { atOnce: true }).post('/register', {
          fetch_event_types: ['subscription'],
          include_subscribers: true,
        }),
      );
      type Sub = { stream_id: number; subscribers?: number[] };
      const subs = [
        ...(listed.subscriptions as Sub[]),
        ...(registered.subscriptions as Sub[]),
        ...(registered.unsubscribed as Sub[]),
        ...(registered.never_subscribed as Sub[]),
      ];
      expect(subs.some((sub) => sub.stream_id === org.general.id)).toBe(true);
      for (const sub of subs)
        expect((sub.subscribers ?? []).filter((id) => !accessible().has(id))).toEqual([]);
      expect(subs.some((sub) => sub.stream_id === lobby)).toBe(false);
    });

    it('shows members every subscriber', async () => {
      const members = expectSuccess(
        await as(org.member, org.host).get(`/streams/${lobby}/members`),
      );
      expect(members.subscribers).toEqual(expect.arrayContaining([org.stranger.id]));
    });
  });

  it('lifts the limits when set to role:everyone again', async () => {
    await restrict(org, 'role:everyone');
    expectSuccess(
      await send(org.guest, org.host, { type: 'direct', to: [org.stranger.id], content: 'hi' }),
    );
    limitPresence(true);
    try {
      expectSuccess(await ping(org.stranger));
      const realm = expectSuccess(await as(org.guest, org.host).get('/realm/presence'));
      expect(presenceIds(realm.presences, org)).toEqual(
        expect.arrayContaining([org.stranger.id, org.admin.id]),
      );
      expectSuccess(await as(org.guest, org.host).get(`/users/${org.stranger.id}/presence`));
    } finally {
      limitPresence(false);
    }
  });
});

describe('can_access_all_users_group and messages', () => {
  let org: AccessOrg;
  /** Members who share nothing with the guest until a test makes them. */
  let writer: User;
  let caller: User;
  let grouped: User;
  beforeAll(async () => {
    org = await createAccessOrg();
    writer = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Wes Writer' });
    caller = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Cal Caller' });
    grouped = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Gro Grouped' });
    await restrict(org, 'role:members');
  });

  const guestSees = async (userId: number) =>
    (await as(org.guest, org.host).get(`/users/${userId}`)).body.result === 'success';
  const dummy = (userId: number) => `user${userId}@${org.host.split(':')[0]}`;
  const messageEvents = (published: Awaited<ReturnType<typeof captureEvents>>, userId: number) =>
    published.filter((p) => p.event.type === 'message' && p.users.includes(userId));

  it('shows a guest the sender of a channel message they cannot access as "Unknown user"', async () => {
    let sent: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      sent = expectSuccess(
        await send(writer, org.host, {
          type: 'stream',
          to: org.general.id,
          topic: 'hidden',
          content: 'from outside',
        }),
      );
    });
    const id = sent.id as number;
    const unknown = {
      sender_id: writer.id,
      sender_full_name: 'Unknown user',
      sender_email: dummy(writer.id),
      avatar_url: '/static/images/unknown-user-avatar.png',
    };
    const [forGuest] = messageEvents(published, org.guest.id);
    expect(forGuest!.event.message).toMatchObject(unknown);
    expect(
      (forGuest!.event as { internal_data?: { avatar_gravatar?: boolean } }).internal_data,
    ).toMatchObject({ avatar_gravatar: false });
    const [forMember] = messageEvents(published, org.member.id);
    expect(forMember!.users).not.toContain(org.guest.id);
    expect(forMember!.event.message).toMatchObject({ sender_full_name: 'Wes Writer' });

    const fetched = expectSuccess(
      await as(org.guest, org.host).get('/messages', {
        anchor: id,
        num_before: 0,
        num_after: 0,
        client_gravatar: true,
      }),
    );
    expect((fetched.messages as Record<string, unknown>[])[0]).toMatchObject(unknown);
    const single = expectSuccess(await as(org.guest, org.host).get(`/messages/${id}`));
    expect(single.message).toMatchObject(unknown);
    const forOwner = expectSuccess(await as(org.owner, org.host).get(`/messages/${id}`));
    expect(forOwner.message).toMatchObject({ sender_full_name: 'Wes Writer' });
  });

  it('lets a 1:1 direct message make its sender accessible, announced before the message', async () => {
    expect(await guestSees(caller.id)).toBe(false);
    const before = { ...(await realmUsers(org.guest, org.host)) };
    const state = { realm_users: before.active, realm_non_active_users: before.inactive };
    expect(byId(state.realm_users, caller.id)).toMatchObject({ full_name: 'Unknown user' });
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(
        await send(caller, org.host, { type: 'direct', to: [org.guest.id], content: 'hello' }),
      ),
    );
    const forGuest = published.filter((p) => p.users.includes(org.guest.id));
    expect(forGuest.map((p) => p.event.type)).toEqual(['realm_user', 'message']);
    expect(forGuest[0]).toMatchObject({
      users: [org.guest.id],
      event: {
        op: 'add',
        person: { user_id: caller.id, full_name: 'Cal Caller', email: caller.deliveryEmail },
      },
    });
    expect(forGuest[1]!.event.message).toMatchObject({ sender_full_name: 'Cal Caller' });
    // Folded into the guest's registered state, the event replaces the placeholder.
    applyEvent(state, { id: 0, ...forGuest[0]!.event } as QueuedEvent, org.guest, {
      clientGravatar: false,
    } as StateOptions);
    postProcessState(state, org.guest, {});
    const fresh = await realmUsers(org.guest, org.host);
    // avatar_url aside: the events tier fills it in per queue (client_gravatar).
    const withoutAvatar = (person: Record<string, unknown> | undefined) => {
      const { avatar_url: _avatar, ...rest } = person ?? {};
      return rest;
    };
    expect(withoutAvatar(byId(state.realm_users, caller.id))).toEqual(
      withoutAvatar(byId(fresh.active, caller.id)),
    );
    expect(byId(state.realm_users, caller.id)).toMatchObject({ full_name: 'Cal Caller' });
    expect(state.realm_users.filter((person) => person.user_id === caller.id)).toHaveLength(1);

    // The guest now sees the caller everywhere, and may answer.
    expect(await guestSees(caller.id)).toBe(true);
    expect(await listedIds(org.guest, org.host)).toContain(caller.id);
    const { active } = await realmUsers(org.guest, org.host);
    expect(byId(active, caller.id)).toMatchObject({ full_name: 'Cal Caller' });
    expectSuccess(
      await send(org.guest, org.host, { type: 'direct', to: [caller.id], content: 'hi back' }),
    );
    // Changes to the caller reach the guest, and a second message announces nothing.
    const renamed = await captureEvents(org.realm.id, async () =>
      expectSuccess(await as(caller, org.host).patch('/settings', { full_name: 'Cal Called' })),
    );
    expect(
      renamed.find((p) => p.event.type === 'realm_user' && p.event.op === 'update')?.users,
    ).toContain(org.guest.id);
    const again = await captureEvents(org.realm.id, async () =>
      expectSuccess(
        await send(caller, org.host, { type: 'direct', to: [org.guest.id], content: 'again' }),
      ),
    );
    expect(again.filter((p) => p.event.type === 'realm_user')).toEqual([]);
  });

  it('lets a group direct message make every participant accessible to its guests', async () => {
    expect(await guestSees(grouped.id)).toBe(false);
    // Whose address only administrators see: the guest learns of them by their dummy address.
    expectSuccess(await as(grouped, org.host).patch('/settings', { email_address_visibility: 3 }));
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(
        await send(org.member, org.host, {
          type: 'direct',
          to: [org.guest.id, grouped.id],
          content: 'all three of us',
        }),
      ),
    );
    const grants = published.filter((p) => p.event.type === 'realm_user');
    expect(grants).toEqual([
      expect.objectContaining({
        users: [org.guest.id],
        event: expect.objectContaining({
          person: expect.objectContaining({
            user_id: grouped.id,
            email: dummy(grouped.id),
            delivery_email: null,
          }),
        }),
      }),
    ]);
    expect(await guestSees(grouped.id)).toBe(true);
  });

  it('shows the sender again once the guest may access them', async () => {
    const fetched = async () =>
      expectSuccess(
        await as(org.guest, org.host).get('/messages', {
          narrow: [{ operator: 'topic', operand: 'hidden' }],
          anchor: 'newest',
          num_before: 5,
          num_after: 0,
        }),
      ).messages as Record<string, unknown>[];
    expect((await fetched())[0]).toMatchObject({ sender_full_name: 'Unknown user' });
    expectSuccess(
      await send(writer, org.host, { type: 'direct', to: [org.guest.id], content: 'it was me' }),
    );
    expect((await fetched())[0]).toMatchObject({ sender_full_name: 'Wes Writer' });
  });

  it('leaves a guest’s mentions of users they cannot access as text', async () => {
    const content = '@**Sam Stranger** and @**Mia Member**';
    const rendered = expectSuccess(
      await as(org.guest, org.host).post('/messages/render', { content }),
    );
    expect(rendered.rendered).not.toContain(`data-user-id="${org.stranger.id}"`);
    expect(rendered.rendered).toContain('@<strong>Sam Stranger</strong>');
    expect(rendered.rendered).toContain(`data-user-id="${org.member.id}"`);
    const sent = expectSuccess(
      await send(org.guest, org.host, { type: 'stream', to: org.general.id, topic: 'm', content }),
    );
    const stored = await prisma().message.findUniqueOrThrow({ where: { id: sent.id as number } });
    expect(stored.renderedContent).not.toContain(`data-user-id="${org.stranger.id}"`);
    // Editing renders the new content as the sender's again.
    expectSuccess(
      await as(org.guest, org.host).patch(`/messages/${sent.id as number}`, {
        content: `${content} (edited)`,
      }),
    );
    const edited = await prisma().message.findUniqueOrThrow({ where: { id: sent.id as number } });
    expect(edited.renderedContent).toContain('(edited)');
    expect(edited.renderedContent).not.toContain(`data-user-id="${org.stranger.id}"`);
    expect(edited.renderedContent).toContain(`data-user-id="${org.member.id}"`);
    const forMember = expectSuccess(
      await as(org.owner, org.host).post('/messages/render', { content }),
    );
    expect(forMember.rendered).toContain(`data-user-id="${org.stranger.id}"`);
  });

  it('hides nobody from members, nor bots from guests', async () => {
    const stranger = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Sol Stranger' });
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: org.botId } });
    const published = await captureEvents(org.realm.id, async () => {
      for (const sender of [stranger, bot])
        expectSuccess(
          await send(sender, org.host, {
            type: 'stream',
            to: org.general.id,
            topic: 'members',
            content: 'hello',
          }),
        );
    });
    const [fromStranger, fromBot] = messageEvents(published, org.owner.id);
    expect(fromStranger!.event.message).toMatchObject({ sender_full_name: 'Sol Stranger' });
    // Sol shares nothing with the guest, who sees an "Unknown user".
    expect(messageEvents(published, org.guest.id)[0]!.event.message).toMatchObject({
      sender_id: stranger.id,
      sender_full_name: 'Unknown user',
    });
    expect(fromBot!.users).toContain(org.guest.id);
    expect(fromBot!.event.message).toMatchObject({ sender_full_name: 'Helper Bot' });
  });
});

describe('can_access_all_users_group: role:everyone and messages', () => {
  it('announces nothing and hides no sender', async () => {
    const org = await createAccessOrg();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await send(org.stranger, org.host, { type: 'direct', to: [org.guest.id], content: 'hi' }),
      );
      expectSuccess(
        await send(org.admin, org.host, {
          type: 'stream',
          to: org.general.id,
          topic: 'open',
          content: 'hello',
        }),
      );
    });
    expect(published.filter((p) => p.event.type === 'realm_user')).toEqual([]);
    const forGuest = published.filter(
      (p) => p.event.type === 'message' && p.users.includes(org.guest.id),
    );
    expect(forGuest.map((p) => p.event.message)).toEqual([
      expect.objectContaining({ sender_full_name: 'Sam Stranger' }),
      expect.objectContaining({ sender_full_name: 'Ada Admin' }),
    ]);
  });
});
