// POST /channels/create (Zulip 11, feature level 417): a channel with its settings and its
// first subscribers, who need not include its creator; 409 CHANNEL_ALREADY_EXISTS for a name
// in use; the same permission checks and Notification Bot messages as subscribing creates.
import { getPrisma, Role, type User } from '@parley/db';
import { ensureSystemBot } from '../src/actions/system-bots';
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

describe('POST /channels/create', () => {
  let org: TestRealm;
  let member: User;
  let other: User;
  beforeAll(async () => {
    org = await createTestRealm();
    member = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Mia Member' });
    other = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Otto Other' });
  });

  const create = (form: Record<string, unknown>, user: User = member) =>
    as(user, org.host).post('/channels/create', form);
  const subscriberIds = async (streamId: number) => {
    const stream = await prisma().stream.findUniqueOrThrow({ where: { id: streamId } });
    const rows = await prisma().subscription.findMany({
      where: { recipientId: stream.recipientId!, active: true },
      orderBy: { userId: 'asc' },
    });
    return rows.map((row) => row.userId);
  };

  it('creates the channel with its settings and subscribes exactly the listed users', async () => {
    const folder = expectSuccess(
      await as(org.owner, org.host).post('/channel_folders/create', {
        name: 'Projects',
        description: '',
      }),
    ).channel_folder_id as number;
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(
        await create({
          name: ' launch ',
          description: 'Rocket\nplans',
          subscribers: [other.id],
          invite_only: true,
          history_public_to_subscribers: true,
          folder_id: folder,
        }),
      );
      expect(Object.keys(body).sort()).toEqual(['id', 'msg', 'result']);
      id = body.id as number;
    });
    const stream = await prisma().stream.findUniqueOrThrow({ where: { id } });
    expect(stream).toMatchObject({
      name: 'launch',
      description: 'Rocket plans',
      inviteOnly: true,
      historyPublicToSubscribers: true,
      folderId: folder,
      creatorId: member.id,
    });
    // The creator chose not to join.
    expect(await subscriberIds(id)).toEqual([other.id]);
    // A private channel: its creator (who administers it) learns of it at once, the subscriber
    // as they gain access by being subscribed.
    const created = published.filter((p) => p.event.type === 'stream' && p.event.op === 'create');
    expect(created.map((p) => p.users.includes(member.id))).toEqual([true, false]);
    expect(created[1]!.users).toEqual([other.id]);
    const added = published.filter((p) => p.event.type === 'subscription' && p.event.op === 'add');
    expect(added.map((p) => p.users)).toEqual([[other.id]]);
    // The channel's first message, and no "subscribed you" message for a new channel.
    const bot = await ensureSystemBot(org.realm, 'notification');
    const notices = await prisma().message.findMany({
      where: { realmId: org.realm.id, senderId: bot.id },
      include: { recipient: true },
    });
    expect(notices.map((m) => [m.recipientId, m.subject])).toEqual([
      [stream.recipientId, 'channel events'],
    ]);
    expect(notices[0]!.content).toMatch(/^\*\*Private, shared history\*\* channel created by /);
  });

  it('announces the channel when asked, in the new-channel announcements channel', async () => {
    const announcements = await createChannel(org.realm, org.owner, 'announcements', []);
    expectSuccess(
      await as(org.owner, org.host).patch('/realm', {
        new_stream_announcements_stream_id: announcements.id,
      }),
    );
    const id = expectSuccess(
      await create({ name: 'announced', subscribers: [member.id], announce: true }),
    ).id as number;
    const [announcement] = await prisma().message.findMany({
      where: { recipientId: announcements.recipientId!, subject: 'new channels' },
    });
    expect(announcement!.content).toMatch(
      new RegExp(`^@_\\*\\*Mia Member\\|${member.id}\\*\\* created a new channel #\\*\\*announced`),
    );
    expect(await subscriberIds(id)).toEqual([member.id]);
  });

  it('answers 409 for a name in use, whatever its case, archived channels included', async () => {
    expectSuccess(await create({ name: 'taken', subscribers: [] }));
    const conflict = await create({ name: 'TAKEN', subscribers: [member.id] });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({
      result: 'error',
      code: 'CHANNEL_ALREADY_EXISTS',
      msg: "Channel 'TAKEN' already exists",
    });
    const archived = await createChannel(org.realm, org.owner, 'old times', []);
    expectSuccess(await as(org.owner, org.host).delete(`/streams/${archived.id}`));
    expect((await create({ name: 'old times', subscribers: [] })).status).toBe(409);
  });

  it('refuses what subscribing refuses', async () => {
    const guest = await createTestUser(org.realm, Role.GUEST);
    expectError(await create({ name: 'g', subscribers: [] }, guest), 'Not allowed for guest users');
    expectError(
      await create({ name: 'x' }),
      "Missing 'subscribers' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(await create({ name: '  ', subscribers: [] }), "Channel name can't be empty.");
    expectError(await create({ name: 'ghosts', subscribers: [999_999] }), 'No such user');
    expectError(
      await create({ name: 'foldered', subscribers: [], folder_id: 999_999 }),
      'Invalid channel folder ID',
    );
    expectError(
      await create({ name: 'kept', subscribers: [], message_retention_days: 30 }),
      'Must be an organization owner',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    // With protected history, everyone must be able to start topics (Zulip's
    // validate_can_create_topic_group_setting_for_protected_history_streams).
    const members = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:members' },
    });
    expectError(
      await create({
        name: 'sealed',
        subscribers: [],
        invite_only: true,
        can_create_topic_group: members.id,
      }),
      'Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group',
    );
    expectSuccess(
      await create({
        name: 'shared',
        subscribers: [],
        invite_only: true,
        history_public_to_subscribers: true,
        can_create_topic_group: members.id,
      }),
    );
    // Nothing was created by the refused requests.
    const names = (
      await prisma().stream.findMany({ where: { realmId: org.realm.id }, select: { name: true } })
    ).map((s) => s.name);
    for (const name of ['g', 'x', 'ghosts', 'foldered', 'kept', 'sealed'])
      expect(names).not.toContain(name);
  });
});
