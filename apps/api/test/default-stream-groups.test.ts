// Default channel groups (Zulip's DefaultStreamGroup): POST /default_stream_groups/create,
// PATCH and DELETE /default_stream_groups/{id}, PATCH /default_stream_groups/{id}/streams,
// Zulip's checks and messages, the default_stream_groups event to every active member,
// /register's realm_default_stream_groups (none for guests), and archived channels leaving
// their groups.
import { getPrisma, Role, type User } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';
import { createMessageOrg, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();

describe('default channel groups', () => {
  let org: MessageOrg;
  /** Public channels, none of them a default channel. */
  let alpha: number;
  let beta: number;
  let members: number[];
  beforeEach(async () => {
    org = await createMessageOrg();
    const created = expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'beta' }, { name: 'Alpha' }],
      }),
    );
    expect(created.subscribed).toBeDefined();
    const channel = (name: string) =>
      prisma().stream.findFirstOrThrow({ where: { realmId: org.realm.id, name } });
    alpha = (await channel('Alpha')).id;
    beta = (await channel('beta')).id;
    members = (
      await prisma().user.findMany({
        where: { realmId: org.realm.id, isActive: true, role: { not: Role.GUEST } },
        orderBy: { id: 'asc' },
      })
    ).map((user) => user.id);
  });

  const admin = () => as(org.admin, org.host);
  const create = (group_name: string, stream_names: string[], description = 'For newcomers') =>
    admin().post('/default_stream_groups/create', {
      group_name,
      description,
      stream_names: JSON.stringify(stream_names),
    });
  const groupId = async (name: string) =>
    (await prisma().defaultStreamGroup.findFirstOrThrow({ where: { realmId: org.realm.id, name } }))
      .id;
  type Entry = { name: string; id: number; description: string; streams: number[] };
  const registered = async (user: User) =>
    expectSuccess(
      await as(user, org.host, { atOnce: true }).post('/register', {
        fetch_event_types: ['default_stream_groups'],
      }),
    ).realm_default_stream_groups as Entry[];

  it('creates a group, telling every member, and lists it in /register', async () => {
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(await create('Onboarding', ['beta', 'Alpha'])),
    );
    const id = await groupId('Onboarding');
    // Channels by name, as Zulip's to_dict orders them.
    const entry = { name: 'Onboarding', id, description: 'For newcomers', streams: [alpha, beta] };
    expect(published).toEqual([
      {
        event: { type: 'default_stream_groups', default_stream_groups: [entry] },
        users: members,
      },
    ]);
    expect(await registered(org.member)).toEqual([entry]);
    expect(await registered(org.guest)).toEqual([]);
  });

  it('refuses what Zulip refuses', async () => {
    expectSuccess(await create('Onboarding', ['Alpha']));
    expectError(
      await create('Onboarding', ['beta']),
      "Default channel group 'Onboarding' already exists",
    );
    expectError(await create('  ', ['beta']), "Invalid default channel group name '  '");
    expectError(
      await create('x'.repeat(61), ['beta']),
      'Default channel group name too long (limit: 60 characters)',
    );
    expectError(
      await create('a\u0000b', ['beta']),
      'Invalid group_name: null bytes are not allowed',
    );
    expectError(await create('Other', ['nowhere']), "Invalid channel name 'nowhere'");
    // A private channel the administrator is not subscribed to is as unknown.
    expectError(await create('Other', ['secret']), "Invalid channel name 'secret'");
    expectSuccess(await admin().post('/default_streams', { stream_id: beta }));
    expectError(
      await create('Other', ['beta']),
      "'beta' is a default channel and cannot be added to 'Other'",
    );
    // Administrators only.
    const refused = await as(org.member, org.host).post('/default_stream_groups/create', {
      group_name: 'Mine',
      description: '',
      stream_names: JSON.stringify(['Alpha']),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('UNAUTHORIZED_PRINCIPAL');
    expect(await prisma().defaultStreamGroup.count({ where: { realmId: org.realm.id } })).toBe(1);
  });

  it('renames, describes, changes channels and deletes a group', async () => {
    expectSuccess(await create('Onboarding', ['Alpha']));
    const id = await groupId('Onboarding');
    expectSuccess(await create('Taken', []));
    const patch = (form: Record<string, unknown>) =>
      admin().patch(`/default_stream_groups/${id}`, form);
    expectError(await patch({}), 'You must pass "new_description" or "new_group_name".');
    expectError(
      await patch({ new_group_name: 'Onboarding' }),
      "This default channel group is already named 'Onboarding'",
    );
    expectError(
      await patch({ new_group_name: 'Taken' }),
      "Default channel group 'Taken' already exists",
    );
    // Zulip renames without checking the name; Parley checks it as on creation.
    expectError(
      await patch({ new_group_name: ' ', new_description: 'x' }),
      "Invalid default channel group name ' '",
    );
    expectSuccess(await patch({ new_group_name: 'Welcome', new_description: 'Start here' }));

    const streams = (op: string, names: string[]) =>
      admin().patch(`/default_stream_groups/${id}/streams`, {
        op,
        stream_names: JSON.stringify(names),
      });
    expectSuccess(await streams('add', ['beta']));
    expectError(
      await streams('add', ['beta']),
      "Channel 'beta' is already present in default channel group 'Welcome'",
    );
    expectError(
      await streams('move', ['beta']),
      'Invalid value for "op". Specify one of "add" or "remove".',
    );
    expectSuccess(await streams('remove', ['Alpha']));
    expectError(
      await streams('remove', ['Alpha']),
      "Channel 'Alpha' is not present in default channel group 'Welcome'",
    );
    expect((await registered(org.member)).find((g) => g.id === id)).toEqual({
      name: 'Welcome',
      id,
      description: 'Start here',
      streams: [beta],
    });

    expectSuccess(await admin().delete(`/default_stream_groups/${id}`));
    for (const response of [
      await admin().delete(`/default_stream_groups/${id}`),
      await patch({ new_description: 'again' }),
      await streams('add', ['Alpha']),
    ])
      expectError(response, `Default channel group with id '${id}' does not exist.`);
    expect(await prisma().defaultStreamGroupStream.count({ where: { groupId: id } })).toBe(0);
  });

  it('finds channels by name as PostgreSQL compares them, ignoring case', async () => {
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'ΟΔΟΣ' }],
      }),
    );
    const road = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'ΟΔΟΣ' },
    });
    // JavaScript lowercases the last letter to a final sigma, PostgreSQL does not; whether
    // PostgreSQL lowercases Greek at all depends on the database's locale (C.UTF-8 does).
    const [{ greek }] = await prisma().$queryRaw<[{ greek: boolean }]>`
      SELECT lower('ΟΔΟΣ') = lower('οδοσ') AS greek`;
    const created = await create('Roads', [' οδοσ ', 'ALPHA']);
    if (!greek) return expectError(created, "Invalid channel name ' οδοσ '");
    expectSuccess(created);
    expect((await registered(org.member)).find((g) => g.name === 'Roads')?.streams).toEqual([
      alpha,
      road.id,
    ]);
  });

  it('takes an archived channel out of its groups', async () => {
    expectSuccess(await create('Onboarding', ['Alpha', 'beta']));
    const id = await groupId('Onboarding');
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(await as(org.owner, org.host).delete(`/streams/${alpha}`)),
    );
    const entry = { name: 'Onboarding', id, description: 'For newcomers', streams: [beta] };
    expect(published.filter((p) => p.event.type === 'default_stream_groups')).toEqual([
      { event: { type: 'default_stream_groups', default_stream_groups: [entry] }, users: members },
    ]);
    expect(await registered(org.member)).toEqual([entry]);
  });

  it('folds its events into a registered state as a fresh /register shows it', async () => {
    expectSuccess(await create('Onboarding', ['Alpha']));
    const member = await createTestUser(org.realm, Role.MEMBER);
    const state = { realm_default_stream_groups: await registered(member) };
    const id = await groupId('Onboarding');
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await create('Advanced', ['beta']));
      expectSuccess(
        await admin().patch(`/default_stream_groups/${id}/streams`, {
          op: 'add',
          stream_names: JSON.stringify(['beta']),
        }),
      );
      expectSuccess(await admin().patch(`/default_stream_groups/${id}`, { new_group_name: 'B' }));
      expectSuccess(await admin().delete(`/default_stream_groups/${await groupId('Advanced')}`));
    });
    for (const [index, { event }] of published.entries())
      applyEvent(state, { id: index, ...event } as QueuedEvent, member, {} as StateOptions);
    expect(state.realm_default_stream_groups).toEqual(await registered(member));
    expect(state.realm_default_stream_groups).toHaveLength(1);
  });
});
