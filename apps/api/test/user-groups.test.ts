import request from 'supertest';
import { getPrisma, Role, type User, SYSTEM_GROUPS } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { ensureSystemBot } from '../src/actions/system-bots';
import { groupIdsOfUser } from '../src/lib/groups';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import {
  checkCanAddMembersToGroups,
  checkGroupMentionsAllowed,
} from '../src/lib/user-group-permissions';
import {
  app,
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';
import { ACTORS, permissionMatrix, type Actor, type MatrixContext } from './permission-matrix';

interface GroupOrg extends TestRealm {
  admin: User;
  moderator: User;
  member: User;
  other: User;
  guest: User;
  bot: User;
  notificationBot: User;
  system: Map<string, number>;
}

async function createGroupOrg(): Promise<GroupOrg> {
  const org = await createTestRealm();
  const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
  const moderator = await createTestUser(org.realm, Role.MODERATOR);
  const member = await createTestUser(org.realm, Role.MEMBER);
  const other = await createTestUser(org.realm, Role.MEMBER);
  const guest = await createTestUser(org.realm, Role.GUEST);
  const created = expectSuccess(
    await as(member, org.host).post('/bots', { full_name: 'Group Bot', short_name: 'grp' }),
  );
  const bot = await getPrisma().user.findUniqueOrThrow({
    where: { id: created.user_id as number },
  });
  const groups = await getPrisma().userGroup.findMany({
    where: { realmId: org.realm.id, isSystemGroup: true },
  });
  return {
    ...org,
    admin,
    moderator,
    member,
    other,
    guest,
    bot,
    // Made up front: the channels tests create get its first message, and it is one of the
    // organization's users.
    notificationBot: await ensureSystemBot(org.realm, 'notification'),
    system: new Map(groups.map((g) => [g.name!, g.id])),
  };
}

let serial = 0;
const uniqueName = (prefix = 'group') => `${prefix}-${++serial}`;

type Group = Record<string, unknown> & { id: number; name: string };

describe('user groups', () => {
  let org: GroupOrg;
  beforeAll(async () => {
    org = await createGroupOrg();
  });
  const allUsers = () =>
    [
      org.owner,
      org.admin,
      org.moderator,
      org.member,
      org.other,
      org.guest,
      org.bot,
      org.notificationBot,
    ]
      .map((u) => u.id)
      .sort((a, b) => a - b);
  const sys = (name: string) => org.system.get(name)!;

  const create = (user: User, form: Record<string, unknown>) =>
    as(user, org.host).post('/user_groups/create', { description: '', members: [], ...form });
  const createGroup = async (user: User, form: Record<string, unknown> = {}) =>
    expectSuccess(await create(user, { name: uniqueName(), ...form })).group_id as number;
  const groups = async (user: User = org.owner, query: Record<string, unknown> = {}) =>
    expectSuccess(await as(user, org.host).get('/user_groups', query)).user_groups as Group[];
  const groupById = async (id: number) =>
    (await groups(org.owner, { include_deactivated_groups: true })).find((g) => g.id === id);
  const patch = (user: User, id: number, form: Record<string, unknown>) =>
    as(user, org.host).patch(`/user_groups/${id}`, form);
  const members = (user: User, id: number, form: Record<string, unknown>) =>
    as(user, org.host).post(`/user_groups/${id}/members`, form);
  const subgroups = (user: User, id: number, form: Record<string, unknown>) =>
    as(user, org.host).post(`/user_groups/${id}/subgroups`, form);
  const deactivate = (user: User, id: number) =>
    as(user, org.host).post(`/user_groups/${id}/deactivate`);
  const memberIds = async (id: number, direct = false) =>
    expectSuccess(
      await as(org.member, org.host).get(`/user_groups/${id}/members`, {
        direct_member_only: direct,
      }),
    ).members as number[];

  describe('POST /user_groups/create', () => {
    it('creates a group with Zulip’s default settings and tells every active user', async () => {
      const name = uniqueName();
      let id = 0;
      const published = await captureEvents(org.realm.id, async () => {
        id = expectSuccess(
          await create(org.member, {
            name,
            description: 'The team',
            members: [org.other.id, org.member.id],
          }),
        ).group_id as number;
      });
      const group = (await groupById(id))!;
      expect(group).toEqual({
        id,
        name,
        description: 'The team',
        creator_id: org.member.id,
        date_created: expect.any(Number) as number,
        members: [org.member.id, org.other.id].sort((a, b) => a - b),
        direct_subgroup_ids: [],
        is_system_group: false,
        can_add_members_group: { direct_members: [org.member.id], direct_subgroups: [] },
        can_join_group: sys(SYSTEM_GROUPS.NOBODY),
        can_leave_group: sys(SYSTEM_GROUPS.EVERYONE),
        can_manage_group: { direct_members: [org.member.id], direct_subgroups: [] },
        can_mention_group: sys(SYSTEM_GROUPS.EVERYONE),
        can_remove_members_group: sys(SYSTEM_GROUPS.NOBODY),
        deactivated: false,
      });
      expect(published).toEqual([
        { event: { type: 'user_group', op: 'add', group }, users: allUsers() },
      ]);
      // Each "group creator" setting has an anonymous group of its own.
      const row = await getPrisma().userGroup.findUniqueOrThrow({ where: { id } });
      expect(row.canAddMembersGroupId).not.toBe(row.canManageGroupId);
    });

    it('stores the settings it is given, in either form', async () => {
      const id = await createGroup(org.owner, {
        can_manage_group: sys(SYSTEM_GROUPS.MODERATORS),
        can_join_group: {
          direct_members: [org.other.id],
          direct_subgroups: [sys(SYSTEM_GROUPS.ADMINISTRATORS)],
        },
        can_mention_group: { direct_members: [], direct_subgroups: [sys(SYSTEM_GROUPS.MEMBERS)] },
        can_leave_group: { direct_members: [], direct_subgroups: [] },
      });
      const group = (await groupById(id))!;
      expect(group.can_manage_group).toBe(sys(SYSTEM_GROUPS.MODERATORS));
      expect(group.can_join_group).toEqual({
        direct_members: [org.other.id],
        direct_subgroups: [sys(SYSTEM_GROUPS.ADMINISTRATORS)],
      });
      // One subgroup and no members is that group; nothing at all is "nobody".
      expect(group.can_mention_group).toBe(sys(SYSTEM_GROUPS.MEMBERS));
      expect(group.can_leave_group).toBe(sys(SYSTEM_GROUPS.NOBODY));
    });

    it('adds initial subgroups after the group, whatever its settings say', async () => {
      const sub = await createGroup(org.owner);
      const name = uniqueName();
      let id = 0;
      const published = await captureEvents(org.realm.id, async () => {
        id = expectSuccess(
          await create(org.member, {
            name,
            subgroups: [sub],
            can_add_members_group: sys(SYSTEM_GROUPS.NOBODY),
            can_manage_group: sys(SYSTEM_GROUPS.NOBODY),
          }),
        ).group_id as number;
      });
      expect(published.map((p) => p.event.op)).toEqual(['add', 'add_subgroups']);
      expect((published[0]!.event.group as Group).direct_subgroup_ids).toEqual([]);
      expect(published[1]!.event).toEqual({
        type: 'user_group',
        op: 'add_subgroups',
        group_id: id,
        direct_subgroup_ids: [sub],
      });
      expect((await groupById(id))!.direct_subgroup_ids).toEqual([sub]);
    });

    it('refuses bad names, members, subgroups and settings with Zulip’s messages', async () => {
      expectError(await create(org.member, { name: '   ' }), "User group name can't be empty!");
      expectError(
        await create(org.member, { name: 'x'.repeat(101) }),
        'User group name cannot exceed 100 characters.',
      );
      for (const prefix of ['@', 'role:', 'user:', 'stream:', 'channel:'])
        expectError(
          await create(org.member, { name: `${prefix}team` }),
          `User group name cannot start with '${prefix}'.`,
        );
      expectError(
        await create(org.member, { name: 'a\u0000b' }),
        'Invalid name: null bytes are not allowed',
      );
      const taken = uniqueName();
      await createGroup(org.member, { name: taken });
      expectError(
        await create(org.other, { name: taken }),
        `User group '${taken}' already exists.`,
      );
      expectError(
        await create(org.member, { name: uniqueName(), members: [999999] }),
        'Invalid user ID: 999999',
      );
      const gone = await createTestUser(org.realm);
      await getPrisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
      expectError(
        await create(org.member, { name: uniqueName(), members: [gone.id] }),
        `Invalid user ID: ${gone.id}`,
      );
      expectError(
        await create(org.member, { name: uniqueName(), members: 'nope' }),
        'members is not valid JSON',
      );
      expectError(
        await create(org.member, { name: uniqueName(), subgroups: [999999] }),
        'Invalid user group ID: 999999',
      );
      expectError(
        await create(org.member, {
          name: uniqueName(),
          can_manage_group: sys(SYSTEM_GROUPS.EVERYONE),
        }),
        "'can_manage_group' setting cannot be set to 'role:everyone' group.",
      );
      expectError(
        await create(org.member, {
          name: uniqueName(),
          can_mention_group: sys(SYSTEM_GROUPS.EVERYONE_ON_INTERNET),
        }),
        "'can_mention_group' setting cannot be set to 'role:internet' group.",
      );
      expectError(
        await create(org.member, { name: uniqueName(), can_join_group: 999999 }),
        'Invalid user group',
      );
      expectError(
        await create(org.member, {
          name: uniqueName(),
          can_join_group: { direct_members: [999999], direct_subgroups: [] },
        }),
        'Invalid user ID: 999999',
      );
      expectError(
        await create(org.member, {
          name: uniqueName(),
          can_join_group: { direct_members: [org.member.id], direct_subgroups: [999999] },
        }),
        'Invalid user group ID: 999999',
      );
      expectError(
        await create(org.member, { name: uniqueName(), can_join_group: { direct_members: [] } }),
        'Invalid can_join_group',
      );
      expectError(
        await create(org.member, { name: uniqueName(), description: 'd'.repeat(1025) }),
        'description is too long (limit: 1024 characters)',
      );
      expectError(
        await as(org.member, org.host).post('/user_groups/create', {
          name: uniqueName(),
          members: [],
        }),
        "Missing 'description' argument",
        400,
        'REQUEST_VARIABLE_MISSING',
      );
    });

    it('is refused to guests, and allowed to bots', async () => {
      expectError(await create(org.guest, { name: uniqueName() }), 'Not allowed for guest users');
      const id = await createGroup(org.bot);
      expect((await groupById(id))!.creator_id).toBe(org.bot.id);
    });
  });

  describe('GET /user_groups', () => {
    it('lists system and other groups, deactivated ones only when asked', async () => {
      const id = await createGroup(org.owner);
      expectSuccess(await deactivate(org.owner, id));
      const listed = await groups(org.member);
      expect(listed.map((g) => g.name)).toEqual(
        expect.arrayContaining(Object.values(SYSTEM_GROUPS)),
      );
      expect(listed.some((g) => g.id === id)).toBe(false);
      const all = await groups(org.member, { include_deactivated_groups: true });
      expect(all.find((g) => g.id === id)!.deactivated).toBe(true);
      const ids = all.map((g) => g.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      // System groups hold "nobody" throughout.
      const owners = all.find((g) => g.name === SYSTEM_GROUPS.OWNERS)!;
      for (const setting of [
        'can_add_members_group',
        'can_join_group',
        'can_leave_group',
        'can_manage_group',
        'can_mention_group',
        'can_remove_members_group',
      ])
        expect(owners[setting]).toBe(sys(SYSTEM_GROUPS.NOBODY));
    });

    it('is refused to guests', async () => {
      expectError(await as(org.guest, org.host).get('/user_groups'), 'Not allowed for guest users');
    });
  });

  describe('PATCH /user_groups/{id}', () => {
    it('renames and describes a group, one event each', async () => {
      const id = await createGroup(org.member);
      const name = uniqueName('renamed');
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await patch(org.member, id, { name, description: 'New words' }));
      });
      expect(published).toEqual([
        {
          event: { type: 'user_group', op: 'update', group_id: id, data: { name } },
          users: allUsers(),
        },
        {
          event: {
            type: 'user_group',
            op: 'update',
            group_id: id,
            data: { description: 'New words' },
          },
          users: allUsers(),
        },
      ]);
      const group = (await groupById(id))!;
      expect([group.name, group.description]).toEqual([name, 'New words']);
      // The same values again change nothing.
      expect(
        await captureEvents(org.realm.id, async () => {
          expectSuccess(await patch(org.member, id, { name, description: 'New words' }));
        }),
      ).toEqual([]);
    });

    it('changes settings given as {new, old}, checking old against the stored value', async () => {
      const id = await createGroup(org.member);
      const creatorOnly = { direct_members: [org.member.id], direct_subgroups: [] };
      expectError(
        await patch(org.member, id, {
          can_join_group: { new: sys(SYSTEM_GROUPS.MEMBERS), old: sys(SYSTEM_GROUPS.EVERYONE) },
        }),
        "'old' value does not match the expected value.",
        400,
        'EXPECTATION_MISMATCH',
      );
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(
          await patch(org.member, id, {
            can_join_group: { new: sys(SYSTEM_GROUPS.MEMBERS), old: sys(SYSTEM_GROUPS.NOBODY) },
            can_manage_group: {
              new: { direct_members: [org.member.id, org.other.id], direct_subgroups: [] },
              old: creatorOnly,
            },
          }),
        );
      });
      expect(published.map((p) => p.event)).toEqual([
        {
          type: 'user_group',
          op: 'update',
          group_id: id,
          data: { can_join_group: sys(SYSTEM_GROUPS.MEMBERS) },
        },
        {
          type: 'user_group',
          op: 'update',
          group_id: id,
          data: {
            can_manage_group: {
              direct_members: [org.member.id, org.other.id].sort((a, b) => a - b),
              direct_subgroups: [],
            },
          },
        },
      ]);
      // An anonymous setting is edited in place; replaced by a named group, it goes.
      const before = await getPrisma().userGroup.findUniqueOrThrow({ where: { id } });
      expectSuccess(
        await patch(org.other, id, {
          can_manage_group: { new: sys(SYSTEM_GROUPS.ADMINISTRATORS) },
        }),
      );
      expect(
        await getPrisma().userGroup.findUnique({ where: { id: before.canManageGroupId! } }),
      ).toBeNull();
      expect((await groupById(id))!.can_manage_group).toBe(sys(SYSTEM_GROUPS.ADMINISTRATORS));
      expectError(
        await patch(org.owner, id, { can_add_members_group: { new: sys(SYSTEM_GROUPS.EVERYONE) } }),
        "'can_add_members_group' setting cannot be set to 'role:everyone' group.",
      );
      expectError(
        await patch(org.owner, id, { can_add_members_group: { nope: 1 } }),
        "can_add_members_group['new'] field is missing",
      );
    });

    it('refuses empty updates, unknown groups, system groups and outsiders', async () => {
      const id = await createGroup(org.member);
      expectError(await patch(org.member, id, {}), 'No new data supplied');
      expectError(await patch(org.member, 999999, { name: uniqueName() }), 'Invalid user group');
      const anonymous = (await getPrisma().userGroup.findUniqueOrThrow({ where: { id } }))
        .canManageGroupId!;
      expectError(await patch(org.owner, anonymous, { name: uniqueName() }), 'Invalid user group');
      expectError(
        await patch(org.owner, sys(SYSTEM_GROUPS.MEMBERS), { description: 'x' }),
        'Insufficient permission',
      );
      expectError(await patch(org.other, id, { description: 'x' }), 'Insufficient permission');
      expectError(await patch(org.guest, id, { description: 'x' }), 'Not allowed for guest users');
      const taken = uniqueName();
      await createGroup(org.member, { name: taken });
      expectError(
        await patch(org.member, id, { name: taken }),
        `User group '${taken}' already exists.`,
      );
      expectError(
        await patch(org.member, id, { name: 'role:x' }),
        "User group name cannot start with 'role:'.",
      );
    });
  });

  describe('POST /user_groups/{id}/members', () => {
    it('adds and removes members in one request, with events', async () => {
      const id = await createGroup(org.member, { members: [org.member.id] });
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(
          await members(org.member, id, {
            add: [org.other.id, org.guest.id],
            delete: [org.member.id],
          }),
        );
      });
      const groupEvents = published.filter((p) => p.event.type === 'user_group');
      expect(groupEvents.map((p) => p.event)).toEqual([
        {
          type: 'user_group',
          op: 'add_members',
          group_id: id,
          user_ids: [org.other.id, org.guest.id],
        },
        { type: 'user_group', op: 'remove_members', group_id: id, user_ids: [org.member.id] },
      ]);
      expect(groupEvents.every((p) => JSON.stringify(p.users) === JSON.stringify(allUsers()))).toBe(
        true,
      );
      expect(await memberIds(id)).toEqual([org.other.id, org.guest.id].sort((a, b) => a - b));
      // The Notification Bot tells those someone else added; not the member who left.
      const noticesIn = (captured: typeof published) => {
        const notices = new Map<number, { users: number[]; content: string }>();
        for (const p of captured.filter((p) => p.event.type === 'message')) {
          const message = p.event.message as { id: number; sender_id: number; content: string };
          expect(message.sender_id).toBe(org.notificationBot.id);
          const seen = notices.get(message.id);
          notices.set(message.id, {
            users: [...(seen?.users ?? []), ...p.users].sort((x, y) => x - y),
            content: message.content,
          });
        }
        return [...notices.values()];
      };
      const name = (await groupById(id))!.name;
      const added = `<p><span class="user-mention silent" data-user-id="${org.member.id}">${org.member.fullName}</span> added you to the group <span class="user-group-mention silent" data-user-group-id="${id}">${name}</span>.</p>`;
      expect(noticesIn(published)).toEqual(
        [org.other.id, org.guest.id].map((to) => ({
          users: [to, org.notificationBot.id].sort((x, y) => x - y),
          content: added,
        })),
      );
      const removal = await captureEvents(org.realm.id, async () => {
        expectSuccess(await members(org.owner, id, { delete: [org.other.id] }));
      });
      expect(noticesIn(removal)).toEqual([
        {
          users: [org.other.id, org.notificationBot.id].sort((x, y) => x - y),
          content: expect.stringContaining('removed you from the group') as string,
        },
      ]);
    });

    it('shows private channels the group administers to new members, and hides them again', async () => {
      const id = await createGroup(org.owner);
      const name = uniqueName('private');
      expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name }],
          invite_only: true,
          can_administer_channel_group: id,
        }),
      );
      const channel = await getPrisma().stream.findFirstOrThrow({
        where: { realmId: org.realm.id, name },
      });
      const added = await captureEvents(org.realm.id, async () => {
        expectSuccess(await members(org.owner, id, { add: [org.other.id] }));
      });
      const toOther = added.filter(
        (p) => p.users.includes(org.other.id) && p.users.length === 1 && p.event.type !== 'message',
      );
      expect(toOther.map((p) => [p.event.type, p.event.op])).toEqual([
        ['stream', 'create'],
        ['subscription', 'peer_add'],
      ]);
      expect((toOther[0]!.event.streams as { stream_id: number }[])[0]!.stream_id).toBe(channel.id);
      expect(toOther[1]!.event).toEqual({
        type: 'subscription',
        op: 'peer_add',
        stream_ids: [channel.id],
        user_ids: [org.owner.id],
      });
      const removed = await captureEvents(org.realm.id, async () => {
        expectSuccess(await members(org.owner, id, { delete: [org.other.id] }));
      });
      expect(removed.filter((p) => p.event.type === 'stream')).toEqual([
        {
          event: expect.objectContaining({ type: 'stream', op: 'delete' }) as unknown,
          users: [org.other.id],
        },
      ]);
    });

    it('refuses members already there or not there, and changes nothing then', async () => {
      const id = await createGroup(org.member, { members: [org.other.id] });
      expectError(
        await members(org.member, id, { add: [org.admin.id, org.other.id] }),
        `User ${org.other.id} is already a member of this group`,
      );
      expectError(
        await members(org.member, id, { add: [org.admin.id], delete: [org.moderator.id] }),
        `There is no member '${org.moderator.id}' in this user group`,
      );
      expect(await memberIds(id)).toEqual([org.other.id]);
      expectError(await members(org.member, id, { add: [999999] }), 'Invalid user ID: 999999');
      // No id is too small for the lookups' own messages (Zulip's Json[list[int]]).
      expectError(await members(org.member, id, { add: [0] }), 'Invalid user ID: 0');
      expectError(
        await members(org.member, id, { add_subgroups: [-1] }),
        'Invalid user group ID: -1',
      );
      expectError(
        await members(org.member, id, {}),
        'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".',
      );
      expectError(
        await members(org.member, id, { add: [] }),
        'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".',
      );
      expectError(
        await members(org.guest, id, { add: [org.admin.id] }),
        'Not allowed for guest users',
      );
    });

    it('lets users join through can_join_group and leave through can_leave_group', async () => {
      const id = await createGroup(org.owner, {
        can_join_group: sys(SYSTEM_GROUPS.MEMBERS),
        can_leave_group: sys(SYSTEM_GROUPS.NOBODY),
      });
      expectSuccess(await members(org.other, id, { add: [org.other.id] }));
      // Joining is for oneself only.
      expectError(await members(org.other, id, { add: [org.admin.id] }), 'Insufficient permission');
      expectError(
        await members(org.other, id, { delete: [org.other.id] }),
        'Insufficient permission',
      );
      expectSuccess(
        await patch(org.owner, id, { can_leave_group: { new: sys(SYSTEM_GROUPS.EVERYONE) } }),
      );
      expectSuccess(await members(org.other, id, { delete: [org.other.id] }));
      expect(await memberIds(id)).toEqual([]);
    });

    it('lets can_add_members_group and can_remove_members_group change others', async () => {
      const id = await createGroup(org.owner, {
        can_add_members_group: { direct_members: [org.other.id], direct_subgroups: [] },
        can_remove_members_group: sys(SYSTEM_GROUPS.MODERATORS),
      });
      expectSuccess(await members(org.other, id, { add: [org.member.id] }));
      expectError(
        await members(org.other, id, { delete: [org.member.id] }),
        'Insufficient permission',
      );
      expectSuccess(await members(org.moderator, id, { delete: [org.member.id] }));
      // Neither lets anyone rename the group.
      expectError(await patch(org.other, id, { name: uniqueName() }), 'Insufficient permission');
    });

    it('changes subgroups too, and members of a deactivated group', async () => {
      const sub = await createGroup(org.owner);
      const id = await createGroup(org.owner);
      expectSuccess(await members(org.owner, id, { add_subgroups: [sub] }));
      expect((await groupById(id))!.direct_subgroup_ids).toEqual([sub]);
      expectSuccess(await members(org.owner, id, { delete_subgroups: [sub] }));
      expectSuccess(await deactivate(org.owner, id));
      expectSuccess(await members(org.owner, id, { add: [org.member.id] }));
      expect((await groupById(id))!.members).toEqual([org.member.id]);
    });
  });

  describe('POST /user_groups/{id}/subgroups', () => {
    it('adds and removes subgroups, and membership follows them', async () => {
      const leaf = await createGroup(org.owner, { members: [org.other.id] });
      const middle = await createGroup(org.owner, { members: [org.admin.id] });
      const top = await createGroup(org.owner, { members: [org.member.id] });
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await subgroups(org.owner, middle, { add: [leaf] }));
        expectSuccess(await subgroups(org.owner, top, { add: [middle] }));
      });
      expect(published.map((p) => p.event)).toEqual([
        { type: 'user_group', op: 'add_subgroups', group_id: middle, direct_subgroup_ids: [leaf] },
        { type: 'user_group', op: 'add_subgroups', group_id: top, direct_subgroup_ids: [middle] },
      ]);
      expect(await memberIds(top)).toEqual(
        [org.admin.id, org.member.id, org.other.id].sort((a, b) => a - b),
      );
      expect(await memberIds(top, true)).toEqual([org.member.id]);
      const isMember = async (id: number, userId: number, direct = false) =>
        expectSuccess(
          await as(org.member, org.host).get(`/user_groups/${id}/members/${userId}`, {
            direct_member_only: direct,
          }),
        ).is_user_group_member;
      expect(await isMember(top, org.other.id)).toBe(true);
      expect(await isMember(top, org.other.id, true)).toBe(false);
      expect(await isMember(top, org.moderator.id)).toBe(false);
      const sub = async (id: number, direct = false) =>
        expectSuccess(
          await as(org.member, org.host).get(`/user_groups/${id}/subgroups`, {
            direct_subgroup_only: direct,
          }),
        ).subgroups;
      expect(await sub(top)).toEqual([middle, leaf].sort((a, b) => a - b));
      expect(await sub(top, true)).toEqual([middle]);
      const removed = await captureEvents(org.realm.id, async () => {
        expectSuccess(await subgroups(org.owner, top, { delete: [middle] }));
      });
      expect(removed.map((p) => p.event)).toEqual([
        {
          type: 'user_group',
          op: 'remove_subgroups',
          group_id: top,
          direct_subgroup_ids: [middle],
        },
      ]);
      expect(await memberIds(top)).toEqual([org.member.id]);
    });

    it('refuses cycles, repeats, strangers and unknown groups', async () => {
      const a = await createGroup(org.owner);
      const b = await createGroup(org.owner);
      const c = await createGroup(org.owner);
      expectSuccess(await subgroups(org.owner, a, { add: [b] }));
      expectSuccess(await subgroups(org.owner, b, { add: [c] }));
      expectError(
        await subgroups(org.owner, c, { add: [a] }),
        `User group ${c} is already a subgroup of one of the passed subgroups.`,
      );
      expectError(
        await subgroups(org.owner, a, { add: [a] }),
        `User group ${a} is already a subgroup of one of the passed subgroups.`,
      );
      expectError(
        await subgroups(org.owner, a, { add: [b] }),
        `User group ${b} is already a subgroup of this group.`,
      );
      expectError(
        await subgroups(org.owner, a, { delete: [c] }),
        `User group ${c} is not a subgroup of this group.`,
      );
      expectError(
        await subgroups(org.owner, a, { add: [999999] }),
        'Invalid user group ID: 999999',
      );
      expectError(await subgroups(org.owner, 999999, { add: [a] }), 'Invalid user group');
      expectError(
        await subgroups(org.owner, sys(SYSTEM_GROUPS.MEMBERS), { add: [a] }),
        'Insufficient permission',
      );
      expectError(
        await subgroups(org.owner, a, {}),
        'Nothing to do. Specify at least one of "add" or "delete".',
      );
      expectError(await subgroups(org.member, a, { add: [c] }), 'Insufficient permission');
      expectError(await subgroups(org.guest, a, { add: [c] }), 'Not allowed for guest users');
      const gone = await createGroup(org.owner);
      expectSuccess(await deactivate(org.owner, gone));
      expectError(await subgroups(org.owner, a, { add: [gone] }), 'User group is deactivated.');
      // Nothing of the refused requests stayed.
      expect((await groupById(a))!.direct_subgroup_ids).toEqual([b]);
      expect((await groupById(c))!.direct_subgroup_ids).toEqual([]);
    });

    it('accepts bots named in can_manage_group (feature level 496)', async () => {
      const a = await createGroup(org.owner, {
        can_manage_group: { direct_members: [org.bot.id], direct_subgroups: [] },
      });
      const b = await createGroup(org.owner);
      expectSuccess(await subgroups(org.bot, a, { add: [b] }));
      expectSuccess(await subgroups(org.bot, a, { delete: [b] }));
    });
  });

  describe('GET /user_groups/{id}/members and subgroups', () => {
    it('refuses unknown and deactivated groups, users who are not people or not active', async () => {
      const id = await createGroup(org.owner);
      expectError(
        await as(org.member, org.host).get('/user_groups/999999/members'),
        'Invalid user group',
      );
      expectError(
        await as(org.member, org.host).get(`/user_groups/${id}/members/999999`),
        'No such user',
      );
      expectError(
        await as(org.member, org.host).get(`/user_groups/${id}/members/${org.bot.id}`),
        'No such user',
      );
      expectError(
        await as(org.guest, org.host).get(`/user_groups/${id}/members`),
        'Not allowed for guest users',
      );
      expectSuccess(await deactivate(org.owner, id));
      expectError(
        await as(org.member, org.host).get(`/user_groups/${id}/subgroups`),
        'User group is deactivated.',
      );
    });
  });

  describe('POST /user_groups/{id}/deactivate', () => {
    it('deactivates: an update for clients that list deactivated groups, a removal for others', async () => {
      const id = await createGroup(org.member);
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await deactivate(org.member, id));
      });
      expect(published).toEqual([
        {
          event: {
            type: 'user_group',
            op: 'update',
            group_id: id,
            data: { deactivated: true },
            internal_data: { include_deactivated_groups: true },
          },
          users: allUsers(),
        },
        {
          event: {
            type: 'user_group',
            op: 'remove',
            group_id: id,
            internal_data: { include_deactivated_groups: false },
          },
          users: allUsers(),
        },
      ]);
      expectError(await deactivate(org.member, id), 'User group is deactivated.');
      expectError(await members(org.member, 999999, { add: [org.other.id] }), 'Invalid user group');
      // Zulip's deactivate_user_group has no guest check of its own: a guest may not manage it.
      expectError(
        await deactivate(org.guest, await createGroup(org.owner)),
        'Insufficient permission',
      );
    });

    it('refuses groups in use, listing every objection', async () => {
      const used = await createGroup(org.owner);
      const parent = await createGroup(org.owner);
      expectSuccess(await subgroups(org.owner, parent, { add: [used] }));
      const user = await createGroup(org.owner, {
        can_mention_group: used,
        can_join_group: { direct_members: [org.member.id], direct_subgroups: [used] },
      });
      expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name: uniqueName('channel') }],
          can_send_message_group: used,
        }),
      );
      const channel = await getPrisma().stream.findFirstOrThrow({
        where: { realmId: org.realm.id, canSendMessageGroupId: used },
      });
      await getPrisma().realm.update({
        where: { id: org.realm.id },
        data: { canAddSubscribersGroupId: used },
      });
      try {
        const res = await deactivate(org.owner, used);
        expectError(
          res,
          'Cannot deactivate user group in use.',
          400,
          'CANNOT_DEACTIVATE_GROUP_IN_USE',
        );
        expect(res.body.objections).toEqual([
          { type: 'subgroup', supergroup_ids: [parent] },
          { type: 'channel', channel_id: channel.id, settings: ['can_send_message_group'] },
          { type: 'user_group', group_id: user, settings: ['can_join_group', 'can_mention_group'] },
          { type: 'realm', settings: ['can_add_subscribers_group'] },
        ]);
      } finally {
        await getPrisma().realm.update({
          where: { id: org.realm.id },
          data: { canAddSubscribersGroupId: sys(SYSTEM_GROUPS.MEMBERS) },
        });
      }
      // A deactivated supergroup does not object.
      const lone = await createGroup(org.owner);
      const gone = await createGroup(org.owner);
      expectSuccess(await subgroups(org.owner, gone, { add: [lone] }));
      expectSuccess(await deactivate(org.owner, gone));
      expectSuccess(await deactivate(org.owner, lone));
    });

    it('is reversed by PATCH deactivated=false', async () => {
      const id = await createGroup(org.member, { members: [org.other.id] });
      expectSuccess(await deactivate(org.member, id));
      // A deactivated group can still be renamed; the new name is for clients that list it.
      const name = uniqueName('asleep');
      const renamed = await captureEvents(org.realm.id, async () => {
        expectSuccess(await patch(org.member, id, { name }));
      });
      expect(renamed[0]!.event.internal_data).toEqual({ include_deactivated_groups: true });
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await patch(org.member, id, { deactivated: false }));
      });
      const group = (await groupById(id))!;
      expect(group.deactivated).toBe(false);
      // Audited with Zulip's USER_GROUP_DEACTIVATED and USER_GROUP_REACTIVATED.
      const audit = await getPrisma().auditLog.findMany({
        where: { modifiedUserGroupId: id, eventType: { in: [723, 724] } },
        orderBy: { id: 'asc' },
      });
      expect(audit.map((row) => row.eventType)).toEqual([723, 724]);
      expect(published.map((p) => p.event)).toEqual([
        {
          type: 'user_group',
          op: 'update',
          group_id: id,
          data: { deactivated: false },
          internal_data: { include_deactivated_groups: true },
        },
        {
          type: 'user_group',
          op: 'add',
          group,
          internal_data: { include_deactivated_groups: false },
        },
      ]);
      // deactivated=true does nothing.
      expect(
        await captureEvents(org.realm.id, async () => {
          expectSuccess(await patch(org.member, id, { deactivated: true }));
        }),
      ).toEqual([]);
    });
  });

  describe('POST /register', () => {
    const options = (includeDeactivatedGroups: boolean) =>
      ({ includeDeactivatedGroups }) as unknown as StateOptions;
    const register = async (capable: boolean) =>
      expectSuccess(
        await request(app)
          .post('/api/v1/register')
          .set('Host', org.host)
          .auth(org.member.deliveryEmail, org.member.apiKey)
          .type('form')
          .send({
            fetch_event_types: JSON.stringify(['realm_user_groups']),
            client_capabilities: JSON.stringify({ include_deactivated_groups: capable }),
          }),
      );

    it.each([true, false])(
      'folds every kind of user_group event into realm_user_groups (capable: %s)',
      async (capable) => {
        const sub = await createGroup(org.owner);
        const state = await register(capable);
        const published = await captureEvents(org.realm.id, async () => {
          const id = await createGroup(org.member, { members: [org.other.id] });
          expectSuccess(
            await members(org.member, id, { add: [org.admin.id], delete: [org.other.id] }),
          );
          expectSuccess(await subgroups(org.member, id, { add: [sub] }));
          expectSuccess(
            await patch(org.member, id, {
              name: uniqueName('folded'),
              can_join_group: { new: { direct_members: [org.other.id], direct_subgroups: [sub] } },
            }),
          );
          expectSuccess(await subgroups(org.member, id, { delete: [sub] }));
          expectSuccess(await deactivate(org.member, id));
          const again = await createGroup(org.member);
          expectSuccess(await deactivate(org.member, again));
          expectSuccess(await patch(org.member, again, { deactivated: false }));
        });
        for (const { event } of published) {
          const internal = (event as { internal_data?: { include_deactivated_groups?: boolean } })
            .internal_data;
          // What the events tier passes to this queue.
          if (
            internal?.include_deactivated_groups !== undefined &&
            internal.include_deactivated_groups !== capable
          )
            continue;
          const { internal_data: _internal, ...visible } = event as Record<string, unknown>;
          applyEvent(state, visible as QueuedEvent, org.member, options(capable));
        }
        expect(state.realm_user_groups).toEqual((await register(capable)).realm_user_groups);
      },
    );
  });

  describe('organization settings', () => {
    it('follow can_create_groups and can_manage_all_groups', async () => {
      const id = await createGroup(org.member);
      const update = async (createGroups: string, manageAll: string) =>
        expectSuccess(
          await as(org.owner, org.host).patch('/realm', {
            can_create_groups: { new: sys(createGroups) },
            can_manage_all_groups: { new: sys(manageAll) },
          }),
        );
      await update(SYSTEM_GROUPS.ADMINISTRATORS, SYSTEM_GROUPS.MODERATORS);
      try {
        expectError(await create(org.member, { name: uniqueName() }), 'Insufficient permission');
        await createGroup(org.admin);
        expectSuccess(await patch(org.moderator, id, { description: 'moderated' }));
        expectSuccess(await members(org.moderator, id, { add: [org.other.id] }));
      } finally {
        await update(SYSTEM_GROUPS.MEMBERS, SYSTEM_GROUPS.OWNERS);
      }
      expectError(
        await patch(org.moderator, id, { description: 'again' }),
        'Insufficient permission',
      );
    });
  });

  describe('checkCanAddMembersToGroups (invitations)', () => {
    it('allows managers and can_add_members_group, refuses the rest', async () => {
      const id = await createGroup(org.member);
      const other = await createGroup(org.owner, {
        can_add_members_group: { direct_members: [org.other.id], direct_subgroups: [] },
      });
      await expect(
        checkCanAddMembersToGroups(org.realm, org.member, [id]),
      ).resolves.toBeUndefined();
      await expect(
        checkCanAddMembersToGroups(org.realm, org.owner, [id, other]),
      ).resolves.toBeUndefined();
      await expect(
        checkCanAddMembersToGroups(org.realm, org.other, [other]),
      ).resolves.toBeUndefined();
      await expect(checkCanAddMembersToGroups(org.realm, org.other, [other, id])).rejects.toThrow(
        'Insufficient permission',
      );
      await expect(
        checkCanAddMembersToGroups(org.realm, org.owner, [sys(SYSTEM_GROUPS.MEMBERS)]),
      ).rejects.toThrow('Insufficient permission');
      await expect(checkCanAddMembersToGroups(org.realm, org.owner, [999999])).rejects.toThrow(
        'Invalid user group',
      );
      await expect(checkCanAddMembersToGroups(org.realm, org.owner, [])).resolves.toBeUndefined();
    });
  });

  describe('can_mention_group', () => {
    it('refuses mentions by users outside the setting', async () => {
      const id = await createGroup(org.owner, {
        name: 'mentionable',
        can_mention_group: sys(SYSTEM_GROUPS.MODERATORS),
      });
      const groupsOf = (user: User) => groupIdsOfUser(user.id);
      await expect(
        checkGroupMentionsAllowed(org.moderator, await groupsOf(org.moderator), [id]),
      ).resolves.toBeUndefined();
      await expect(
        checkGroupMentionsAllowed(org.member, await groupsOf(org.member), [id]),
      ).rejects.toThrow("You are not allowed to mention user group 'mentionable'.");
    });

    // The send path reads the sender's groups with the channel or the conversation.
    it('applies to channel and direct messages sent through the API', async () => {
      await createGroup(org.owner, {
        name: 'mentionable2',
        can_mention_group: sys(SYSTEM_GROUPS.MODERATORS),
      });
      expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions', {
          subscriptions: JSON.stringify([{ name: 'mentions' }]),
          principals: JSON.stringify([org.member.id, org.moderator.id]),
        }),
      );
      const content = 'hello @*mentionable2*';
      const direct = { type: 'private', to: JSON.stringify([org.other.id]), content };
      const channel = { type: 'stream', to: 'mentions', topic: 'mentions', content };
      for (const form of [direct, channel]) {
        expectError(
          await as(org.member, org.host).post('/messages', form),
          "You are not allowed to mention user group 'mentionable2'.",
        );
        expectSuccess(await as(org.moderator, org.host).post('/messages', form));
      }
    });
  });
});

// ---- Permission matrix -------------------------------------------------------------------------

let managed = 0;

async function groupSnapshot({ org }: MatrixContext) {
  const prisma = getPrisma();
  return {
    groups: await prisma.userGroup.findMany({
      where: { realmId: org.realm.id },
      include: { members: true, subgroups: true },
      orderBy: { id: 'asc' },
    }),
  };
}

// Creating a group: every role but guests (can_create_groups is "members" by default).
permissionMatrix(
  'permission matrix: creating user groups',
  [
    {
      name: 'create a group',
      allowed: ['owner', 'admin', 'moderator', 'member', 'bot'],
      deniedMsg: 'Not allowed for guest users',
      run: ({ org }, actor, target) =>
        as(actor, org.host).post('/user_groups/create', {
          name: `made-${actor.id}-${target.id}`,
          description: '',
          members: [target.id],
        }),
    },
  ],
  { snapshot: groupSnapshot },
);

// Changing a group created by the member, whose settings are the defaults: its creator and
// the organization's can_manage_all_groups (owners) manage it. Guests are refused before any
// permission is looked at, with their own message.
const changes: {
  name: string;
  allowed: Actor[];
  run: (ctx: MatrixContext, actor: User, target: User) => Promise<request.Response>;
}[] = [
  {
    name: 'rename the group',
    allowed: ['owner', 'member'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).patch(`/user_groups/${managed}`, { name: `renamed-${target.id}` }),
  },
  {
    name: 'add a member',
    allowed: ['owner', 'member'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).post(`/user_groups/${managed}/members`, { add: [target.id] }),
  },
  {
    name: 'change a setting',
    allowed: ['owner', 'member'],
    run: ({ org }, actor, target) =>
      as(actor, org.host).patch(`/user_groups/${managed}`, {
        can_join_group: { new: { direct_members: [target.id], direct_subgroups: [] } },
      }),
  },
  {
    name: 'add a subgroup',
    allowed: ['owner', 'member'],
    run: async ({ org }, actor, target) => {
      const sub = await getPrisma().userGroup.create({
        data: {
          realmId: org.realm.id,
          name: `sub-${target.id}`,
          canAddMembersGroupId: managedNobody,
          canJoinGroupId: managedNobody,
          canLeaveGroupId: managedNobody,
          canManageGroupId: managedNobody,
          canMentionGroupId: managedNobody,
          canRemoveMembersGroupId: managedNobody,
        },
      });
      return as(actor, org.host).post(`/user_groups/${managed}/subgroups`, { add: [sub.id] });
    },
  },
];
let managedNobody = 0;

describe('permission matrix: changing a user group', () => {
  const ctx = {} as MatrixContext & { org: TestRealm };
  beforeAll(async () => {
    const org = await createGroupOrg();
    ctx.org = org;
    ctx.actors = {
      owner: org.owner,
      admin: org.admin,
      moderator: org.moderator,
      member: org.member,
      guest: org.guest,
      bot: org.bot,
    };
    managedNobody = org.system.get(SYSTEM_GROUPS.NOBODY)!;
    managed = expectSuccess(
      await as(org.member, org.host).post('/user_groups/create', {
        name: 'managed',
        description: '',
        members: [],
      }),
    ).group_id as number;
  });

  it.each(
    changes.flatMap((change) => ACTORS.map((actor) => [change.name, actor, change] as const)),
  )('%s as %s', async (_name, actorName, change) => {
    const target = await createTestUser(ctx.org.realm, Role.MEMBER);
    const before = await groupSnapshot(ctx);
    const res = await change.run(ctx, ctx.actors[actorName], target);
    if (change.allowed.includes(actorName)) {
      expectSuccess(res);
      expect(await groupSnapshot(ctx)).not.toEqual(before);
    } else {
      expectError(
        res,
        actorName === 'guest' ? 'Not allowed for guest users' : 'Insufficient permission',
      );
      const after = await groupSnapshot(ctx);
      // The subgroup case creates its candidate before the request.
      expect(after.groups.filter((g) => !g.name?.startsWith('sub-'))).toEqual(
        before.groups.filter((g) => !g.name?.startsWith('sub-')),
      );
      expect(after.groups.find((g) => g.id === managed)).toEqual(
        before.groups.find((g) => g.id === managed),
      );
    }
  });
});
