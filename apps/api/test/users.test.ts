import { createHash } from 'node:crypto';
import pg from 'pg';
import { getPrisma, Role, runAction, type User } from '@parley/db';
import { isEmailDomain, realmBotDomain } from '@parley/auth';
import { getLogger } from '@parley/logger';
import { doDeactivateUser, doDeleteMessagesOf } from '../src/actions/users';
import { hashPassword, verifyPassword } from '../src/lib/credentials';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectPublished,
  expectSuccess,
  type Published,
  type TestRealm,
} from './helpers';
import { createMessageOrg, send } from './message-helpers';

const prisma = () => getPrisma();
const ids = (users: { id: number }[]) => users.map((u) => u.id).sort((a, b) => a - b);

async function activeIds(realmId: number): Promise<number[]> {
  return ids(await prisma().user.findMany({ where: { realmId, isActive: true } }));
}

async function setVisibility(user: User, visibility: number): Promise<User> {
  return prisma().user.update({
    where: { id: user.id },
    data: { emailAddressVisibility: visibility },
  });
}

async function addProfileField(
  realmId: number,
  fieldType: number,
  extra: { name?: string; fieldData?: string; required?: boolean } = {},
) {
  return prisma().customProfileField.create({
    data: {
      realmId,
      name: extra.name ?? `Field ${fieldType} ${Math.random()}`,
      fieldType,
      fieldData: extra.fieldData ?? '',
      required: extra.required ?? false,
    },
  });
}

const md5 = (text: string) => createHash('md5').update(text.toLowerCase()).digest('hex');

describe('GET /users/me', () => {
  it('returns the caller at the top level with max_message_id and profile_data', async () => {
    const org = await createTestRealm();
    const body = expectSuccess(await as(org.owner, org.host).get('/users/me'));
    expect(body).toMatchObject({
      user_id: org.owner.id,
      email: org.owner.deliveryEmail,
      delivery_email: org.owner.deliveryEmail,
      full_name: 'Olivia Owner',
      is_owner: true,
      is_admin: true,
      is_guest: false,
      is_bot: false,
      role: 100,
      is_active: true,
      timezone: '',
      avatar_version: 1,
      is_imported_stub: false,
      profile_data: {},
      max_message_id: -1,
    });
    expect(body).not.toHaveProperty('bot_type');
    expect(body.avatar_url).toMatch(
      /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=1$/,
    );
    expect(new Date(body.date_joined as string).toISOString()).toBe(body.date_joined);
    expect(body).not.toHaveProperty('is_deleted');
  });
});

describe('GET /users and GET /users/{id}', () => {
  let org: TestRealm;
  let member: User;
  let guest: User;
  let admin: User;
  let hidden: User;
  beforeAll(async () => {
    org = await createTestRealm();
    member = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Mem Ber' });
    guest = await createTestUser(org.realm, Role.GUEST);
    admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    hidden = await setVisibility(await createTestUser(org.realm), 3); // administrators only
  });

  it('lists everyone, deactivated users included', async () => {
    const gone = await createTestUser(org.realm);
    await prisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    const { members } = expectSuccess(await as(member, org.host).get('/users')) as {
      members: Record<string, unknown>[];
    };
    expect(members.map((m) => m.user_id)).toEqual(
      ids([org.owner, member, guest, admin, hidden, gone]),
    );
    expect(members.find((m) => m.user_id === gone.id)).toMatchObject({ is_active: false });
  });

  it('shows a real address only to viewers the target allows, and the dummy address otherwise', async () => {
    const dummy = `user${hidden.id}@${org.realm.stringId}.localhost`;
    const seenBy = async (viewer: User) =>
      expectSuccess(await as(viewer, org.host).get(`/users/${hidden.id}`)).user as Record<
        string,
        unknown
      >;
    expect(await seenBy(member)).toMatchObject({ email: dummy, delivery_email: null });
    expect(await seenBy(admin)).toMatchObject({
      email: hidden.deliveryEmail,
      delivery_email: hidden.deliveryEmail,
    });
    expect(await seenBy(hidden)).toMatchObject({
      email: hidden.deliveryEmail,
      delivery_email: hidden.deliveryEmail,
    });
    // The avatar URL never hashes a hidden address.
    expect(JSON.stringify(await seenBy(member))).not.toContain(hidden.deliveryEmail);
  });

  it('applies each visibility level', async () => {
    const target = await createTestUser(org.realm);
    const moderator = await createTestUser(org.realm, Role.MODERATOR);
    const cases: [number, User, boolean][] = [
      [1, guest, true],
      [2, guest, false],
      [2, member, true],
      [5, member, false],
      [5, moderator, true],
      [3, moderator, false],
      [3, admin, true],
      [4, admin, false],
      [4, org.owner, false],
    ];
    for (const [visibility, viewer, visible] of cases) {
      await setVisibility(target, visibility);
      const user = expectSuccess(await as(viewer, org.host).get(`/users/${target.id}`))
        .user as Record<string, unknown>;
      expect([visibility, viewer.role, user.delivery_email]).toEqual([
        visibility,
        viewer.role,
        visible ? target.deliveryEmail : null,
      ]);
    }
  });

  it('nulls avatar_url under client_gravatar only where the viewer could compute it', async () => {
    const list = async (viewer: User, clientGravatar: boolean) =>
      expectSuccess(await as(viewer, org.host).get('/users', { client_gravatar: clientGravatar }))
        .members as Record<string, unknown>[];
    const asMember = await list(member, true);
    expect(asMember.find((m) => m.user_id === org.owner.id)!.avatar_url).toBeNull();
    expect(asMember.find((m) => m.user_id === hidden.id)!.avatar_url).toEqual(
      expect.stringContaining('gravatar'),
    );
    expect((await list(member, false)).every((m) => typeof m.avatar_url === 'string')).toBe(true);
  });

  it('filters by user_ids and rejects unknown ids', async () => {
    const body = expectSuccess(
      await as(member, org.host).get('/users', { user_ids: [guest.id, admin.id] }),
    );
    expect((body.members as { user_id: number }[]).map((m) => m.user_id)).toEqual(
      ids([guest, admin]),
    );
    const other = await createTestRealm();
    expectError(
      await as(member, org.host).get('/users', { user_ids: [other.owner.id] }),
      `Invalid user ID: ${other.owner.id}`,
    );
    expectError(
      await as(member, org.host).get('/users', { user_ids: 'x' }),
      'user_ids is not valid JSON',
    );
    expectError(
      await as(member, org.host).get('/users', { user_ids: '[0]' }),
      'user_ids[0] is too small',
    );
  });

  it('includes custom profile fields when asked, rendered where the type is Markdown', async () => {
    const text = await addProfileField(org.realm.id, 1);
    const date = await addProfileField(org.realm.id, 4);
    await prisma().customProfileFieldValue.createMany({
      data: [
        {
          fieldId: text.id,
          userId: member.id,
          value: 'Hi <there>',
          renderedValue: '<p>Hi &lt;there&gt;</p>',
        },
        { fieldId: date.id, userId: member.id, value: '2020-02-29' },
      ],
    });
    const user = expectSuccess(
      await as(guest, org.host).get(`/users/${member.id}`, { include_custom_profile_fields: true }),
    ).user as Record<string, unknown>;
    expect(user.profile_data).toEqual({
      [text.id]: { value: 'Hi <there>', rendered_value: '<p>Hi &lt;there&gt;</p>' },
      [date.id]: { value: '2020-02-29' },
    });
    const plain = expectSuccess(await as(guest, org.host).get(`/users/${member.id}`))
      .user as Record<string, unknown>;
    expect(plain).not.toHaveProperty('profile_data');
  });

  it('answers unknown ids, other organizations and bad ids', async () => {
    const other = await createTestRealm();
    expectError(await as(member, org.host).get(`/users/${other.owner.id}`), 'No such user');
    expectError(await as(member, org.host).get('/users/2147483647'), 'No such user');
    expectError(await as(member, org.host).get('/users/99999999999999'), 'No such user');
    expectError(await as(member, org.host).get('/users/abc'), 'No such user');
  });
});

describe('GET /users/{email}', () => {
  it('finds a visible real address, and any user by the dummy address of this organization', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    const hidden = await setVisibility(await createTestUser(org.realm), 4);
    const byReal = expectSuccess(
      await as(member, org.host).get(
        `/users/${encodeURIComponent(org.owner.deliveryEmail.toUpperCase())}`,
      ),
    );
    expect((byReal.user as { user_id: number }).user_id).toBe(org.owner.id);
    expectError(
      await as(member, org.host).get(`/users/${encodeURIComponent(hidden.deliveryEmail)}`),
      'No such user',
    );
    for (const domain of [`${org.realm.stringId}.localhost`, org.host]) {
      const byDummy = expectSuccess(
        await as(member, org.host).get(`/users/user${hidden.id}@${domain}`),
      );
      expect((byDummy.user as { user_id: number }).user_id).toBe(hidden.id);
    }
    expectError(
      await as(member, org.host).get(`/users/user${hidden.id}@elsewhere.test`),
      'No such user',
    );
  });
});

describe('POST /users', () => {
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
  });

  it('lets an owner create a member who can then log in', async () => {
    const before = await activeIds(org.realm.id);
    const published = await captureEvents(org.realm.id, async () => {
      const res = await as(org.owner, org.host).post('/users', {
        email: 'new@example.com',
        password: 'pw12345',
        full_name: 'New Person',
      });
      expect(expectSuccess(res).user_id).toEqual(expect.any(Number));
    });
    const created = await prisma().user.findFirstOrThrow({
      where: { realmId: org.realm.id, deliveryEmail: 'new@example.com' },
    });
    expect(created).toMatchObject({ role: 400, fullName: 'New Person', isBot: false });
    expect(await verifyPassword('pw12345', created.passwordHash)).toBe(true);
    const add = published.find(
      (p) => p.event.type === 'realm_user' && p.event.op === 'add' && p.users.includes(created.id),
    )!;
    expect(add.users).toEqual([...before, created.id]);
    expect(add.event.person).toMatchObject({
      user_id: created.id,
      email: 'new@example.com',
      full_name: 'New Person',
      role: 400,
    });
    // Their first message: Zulip's welcome from the Welcome Bot, starred and unread (a member's
    // has no guide to setting up the organization).
    const { messages } = expectSuccess(
      await as(created, org.host).get('/messages?anchor=newest&num_before=10&num_after=0'),
    ) as { messages: Record<string, unknown>[] };
    expect(messages).toEqual([
      expect.objectContaining({
        sender_email: 'welcome-bot@zulip.com',
        sender_full_name: 'Welcome Bot',
        content: expect.stringContaining('<p>Hello, and welcome to Zulip!'),
        flags: ['starred'],
      }),
    ]);
    expect(messages[0]!.content).not.toContain('Setting up your organization');
  });

  it('lets an administrator create users only with can_create_users', async () => {
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    expectError(
      await as(admin, org.host).post('/users', {
        email: 'a1@example.com',
        password: 'x',
        full_name: 'A',
      }),
      'Insufficient permission',
    );
    await prisma().user.update({ where: { id: admin.id }, data: { canCreateUsers: true } });
    expectSuccess(
      await as(admin, org.host).post('/users', {
        email: 'a1@example.com',
        password: 'x',
        full_name: 'A',
      }),
    );
  });

  it("tells everyone of a new user's system groups", async () => {
    await prisma().user.update({ where: { id: org.owner.id }, data: { canCreateUsers: true } });
    const email = `joins${Date.now()}@example.com`;
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.owner, org.host).post('/users', { email, password: 'x', full_name: 'J' }),
      );
    });
    const created = await prisma().user.findFirstOrThrow({
      where: { realmId: org.realm.id, deliveryEmail: email },
    });
    const members = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:members' },
    });
    expect(
      published.filter((p) => p.event.type === 'user_group').map((p) => p.event),
    ).toContainEqual({
      type: 'user_group',
      op: 'add_members',
      group_id: members.id,
      user_ids: [created.id],
    });
  });

  it('creates one user when two requests race for the same address', async () => {
    const email = `race${Date.now()}@example.com`;
    const answers = await Promise.all(
      [1, 2, 3].map(() =>
        as(org.owner, org.host).post('/users', { email, password: 'pw', full_name: 'Racer' }),
      ),
    );
    expect(answers.map((res) => res.status).sort()).toEqual([200, 400, 400]);
    for (const res of answers.filter((r) => r.status === 400))
      expectError(res, 'Email is already in use.');
    expect(
      await prisma().user.count({ where: { realmId: org.realm.id, deliveryEmail: email } }),
    ).toBe(1);
  });

  it('refuses duplicates, bad addresses and bad names', async () => {
    expectError(
      await as(org.owner, org.host).post('/users', {
        email: org.owner.deliveryEmail.toUpperCase(),
        password: 'x',
        full_name: 'Dup',
      }),
      'Email is already in use.',
    );
    expectError(
      await as(org.owner, org.host).post('/users', {
        email: 'nope',
        password: 'x',
        full_name: 'X',
      }),
      "Invalid email 'nope'",
    );
    expectError(
      await as(org.owner, org.host).post('/users', {
        email: 'b@example.com',
        password: 'x',
        full_name: '  ',
      }),
      'Name too short!',
    );
    expectError(
      await as(org.owner, org.host).post('/users', {
        email: 'b@example.com',
        password: 'x',
        full_name: 'x'.repeat(101),
      }),
      'Name too long!',
    );
    expectError(
      await as(org.owner, org.host).post('/users', { email: 'b@example.com', full_name: 'B' }),
      "Missing 'password' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });
});

describe('bots', () => {
  it('POST /bots creates a bot owned by the caller with its own key; GET /bots lists it', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    let created: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      created = expectSuccess(
        await as(member, org.host).post('/bots', { full_name: 'Helper', short_name: 'helper' }),
      );
    });
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    expect(bot).toMatchObject({
      isBot: true,
      botType: 1,
      botOwnerId: member.id,
      // The organization host has a port: Zulip's FAKE_EMAIL_DOMAIN rule applies.
      deliveryEmail: 'helper-bot@localhost',
      fullName: 'Helper',
    });
    expect(created.api_key).toBe(bot.apiKey);
    expectSuccess(await as(bot, org.host).get('/users/me'));

    const owned = expectSuccess(await as(member, org.host).get('/bots')).bots as Record<
      string,
      unknown
    >[];
    expect(owned).toEqual([
      expect.objectContaining({
        username: bot.deliveryEmail,
        user_id: bot.id,
        bot_type: 1,
        api_key: bot.apiKey,
        owner_id: member.id,
      }),
    ]);
    expect(
      expectSuccess(await as(await createTestUser(org.realm), org.host).get('/bots')).bots,
    ).toEqual([]);
    // Only one's own, administrators included (Zulip's get_bots_backend).
    expect(expectSuccess(await as(org.owner, org.host).get('/bots')).bots).toEqual([]);

    const realmBot = published.find((p) => p.event.type === 'realm_bot')!;
    expect(realmBot.users).toEqual(ids([org.owner, member]));
    const person = published.find((p) => p.event.type === 'realm_user')!.event.person as Record<
      string,
      unknown
    >;
    expect(person).toMatchObject({
      user_id: bot.id,
      is_bot: true,
      bot_type: 1,
      bot_owner_id: member.id,
      email: bot.deliveryEmail,
    });
  });

  it('refuses guests, bots, taken names and unsupported types', async () => {
    const org = await createTestRealm();
    const guest = await createTestUser(org.realm, Role.GUEST);
    expectError(
      await as(guest, org.host).post('/bots', { full_name: 'G', short_name: 'g' }),
      'Not allowed for guest users',
    );
    const first = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'One', short_name: 'one' }),
    );
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: first.user_id as number } });
    expectError(
      await as(bot, org.host).post('/bots', { full_name: 'Two', short_name: 'two' }),
      'This endpoint does not accept bot requests.',
    );
    expectError(
      await as(org.owner, org.host).post('/bots', { full_name: 'One again', short_name: 'one' }),
      'Username already in use',
    );
    expectError(
      await as(org.owner, org.host).post('/bots', { full_name: 'X', short_name: 'bad name!' }),
      'Bad name or username',
    );
    // Zulip trims the short name and appends "-bot" to it as typed.
    const typed = expectSuccess(
      await as(org.owner, org.host).post('/bots', {
        full_name: 'Typed',
        short_name: ' My.Bot+1-bot ',
      }),
    ) as { user_id: number };
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: typed.user_id } })).deliveryEmail,
    ).toMatch(/^My\.Bot\+1-bot-bot@/);
    for (const short_name of ['.x', 'x..y', '   ', 'a@b'])
      expectError(
        await as(org.owner, org.host).post('/bots', { full_name: 'Z', short_name }),
        'Bad name or username',
      );
    expectError(
      await as(org.owner, org.host).post('/bots', { full_name: 'X', short_name: 'x', bot_type: 9 }),
      'Invalid bot type',
    );
    expectError(
      await as(org.owner, org.host).post('/bots', { full_name: 'X', short_name: 'x', bot_type: 4 }),
      'Embedded bots are not enabled.',
    );
  });
});

describe('PATCH /users/{id} and /users/{email}', () => {
  let org: TestRealm;
  let admin: User;
  beforeAll(async () => {
    org = await createTestRealm();
    admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
  });

  it('renames a user and tells everyone who can see them', async () => {
    const target = await createTestUser(org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(admin, org.host).patch(`/users/${target.id}`, { full_name: 'Renamed Person' }),
      );
    });
    expect((await prisma().user.findUniqueOrThrow({ where: { id: target.id } })).fullName).toBe(
      'Renamed Person',
    );
    expect(published).toEqual([
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: { user_id: target.id, full_name: 'Renamed Person' },
        },
        users: await activeIds(org.realm.id),
      },
    ]);
    // A blank name and the name the user has are passed over (Zulip's update_user_backend).
    const unchanged = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(admin, org.host).patch(`/users/${target.id}`, { full_name: '   ' }));
      expectSuccess(
        await as(admin, org.host).patch(`/users/${target.id}`, { full_name: 'Renamed Person' }),
      );
    });
    expect(unchanged).toEqual([]);
    expect((await prisma().user.findUniqueOrThrow({ where: { id: target.id } })).fullName).toBe(
      'Renamed Person',
    );
  });

  it("lets administrators administer owners too (Zulip's can_admin_user), all but the owner role and deactivation", async () => {
    // An organization of its own: a second owner would change the other tests' only owner.
    const org = await createTestRealm();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const owner = await createTestUser(org.realm, Role.OWNER, { fullName: 'Second Owner' });
    expectSuccess(
      await as(admin, org.host).patch(`/users/${owner.id}`, { full_name: 'Renamed Owner' }),
    );
    expect((await prisma().user.findUniqueOrThrow({ where: { id: owner.id } })).fullName).toBe(
      'Renamed Owner',
    );
    expectError(
      await as(admin, org.host).patch(`/users/${owner.id}`, { role: Role.MEMBER }),
      'Insufficient permission',
    );
    expectError(await as(admin, org.host).delete(`/users/${owner.id}`), 'Insufficient permission');
    expectSuccess(await as(org.owner, org.host).delete(`/users/${owner.id}`));
    expectSuccess(await as(admin, org.host).post(`/users/${owner.id}/reactivate`));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: owner.id } })).isActive).toBe(
      true,
    );
  });

  it('changes roles with the owner rules', async () => {
    const target = await createTestUser(org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(admin, org.host).patch(`/users/${target.id}`, { role: 300 }));
    });
    // Then the system groups it left and joined, to everyone (Zulip's do_change_user_role).
    const systemGroup = async (name: string) =>
      (await prisma().userGroup.findFirstOrThrow({ where: { realmId: org.realm.id, name } })).id;
    const group = (op: string, id: number) => ({
      type: 'user_group',
      op,
      group_id: id,
      user_ids: [target.id],
    });
    expect(published.map((p) => p.event)).toEqual([
      { type: 'realm_user', op: 'update', person: { user_id: target.id, role: 300 } },
      ...[await systemGroup('role:members'), await systemGroup('role:fullmembers')]
        .sort((x, y) => x - y)
        .map((id) => group('remove_members', id)),
      group('add_members', await systemGroup('role:moderators')),
    ]);
    const everyone = await prisma().user.findMany({
      where: { realmId: org.realm.id, isActive: true },
      select: { id: true },
    });
    expect(published[1]!.users).toEqual(everyone.map((u) => u.id).sort((x, y) => x - y));
    // Moving to the moderators' system group.
    const groups = await prisma().userGroupMembership.findMany({
      where: { userId: target.id },
      include: { userGroup: true },
    });
    expect(groups.map((g) => g.userGroup.name)).toEqual(['role:moderators']);

    expectError(
      await as(admin, org.host).patch(`/users/${target.id}`, { role: 100 }),
      'Insufficient permission',
    );
    expectError(
      await as(admin, org.host).patch(`/users/${org.owner.id}`, { role: 200 }),
      'Insufficient permission',
    );
    expectError(
      await as(org.owner, org.host).patch(`/users/${org.owner.id}`, { role: 200 }),
      'The owner permission cannot be removed from the only organization owner.',
    );
    expectError(
      await as(admin, org.host).patch(`/users/${target.id}`, { role: 150 }),
      'Invalid role',
    );
    expectError(
      await as(admin, org.host).patch(`/users/${target.id}`, { role: 'x' }),
      'role is not an integer',
    );

    expectSuccess(await as(org.owner, org.host).patch(`/users/${target.id}`, { role: 100 }));
    expectSuccess(await as(org.owner, org.host).patch(`/users/${org.owner.id}`, { role: 400 }));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: org.owner.id } })).role).toBe(400);
  });

  it('refuses to make a guest an administrator directly (spec 4.1)', async () => {
    const owner = (await createTestRealm()).owner;
    const realm = await prisma().realm.findUniqueOrThrow({ where: { id: owner.realmId } });
    const host = `${realm.stringId}.localhost:9991`;
    const guest = await createTestUser(realm, Role.GUEST);
    expectError(
      await as(owner, host).patch(`/users/${guest.id}`, { role: 200 }),
      'Guests cannot be organization administrators',
    );
    expectSuccess(await as(owner, host).patch(`/users/${guest.id}`, { role: 400 }));
    expectSuccess(await as(owner, host).patch(`/users/${guest.id}`, { role: 200 }));
  });

  it('validates profile_data per field type and publishes one event per field', async () => {
    const target = await createTestUser(org.realm);
    const short = await addProfileField(org.realm.id, 1);
    const select = await addProfileField(org.realm.id, 3, {
      fieldData: JSON.stringify({ a: { text: 'A', order: '1' }, b: { text: 'B', order: '2' } }),
    });
    const date = await addProfileField(org.realm.id, 4);
    const link = await addProfileField(org.realm.id, 5);
    const people = await addProfileField(org.realm.id, 6);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(admin, org.host).patch(`/users/${target.id}`, {
          profile_data: [
            { id: short.id, value: 'Short *text*' },
            { id: select.id, value: 'b' },
            { id: date.id, value: '2024-02-29' },
            { id: link.id, value: 'https://example.com/x' },
            { id: people.id, value: [admin.id] },
          ],
        }),
      );
    });
    const values = await prisma().customProfileFieldValue.findMany({
      where: { userId: target.id },
      orderBy: { fieldId: 'asc' },
    });
    expect(values.map((v) => v.value)).toEqual([
      'Short *text*',
      'b',
      '2024-02-29',
      'https://example.com/x',
      JSON.stringify([admin.id]),
    ]);
    expect(
      published.map(
        (p) => (p.event.person as { custom_profile_field: unknown }).custom_profile_field,
      ),
    ).toEqual([
      { id: short.id, value: 'Short *text*', rendered_value: '<p>Short <em>text</em></p>' },
      { id: select.id, value: 'b' },
      { id: date.id, value: '2024-02-29' },
      { id: link.id, value: 'https://example.com/x' },
      { id: people.id, value: JSON.stringify([admin.id]) },
    ]);

    const bad: [unknown, string][] = [
      [
        [{ id: short.id, value: 'x'.repeat(51) }],
        `${short.name} is too long (limit: 50 characters)`,
      ],
      [[{ id: select.id, value: 'zzz' }], `'zzz' is not a valid choice for '${select.name}'.`],
      [[{ id: date.id, value: '2023-02-29' }], `${date.name} is not a date`],
      [[{ id: link.id, value: 'javascript:alert(1)' }], `${link.name} is not a URL`],
      [[{ id: people.id, value: [999999999] }], 'Invalid user IDs: 999999999'],
      [[{ id: 999999999, value: 'x' }], 'Field id 999999999 not found.'],
      [[{ id: short.id }], "profile_data[0]['value'] field is missing"],
      [{ id: short.id }, 'profile_data is not a list'],
    ];
    for (const [profileData, message] of bad) {
      expectError(
        await as(admin, org.host).patch(`/users/${target.id}`, { profile_data: profileData }),
        message,
      );
    }
    // Nothing of a refused request was written: the first value is unchanged.
    expect(
      (
        await prisma().customProfileFieldValue.findFirstOrThrow({
          where: { userId: target.id, fieldId: short.id },
        })
      ).value,
    ).toBe('Short *text*');

    expectSuccess(
      await as(admin, org.host).patch(`/users/${target.id}`, {
        profile_data: [{ id: short.id, value: null }],
      }),
    );
    expect(
      await prisma().customProfileFieldValue.count({
        where: { userId: target.id, fieldId: short.id },
      }),
    ).toBe(0);
  });

  it('changes the address only for owners with can_change_user_emails', async () => {
    const org = await createTestRealm();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const target = await createTestUser(org.realm);
    expectError(
      await as(admin, org.host).patch(`/users/${target.id}`, { new_email: 'moved@example.com' }),
      'Insufficient permission',
    );
    expectError(
      await as(org.owner, org.host).patch(`/users/${target.id}`, {
        new_email: 'moved@example.com',
      }),
      'Insufficient permission',
    );
    await prisma().user.update({
      where: { id: org.owner.id },
      data: { canChangeUserEmails: true },
    });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.owner, org.host).patch(`/users/${target.id}`, {
          new_email: 'moved@example.com',
        }),
      );
    });
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: target.id } })).deliveryEmail,
    ).toBe('moved@example.com');
    expect(published.map((p) => p.event.person)).toEqual([
      { user_id: target.id, delivery_email: 'moved@example.com' },
      { user_id: target.id, new_email: 'moved@example.com' },
      // The avatar URL hashes the new address.
      {
        user_id: target.id,
        avatar_source: 'G',
        avatar_url: expect.stringContaining(md5('moved@example.com')) as string,
        avatar_url_medium: expect.stringMatching(/&s=500$/) as string,
        avatar_version: 1,
      },
    ]);
    expectError(
      await as(org.owner, org.host).patch(`/users/${target.id}`, {
        new_email: admin.deliveryEmail,
      }),
      'Email is already in use.',
    );
  });

  it('finds the target by address, real or dummy', async () => {
    const target = await setVisibility(await createTestUser(org.realm), 4);
    expectError(
      await as(admin, org.host).patch(`/users/${encodeURIComponent(target.deliveryEmail)}`, {
        full_name: 'By Real',
      }),
      'No such user',
    );
    expectSuccess(
      await as(admin, org.host).patch(`/users/user${target.id}@${org.host}`, {
        full_name: 'By Dummy',
      }),
    );
    const visible = await createTestUser(org.realm);
    expectSuccess(
      await as(admin, org.host).patch(`/users/${encodeURIComponent(visible.deliveryEmail)}`, {
        full_name: 'By Real',
      }),
    );
    expect((await prisma().user.findUniqueOrThrow({ where: { id: visible.id } })).fullName).toBe(
      'By Real',
    );
  });

  it('lets a bot owner rename their own bot, nothing more', async () => {
    const owner = await createTestUser(org.realm);
    const bot = expectSuccess(
      await as(owner, org.host).post('/bots', { full_name: 'Mine', short_name: `mine${owner.id}` }),
    );
    expectSuccess(
      await as(owner, org.host).patch(`/users/${bot.user_id as number}`, {
        full_name: 'Still mine',
      }),
    );
    expectError(
      await as(owner, org.host).patch(`/users/${bot.user_id as number}`, { role: 200 }),
      'Insufficient permission',
    );
  });
});

describe('DELETE /users/{id}, DELETE /users/me and reactivation', () => {
  it('deactivates the user after their bots and tells everyone', async () => {
    const org = await createTestRealm();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const target = await createTestUser(org.realm);
    const bot = expectSuccess(
      await as(target, org.host).post('/bots', { full_name: 'Bot', short_name: 'tb' }),
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(admin, org.host).delete(`/users/${target.id}`));
    });
    const rows = await prisma().user.findMany({
      where: { id: { in: [target.id, bot.user_id as number] } },
    });
    expect(rows.every((row) => !row.isActive)).toBe(true);
    const deactivations = published
      .filter((p) => p.event.type === 'realm_user')
      .map((p) => (p.event.person as { user_id: number }).user_id);
    expect(deactivations.sort((a, b) => a - b)).toEqual(
      [target.id, bot.user_id as number].sort((a, b) => a - b),
    );
    // The bot went first (its audit entry is older).
    const audit = await prisma().auditLog.findMany({
      where: { realmId: org.realm.id, eventType: 103 },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((entry) => entry.modifiedUserId)).toEqual([bot.user_id, target.id]);
    const targetEvent = published.find(
      (p) => (p.event.person as { user_id?: number } | undefined)?.user_id === target.id,
    )!;
    // Everyone still active hears of it, and the user's own clients too; the bot went first.
    expect(targetEvent).toEqual({
      event: { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: false } },
      users: ids([org.owner, admin, target]),
    });
    expect((await as(target, org.host).get('/users/me')).status).toBe(401);
    expectError(await as(admin, org.host).delete(`/users/${target.id}`), 'User is deactivated');
  });

  it('applies the actions: deleted profile and deleted messages', async () => {
    const org = await createTestRealm();
    const target = await createTestUser(org.realm);
    const recipient = await prisma().recipient.findUniqueOrThrow({
      where: { type_typeId: { type: 1, typeId: org.owner.id } },
    });
    const message = await prisma().message.create({
      data: {
        realmId: org.realm.id,
        senderId: target.id,
        recipientId: recipient.id,
        content: 'hi',
        isChannelMessage: false,
      },
    });
    await prisma().userMessage.createMany({
      data: [
        { userId: org.owner.id, messageId: message.id },
        { userId: target.id, messageId: message.id },
      ],
    });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.owner, org.host).delete(`/users/${target.id}`, {
          actions: { delete_profile: true, delete_direct_messages: true },
        }),
      );
    });
    const after = await prisma().user.findUniqueOrThrow({ where: { id: target.id } });
    expect(after).toMatchObject({
      isActive: false,
      isDeleted: true,
      fullName: `Deleted user ${target.id}`,
    });
    expect(await prisma().message.findUnique({ where: { id: message.id } })).toBeNull();
    // The picture goes: the avatar form with the next version.
    expect(
      published.find(
        (p) => p.event.type === 'realm_user' && 'avatar_version' in (p.event.person as object),
      )?.event.person,
    ).toEqual({
      user_id: target.id,
      avatar_source: 'G',
      avatar_url: expect.stringContaining(`version=${target.avatarVersion + 1}`) as string,
      avatar_url_medium: expect.stringContaining('&s=500') as string,
      avatar_version: target.avatarVersion + 1,
    });
    expect(published.find((p) => p.event.type === 'delete_message')).toEqual({
      event: { type: 'delete_message', message_ids: [message.id], message_type: 'private' },
      users: ids([org.owner, target]),
    });
    const shown = expectSuccess(await as(org.owner, org.host).get(`/users/${target.id}`))
      .user as Record<string, unknown>;
    expect(shown).toMatchObject({ is_deleted: true, is_active: false });
    // A deleted profile is a placeholder for good, as Zulip's.
    expectError(
      await as(org.owner, org.host).post(`/users/${target.id}/reactivate`),
      'Cannot activate a placeholder account; ask the user to sign up, instead.',
    );
    expect(await prisma().user.findUniqueOrThrow({ where: { id: target.id } })).toMatchObject({
      isActive: false,
      isMirrorDummy: true,
    });
    expectError(
      await as(org.owner, org.host).delete(`/users/${target.id}`, { actions: { explode: true } }),
      'Argument "explode" at actions is unexpected',
    );
  });

  it('refuses to deactivate the only owner, by an administrator or by themselves', async () => {
    const org = await createTestRealm();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    expectError(
      await as(admin, org.host).delete(`/users/${org.owner.id}`),
      'Insufficient permission',
    );
    expectError(
      await as(org.owner, org.host).delete(`/users/${org.owner.id}`),
      'Cannot deactivate the only organization owner',
    );
    // Deactivating oneself has Zulip's own error (deactivate_user_own_backend).
    const own = await as(org.owner, org.host).delete('/users/me');
    expectError(
      own,
      'Cannot deactivate the only organization owner.',
      400,
      'CANNOT_DEACTIVATE_LAST_USER',
    );
    expect(own.body).toMatchObject({ is_last_owner: true, entity: 'organization owner' });
    expect((await prisma().user.findUniqueOrThrow({ where: { id: org.owner.id } })).isActive).toBe(
      true,
    );
  });

  it('DELETE /users/me refuses the organization’s last active user first', async () => {
    // The owner alone (the system bots do not count, as in Zulip's separate organization).
    const org = await createTestRealm();
    const alone = await as(org.owner, org.host).delete('/users/me');
    expectError(alone, 'Cannot deactivate the only user.', 400, 'CANNOT_DEACTIVATE_LAST_USER');
    expect(alone.body).toMatchObject({ is_last_owner: false, entity: 'user' });
  });

  it('DELETE /users/me deactivates the caller', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    expectSuccess(await as(member, org.host).delete('/users/me'));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: member.id } })).isActive).toBe(
      false,
    );
  });

  it('reactivates a deactivated user', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    expectSuccess(await as(org.owner, org.host).delete(`/users/${member.id}`));
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).post(`/users/${member.id}/reactivate`));
    });
    expect(published).toEqual([
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: { user_id: member.id, is_active: true },
        },
        users: await activeIds(org.realm.id),
      },
      // Zulip's: realm_user events do not carry the consent to data exports.
      {
        event: { type: 'realm_export_consent', user_id: member.id, consented: false },
        users: [org.owner.id],
      },
    ]);
    expectSuccess(await as(member, org.host).get('/users/me'));
    expectError(
      await as(org.owner, org.host).post(`/users/${member.id}/reactivate`),
      'User is already active.',
    );
  });

  it('gives a bot whose owner is deactivated to whoever reactivates it, as Zulip', async () => {
    const org = await createTestRealm();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const member = await createTestUser(org.realm);
    const { user_id: botId } = expectSuccess(
      await as(member, org.host).post('/bots', { full_name: 'Orphan', short_name: 'orphan' }),
    ) as { user_id: number };
    // Deactivating the member deactivates their bots.
    expectSuccess(await as(org.owner, org.host).delete(`/users/${member.id}`));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: botId } })).isActive).toBe(false);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(admin, org.host).post(`/users/${botId}/reactivate`));
    });
    expect(await prisma().user.findUniqueOrThrow({ where: { id: botId } })).toMatchObject({
      isActive: true,
      botOwnerId: admin.id,
    });
    expect(published.map(({ event }) => event)).toEqual(
      expect.arrayContaining([
        { type: 'realm_bot', op: 'update', bot: { user_id: botId, owner_id: admin.id } },
        {
          type: 'realm_user',
          op: 'update',
          person: { user_id: botId, bot_owner_id: admin.id },
        },
      ]),
    );
  });
});

describe('DELETE /users/{id}: deleting the messages of the deactivated user', () => {
  const everyKind = {
    delete_public_channel_messages: true,
    delete_private_channel_messages: true,
    delete_direct_messages: true,
  };
  const deletions = (published: Published[]) =>
    published.filter((entry) => entry.event.type === 'delete_message');
  const remaining = async (messageIds: number[]) =>
    (
      await prisma().message.findMany({
        where: { id: { in: messageIds } },
        select: { id: true },
        orderBy: { id: 'asc' },
      })
    ).map((message) => message.id);

  async function sent(user: User, host: string, form: Record<string, unknown>): Promise<number> {
    return expectSuccess(await send(user, host, { content: 'gone soon', ...form })).id as number;
  }

  /** Deactivates `target` as an owner would; returns the deletions, in batches of `batchSize`. */
  async function deactivate(target: User, actingUser: User, batchSize: number) {
    const deactivated = await runAction((ctx) =>
      doDeactivateUser(ctx, target, actingUser.id, everyKind),
    );
    return () => doDeleteMessagesOf(deactivated, everyKind, { batchSize });
  }

  it('deletes the chosen kinds, with one event per topic or conversation to those who had them', async () => {
    const org = await createMessageOrg();
    const { member, other, admin, owner, guest } = org;
    const inA = [await sent(member, org.host, { type: 'stream', to: 'general', topic: 'a' })];
    const inB = [await sent(member, org.host, { type: 'stream', to: 'general', topic: 'b' })];
    inA.push(await sent(member, org.host, { type: 'stream', to: 'general', topic: 'a' }));
    const secret = await sent(member, org.host, { type: 'stream', to: 'secret', topic: 'a' });
    const direct = [
      await sent(member, org.host, { type: 'private', to: JSON.stringify([other.id]) }),
      await sent(member, org.host, { type: 'private', to: JSON.stringify([other.id]) }),
    ];
    const group = await sent(member, org.host, {
      type: 'private',
      to: JSON.stringify([other.id, admin.id]),
    });
    const kept = await sent(other, org.host, { type: 'stream', to: 'general', topic: 'a' });
    const bot = expectSuccess(
      await as(member, org.host).post('/bots', { full_name: 'Helper', short_name: 'helper' }),
    );
    const botUser = await prisma().user.findUniqueOrThrow({
      where: { id: bot.user_id as number },
    });
    const byBot = await sent(botUser, org.host, { type: 'stream', to: 'general', topic: 'a' });
    const all = [...inA, ...inB, secret, ...direct, group, kept, byBot];

    // Refused before anything happens: a member asking, and a malformed action.
    expectError(
      await as(other, org.host).delete(`/users/${member.id}`, { actions: everyKind }),
      'Insufficient permission',
    );
    expectError(
      await as(owner, org.host).delete(`/users/${member.id}`, {
        actions: { delete_direct_messages: 'yes' },
      }),
      "actions['delete_direct_messages'] is not a boolean",
    );
    expect(await remaining(all)).toEqual([...all].sort((x, y) => x - y));

    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(owner, org.host).delete(`/users/${member.id}`, {
          actions: { delete_public_channel_messages: true, delete_direct_messages: true },
        }),
      );
    });
    expect(await remaining(all)).toEqual([secret, kept]);
    const general = { message_type: 'stream', stream_id: org.general.id };
    const subscribers = ids([owner, member, other, guest]);
    expectPublished(deletions(published), [
      {
        event: { type: 'delete_message', message_ids: [byBot], ...general, topic: 'a' },
        users: subscribers,
      },
      {
        event: { type: 'delete_message', message_ids: inA, ...general, topic: 'a' },
        users: subscribers,
      },
      {
        event: { type: 'delete_message', message_ids: inB, ...general, topic: 'b' },
        users: subscribers,
      },
      {
        event: { type: 'delete_message', message_ids: direct, message_type: 'private' },
        users: ids([member, other]),
      },
      {
        event: { type: 'delete_message', message_ids: [group], message_type: 'private' },
        users: ids([member, other, admin]),
      },
    ]);
  });

  it('spreads the deletions over batches, each with its own events', async () => {
    const org = await createMessageOrg();
    const messageIds: number[] = [];
    for (const topic of ['a', 'b', 'a', 'a', 'b'])
      messageIds.push(await sent(org.member, org.host, { type: 'stream', to: 'general', topic }));
    const published = await captureEvents(org.realm.id, async () =>
      (await deactivate(org.member, org.owner, 2))(),
    );
    expect(await remaining(messageIds)).toEqual([]);
    const [a1, b1, a2, a3, b2] = messageIds as [number, number, number, number, number];
    const general = { message_type: 'stream', stream_id: org.general.id };
    const users = ids([org.owner, org.member, org.other, org.guest]);
    expectPublished(deletions(published), [
      { event: { type: 'delete_message', message_ids: [a1], ...general, topic: 'a' }, users },
      { event: { type: 'delete_message', message_ids: [b1], ...general, topic: 'b' }, users },
      { event: { type: 'delete_message', message_ids: [a2, a3], ...general, topic: 'a' }, users },
      { event: { type: 'delete_message', message_ids: [b2], ...general, topic: 'b' }, users },
    ]);
  });

  it('answers an error when a batch fails, the deactivation staying committed', async () => {
    const org = await createMessageOrg();
    const message = await sent(org.member, org.host, { type: 'stream', to: 'general', topic: 'a' });
    const query = pg.Client.prototype.query;
    const failing = jest.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
      this: pg.Client,
      ...args: unknown[]
    ) {
      if (statementText(args[0]).includes('WITH batch AS'))
        return Promise.reject(new Error('the disk is on fire'));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query);
    const logged = jest.spyOn(getLogger(), 'error');
    try {
      expectError(
        await as(org.owner, org.host).delete(`/users/${org.member.id}`, { actions: everyKind }),
        'Internal server error',
        500,
      );
      expect(logged).toHaveBeenCalledWith(
        "deleting a deactivated user's messages failed",
        expect.objectContaining({ userId: org.member.id }),
      );
    } finally {
      failing.mockRestore();
      logged.mockRestore();
    }
    expect((await prisma().user.findUniqueOrThrow({ where: { id: org.member.id } })).isActive).toBe(
      false,
    );
    expect(await remaining([message])).toEqual([message]);
  });

  it('costs the same statements per batch however many messages and conversations it holds', async () => {
    const org = await createMessageOrg();
    const holders = [org.owner.id, org.member.id, org.other.id, org.guest.id];
    const places = [
      ...['t0', 't1', 't2', 't3', 't4'].map((topic) => ({
        recipientId: org.general.recipientId!,
        topic,
        channel: true,
        holders,
      })),
      ...['t0', 't1'].map((topic) => ({
        recipientId: org.secret.recipientId!,
        topic,
        channel: true,
        holders: [org.member.id],
      })),
      ...[org.other, org.admin].map((user) => ({
        recipientId: 0,
        topic: '',
        channel: false,
        holders: [user.id],
      })),
    ];
    for (const place of places.filter((candidate) => !candidate.channel)) {
      const holder = place.holders[0]!;
      place.recipientId = (
        await prisma().recipient.findUniqueOrThrow({
          where: { type_typeId: { type: 1, typeId: holder } },
        })
      ).id;
    }
    const few = await seededUser(org, places.slice(0, 1), 10);
    const many = await seededUser(org, places, 300);
    const manyBatches = await seededUser(org, places, 305);
    const oneBatch = await statementsOf(await deactivate(few, org.owner, 100));
    // 300 messages in nine conversations, still one batch: the same statements as 10 in one.
    expect(await statementsOf(await deactivate(many, org.owner, 1000))).toEqual(oneBatch);
    // 31 batches (the last one partial, so no empty one follows): 31 times as many.
    expect((await statementsOf(await deactivate(manyBatches, org.owner, 10))).length).toBe(
      31 * oneBatch.length,
    );
    expect(await remaining(await sentBy([few, many, manyBatches]))).toEqual([]);
  });
});

interface Place {
  recipientId: number;
  topic: string;
  channel: boolean;
  holders: number[];
}

/** A new member of `org` who sent `count` messages spread over `places` (inserted directly:
 * hundreds of requests would only slow the test down). */
async function seededUser(org: TestRealm, places: Place[], count: number): Promise<User> {
  const sender = await createTestUser(org.realm);
  const rows = Array.from({ length: count }, (_, index) => places[index % places.length]!);
  const messages = await prisma().message.createManyAndReturn({
    data: rows.map((place) => ({
      realmId: org.realm.id,
      senderId: sender.id,
      recipientId: place.recipientId,
      subject: place.topic,
      content: 'seeded',
      isChannelMessage: place.channel,
    })),
    select: { id: true },
  });
  await prisma().userMessage.createMany({
    data: messages.flatMap((message, index) =>
      [sender.id, ...rows[index]!.holders].map((userId) => ({ userId, messageId: message.id })),
    ),
    skipDuplicates: true,
  });
  return sender;
}

async function sentBy(senders: User[]): Promise<number[]> {
  return (
    await prisma().message.findMany({
      where: { senderId: { in: senders.map((sender) => sender.id) } },
      select: { id: true },
    })
  ).map((message) => message.id);
}

function statementText(query: unknown): string {
  return typeof query === 'string' ? query : (query as { text: string }).text;
}

const OUTBOX_PUBLISHING =
  /^(SELECT id, .* AS written, notification FROM|(WITH unhurried .*)?DELETE FROM) event_outbox/;

/** The statements `run` sends (their first words), leaving out the outbox's publishing: a
 * relay pass may also drain rows that other test files committed meanwhile, and published rows
 * are deleted a moment later, inside or after `run`. */
async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  const spy = jest.spyOn(pg.Client.prototype, 'query');
  try {
    await run();
    return (
      spy.mock.calls
        .map((call) => statementText(call[0]).trim().replace(/\s+/g, ' '))
        // SELECT 1: the change listener's heartbeat, which a slow run may cross.
        .filter((text) => !OUTBOX_PUBLISHING.test(text) && text !== 'SELECT 1')
        .map((text) => text.slice(0, 40))
    );
  } finally {
    spy.mockRestore();
  }
}

describe('PATCH /settings', () => {
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
  });

  it('changes boolean settings with one user_settings event each, to the user only', async () => {
    const user = await createTestUser(org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(user, org.host).patch('/settings', {
          enable_stream_desktop_notifications: true,
          wildcard_mentions_notify: false,
        }),
      );
    });
    expect(published).toEqual([
      {
        event: {
          type: 'user_settings',
          op: 'update',
          property: 'enable_stream_desktop_notifications',
          value: true,
        },
        users: [user.id],
      },
      {
        event: {
          type: 'user_settings',
          op: 'update',
          property: 'wildcard_mentions_notify',
          value: false,
        },
        users: [user.id],
      },
    ]);
    const row = await prisma().user.findUniqueOrThrow({ where: { id: user.id } });
    expect([row.enableStreamDesktopNotifications, row.wildcardMentionsNotify]).toEqual([
      true,
      false,
    ]);
  });

  it('sends language_name with default_language', async () => {
    const user = await createTestUser(org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(user, org.host).patch('/settings', { default_language: 'de' }));
    });
    expect(published.map((p) => p.event)).toEqual([
      {
        type: 'user_settings',
        op: 'update',
        property: 'default_language',
        value: 'de',
        language_name: 'German',
      },
    ]);
    for (const language of ['klingon', 'constructor', '__proto__'])
      expectError(
        await as(user, org.host).patch('/settings', { default_language: language }),
        'Invalid default_language',
      );
  });

  it('changes the timezone for the user and everyone who sees them', async () => {
    const user = await setVisibility(await createTestUser(org.realm), 4);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(user, org.host).patch('/settings', { timezone: 'Europe/Berlin' }));
    });
    const everyoneElse = (await activeIds(org.realm.id)).filter((id) => id !== user.id);
    expectPublished(published, [
      {
        event: {
          type: 'user_settings',
          op: 'update',
          property: 'timezone',
          value: 'Europe/Berlin',
        },
        users: [user.id],
      },
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: { user_id: user.id, email: user.deliveryEmail, timezone: 'Europe/Berlin' },
        },
        users: [user.id],
      },
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: {
            user_id: user.id,
            email: `user${user.id}@${org.realm.stringId}.localhost`,
            timezone: 'Europe/Berlin',
          },
        },
        users: everyoneElse,
      },
    ]);
    expectError(
      await as(user, org.host).patch('/settings', { timezone: 'Mars/Olympus' }),
      'Not a recognized time zone',
    );
  });

  it('tells viewers who gain or lose sight of the address when visibility changes', async () => {
    const user = await createTestUser(org.realm);
    const guest = await createTestUser(org.realm, Role.GUEST);
    const member = await createTestUser(org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(user, org.host).patch('/settings', { email_address_visibility: 2 }));
    });
    // The dummy address is on the organization's host without its port.
    const dummy = `user${user.id}@${org.host.split(':')[0]}`;
    const gravatar = `https://secure.gravatar.com/avatar/${md5(dummy)}`;
    expectPublished(published, [
      {
        event: {
          type: 'user_settings',
          op: 'update',
          property: 'email_address_visibility',
          value: 2,
        },
        users: [user.id],
      },
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: { user_id: user.id, delivery_email: null },
        },
        users: [guest.id],
      },
      // The guest's API email for the user becomes the dummy one, and the avatar URL with it.
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: { user_id: user.id, new_email: dummy },
        },
        users: [guest.id],
      },
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: {
            user_id: user.id,
            avatar_source: 'G',
            avatar_url: `${gravatar}?d=identicon&version=1`,
            avatar_url_medium: `${gravatar}?d=identicon&version=1&s=500`,
            avatar_version: 1,
          },
        },
        users: [guest.id],
      },
    ]);
    expect(published.flatMap((p) => p.users)).not.toContain(member.id);
    expectError(
      await as(user, org.host).patch('/settings', { email_address_visibility: 9 }),
      'Invalid email_address_visibility',
    );
  });

  it('renames the caller, and changes the password only with the old one', async () => {
    const user = await prisma().user.update({
      where: { id: (await createTestUser(org.realm)).id },
      data: { passwordHash: await hashPassword('old') },
    });
    expectSuccess(await as(user, org.host).patch('/settings', { full_name: 'Self Named' }));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: user.id } })).fullName).toBe(
      'Self Named',
    );
    expectError(
      await as(user, org.host).patch('/settings', { old_password: 'bad', new_password: 'new' }),
      'Wrong password!',
    );
    expectSuccess(
      await as(user, org.host).patch('/settings', { old_password: 'old', new_password: 'new' }),
    );
    expect(
      await verifyPassword(
        'new',
        (await prisma().user.findUniqueOrThrow({ where: { id: user.id } })).passwordHash,
      ),
    ).toBe(true);
  });

  it('lists unsupported settings, refuses bots and bad values', async () => {
    const user = await createTestUser(org.realm);
    const res = await as(user, org.host).patch('/settings', {
      enable_sounds: false,
      made_up_setting: true,
    });
    expect(expectSuccess(res).ignored_parameters_unsupported).toEqual(['made_up_setting']);
    expectError(
      await as(user, org.host).patch('/settings', { enable_sounds: 'maybe' }),
      'enable_sounds is not a boolean',
    );
    const bot = expectSuccess(
      await as(user, org.host).post('/bots', { full_name: 'B', short_name: `b${user.id}` }),
    );
    const botUser = await prisma().user.findUniqueOrThrow({ where: { id: bot.user_id as number } });
    expectError(
      await as(botUser, org.host).patch('/settings', { enable_sounds: false }),
      'This endpoint does not accept bot requests.',
    );
  });
});

describe('bot addresses and own profiles', () => {
  it('gives bots an address on any host: the organization host, else the fake email domain', async () => {
    // Test organizations live at <sub>.localhost:9991, a host with a port: Zulip then uses
    // FAKE_EMAIL_DOMAIN, EXTERNAL_HOST without its port by default.
    const org = await createTestRealm();
    const created = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Host bot', short_name: 'host' }),
    );
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    expect(bot.deliveryEmail).toBe('host-bot@localhost');
    expect(realmBotDomain({ stringId: org.realm.stringId })).toBe('localhost');
    expect(isEmailDomain('chat.example.com')).toBe(true);
    expect(isEmailDomain('localhost:9991')).toBe(false);
    expect(isEmailDomain('127.0.0.1')).toBe(false);
  });

  it('refuses bot names already in use and addresses Django would refuse', async () => {
    const org = await createTestRealm();
    expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Twin', short_name: 'twin1' }),
    );
    expectError(
      await as(org.owner, org.host).post('/bots', { full_name: ' Twin ', short_name: 'twin2' }),
      'Name is already in use.',
    );
    // Zulip's check_bot_name_available compares names exactly.
    expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'twin', short_name: 'twin3' }),
    );
    // "a." makes "a.-bot", which Django takes.
    for (const short_name of ['..', '.a', 'a..b'])
      expectError(
        await as(org.owner, org.host).post('/bots', { full_name: `N ${short_name}`, short_name }),
        'Bad name or username',
      );
    expect(isEmailDomain('10.0.0.12')).toBe(false);
    expect(isEmailDomain('xn--p1ai.xn--p1ai')).toBe(true);
  });

  it('answers GET /users/me with the fields Zulip sends for people and for bots', async () => {
    const org = await createTestRealm();
    const me = expectSuccess(await as(org.owner, org.host).get('/users/me'));
    expect(me).not.toHaveProperty('bot_type');
    expect(me).not.toHaveProperty('bot_owner_id');
    expect(me.profile_data).toEqual({});
    expect(me.max_message_id).toBe(-1);
    const sent = expectSuccess(
      await as(org.owner, org.host).post('/messages', {
        type: 'direct',
        to: JSON.stringify([org.owner.id]),
        content: 'note to self',
      }),
    );
    expect(expectSuccess(await as(org.owner, org.host).get('/users/me')).max_message_id).toBe(
      sent.id,
    );
    const created = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Me bot', short_name: 'me' }),
    );
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    const botMe = expectSuccess(await as(bot, org.host).get('/users/me'));
    expect(botMe).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: org.owner.id });
    expect(botMe).not.toHaveProperty('profile_data');
  });
});
