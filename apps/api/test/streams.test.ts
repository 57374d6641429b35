import { getPrisma, RecipientType, Role, type Stream, type User } from '@parley/db';
import {
  as,
  captureEvents,
  createChannel,
  createTestRealm,
  createTestUser,
  expectError,
  expectPublished,
  expectSuccess,
  type Published,
  type TestRealm,
} from './helpers';
import { ensureSystemBot } from '../src/actions/system-bots';

const prisma = () => getPrisma();
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

interface Org extends TestRealm {
  admin: User;
  moderator: User;
  member: User;
  other: User;
  guest: User;
  /** Public, created by member; member and guest subscribed. */
  general: Stream;
  /** Private, created by member; member subscribed. */
  secret: Stream;
  /** Web-public, created by the owner, nobody else subscribed. */
  web: Stream;
}

async function createOrg(): Promise<Org> {
  const org = await createTestRealm();
  const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
  const moderator = await createTestUser(org.realm, Role.MODERATOR);
  const member = await createTestUser(org.realm, Role.MEMBER);
  const other = await createTestUser(org.realm, Role.MEMBER);
  const guest = await createTestUser(org.realm, Role.GUEST);
  const general = await createChannel(org.realm, member, 'general', [member, guest]);
  const secret = await createChannel(org.realm, member, 'secret', [member], { inviteOnly: true });
  await prisma().realm.update({
    where: { id: org.realm.id },
    data: { webPublicAccessEnabled: true },
  });
  const web = await createChannel(org.realm, org.owner, 'web', [org.owner], { isWebPublic: true });
  return {
    ...org,
    admin,
    moderator,
    member,
    other,
    guest,
    general,
    secret,
    web,
  };
}

const names = (body: Record<string, unknown>, key = 'streams') =>
  (body[key] as { name: string }[]).map((s) => s.name);

describe('GET /streams', () => {
  let org: Org;
  beforeAll(async () => {
    org = await createOrg();
  });
  const list = (user: User, query: Record<string, unknown> = {}) =>
    as(user, org.host).get('/streams', query);

  it('lists public and subscribed channels, sorted by name', async () => {
    expect(names(expectSuccess(await list(org.member)))).toEqual(['general', 'secret', 'web']);
    expect(names(expectSuccess(await list(org.other)))).toEqual(['general', 'web']);
    expect(names(expectSuccess(await list(org.admin)))).toEqual(['general', 'web']);
  });

  it('shows guests only their channels, and web-public ones on request', async () => {
    expect(names(expectSuccess(await list(org.guest)))).toEqual(['general']);
    expect(names(expectSuccess(await list(org.guest, { include_web_public: true })))).toEqual([
      'general',
      'web',
    ]);
  });

  it('gives administrators every channel with include_all', async () => {
    expect(names(expectSuccess(await list(org.admin, { include_all: true })))).toEqual([
      'general',
      'secret',
      'web',
    ]);
    expect(names(expectSuccess(await list(org.other, { include_all: true })))).toEqual([
      'general',
      'web',
    ]);
    expect(
      names(expectSuccess(await list(org.admin, { include_can_access_content: true }))),
    ).toEqual(['general', 'web']);
    expect(
      names(
        expectSuccess(await list(org.member, { include_public: false, include_subscribed: false })),
      ),
    ).toEqual([]);
  });

  it('marks default channels with include_default', async () => {
    expectSuccess(
      await as(org.admin, org.host).patch(`/streams/${org.general.id}`, {
        is_default_stream: true,
      }),
    );
    const streams = expectSuccess(await list(org.member, { include_default: true })).streams as {
      name: string;
      is_default: boolean;
    }[];
    expect(streams.map((s) => [s.name, s.is_default])).toEqual([
      ['general', true],
      ['secret', false],
      ['web', false],
    ]);
    expect(expectSuccess(await list(org.member)).streams).not.toContainEqual(
      expect.objectContaining({ is_default: expect.anything() as unknown }),
    );
  });

  it('rejects non-boolean flags', async () => {
    expectError(await list(org.member, { include_all: 'sure' }), 'include_all is not a boolean');
  });
});

describe('GET /streams/{stream_id} and /get_stream_id', () => {
  let org: Org;
  beforeAll(async () => {
    org = await createOrg();
  });

  it('returns a channel to whoever may see it', async () => {
    const { stream } = expectSuccess(
      await as(org.other, org.host).get(`/streams/${org.general.id}`),
    ) as {
      stream: Record<string, unknown>;
    };
    expect(stream).toMatchObject({
      stream_id: org.general.id,
      name: 'general',
      subscriber_count: 2,
    });
    expect(stream).not.toHaveProperty('color');
    expectSuccess(await as(org.admin, org.host).get(`/streams/${org.secret.id}`));
    expectError(
      await as(org.other, org.host).get(`/streams/${org.secret.id}`),
      'Invalid channel ID',
    );
    expectError(await as(org.other, org.host).get('/streams/99999999'), 'Invalid channel ID');
    expectError(await as(org.other, org.host).get('/streams/abc'), 'stream_id is not an integer');
    expectError(
      await as(org.other, org.host).get('/streams/99999999999'),
      'stream_id is too large',
    );
  });

  it('finds a channel id by name, case-insensitively', async () => {
    const get = (user: User, stream: string) =>
      as(user, org.host).get('/get_stream_id', { stream });
    expect(expectSuccess(await get(org.other, ' GENERAL ')).stream_id).toBe(org.general.id);
    expect(expectSuccess(await get(org.member, 'secret')).stream_id).toBe(org.secret.id);
    expectError(await get(org.other, 'secret'), "Invalid channel name 'secret'");
    expectError(await get(org.admin, 'secret'), "Invalid channel name 'secret'");
    expectError(await get(org.other, 'nope'), "Invalid channel name 'nope'");
    expectError(
      await as(org.other, org.host).get('/get_stream_id'),
      "Missing 'stream' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });
});

describe('GET /streams/{stream_id}/members', () => {
  it('lists subscribers to those who may see them', async () => {
    const org = await createOrg();
    const members = (user: User, stream: Stream) =>
      as(user, org.host).get(`/streams/${stream.id}/members`);
    expect(expectSuccess(await members(org.other, org.general)).subscribers).toEqual(
      sorted([org.member.id, org.guest.id]),
    );
    expect(expectSuccess(await members(org.admin, org.secret)).subscribers).toEqual([
      org.member.id,
    ]);
    expect(expectSuccess(await members(org.guest, org.web)).subscribers).toEqual([org.owner.id]);
    expectError(await members(org.other, org.secret), 'Invalid channel ID');
    const notJoined = await createTestUser(org.realm, Role.GUEST);
    expectError(await members(notJoined, org.general), 'Invalid channel ID');
  });
});

describe('PATCH /streams/{stream_id}', () => {
  let org: Org;
  let notificationBot: User;
  beforeEach(async () => {
    org = await createOrg();
    notificationBot = await ensureSystemBot(org.realm, 'notification');
  });
  const patch = (user: User, stream: Stream, form: Record<string, unknown>) =>
    as(user, org.host).patch(`/streams/${stream.id}`, form);
  /** The change's own events, without the Notification Bot's notice of it
   * (channel-notices.test.ts). */
  const changes = (published: Published[]) => published.filter((p) => p.event.type !== 'message');

  it('lets the creator rename a channel, telling everyone who sees it', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await patch(org.member, org.general, { new_name: ' lounge ' }));
    });
    expectPublished(changes(published), [
      {
        event: {
          type: 'stream',
          op: 'update',
          stream_id: org.general.id,
          name: 'general',
          property: 'name',
          value: 'lounge',
        },
        users: sorted([
          org.owner.id,
          org.admin.id,
          org.moderator.id,
          org.member.id,
          org.other.id,
          org.guest.id,
          notificationBot.id,
        ]),
      },
    ]);
    expectError(
      await patch(org.member, org.general, { new_name: 'lounge' }),
      'Channel already has that name.',
    );
    expectSuccess(await patch(org.member, org.general, { new_name: 'Lounge' }));
    expectError(
      await patch(org.member, org.general, { new_name: 'WEB' }),
      "Channel 'WEB' already exists",
      409,
      'CHANNEL_ALREADY_EXISTS',
    );
    expectError(
      await patch(org.member, org.general, { new_name: '' }),
      "Channel name can't be empty.",
    );
  });

  it('refuses those who may not administer the channel', async () => {
    expectError(
      await patch(org.other, org.general, { description: 'x' }),
      'You do not have permission to administer this channel.',
      400,
      'CANNOT_ADMINISTER_CHANNEL',
    );
    expectError(
      await patch(org.guest, org.general, { description: 'x' }),
      'You do not have permission to administer this channel.',
      400,
      'CANNOT_ADMINISTER_CHANNEL',
    );
    expectError(await patch(org.other, org.secret, { description: 'x' }), 'Invalid channel ID');
    // Administrators administer every channel, private ones included.
    expectSuccess(await patch(org.admin, org.secret, { description: 'by admin' }));
    expect(
      (await prisma().stream.findUniqueOrThrow({ where: { id: org.secret.id } })).description,
    ).toBe('by admin');
  });

  it('changes the description with its rendering', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await patch(org.member, org.secret, { description: 'line one\nline <two>' }));
    });
    expectPublished(changes(published), [
      {
        event: {
          type: 'stream',
          op: 'update',
          stream_id: org.secret.id,
          name: 'secret',
          property: 'description',
          value: 'line one line <two>',
          rendered_description: '<p>line one line &lt;two&gt;</p>',
        },
        users: sorted([org.owner.id, org.admin.id, org.member.id]),
      },
    ]);
    expectError(
      await patch(org.member, org.secret, { description: 'd'.repeat(1025) }),
      'description is too long (limit: 1024 characters)',
    );
  });

  it('makes a public channel private: outsiders get a delete, insiders the update', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await patch(org.member, org.general, { is_private: true }));
    });
    expectPublished(changes(published), [
      {
        event: {
          type: 'stream',
          op: 'update',
          stream_id: org.general.id,
          name: 'general',
          property: 'invite_only',
          value: true,
          history_public_to_subscribers: false,
          is_web_public: false,
        },
        users: sorted([org.owner.id, org.admin.id, org.member.id, org.guest.id]),
      },
      {
        event: {
          type: 'stream',
          op: 'delete',
          streams: [{ stream_id: org.general.id }],
          stream_ids: [org.general.id],
        },
        users: sorted([org.moderator.id, org.other.id, notificationBot.id]),
      },
    ]);
    // And back: the others see it appear, with its subscribers.
    const back = await captureEvents(org.realm.id, async () => {
      expectSuccess(await patch(org.member, org.general, { is_private: false }));
    });
    const create = back.find((p) => p.event.op === 'create')!;
    expect(create.users).toEqual(sorted([org.moderator.id, org.other.id, notificationBot.id]));
    expect(back.find((p) => p.event.op === 'peer_add')).toEqual({
      event: {
        type: 'subscription',
        op: 'peer_add',
        stream_ids: [org.general.id],
        user_ids: sorted([org.member.id, org.guest.id]),
      },
      users: sorted([org.moderator.id, org.other.id, notificationBot.id]),
    });
    expectError(
      await patch(org.member, org.general, { history_public_to_subscribers: false }),
      'Invalid parameters',
    );
    expectError(
      await patch(org.member, org.general, { is_web_public: true }),
      'Insufficient permission',
    );
  });

  it('keeps starting topics open to everyone while history is protected', async () => {
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    const refusal =
      'Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group';
    // The private channel protects its history: everyone must be able to start topics.
    expectError(
      await patch(org.member, org.secret, { can_create_topic_group: { new: admins.id } }),
      refusal,
    );
    // Sharing the history in the same request makes the restriction possible...
    expectSuccess(
      await patch(org.member, org.secret, {
        history_public_to_subscribers: true,
        can_create_topic_group: { new: admins.id },
      }),
    );
    // ...and protecting it again is refused while the restriction stands, changing nothing.
    expectError(
      await patch(org.member, org.secret, { history_public_to_subscribers: false }),
      refusal,
    );
    const stream = await prisma().stream.findUniqueOrThrow({ where: { id: org.secret.id } });
    expect([stream.historyPublicToSubscribers, stream.canCreateTopicGroupId]).toEqual([
      true,
      admins.id,
    ]);
  });

  it('checks the creation permission of the privacy a request names, changed or not', async () => {
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { canCreatePrivateChannelGroupId: admins.id },
    });
    // The member administers the private channel they created, but may no longer create one.
    expectError(
      await patch(org.member, org.secret, {
        is_private: true,
        history_public_to_subscribers: true,
      }),
      'Insufficient permission',
    );
    expectSuccess(await patch(org.member, org.secret, { history_public_to_subscribers: true }));
  });

  it('derives the legacy stream_post_policy from can_send_message_group', async () => {
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    const everyone = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:everyone' },
    });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await patch(org.member, org.general, {
          can_send_message_group: { new: admins.id, old: everyone.id },
        }),
      );
    });
    expect(changes(published).map((p) => [p.event.property, p.event.value])).toEqual([
      ['can_send_message_group', admins.id],
      ['stream_post_policy', 2],
      ['is_announcement_only', true],
    ]);
    expectError(
      await patch(org.member, org.general, {
        can_send_message_group: { new: everyone.id, old: everyone.id },
      }),
      "'old' value does not match the expected value.",
      400,
      'EXPECTATION_MISMATCH',
    );
    // Unchanged: nothing happens.
    const none = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await patch(org.member, org.general, { can_send_message_group: { new: admins.id } }),
      );
    });
    expect(none).toEqual([]);
    expectError(
      await patch(org.member, org.general, { can_send_message_group: admins.id }),
      'can_send_message_group is not a dict',
    );
  });

  it('gates retention, default channels and topics policy', async () => {
    expectError(
      await patch(org.admin, org.general, { message_retention_days: 10 }),
      'Must be an organization owner',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectSuccess(await patch(org.owner, org.general, { message_retention_days: 10 }));
    expectSuccess(
      await patch(org.owner, org.general, { message_retention_days: '"realm_default"' }),
    );
    expect(
      (await prisma().stream.findUniqueOrThrow({ where: { id: org.general.id } }))
        .messageRetentionDays,
    ).toBeNull();
    // Zulip's CannotManageDefaultChannelError, for a channel administrator who is not an
    // organization administrator.
    expectError(
      await patch(org.member, org.general, { is_default_stream: true }),
      'You do not have permission to change default channels.',
    );
    expectError(
      await patch(org.admin, org.secret, { is_default_stream: true }),
      'A default channel cannot be private.',
    );
    // That check comes first, whoever asks.
    expectError(
      await patch(org.member, org.general, { is_default_stream: true, is_private: true }),
      'A default channel cannot be private.',
    );
    expectSuccess(await patch(org.member, org.general, { topics_policy: 'disable_empty_topic' }));
    expectError(
      await patch(org.member, org.general, { topics_policy: 'whatever' }),
      'Invalid topics_policy',
    );
  });

  it('unarchives with is_archived=false', async () => {
    expectSuccess(await as(org.member, org.host).delete(`/streams/${org.general.id}`));
    expectSuccess(await patch(org.member, org.general, { is_archived: false }));
    expect(
      (await prisma().stream.findUniqueOrThrow({ where: { id: org.general.id } })).deactivated,
    ).toBe(false);
    expectError(
      await patch(org.member, org.general, { is_archived: false }),
      'Channel is not currently deactivated',
    );
  });
});

describe('DELETE /streams/{stream_id}', () => {
  it('archives a channel, keeping its subscriptions, in two forms by client capability', async () => {
    const org = await createOrg();
    const notificationBot = await ensureSystemBot(org.realm, 'notification');
    expectError(
      await as(org.other, org.host).delete(`/streams/${org.general.id}`),
      'You do not have permission to administer this channel.',
      400,
      'CANNOT_ADMINISTER_CHANNEL',
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.member, org.host).delete(`/streams/${org.general.id}`));
    });
    const everyone = sorted([
      org.owner.id,
      org.admin.id,
      org.moderator.id,
      org.member.id,
      org.other.id,
      org.guest.id,
      notificationBot.id,
    ]);
    // Without the Notification Bot's notice (channel-notices.test.ts).
    expectPublished(
      published.filter((p) => p.event.type !== 'message'),
      [
        {
          event: {
            type: 'stream',
            op: 'update',
            stream_id: org.general.id,
            name: 'general',
            property: 'is_archived',
            value: true,
            internal_data: { archived_channels: true },
          },
          users: everyone,
        },
        {
          event: {
            type: 'stream',
            op: 'delete',
            streams: [{ stream_id: org.general.id }],
            stream_ids: [org.general.id],
            internal_data: { archived_channels: false },
          },
          users: everyone,
        },
      ],
    );
    expect(
      await prisma().subscription.count({
        where: { recipientId: org.general.recipientId!, active: true },
      }),
    ).toBe(2);
    expectError(
      await as(org.member, org.host).delete(`/streams/${org.general.id}`),
      'Channel is already deactivated',
    );
    // Archived channels stay readable (feature level 480) but leave the default lists.
    expectSuccess(await as(org.member, org.host).get(`/streams/${org.general.id}`));
    expect(names(expectSuccess(await as(org.member, org.host).get('/streams')))).toEqual([
      'secret',
      'web',
    ]);
    expect(
      names(
        expectSuccess(await as(org.member, org.host).get('/streams', { exclude_archived: false })),
      ),
    ).toEqual(['general', 'secret', 'web']);
  });
});

describe('GET /users/me/{stream_id}/topics', () => {
  async function send(sender: User, stream: Stream, subject: string, recipients: User[]) {
    const message = await prisma().message.create({
      data: {
        realmId: sender.realmId,
        senderId: sender.id,
        recipientId: stream.recipientId!,
        subject,
        content: 'hi',
        isChannelMessage: true,
      },
    });
    await prisma().userMessage.createMany({
      data: recipients.map((user) => ({ userId: user.id, messageId: message.id })),
    });
    return message.id;
  }

  it('lists topics newest first, grouped case-insensitively under their latest spelling', async () => {
    const org = await createOrg();
    const first = await send(org.member, org.general, 'Lunch', [org.member]);
    const second = await send(org.member, org.general, '', [org.member]);
    const third = await send(org.member, org.general, 'lunch', [org.member]);
    const topics = (query: Record<string, unknown> = {}) =>
      as(org.other, org.host).get(`/users/me/${org.general.id}/topics`, query);
    expect(first).toBeLessThan(second);
    expect(expectSuccess(await topics()).topics).toEqual([
      { name: 'lunch', max_id: third },
      { name: 'general chat', max_id: second },
    ]);
    expect(expectSuccess(await topics({ allow_empty_topic_name: true })).topics).toEqual([
      { name: 'lunch', max_id: third },
      { name: '', max_id: second },
    ]);
  });

  it('shows only received history in channels that protect it', async () => {
    const org = await createOrg();
    await send(org.member, org.secret, 'before you', [org.member]);
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'secret' }],
        principals: [org.other.id],
      }),
    );
    const after = await send(org.member, org.secret, 'with you', [org.member, org.other]);
    expect(
      expectSuccess(await as(org.other, org.host).get(`/users/me/${org.secret.id}/topics`)).topics,
    ).toEqual([{ name: 'with you', max_id: after }]);
    expectError(
      await as(org.admin, org.host).get(`/users/me/${org.secret.id}/topics`),
      'Invalid channel ID',
    );
    expect(
      (await prisma().recipient.findUniqueOrThrow({ where: { id: org.secret.recipientId! } })).type,
    ).toBe(RecipientType.STREAM);
  });
});

describe('channel visibility and role changes', () => {
  it('shows private channels to a new administrator and hides public ones from a new guest', async () => {
    const org = await createOrg();
    const promoted = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).patch(`/users/${org.other.id}`, { role: 200 }));
    });
    const toOther = promoted.filter(
      (p) =>
        p.users.includes(org.other.id) &&
        p.event.type !== 'realm_user' &&
        p.event.type !== 'user_group',
    );
    expect(toOther.map((p) => p.event.op)).toEqual(['create', 'peer_add']);
    expect(toOther[0]!.event.streams).toEqual([
      expect.objectContaining({ stream_id: org.secret.id }),
    ]);
    expect(toOther[1]!.event).toMatchObject({
      stream_ids: [org.secret.id],
      user_ids: [org.member.id],
    });

    const demoted = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.owner, org.host).patch(`/users/${org.moderator.id}`, { role: 600 }),
      );
    });
    // The web-public channel stays in sight; the public one goes.
    expect(demoted.find((p) => p.event.type === 'stream')).toEqual({
      event: {
        type: 'stream',
        op: 'delete',
        streams: [{ stream_id: org.general.id }],
        stream_ids: [org.general.id],
      },
      users: [org.moderator.id],
    });
  });
});

describe('bad input to the channel endpoints', () => {
  let org: Org;
  beforeAll(async () => {
    org = await createOrg();
  });

  it('answers every mistyped GET /streams flag with a 400', async () => {
    for (const flag of [
      'include_public',
      'include_web_public',
      'include_subscribed',
      'exclude_archived',
      'include_all_active',
      'include_all',
      'include_default',
      'include_owner_subscribed',
      'include_can_access_content',
    ]) {
      expectError(
        await as(org.member, org.host).get('/streams', { [flag]: 'x' }),
        `${flag} is not a boolean`,
      );
    }
  });

  it('answers every mistyped PATCH /streams/{id} parameter with a 400 and changes nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ is_private: 'x' }, 'is_private is not a boolean'],
      [{ is_web_public: 'x' }, 'is_web_public is not a boolean'],
      [{ history_public_to_subscribers: 'x' }, 'history_public_to_subscribers is not a boolean'],
      [{ is_default_stream: 'x' }, 'is_default_stream is not a boolean'],
      [{ is_archived: 'x' }, 'is_archived is not a boolean'],
      [{ message_retention_days: -5 }, "Bad value for 'message_retention_days': -5"],
      [{ message_retention_days: 'forever' }, "Bad value for 'message_retention_days': forever"],
      [{ new_name: 'a\u0000' }, 'Invalid new_name: null bytes are not allowed'],
      [{ new_name: 'n'.repeat(61) }, 'Channel name too long (limit: 60 characters).'],
      [
        { can_remove_subscribers_group: { old: 1 } },
        "can_remove_subscribers_group['new'] field is missing",
      ],
      [
        { can_remove_subscribers_group: { new: 'x' } },
        "Invalid can_remove_subscribers_group['new']",
      ],
      [{ can_administer_channel_group: { new: 99999999 } }, 'Invalid user group'],
    ];
    const before = await prisma().stream.findUniqueOrThrow({ where: { id: org.general.id } });
    for (const [form, msg] of cases) {
      const res = await as(org.owner, org.host).patch(`/streams/${org.general.id}`, form);
      expect([res.status, res.body.msg]).toEqual([400, msg]);
    }
    expect(await prisma().stream.findUniqueOrThrow({ where: { id: org.general.id } })).toEqual(
      before,
    );
    expectError(
      await as(org.owner, org.host).patch('/streams/99999999', { description: 'x' }),
      'Invalid channel ID',
    );
    expectError(await as(org.owner, org.host).delete('/streams/99999999'), 'Invalid channel ID');
    expectError(
      await as(org.other, org.host).delete(`/streams/${org.secret.id}`),
      'Invalid channel ID',
    );
    expectError(
      await as(org.guest, org.host).delete(`/streams/${org.web.id}`),
      'You do not have permission to administer this channel.',
      400,
      'CANNOT_ADMINISTER_CHANNEL',
    );
  });

  it('answers bad topic-history requests with a 400', async () => {
    expectError(
      await as(org.member, org.host).get(`/users/me/${org.general.id}/topics`, {
        allow_empty_topic_name: 'x',
      }),
      'allow_empty_topic_name is not a boolean',
    );
    expectError(
      await as(org.other, org.host).get(`/users/me/${org.secret.id}/topics`),
      'Invalid channel ID',
    );
    expectError(
      await as(org.guest, org.host).get(`/users/me/${org.secret.id}/topics`),
      'Invalid channel ID',
    );
    expectSuccess(await as(org.guest, org.host).get(`/users/me/${org.web.id}/topics`));
    expectError(
      await as(org.member, org.host).get('/users/me/abc/topics'),
      'stream_id is not an integer',
    );
  });

  it('lists parameters it does not act on as ignored', async () => {
    const body = expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'ignored' }],
        announce: true,
        send_new_subscription_messages: false,
        in_home_view: true,
      }),
    );
    expect(body.ignored_parameters_unsupported).toEqual(['in_home_view']);
  });
});

describe('POST and DELETE /default_streams', () => {
  let org: Org;
  beforeAll(async () => {
    org = await createOrg();
  });
  const add = (user: User, streamId: unknown) =>
    as(user, org.host).post('/default_streams', { stream_id: streamId });
  const remove = (user: User, streamId: unknown) =>
    as(user, org.host).delete('/default_streams', { stream_id: streamId });
  const defaults = async () =>
    (await prisma().defaultStream.findMany({ where: { realmId: org.realm.id } })).map(
      (row) => row.streamId,
    );
  const members = async () =>
    sorted(
      (
        await prisma().user.findMany({
          where: { realmId: org.realm.id, isActive: true, role: { not: Role.GUEST } },
        })
      ).map((user) => user.id),
    );

  it('lets an administrator add and remove a default channel, telling every member', async () => {
    const added = await captureEvents(org.realm.id, async () => {
      expectSuccess(await add(org.admin, org.general.id));
    });
    expectPublished(added, [
      {
        event: { type: 'default_streams', default_streams: [org.general.id] },
        users: await members(),
      },
    ]);
    expect(await defaults()).toEqual([org.general.id]);
    // Adding it again changes nothing and tells nobody.
    expect(
      await captureEvents(org.realm.id, async () => {
        expectSuccess(await add(org.admin, org.general.id));
      }),
    ).toEqual([]);
    const removed = await captureEvents(org.realm.id, async () => {
      expectSuccess(await remove(org.admin, org.general.id));
    });
    expectPublished(removed, [
      { event: { type: 'default_streams', default_streams: [] }, users: await members() },
    ]);
    expect(await defaults()).toEqual([]);
  });

  it("refuses non-administrators, private channels and channels one cannot see, in Zulip's words", async () => {
    expectError(
      await add(org.member, org.general.id),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectError(
      await remove(org.moderator, org.general.id),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    // The member created 'secret' and is its only subscriber.
    expectError(await add(org.owner, org.secret.id), 'Invalid channel ID');
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'secret' }],
        principals: [org.admin.id],
      }),
    );
    expectError(await add(org.admin, org.secret.id), 'Private channels cannot be made default.');
    expectError(await add(org.admin, 999_999_999), 'Invalid channel ID');
    // No id is too small: Zulip's access_stream_by_id finds no channel.
    expectError(await add(org.admin, 0), 'Invalid channel ID');
    expectError(await remove(org.admin, -5), 'Invalid channel ID');
    expectError(await add(org.admin, 'general'), 'stream_id is not an integer');
    expectError(
      await remove(org.admin, undefined),
      "Missing 'stream_id' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expect(await defaults()).toEqual([]);
  });
});
