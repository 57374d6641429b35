// Channel folders (Zulip's ChannelFolder): POST /channel_folders/create, GET and PATCH
// /channel_folders, PATCH /channel_folders/{id}; channels' folder_id through PATCH /streams and
// POST /users/me/subscriptions; Zulip's checks, the audit log, the events and /register.
import { getPrisma, Role } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import {
  as,
  captureEvents,
  createChannel,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();

describe('channel folders', () => {
  let org: TestRealm;
  let everyone: number[];
  beforeAll(async () => {
    org = await createTestRealm();
    await createTestUser(org.realm, Role.MEMBER);
    everyone = (
      await prisma().user.findMany({
        where: { realmId: org.realm.id, isActive: true },
        orderBy: { id: 'asc' },
      })
    ).map((user) => user.id);
  });

  const owner = () => as(org.owner, org.host);
  const create = async (name: string, description = '') =>
    expectSuccess(await owner().post('/channel_folders/create', { name, description }))
      .channel_folder_id as number;
  const listed = async (query: Record<string, unknown> = {}) =>
    expectSuccess(await owner().get('/channel_folders', query)).channel_folders as {
      id: number;
      name: string;
      order: number;
      is_archived: boolean;
    }[];
  const registered = async () =>
    expectSuccess(
      await as(org.owner, org.host, { atOnce: true }).post('/register', {
        fetch_event_types: ['channel_folders'],
      }),
    ).channel_folders;

  it('creates a folder, tells everyone, and lists it', async () => {
    let id = 0;
    const before = Math.floor(Date.now() / 1000);
    const events = await captureEvents(org.realm.id, async () => {
      id = await create('Frontend', 'Channels for **frontend** work');
    });
    const entry = {
      id,
      name: 'Frontend',
      description: 'Channels for **frontend** work',
      rendered_description: '<p>Channels for <strong>frontend</strong> work</p>',
      order: id,
      creator_id: org.owner.id,
      date_created: expect.any(Number) as number,
      is_archived: false,
    };
    expect(events).toEqual([
      { event: { type: 'channel_folder', op: 'add', channel_folder: entry }, users: everyone },
    ]);
    const [folder] = await listed();
    expect(folder).toEqual(entry);
    expect((folder as unknown as { date_created: number }).date_created).toBeGreaterThanOrEqual(
      before,
    );
    expect(await registered()).toEqual([entry]);
    const audit = await prisma().auditLog.findFirstOrThrow({
      where: { realmId: org.realm.id, eventType: 901 },
    });
    expect(audit).toMatchObject({ actingUserId: org.owner.id, modifiedChannelFolderId: id });
  });

  it('renames, describes, archives and unarchives, one event per change', async () => {
    const id = await create('Backend');
    const events = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await owner().patch(`/channel_folders/${id}`, {
          name: 'Server side',
          description: 'APIs and *databases*',
          is_archived: true,
        }),
      );
    });
    const update = (data: object) => ({
      event: { type: 'channel_folder', op: 'update', channel_folder_id: id, data },
      users: everyone,
    });
    expect(events).toEqual([
      update({ name: 'Server side' }),
      update({
        description: 'APIs and *databases*',
        rendered_description: '<p>APIs and <em>databases</em></p>',
      }),
      update({ is_archived: true }),
    ]);
    // Archived folders are listed only when asked for, and always in /register.
    expect((await listed()).map((f) => f.id)).not.toContain(id);
    expect((await listed({ include_archived: true })).find((f) => f.id === id)).toMatchObject({
      name: 'Server side',
      is_archived: true,
    });
    expect((await registered()) as { id: number }[]).toContainEqual(
      expect.objectContaining({ id, is_archived: true }),
    );
    // A change that changes nothing sends nothing; changing only the case is a rename.
    const unchanged = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await owner().patch(`/channel_folders/${id}`, { name: 'Server side', is_archived: true }),
      );
    });
    expect(unchanged).toEqual([]);
    expectSuccess(await owner().patch(`/channel_folders/${id}`, { name: 'SERVER side' }));
    expectSuccess(await owner().patch(`/channel_folders/${id}`, { is_archived: false }));
    const audit = await prisma().auditLog.findMany({
      where: { realmId: org.realm.id, modifiedChannelFolderId: id },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((row) => row.eventType)).toEqual([901, 902, 903, 904, 902, 905]);
    expect(audit[1]!.extraData).toEqual({ old_value: 'Backend', new_value: 'Server side' });
  });

  it('reorders every folder, archived ones included', async () => {
    const archived = await create('Reorder archived');
    expectSuccess(await owner().patch(`/channel_folders/${archived}`, { is_archived: true }));
    await create('Reorder kept');
    const ids = (await listed({ include_archived: true })).map((f) => f.id);
    expect(ids).toContain(archived);
    const reversed = [...ids].reverse();
    const events = await captureEvents(org.realm.id, async () => {
      expectSuccess(await owner().patch('/channel_folders', { order: reversed }));
    });
    expect(events).toEqual([
      { event: { type: 'channel_folder', op: 'reorder', order: reversed }, users: everyone },
    ]);
    const after = await listed({ include_archived: true });
    expect(after.map((f) => f.id)).toEqual(reversed);
    expect(after.map((f) => f.order)).toEqual(reversed.map((_, index) => index));
    expectError(
      await owner().patch('/channel_folders', { order: reversed.slice(1) }),
      'Invalid order mapping.',
    );
    // A repeated id takes its last position, as in Zulip's order mapping.
    expectSuccess(await owner().patch('/channel_folders', { order: [ids[0], ...ids] }));
    expect((await listed({ include_archived: true })).map((f) => f.order)).toEqual(
      ids.map((_, index) => index + 1),
    );
  });

  it('puts channels in folders and keeps a folder with channels from being archived', async () => {
    const folder = await create('Design');
    const stream = await createChannel(org.realm, org.owner, 'mockups', [org.owner]);
    const moved = await captureEvents(org.realm.id, async () => {
      expectSuccess(await owner().patch(`/streams/${stream.id}`, { folder_id: folder }));
    });
    expect(moved.map((e) => e.event)).toEqual([
      {
        type: 'stream',
        op: 'update',
        stream_id: stream.id,
        name: 'mockups',
        property: 'folder_id',
        value: folder,
      },
    ]);
    const shown = expectSuccess(await owner().get(`/streams/${stream.id}`)).stream as {
      folder_id: number | null;
    };
    expect(shown.folder_id).toBe(folder);
    const archive = () => owner().patch(`/channel_folders/${folder}`, { is_archived: true });
    expectError(
      await archive(),
      'You need to remove all the channels from this folder to archive it.',
    );
    // An archived channel still counts.
    expectSuccess(await owner().delete(`/streams/${stream.id}`));
    expectError(
      await archive(),
      'You need to remove all the channels from this folder to archive it.',
    );
    expectSuccess(await owner().patch(`/streams/${stream.id}`, { folder_id: null }));
    expectSuccess(await archive());
    const audit = await prisma().auditLog.findMany({
      where: { realmId: org.realm.id, modifiedStreamId: stream.id, eventType: 609 },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((row) => row.extraData)).toEqual([
      { old_value: null, new_value: folder },
      { old_value: folder, new_value: null },
    ]);

    // A channel created in a folder, and a folder of another organization.
    const created = expectSuccess(
      await owner().post('/users/me/subscriptions', {
        subscriptions: [{ name: 'wireframes' }],
        folder_id: folder,
      }),
    );
    expect(created.subscribed).toEqual({ [org.owner.id]: ['wireframes'] });
    const row = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'wireframes' },
    });
    expect(row.folderId).toBe(folder);
    const elsewhere = await createTestRealm();
    expectError(
      await as(elsewhere.owner, elsewhere.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'wireframes' }],
        folder_id: folder,
      }),
      'Invalid channel folder ID',
    );
    expectError(
      await owner().patch(`/streams/${row.id}`, { folder_id: 999_999 }),
      'Invalid channel folder ID',
    );
    // An id no int4 column holds is refused as a parameter, not by the database.
    const huge = await owner().patch(`/streams/${row.id}`, { folder_id: 2 ** 40 });
    expect({ status: huge.status, msg: huge.body.msg }).toEqual({
      status: 400,
      msg: expect.stringContaining('folder_id') as string,
    });
  });

  it('refuses what Zulip refuses, and anyone but administrators', async () => {
    await create('Taken');
    const cases: [Record<string, unknown>, string][] = [
      [{ name: '  ', description: '' }, "Channel folder name can't be empty."],
      [
        { name: 'a\u0007b', description: '' },
        'Invalid character in channel folder name, at position 2.',
      ],
      [{ name: 'taken', description: '' }, 'Channel folder name already in use'],
      [{ name: 'x'.repeat(61), description: '' }, 'name is too long (limit: 60 characters)'],
      [
        { name: 'Long', description: 'x'.repeat(1025) },
        'description is too long (limit: 1024 characters)',
      ],
      [{ name: 'No description' }, "Missing 'description' argument"],
    ];
    for (const [form, msg] of cases) {
      const res = await owner().post('/channel_folders/create', form);
      expect({ status: res.status, msg: res.body.msg }).toEqual({ status: 400, msg });
    }
    const other = await create('Other');
    expectError(
      await owner().patch(`/channel_folders/${other}`, { name: 'TAKEN' }),
      'Channel folder name already in use',
    );
    expectError(
      await owner().patch('/channel_folders/999999', { name: 'x' }),
      'Invalid channel folder ID',
    );
    const outOfRange = await owner().patch(`/channel_folders/${2 ** 40}`, { name: 'x' });
    expect(outOfRange.status).toBe(400);
    // Names count characters: sixty emoji fit, as VARCHAR(60) holds them.
    expectSuccess(
      await owner().post('/channel_folders/create', { name: '📁'.repeat(60), description: '' }),
    );

    const member = await createTestUser(org.realm, Role.MEMBER);
    const asMember = as(member, org.host);
    for (const res of [
      await asMember.post('/channel_folders/create', { name: 'Mine', description: '' }),
      await asMember.patch(`/channel_folders/${other}`, { name: 'Mine' }),
      await asMember.patch('/channel_folders', { order: [other] }),
    ])
      expectError(res, 'Must be an organization administrator', 400, 'UNAUTHORIZED_PRINCIPAL');
    // Members (and guests) may list them.
    expect(
      (expectSuccess(await asMember.get('/channel_folders')).channel_folders as unknown[]).length,
    ).toBeGreaterThan(0);
    // Another organization sees none of these.
    const elsewhere = await createTestRealm();
    expect(
      expectSuccess(await as(elsewhere.owner, elsewhere.host).get('/channel_folders'))
        .channel_folders,
    ).toEqual([]);
    expectError(
      await as(elsewhere.owner, elsewhere.host).patch(`/channel_folders/${other}`, { name: 'x' }),
      'Invalid channel folder ID',
    );
  });

  it('folds its events into a registered state as a fresh /register shows it', async () => {
    const first = await create('Folded first');
    const second = await create('Folded second');
    const full = { channel_folders: await registered() };
    const published = await captureEvents(org.realm.id, async () => {
      const added = await create('Folded', 'new');
      expectSuccess(await owner().patch(`/channel_folders/${first}`, { description: 'changed' }));
      const ids = (await listed({ include_archived: true })).map((f) => f.id);
      expectSuccess(
        await owner().patch('/channel_folders', {
          order: [added, ...ids.filter((id) => id !== added)],
        }),
      );
      // Repeated ids fold as they were stored.
      expectSuccess(await owner().patch('/channel_folders', { order: [second, ...ids, second] }));
    });
    for (const [index, { event }] of published.entries())
      applyEvent(full, { id: index, ...event } as QueuedEvent, org.owner, {} as StateOptions);
    expect(full.channel_folders).toEqual(await registered());
  });
});
