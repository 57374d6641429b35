// Managing bots (Zulip's patch_bot_backend, deactivate_bot_backend, regenerate_bot_api_key,
// and add_bot_backend's avatar and defaults): for the bot's owner or an administrator, with
// Zulip's messages, realm_bot events to whoever sees the bot, and the defaults applied to the
// queues the bot registers.
import request from 'supertest';
import sharp from 'sharp';
import { getConfig } from '@parley/config';
import { getPrisma, Role, type User } from '@parley/db';
import { getRedis, QueueStore } from '@parley/events';
import { ensureSystemBot } from '../src/actions/system-bots';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import type { QueuedEvent } from '@parley/events';
import {
  api,
  app,
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

const picture = () =>
  sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 9, g: 99, b: 199 } } })
    .png()
    .toBuffer();

async function createBot(org: TestRealm, owner: User, shortName: string): Promise<User> {
  const created = expectSuccess(
    await as(owner, org.host).post('/bots', {
      full_name: `Bot ${shortName}`,
      short_name: shortName,
    }),
  );
  return prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
}

describe('PATCH /bots/{id}', () => {
  let org: TestRealm;
  let owner: User;
  let admin: User;
  let other: User;
  beforeAll(async () => {
    org = await createTestRealm();
    owner = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Bot Keeper' });
    admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    other = await createTestUser(org.realm);
  });

  it('lets the owner rename and set defaults, answering with the bot as it is now', async () => {
    const bot = await createBot(org, owner, 'reporter');
    const channel = await createChannel(org.realm, owner, 'reports', [owner]);
    let answer: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      answer = expectSuccess(
        await as(owner, org.host).patch(`/bots/${bot.id}`, {
          full_name: 'Daily Reporter',
          default_sending_stream: 'reports',
          default_events_register_stream: 'Reports',
          default_all_public_streams: true,
        }),
      );
    });
    expect(answer).toMatchObject({
      full_name: 'Daily Reporter',
      default_sending_stream: 'reports',
      default_events_register_stream: 'reports',
      default_all_public_streams: true,
      service_interface: 1,
      service_payload_url: null,
      config_data: null,
      bot_owner: owner.deliveryEmail,
    });
    expect(await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).toMatchObject({
      fullName: 'Daily Reporter',
      defaultSendingStreamId: channel.id,
      defaultEventsRegisterStreamId: channel.id,
      defaultAllPublicStreams: true,
    });
    const botUpdates = published
      .filter((p) => p.event.type === 'realm_bot')
      .map((p) => p.event.bot as Record<string, unknown>);
    expect(botUpdates).toEqual([
      { user_id: bot.id, full_name: 'Daily Reporter' },
      { user_id: bot.id, default_sending_stream: 'reports' },
      { user_id: bot.id, default_events_register_stream: 'reports' },
      { user_id: bot.id, default_all_public_streams: true },
    ]);
    for (const update of published.filter((p) => p.event.type === 'realm_bot'))
      expect(update.users.sort()).toEqual([org.owner.id, owner.id, admin.id].sort());
    const audits = await prisma().auditLog.findMany({
      where: { modifiedUserId: bot.id, eventType: { in: [124, 129, 130, 131] } },
      orderBy: { id: 'asc' },
    });
    expect(audits.map((entry) => entry.eventType)).toEqual([124, 129, 130, 131]);

    const listed = (expectSuccess(await as(owner, org.host).get('/bots')).bots as object[])[0];
    expect(listed).toMatchObject({
      full_name: 'Daily Reporter',
      default_sending_stream: 'reports',
      default_events_register_stream: 'reports',
      default_all_public_streams: true,
    });

    // '' clears a default; the same name again changes nothing.
    const cleared = expectSuccess(
      await as(owner, org.host).patch(`/bots/${bot.id}`, {
        full_name: 'Daily Reporter',
        default_sending_stream: '',
      }),
    );
    expect(cleared).toMatchObject({
      default_sending_stream: null,
      default_events_register_stream: 'reports',
    });
  });

  it("registers the bot's queues on its default channel and all public channels unless told", async () => {
    const bot = await createBot(org, owner, 'listener');
    const channel = await createChannel(org.realm, owner, 'listened', [owner]);
    expectSuccess(
      await as(owner, org.host).patch(`/bots/${bot.id}`, {
        default_events_register_stream: 'listened',
        default_all_public_streams: true,
      }),
    );
    const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
    const optionsOf = async (params: Record<string, unknown>) => {
      const { queue_id } = expectSuccess(
        await as(bot, org.host).post('/register', { event_types: ['message'], ...params }),
      );
      return (await store.meta(queue_id as string))!.options;
    };
    expect(await optionsOf({})).toMatchObject({
      narrow: [{ operator: 'channel', operand: channel.id }],
      all_public_streams: true,
    });
    expect(
      await optionsOf({ narrow: [['is', 'mentioned']], all_public_streams: false }),
    ).toMatchObject({
      narrow: [{ operator: 'is', operand: 'mentioned' }],
      all_public_streams: false,
    });
  });

  it('changes the owner: the new owner gains the bot, the old one loses it, everyone learns it', async () => {
    const bot = await createBot(org, owner, 'handed');
    const published = await captureEvents(org.realm.id, async () => {
      expect(
        expectSuccess(
          await as(owner, org.host).patch(`/bots/${bot.id}`, { bot_owner_id: other.id }),
        ),
      ).toMatchObject({ bot_owner: other.deliveryEmail });
    });
    expect((await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).botOwnerId).toBe(
      other.id,
    );
    const realmBot = published.filter((p) => p.event.type === 'realm_bot');
    expect(realmBot.find((p) => p.event.op === 'delete')).toEqual({
      event: { type: 'realm_bot', op: 'delete', bot: { user_id: bot.id } },
      users: [owner.id],
    });
    expect(realmBot.find((p) => p.event.op === 'add')).toMatchObject({
      event: { bot: { user_id: bot.id, owner_id: other.id } },
      users: [other.id],
    });
    const update = realmBot.find((p) => p.event.op === 'update')!;
    expect(update.event.bot).toEqual({ user_id: bot.id, owner_id: other.id });
    expect(update.users.sort()).toEqual([org.owner.id, admin.id].sort());
    const person = published.find((p) => p.event.type === 'realm_user')!;
    expect(person.event.person).toEqual({ user_id: bot.id, bot_owner_id: other.id });
    expect(person.users).toEqual(expect.arrayContaining([owner.id, other.id, admin.id]));
    expect(
      await prisma().auditLog.findFirst({ where: { modifiedUserId: bot.id, eventType: 128 } }),
    ).toMatchObject({ extraData: { old_value: owner.id, new_value: other.id } });

    // The old owner manages it no more.
    expectError(
      await as(owner, org.host).patch(`/bots/${bot.id}`, { full_name: 'Mine' }),
      'Insufficient permission',
    );
    const gone = await createTestUser(org.realm);
    await prisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    // The current owner, even deactivated, is no change (Zulip compares before checking).
    await prisma().user.update({ where: { id: other.id }, data: { isActive: false } });
    expectSuccess(await as(admin, org.host).patch(`/bots/${bot.id}`, { bot_owner_id: other.id }));
    await prisma().user.update({ where: { id: other.id }, data: { isActive: true } });
    for (const [ownerId, msg] of [
      [999_999_999, 'Failed to change owner, no such user'],
      [gone.id, 'Failed to change owner, user is deactivated'],
      [bot.id, "Failed to change owner, bots can't own other bots"],
    ] as const)
      expectError(
        await as(admin, org.host).patch(`/bots/${bot.id}`, { bot_owner_id: ownerId }),
        msg,
      );
  });

  it('refuses what Zulip refuses', async () => {
    const bot = await createBot(org, owner, 'guarded');
    await createBot(org, owner, 'named');
    expectError(
      await as(other, org.host).patch(`/bots/${bot.id}`, { full_name: 'Mine' }),
      'Insufficient permission',
    );
    for (const id of [String(other.id), '999999999', 'abc'])
      expectError(
        await as(owner, org.host).patch(`/bots/${id}`, { full_name: 'X' }),
        'No such bot',
      );
    expectError(
      await as(owner, org.host).patch(`/bots/${bot.id}`, { full_name: 'Bot named' }),
      'Name is already in use.',
    );
    expectError(
      await as(owner, org.host).patch(`/bots/${bot.id}`, { default_sending_stream: 'nowhere' }),
      "Invalid channel name 'nowhere'",
    );
    expectError(
      await as(owner, org.host).patch(`/bots/${bot.id}`, { role: Role.MODERATOR }),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectError(
      await as(admin, org.host).patch(`/bots/${bot.id}`, { role: Role.OWNER }),
      'Must be an organization owner',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectSuccess(await as(admin, org.host).patch(`/bots/${bot.id}`, { role: Role.MODERATOR }));
    expect((await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).role).toBe(
      Role.MODERATOR,
    );
    // Unchanged by the refusals.
    expect((await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).fullName).toBe(
      'Bot guarded',
    );
  });

  it("applies a realm_bot delete to /register's realm_bots, as Zulip's apply_event", () => {
    const state = { realm_bots: [{ user_id: 1 }, { user_id: 2 }] };
    applyEvent(
      state,
      { id: 0, type: 'realm_bot', op: 'delete', bot: { user_id: 1 } } as QueuedEvent,
      owner,
      {} as StateOptions,
    );
    expect(state.realm_bots).toEqual([{ user_id: 2 }]);
  });

  it('keeps system bots, deleted bots, guests and bots out, and owners in charge of bots that create users', async () => {
    const bot = await createBot(org, owner, 'kept');
    // Nobody's bot list shows a system bot (Zulip's are in an organization of their own), nor
    // hears of its creation.
    const created = await captureEvents(org.realm.id, async () => {
      await ensureSystemBot(org.realm, 'welcome');
    });
    expect(created.filter((p) => p.event.type === 'realm_bot')).toEqual([]);
    const notificationBot = await ensureSystemBot(org.realm, 'notification');
    const listed = expectSuccess(
      await as(org.owner, org.host).post('/register', { fetch_event_types: '["realm_bot"]' }),
    ).realm_bots as { user_id: number }[];
    expect(listed.map((b) => b.user_id)).toContain(bot.id);
    expect(listed.map((b) => b.user_id)).not.toContain(notificationBot.id);
    for (const request of [
      as(org.owner, org.host).patch(`/bots/${notificationBot.id}`, { full_name: 'Mine' }),
      as(org.owner, org.host).delete(`/bots/${notificationBot.id}`),
      as(org.owner, org.host).post(`/bots/${notificationBot.id}/api_key/regenerate`),
    ])
      expectError(await request, 'No such bot');
    const guest = await createTestUser(org.realm, Role.GUEST);
    expectError(
      await as(guest, org.host).patch(`/bots/${bot.id}`, { full_name: 'Mine' }),
      'Not allowed for guest users',
    );
    expectError(
      await as(bot, org.host).post(`/bots/${bot.id}/api_key/regenerate`),
      'This endpoint does not accept bot requests.',
    );
    await prisma().user.update({ where: { id: bot.id }, data: { canCreateUsers: true } });
    expectError(
      await as(admin, org.host).patch(`/bots/${bot.id}`, { full_name: 'Creator' }),
      'Must be an organization owner',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectSuccess(await as(org.owner, org.host).patch(`/bots/${bot.id}`, { full_name: 'Creator' }));
    await prisma().user.update({ where: { id: bot.id }, data: { canCreateUsers: false } });

    // An owner-role bot steps down whatever the number of human owners; a case-only rename is
    // a rename; an impossible owner id is no such user; `|15` would read as a mention.
    expectSuccess(await as(org.owner, org.host).patch(`/bots/${bot.id}`, { role: Role.OWNER }));
    expectSuccess(await as(org.owner, org.host).patch(`/bots/${bot.id}`, { role: Role.MEMBER }));
    expectSuccess(await as(owner, org.host).patch(`/bots/${bot.id}`, { full_name: 'creator' }));
    expectError(
      await as(owner, org.host).patch(`/bots/${bot.id}`, { bot_owner_id: 99_999_999_999 }),
      'Failed to change owner, no such user',
    );
    expectError(
      await as(owner, org.host).patch(`/bots/${bot.id}`, { full_name: 'Agent|15' }),
      'Invalid format!',
    );
    expect(await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).toMatchObject({
      fullName: 'creator',
      role: Role.MEMBER,
    });
    // Deleted with its owner's profile, the bot is no bot to manage any more.
    const keeper = await createTestUser(org.realm);
    const orphan = await createBot(org, keeper, 'gone');
    expectSuccess(
      await as(org.owner, org.host).delete(`/users/${keeper.id}`, {
        actions: { delete_profile: true },
      }),
    );
    expectError(
      await as(org.owner, org.host).post(`/bots/${orphan.id}/api_key/regenerate`),
      'No such bot',
    );
  });

  it('takes multipart fields like form fields, and a bad image changes nothing', async () => {
    const bot = await createBot(org, owner, 'formed');
    const res = await api
      .patch(org.host, `/bots/${bot.id}`)
      .auth(admin.deliveryEmail, admin.apiKey)
      .field('role', String(Role.MODERATOR))
      .field('bot_owner_id', String(other.id))
      .attach('file', await picture(), 'bot.png');
    expect(expectSuccess(res)).toMatchObject({ bot_owner: other.deliveryEmail });
    expect(await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).toMatchObject({
      role: Role.MODERATOR,
      botOwnerId: other.id,
      avatarSource: 'U',
    });
    const before = await prisma().user.findUniqueOrThrow({ where: { id: bot.id } });
    expectError(
      await api
        .patch(org.host, `/bots/${bot.id}`)
        .auth(admin.deliveryEmail, admin.apiKey)
        .field('full_name', 'Renamed')
        .attach('file', Buffer.from('not an image at all'), 'bot.gif'),
      'Could not decode image; did you upload an image file?',
    );
    expect(await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).toEqual(before);
  });

  it('sends a bot in a private default channel only to its owner, and sends to its default channel', async () => {
    const bot = await createBot(org, owner, 'secret');
    await createChannel(org.realm, owner, 'secrets', [owner, bot], { inviteOnly: true });
    expectSuccess(
      await as(owner, org.host).patch(`/bots/${bot.id}`, { default_sending_stream: 'secrets' }),
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(owner, org.host).patch(`/bots/${bot.id}`, { full_name: 'Quiet' }));
    });
    expect(published.find((p) => p.event.type === 'realm_bot')!.users).toEqual([owner.id]);
    // A message without `to` goes to the bot's default channel (Zulip's legacy addressing).
    const fresh = await prisma().user.findUniqueOrThrow({ where: { id: bot.id } });
    const { id } = expectSuccess(
      await as(fresh, org.host).post('/messages', {
        type: 'stream',
        topic: 'report',
        content: 'nightly',
      }),
    );
    const message = await prisma().message.findUniqueOrThrow({ where: { id: id as number } });
    const recipient = await prisma().recipient.findUniqueOrThrow({
      where: { id: message.recipientId },
    });
    expect(recipient.typeId).toBe(fresh.defaultSendingStreamId);
    expectError(
      await as(owner, org.host).post('/messages', { type: 'stream', topic: 't', content: 'x' }),
      'Missing channel',
    );
  });

  it("takes a new avatar as a file, one at a time, and drops the replaced one's files", async () => {
    const bot = await createBot(org, owner, 'pictured');
    const patchWith = (...names: string[]) => {
      const req = api.patch(org.host, `/bots/${bot.id}`).auth(owner.deliveryEmail, owner.apiKey);
      return picture().then((png) => {
        for (const name of names) req.attach(name, png, `${name}.png`);
        return req;
      });
    };
    const first = expectSuccess(await patchWith('file')).avatar_url as string;
    expect(first).toMatch(new RegExp(`^/user_avatars/${org.realm.id}/[0-9a-f]{40}\\.png\\?`));
    const row = await prisma().user.findUniqueOrThrow({ where: { id: bot.id } });
    expect(row).toMatchObject({ avatarSource: 'U' });
    expectError(await patchWith('a', 'b'), 'You may only upload one file at a time');
    const second = expectSuccess(await patchWith('file')).avatar_url as string;
    expect(second).not.toBe(first);
    expect((await request(app).get(first.replace(/\?.*/, '')).set('Host', org.host)).status).toBe(
      404,
    );
  });
});

describe('POST /bots with an avatar and defaults', () => {
  it('creates the bot with its uploaded picture and its default channels', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    await createChannel(org.realm, member, 'home', [member]);
    const published = await captureEvents(org.realm.id, async () => {
      const created = expectSuccess(
        await api
          .post(org.host, '/bots')
          .auth(member.deliveryEmail, member.apiKey)
          .field('full_name', 'Pictured')
          .field('short_name', 'pictured')
          .field('default_sending_stream', 'home')
          .field('default_all_public_streams', 'true')
          .attach('file', await picture(), 'bot.png'),
      );
      expect(created).toMatchObject({
        avatar_url: expect.stringMatching(/^\/user_avatars\/\d+\/[0-9a-f]{40}\.png\?/) as string,
        default_sending_stream: 'home',
        default_events_register_stream: null,
        default_all_public_streams: true,
      });
    });
    expect(published.find((p) => p.event.type === 'realm_bot')!.event.bot).toMatchObject({
      avatar_url: expect.stringMatching(/^\/user_avatars\//) as string,
      default_sending_stream: 'home',
      default_all_public_streams: true,
    });
    expectError(
      await api
        .post(org.host, '/bots')
        .auth(member.deliveryEmail, member.apiKey)
        .field('full_name', 'Not an image')
        .field('short_name', 'broken')
        .attach('file', Buffer.from('not an image'), 'bot.png'),
      'Could not decode image; did you upload an image file?',
    );
    expect(
      await prisma().user.findFirst({ where: { realmId: org.realm.id, fullName: 'Not an image' } }),
    ).toBeNull();
  });
});

describe('DELETE /bots/{id} and POST /bots/{id}/api_key/regenerate', () => {
  it('deactivates a bot for its owner, and leaves a deactivated one as it is', async () => {
    const org = await createTestRealm();
    const owner = await createTestUser(org.realm);
    const bot = await createBot(org, owner, 'retired');
    expectError(
      await as(await createTestUser(org.realm), org.host).delete(`/bots/${bot.id}`),
      'Insufficient permission',
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(owner, org.host).delete(`/bots/${bot.id}`));
    });
    expect((await prisma().user.findUniqueOrThrow({ where: { id: bot.id } })).isActive).toBe(false);
    expect(published.find((p) => p.event.type === 'realm_user')?.event.person).toEqual({
      user_id: bot.id,
      is_active: false,
    });
    expect(published.find((p) => p.event.type === 'realm_bot')).toEqual({
      event: { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, is_active: false } },
      users: [org.owner.id, owner.id].sort((a, b) => a - b),
    });
    expectError(
      await as(bot, org.host).get('/users/me'),
      'Account is deactivated',
      401,
      'UNAUTHORIZED',
    );
    expectSuccess(await as(owner, org.host).delete(`/bots/${bot.id}`));
    expectError(await as(owner, org.host).delete(`/bots/${owner.id}`), 'No such bot');
  });

  it("tells the bot lists when its owner's deletion deletes the bot's profile too", async () => {
    const org = await createTestRealm();
    const owner = await createTestUser(org.realm);
    const bot = await createBot(org, owner, 'orphan');
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.owner, org.host).delete(`/users/${owner.id}`, {
          actions: { delete_profile: true },
        }),
      );
    });
    const updates = published
      .filter((p) => p.event.type === 'realm_bot')
      .map((p) => p.event.bot as Record<string, unknown>);
    expect(updates).toContainEqual({
      user_id: bot.id,
      full_name: `Deleted user ${bot.id}`,
      avatar_url: expect.stringContaining(`version=${bot.avatarVersion + 1}`) as string,
    });
    expect(updates).toContainEqual({ user_id: bot.id, is_active: false });
  });

  it('gives the bot a new key: the old one stops working', async () => {
    const org = await createTestRealm();
    const owner = await createTestUser(org.realm);
    const bot = await createBot(org, owner, 'rekeyed');
    let apiKey: unknown;
    const published = await captureEvents(org.realm.id, async () => {
      apiKey = expectSuccess(
        await as(owner, org.host).post(`/bots/${bot.id}/api_key/regenerate`),
      ).api_key;
    });
    expect(published.find((p) => p.event.type === 'realm_bot')?.event.bot).toEqual({
      user_id: bot.id,
      api_key: apiKey,
    });
    expect(apiKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(apiKey).not.toBe(bot.apiKey);
    expect((await as(bot, org.host).get('/users/me')).status).toBe(401);
    expectSuccess(
      await as({ deliveryEmail: bot.deliveryEmail, apiKey: apiKey as string }, org.host).get(
        '/users/me',
      ),
    );
    expectError(
      await as(await createTestUser(org.realm), org.host).post(
        `/bots/${bot.id}/api_key/regenerate`,
      ),
      'Insufficient permission',
    );
  });
});
