import { getPrisma, Role, type Stream, type User } from '@parley/db';
import { STREAM_ASSIGNMENT_COLORS } from '../src/actions/subscriptions';
import { ensureSystemBot } from '../src/actions/system-bots';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectPublished,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

interface Org extends TestRealm {
  admin: User;
  moderator: User;
  member: User;
  other: User;
  guest: User;
  /** Made up front: it posts each new channel's first message (subscription-notices.test.ts),
   * and as a member of the organization it is in the audience of public channels' events. */
  notificationBot: User;
}

async function createOrg(): Promise<Org> {
  const org = await createTestRealm();
  return {
    ...org,
    notificationBot: await ensureSystemBot(org.realm, 'notification'),
    admin: await createTestUser(org.realm, Role.ADMINISTRATOR),
    moderator: await createTestUser(org.realm, Role.MODERATOR),
    member: await createTestUser(org.realm, Role.MEMBER),
    other: await createTestUser(org.realm, Role.MEMBER),
    guest: await createTestUser(org.realm, Role.GUEST),
  };
}

function subscribe(user: User, host: string, names: string[], extra: Record<string, unknown> = {}) {
  return as(user, host).post('/users/me/subscriptions', {
    subscriptions: names.map((name) => ({ name })),
    ...extra,
  });
}

async function streamNamed(realmId: number, name: string): Promise<Stream> {
  return prisma().stream.findFirstOrThrow({ where: { realmId, name } });
}

// Everyone who sees a public channel's events: the guest does not, the Notification Bot does.
const nonGuests = (org: Org) => [
  org.owner,
  org.admin,
  org.moderator,
  org.member,
  org.other,
  org.notificationBot,
];
/** The ids of those who see a public channel's events, but `left` (sorted). */
const seeingAllBut = (org: Org, left: User) =>
  sorted(
    nonGuests(org)
      .filter((user) => user.id !== left.id)
      .map((user) => user.id),
  );

describe('POST /users/me/subscriptions', () => {
  it('creates a public channel, subscribes the caller and tells everyone who can see it', async () => {
    const org = await createOrg();
    let body: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      body = expectSuccess(
        await as(org.member, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name: '  design  ', description: 'All\nabout <design>' }],
        }),
      );
    });
    expect(body).toEqual({
      result: 'success',
      msg: '',
      subscribed: { [String(org.member.id)]: ['design'] },
      already_subscribed: {},
      new_subscription_messages_sent: true,
    });
    const stream = await streamNamed(org.realm.id, 'design');
    expect(stream.description).toBe('All about <design>');
    const channel = {
      stream_id: stream.id,
      name: 'design',
      description: 'All about <design>',
      rendered_description: '<p>All about &lt;design&gt;</p>',
      date_created: Math.floor(stream.dateCreated.getTime() / 1000),
      creator_id: org.member.id,
      invite_only: false,
      is_web_public: false,
      history_public_to_subscribers: true,
      message_retention_days: null,
      stream_post_policy: 1,
      is_announcement_only: false,
      first_message_id: null,
      folder_id: null,
      is_recently_active: true,
      is_archived: false,
      topics_policy: 'inherit',
      stream_weekly_traffic: null,
      can_administer_channel_group: { direct_members: [org.member.id], direct_subgroups: [] },
    };
    const create = published.find((p) => p.event.type === 'stream')!;
    expect(create.users).toEqual(sorted(nonGuests(org).map((u) => u.id)));
    expect((create.event.streams as object[])[0]).toMatchObject({
      ...channel,
      subscriber_count: 0,
    });
    const add = published.find((p) => p.event.op === 'add' && p.event.type === 'subscription')!;
    expect(add.users).toEqual([org.member.id]);
    expect((add.event.subscriptions as object[])[0]).toMatchObject({
      ...channel,
      subscriber_count: 1,
      subscribers: [org.member.id],
      color: STREAM_ASSIGNMENT_COLORS[0],
      is_muted: false,
      in_home_view: true,
      pin_to_top: false,
      desktop_notifications: null,
      audible_notifications: null,
      push_notifications: null,
      email_notifications: null,
      wildcard_mentions_notify: null,
    });
    const peer = published.find((p) => p.event.op === 'peer_add')!;
    expect(peer).toEqual({
      event: {
        type: 'subscription',
        op: 'peer_add',
        stream_ids: [stream.id],
        user_ids: [org.member.id],
      },
      users: seeingAllBut(org, org.member),
    });
    // And the Notification Bot's first message in the channel (subscription-notices.test.ts).
    expect(published.map((p) => p.event.type)).toEqual([
      'stream',
      'subscription',
      'subscription',
      'message',
    ]);
  });

  it('reports channels the user is already in, and gives each new one the next colour', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['one']));
    const body = expectSuccess(await subscribe(org.member, org.host, ['ONE', 'two', 'three']));
    expect(body.subscribed).toEqual({ [String(org.member.id)]: ['two', 'three'] });
    expect(body.already_subscribed).toEqual({ [String(org.member.id)]: ['one'] });
    const subs = expectSuccess(await as(org.member, org.host).get('/users/me/subscriptions'))
      .subscriptions as { name: string; color: string }[];
    expect(subs.map((s) => [s.name, s.color])).toEqual([
      ['one', STREAM_ASSIGNMENT_COLORS[0]],
      ['three', STREAM_ASSIGNMENT_COLORS[2]],
      ['two', STREAM_ASSIGNMENT_COLORS[1]],
    ]);
  });

  it('keeps colour and settings when a user comes back to a channel', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['back']));
    const stream = await streamNamed(org.realm.id, 'back');
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions/properties', {
        subscription_data: [
          { stream_id: stream.id, property: 'color', value: '#123456' },
          { stream_id: stream.id, property: 'pin_to_top', value: true },
        ],
      }),
    );
    expectSuccess(
      await as(org.member, org.host).delete('/users/me/subscriptions', { subscriptions: ['back'] }),
    );
    expectSuccess(await subscribe(org.member, org.host, ['back']));
    const [sub] = expectSuccess(await as(org.member, org.host).get('/users/me/subscriptions'))
      .subscriptions as Record<string, unknown>[];
    expect(sub).toMatchObject({ name: 'back', color: '#123456', pin_to_top: true });
  });

  it('creates a private channel that only its creator and the administrators learn about', async () => {
    const org = await createOrg();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await subscribe(org.member, org.host, ['secret'], { invite_only: true }));
    });
    const stream = await streamNamed(org.realm.id, 'secret');
    expect(stream).toMatchObject({ inviteOnly: true, historyPublicToSubscribers: false });
    expect(published.find((p) => p.event.type === 'stream')!.users).toEqual(
      sorted([org.owner.id, org.admin.id, org.member.id]),
    );
    const peer = published.find((p) => p.event.op === 'peer_add')!;
    expect(peer.users).toEqual(sorted([org.owner.id, org.admin.id]));
  });

  it('hides private channels: "Unable to access channel", or listed as unauthorized', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['hidden'], { invite_only: true }));
    expectError(
      await subscribe(org.other, org.host, ['hidden']),
      'Unable to access channel (hidden).',
    );
    // Administrators can see private channels but not read them.
    expectError(
      await subscribe(org.admin, org.host, ['HIDDEN']),
      'Unable to access channel (hidden).',
    );
    const body = expectSuccess(
      await subscribe(org.other, org.host, ['hidden', 'open'], {
        authorization_errors_fatal: false,
      }),
    );
    expect(body).toMatchObject({
      subscribed: { [String(org.other.id)]: ['open'] },
      unauthorized: ['hidden'],
    });
  });

  it('refuses guests', async () => {
    const org = await createOrg();
    expectError(await subscribe(org.guest, org.host, ['x']), 'Not allowed for guest users');
  });

  it("subscribes other users by id or email, with Zulip's permission rules", async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['team']));
    const stream = await streamNamed(org.realm.id, 'team');
    let body: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      body = expectSuccess(
        await subscribe(org.other, org.host, ['team'], {
          principals: [org.other.deliveryEmail, org.guest.deliveryEmail],
        }),
      );
    });
    expect(body.subscribed).toEqual({
      [String(org.other.id)]: ['team'],
      [String(org.guest.id)]: ['team'],
    });
    // The guest could not see the public channel before: a create comes first.
    const creates = published.filter((p) => p.event.type === 'stream');
    expect(creates).toHaveLength(1);
    expect(creates[0]).toMatchObject({
      event: { op: 'create', streams: [{ stream_id: stream.id, subscriber_count: 3 }] },
      users: [org.guest.id],
    });
    // Both get the same subscription object (captureEvents merges identical events).
    expect(published.filter((p) => p.event.op === 'add').flatMap((p) => p.users)).toEqual(
      sorted([org.other.id, org.guest.id]),
    );
    const peer = published.find((p) => p.event.op === 'peer_add')!;
    expect(peer.event.user_ids).toEqual(sorted([org.other.id, org.guest.id]));
    expect(peer.users).toEqual(seeingAllBut(org, org.other));
    expect(stream.id).toBe(peer.event.stream_ids && (peer.event.stream_ids as number[])[0]);
  });

  it('lets only those allowed add others to an existing private channel', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['priv'], { invite_only: true }));
    // The creator administers the channel, so may add anyone.
    expectSuccess(await subscribe(org.member, org.host, ['priv'], { principals: [org.other.id] }));
    // A subscriber may too (organization-level can_add_subscribers_group is members).
    expectSuccess(
      await subscribe(org.other, org.host, ['priv'], { principals: [org.moderator.id] }),
    );
    // Without content access even an administrator cannot.
    expectError(
      await subscribe(org.owner, org.host, ['priv'], { principals: [org.admin.id] }),
      'Unable to access channel (priv).',
    );
  });

  it('refuses adding others without the organization permission', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['gated']));
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { canAddSubscribersGroupId: admins.id },
    });
    expectError(
      await subscribe(org.other, org.host, ['gated'], { principals: [org.moderator.id] }),
      'Insufficient permission',
    );
    // The channel's creator administers it and still may.
    expectSuccess(await subscribe(org.member, org.host, ['gated'], { principals: [org.other.id] }));
  });

  it('rejects unknown and deactivated principals', async () => {
    const org = await createOrg();
    expectError(
      await subscribe(org.member, org.host, ['p'], { principals: [999999999] }),
      'No such user',
    );
    expectError(
      await subscribe(org.member, org.host, ['p'], { principals: ['nobody@example.com'] }),
      'No such user',
    );
    await prisma().user.update({ where: { id: org.other.id }, data: { isActive: false } });
    expectError(
      await subscribe(org.member, org.host, ['p'], { principals: [org.other.id] }),
      'User is deactivated',
    );
    expect(await prisma().stream.count({ where: { realmId: org.realm.id } })).toBe(0);
  });

  it('checks who may create which kind of channel', async () => {
    const org = await createOrg();
    expectError(
      await subscribe(org.member, org.host, ['w'], { is_web_public: true }),
      'Web-public channels are not enabled.',
    );
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { webPublicAccessEnabled: true },
    });
    expectError(
      await subscribe(org.admin, org.host, ['w'], { is_web_public: true }),
      'Insufficient permission',
    );
    expectSuccess(await subscribe(org.owner, org.host, ['w'], { is_web_public: true }));
    expectError(
      await subscribe(org.member, org.host, ['d'], { is_default_stream: true }),
      'Insufficient permission',
    );
    expectError(
      await subscribe(org.admin, org.host, ['d'], { is_default_stream: true, invite_only: true }),
      'A default channel cannot be private.',
    );
    expectError(
      await subscribe(org.admin, org.host, ['r'], { message_retention_days: 30 }),
      'Must be an organization owner',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectSuccess(
      await subscribe(org.owner, org.host, ['r'], { message_retention_days: 'unlimited' }),
    );
    expect((await streamNamed(org.realm.id, 'r')).messageRetentionDays).toBe(-1);
    // Public channels always share history; a request not to is ignored, as in Zulip.
    expectSuccess(
      await subscribe(org.owner, org.host, ['h'], { history_public_to_subscribers: false }),
    );
    expect((await streamNamed(org.realm.id, 'h')).historyPublicToSubscribers).toBe(true);
    expectError(
      await subscribe(org.member, org.host, ['del'], {
        can_delete_any_message_group: (await systemGroup(org, 'role:members')).id,
      }),
      'Insufficient permission',
    );
  });

  it('stores group settings: system groups by id, anonymous groups by their members', async () => {
    const org = await createOrg();
    const admins = await systemGroup(org, 'role:administrators');
    expectSuccess(
      await subscribe(org.owner, org.host, ['g'], {
        can_send_message_group: admins.id,
        can_subscribe_group: { direct_members: [org.member.id], direct_subgroups: [admins.id] },
      }),
    );
    const { stream } = expectSuccess(
      await as(org.owner, org.host).get(`/streams/${(await streamNamed(org.realm.id, 'g')).id}`),
    ) as { stream: Record<string, unknown> };
    expect(stream).toMatchObject({
      can_send_message_group: admins.id,
      stream_post_policy: 2,
      is_announcement_only: true,
      can_subscribe_group: { direct_members: [org.member.id], direct_subgroups: [admins.id] },
      can_remove_subscribers_group: admins.id,
      can_add_subscribers_group: (await systemGroup(org, 'role:nobody')).id,
    });
    // can_subscribe_group lets the member join the (public) channel and find it.
    expectSuccess(await subscribe(org.member, org.host, ['g']));
  });

  it('answers bad input with clear 400s', async () => {
    const org = await createOrg();
    const post = (form: Record<string, unknown>) =>
      as(org.member, org.host).post('/users/me/subscriptions', form);
    expectError(
      await post({}),
      "Missing 'subscriptions' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(await post({ subscriptions: 'design' }), 'subscriptions is not valid JSON');
    expectError(await post({ subscriptions: { name: 'x' } }), 'subscriptions is not a list');
    expectError(await post({ subscriptions: [{ name: '   ' }] }), "Channel name can't be empty.");
    expectError(
      await post({ subscriptions: [{ name: 'x'.repeat(61) }] }),
      'Channel name too long (limit: 60 characters).',
    );
    expectError(
      await post({ subscriptions: [{ name: 'ab\u0007c' }] }),
      'Invalid character in channel name, at position 3.',
    );
    expectError(
      await post({ subscriptions: [{ name: 'x', description: 'd'.repeat(1025) }] }),
      "subscriptions[0]['description'] is too long (limit: 1024 characters)",
    );
    expectError(
      await post({ subscriptions: [{ name: 'x', bogus: 1 }] }),
      'Argument "bogus" at subscriptions[0] is unexpected',
    );
    expectError(
      await post({ subscriptions: [{ name: 'x\u0000' }] }),
      'Invalid subscriptions: null bytes are not allowed',
    );
    expectError(
      await post({ subscriptions: [{ name: 'x' }], principals: [1, 'a@b.c'] }),
      'Invalid principals',
    );
    expectError(
      await post({ subscriptions: [{ name: 'x' }], invite_only: 'yes' }),
      'invite_only is not a boolean',
    );
    expectError(
      await post({ subscriptions: [{ name: 'x' }], message_retention_days: 0 }),
      "Bad value for 'message_retention_days': 0",
      400,
      'REQUEST_VARIABLE_INVALID',
    );
    expectError(
      await post({ subscriptions: [{ name: 'x' }], topics_policy: 'sometimes' }),
      'Invalid topics_policy',
    );
    expectError(
      await post({ subscriptions: [{ name: 'x' }], can_send_message_group: 99999999 }),
      'Invalid user group',
    );
    expectError(
      await post({
        subscriptions: [{ name: 'x' }],
        can_add_subscribers_group: (await systemGroup(org, 'role:everyone')).id,
      }),
      "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group.",
    );
    expectError(
      await post({
        subscriptions: [{ name: 'x' }],
        can_send_message_group: { direct_members: [99999999], direct_subgroups: [] },
      }),
      'Invalid user ID: 99999999',
    );
    expect(await prisma().stream.count({ where: { realmId: org.realm.id } })).toBe(0);
  });
});

async function systemGroup(org: TestRealm, name: string) {
  return prisma().userGroup.findFirstOrThrow({ where: { realmId: org.realm.id, name } });
}

describe('GET /users/me/subscriptions', () => {
  it('lists active subscriptions by name, with subscribers on request, never archived ones', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['beta', 'alpha', 'gone']));
    expectSuccess(await subscribe(org.other, org.host, ['alpha']));
    const gone = await streamNamed(org.realm.id, 'gone');
    expectSuccess(await as(org.member, org.host).delete(`/streams/${gone.id}`));
    const get = (query: Record<string, unknown>) =>
      as(org.member, org.host).get('/users/me/subscriptions', query);
    const plain = expectSuccess(await get({})).subscriptions as Record<string, unknown>[];
    expect(plain.map((s) => s.name)).toEqual(['alpha', 'beta']);
    expect(plain[0]).not.toHaveProperty('subscribers');
    expect(plain[0]!.subscriber_count).toBe(2);
    for (const include of [true, 'partial']) {
      const full = expectSuccess(await get({ include_subscribers: include }))
        .subscriptions as Record<string, unknown>[];
      expect(full[0]!.subscribers).toEqual(sorted([org.member.id, org.other.id]));
    }
    expectError(await get({ include_subscribers: 'some' }), 'Invalid include_subscribers');
  });
});

describe('DELETE /users/me/subscriptions', () => {
  it('unsubscribes the caller and tells the others', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['a', 'b']));
    expectSuccess(await subscribe(org.other, org.host, ['a']));
    const a = await streamNamed(org.realm.id, 'a');
    let body: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      body = expectSuccess(
        await as(org.other, org.host).delete('/users/me/subscriptions', {
          subscriptions: ['a', 'b'],
        }),
      );
    });
    expect(body).toMatchObject({ removed: ['a'], not_removed: ['b'] });
    expectPublished(published, [
      {
        event: {
          type: 'subscription',
          op: 'remove',
          subscriptions: [{ name: 'a', stream_id: a.id }],
        },
        users: [org.other.id],
      },
      {
        event: {
          type: 'subscription',
          op: 'peer_remove',
          stream_ids: [a.id],
          user_ids: [org.other.id],
        },
        users: seeingAllBut(org, org.other),
      },
    ]);
  });

  it('takes a private channel out of sight of a member who leaves it', async () => {
    const org = await createOrg();
    expectSuccess(
      await subscribe(org.owner, org.host, ['p'], {
        invite_only: true,
        principals: [org.owner.id, org.member.id],
      }),
    );
    const p = await streamNamed(org.realm.id, 'p');
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.member, org.host).delete('/users/me/subscriptions', { subscriptions: ['p'] }),
      );
    });
    expect(published.find((e) => e.event.type === 'stream')).toEqual({
      event: { type: 'stream', op: 'delete', streams: [{ stream_id: p.id }], stream_ids: [p.id] },
      users: [org.member.id],
    });
    expect(published.find((e) => e.event.op === 'peer_remove')!.users).toEqual(
      sorted([org.owner.id, org.admin.id]),
    );
  });

  it('lets administrators remove others, and nobody else by default', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['c']));
    expectSuccess(await subscribe(org.other, org.host, ['c']));
    const remove = (actor: User, principals: unknown[]) =>
      as(actor, org.host).delete('/users/me/subscriptions', { subscriptions: ['c'], principals });
    expectError(await remove(org.moderator, [org.other.id]), 'Insufficient permission');
    expectError(await remove(org.guest, [org.other.id]), 'Insufficient permission');
    // The channel's creator administers it.
    expectSuccess(await remove(org.member, [org.other.id]));
    expect(expectSuccess(await remove(org.admin, [org.member.deliveryEmail]))).toMatchObject({
      removed: ['c'],
      not_removed: [],
    });
  });

  it('names channels that do not exist', async () => {
    const org = await createOrg();
    const del = (form: Record<string, unknown>) =>
      as(org.member, org.host).delete('/users/me/subscriptions', form);
    expectError(
      await del({ subscriptions: ['nope', 'nada'] }),
      'Channel(s) (nope, nada) do not exist',
    );
    expectError(await del({}), "Missing 'subscriptions' argument", 400, 'REQUEST_VARIABLE_MISSING');
    expectError(await del({ subscriptions: [1] }), 'subscriptions[0] is not a string');
  });
});

describe('PATCH /users/me/subscriptions', () => {
  const update = (user: User, host: string, form: Record<string, unknown>) =>
    as(user, host).patch('/users/me/subscriptions', form);

  it('subscribes and unsubscribes in one request, answering as both would', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['old', 'kept']));
    expectSuccess(await subscribe(org.other, org.host, ['existing']));
    const old = await streamNamed(org.realm.id, 'old');
    let body: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      body = expectSuccess(
        await update(org.member, org.host, {
          add: [{ name: 'existing' }, { name: 'kept' }, { name: 'fresh', color: '#e79ab5' }],
          delete: ['old', 'existing'],
        }),
      );
    });
    expect(body).toEqual({
      result: 'success',
      msg: '',
      subscribed: { [String(org.member.id)]: ['fresh', 'existing'] },
      already_subscribed: { [String(org.member.id)]: ['kept'] },
      new_subscription_messages_sent: true,
      // "existing" was subscribed to by the same request, before the removal ran.
      removed: ['old', 'existing'],
      not_removed: [],
    });
    const fresh = await streamNamed(org.realm.id, 'fresh');
    const mine = await prisma().subscription.findMany({
      where: { userId: org.member.id, active: true },
      select: { recipientId: true, color: true },
    });
    expect(sorted(mine.map((sub) => sub.recipientId))).toEqual(
      sorted([fresh.recipientId!, (await streamNamed(org.realm.id, 'kept')).recipientId!]),
    );
    expect(mine.find((sub) => sub.recipientId === fresh.recipientId)!.color).toBe('#e79ab5');
    const ops = published
      .filter((e) => e.event.type === 'subscription' && e.users.includes(org.member.id))
      .map((e) => e.event.op);
    expect(ops).toEqual(expect.arrayContaining(['add', 'remove']));
    expect(
      published.some(
        (e) =>
          e.event.op === 'remove' &&
          (e.event.subscriptions as { stream_id: number }[]).some((s) => s.stream_id === old.id),
      ),
    ).toBe(true);
  });

  it('changes nothing when either half fails: one transaction', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['here']));
    const before = await prisma().subscription.count({ where: { userId: org.member.id } });
    const streamsBefore = await prisma().stream.count({ where: { realmId: org.realm.id } });
    expectError(
      await update(org.member, org.host, { add: [{ name: 'brand-new' }], delete: ['nowhere'] }),
      'Channel(s) (nowhere) do not exist',
    );
    expect(await prisma().subscription.count({ where: { userId: org.member.id } })).toBe(before);
    expect(await prisma().stream.count({ where: { realmId: org.realm.id } })).toBe(streamsBefore);
    // The removal refused: the subscription made first is undone with it.
    expectSuccess(await subscribe(org.other, org.host, ['theirs']));
    expectError(
      await update(org.member, org.host, {
        add: [{ name: 'theirs' }],
        delete: ['theirs'],
        principals: [org.other.id],
      }),
      'Insufficient permission',
    );
    const theirs = await streamNamed(org.realm.id, 'theirs');
    expect(
      await prisma().subscription.count({
        where: { userId: org.other.id, recipientId: theirs.recipientId!, active: true },
      }),
    ).toBe(1);
  });

  it("applies subscribing's parameters and principals to both halves", async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.admin, org.host, ['shared'], { principals: [org.other.id] }));
    const body = expectSuccess(
      await update(org.admin, org.host, {
        add: [{ name: 'secret' }],
        delete: ['shared'],
        principals: [org.other.id],
        invite_only: true,
      }),
    );
    expect(body).toMatchObject({
      subscribed: { [String(org.other.id)]: ['secret'] },
      removed: ['shared'],
    });
    expect((await streamNamed(org.realm.id, 'secret')).inviteOnly).toBe(true);
  });

  it("refuses an empty request and guests, and bad input, with Zulip's messages", async () => {
    const org = await createOrg();
    const nothing = 'Nothing to do. Specify at least one of "add" or "delete".';
    expectError(await update(org.member, org.host, {}), nothing);
    expectError(await update(org.member, org.host, { add: [], delete: [] }), nothing);
    expectSuccess(await subscribe(org.owner, org.host, ['open'], { principals: [org.guest.id] }));
    // Subscribing runs first in Zulip, and refuses guests, so a removal alone is refused too.
    expectError(
      await update(org.guest, org.host, { delete: ['open'] }),
      'Not allowed for guest users',
    );
    expectError(await update(org.member, org.host, { add: 'x' }), 'add is not valid JSON');
    expectError(await update(org.member, org.host, { delete: [1] }), 'delete[0] is not a string');
    expectError(
      await update(org.member, org.host, { add: [{ name: 'x', colour: '#000000' }] }),
      'Argument "colour" at add[0] is unexpected',
    );
  });
});

describe('subscription settings', () => {
  let org: Org;
  let stream: Stream;
  beforeAll(async () => {
    org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['settings']));
    stream = await streamNamed(org.realm.id, 'settings');
  });
  const bulk = (user: User, data: unknown) =>
    as(user, org.host).post('/users/me/subscriptions/properties', { subscription_data: data });

  it('changes properties in bulk, muting told twice (in_home_view, then is_muted)', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expect(
        expectSuccess(
          await bulk(org.member, [
            { stream_id: stream.id, property: 'color', value: '#abc' },
            { stream_id: stream.id, property: 'is_muted', value: true },
            { stream_id: stream.id, property: 'desktop_notifications', value: false },
          ]),
        ),
      ).toEqual({ result: 'success', msg: '' });
    });
    const update = (property: string, value: unknown) => ({
      event: { type: 'subscription', op: 'update', stream_id: stream.id, property, value },
      users: [org.member.id],
    });
    expect(published).toEqual([
      update('color', '#abc'),
      update('in_home_view', false),
      update('is_muted', true),
      update('desktop_notifications', false),
    ]);
    const sub = await prisma().subscription.findFirstOrThrow({
      where: { userId: org.member.id, recipientId: stream.recipientId! },
    });
    expect(sub).toMatchObject({ color: '#abc', isMuted: true, desktopNotifications: false });
  });

  it('changes one property with PATCH /users/me/subscriptions/{stream_id} (spec 4.12)', async () => {
    const patch = (property: string, value: string) =>
      as(org.member, org.host).patch(`/users/me/subscriptions/${stream.id}`, { property, value });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await patch('in_home_view', 'true'));
    });
    expect(published.map((p) => [p.event.property, p.event.value])).toEqual([
      ['in_home_view', true],
      ['is_muted', false],
    ]);
    expectSuccess(await patch('color', '#00ff00'));
    expectSuccess(await patch('pin_to_top', 'true'));
    const sub = await prisma().subscription.findFirstOrThrow({
      where: { userId: org.member.id, recipientId: stream.recipientId! },
    });
    expect(sub).toMatchObject({ isMuted: false, color: '#00ff00', pinToTop: true });
    expectError(await patch('pin_to_top', 'maybe'), 'pin_to_top is not a boolean');
    expectError(
      await patch('color', 'green'),
      'Invalid value: Value error, color is not a valid hex color code',
    );
    expectError(await patch('volume', 'true'), 'Unknown subscription property: volume');
    expectError(
      await as(org.member, org.host).patch(`/users/me/subscriptions/${stream.id}`, {
        value: 'true',
      }),
      "Missing 'property' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });

  it("refuses bad items with Zulip's messages", async () => {
    expectError(
      await bulk(org.member, [{ stream_id: stream.id, property: 'wat', value: true }]),
      'Unknown subscription property: wat',
    );
    expectError(
      await bulk(org.member, [{ stream_id: stream.id, property: 'is_muted', value: 'yes' }]),
      'is_muted is not a boolean',
    );
    expectError(
      await bulk(org.member, [{ stream_id: stream.id, property: 'color', value: '#ggg' }]),
      'Invalid subscription_data[0]: Value error, color is not a valid hex color code',
    );
    expectError(
      await bulk(org.member, [{ property: 'color', value: '#fff' }]),
      "subscription_data[0]['stream_id'] field is missing",
    );
    expectError(
      await bulk(org.other, [{ stream_id: stream.id, property: 'pin_to_top', value: true }]),
      `Not subscribed to channel ID ${stream.id}`,
    );
    expectError(
      await bulk(org.member, [{ stream_id: 99999999, property: 'pin_to_top', value: true }]),
      'Invalid channel ID',
    );
    expectError(
      await bulk(org.guest, [{ stream_id: stream.id, property: 'pin_to_top', value: true }]),
      'Invalid channel ID',
    );
  });
});

describe('GET /users/{user_id}/subscriptions/{stream_id}', () => {
  it('tells whether a user is subscribed to a channel the caller can see', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['s']));
    expectSuccess(await subscribe(org.member, org.host, ['private'], { invite_only: true }));
    const s = await streamNamed(org.realm.id, 's');
    const priv = await streamNamed(org.realm.id, 'private');
    const status = (actor: User, userId: string | number, streamId: number) =>
      as(actor, org.host).get(`/users/${userId}/subscriptions/${streamId}`);
    expect(expectSuccess(await status(org.other, org.member.id, s.id)).is_subscribed).toBe(true);
    expect(expectSuccess(await status(org.other, org.other.id, s.id)).is_subscribed).toBe(false);
    expect(expectSuccess(await status(org.member, 'me', s.id)).is_subscribed).toBe(true);
    expect(expectSuccess(await status(org.admin, org.member.id, priv.id)).is_subscribed).toBe(true);
    expectError(await status(org.other, org.member.id, priv.id), 'Invalid channel ID');
    expectError(await status(org.guest, org.member.id, s.id), 'Invalid channel ID');
    expectError(await status(org.other, 99999999, s.id), 'No such user');
    expectError(await status(org.other, org.member.id, 0), 'stream_id is too small');
    // Zulip's access_user_by_id: people only, active ones.
    expectError(await status(org.other, org.notificationBot.id, s.id), 'No such user');
    const gone = await createTestUser(org.realm, Role.MEMBER);
    await prisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    expectError(await status(org.other, gone.id, s.id), 'User is deactivated');
    // Changing one's settings needs the channel's content: an administrator outside a private
    // channel gets Zulip's 'Invalid channel ID'.
    expectError(
      await as(org.admin, org.host).patch(`/users/me/subscriptions/${priv.id}`, {
        property: 'pin_to_top',
        value: true,
      }),
      'Invalid channel ID',
    );
  });

  it("lists a bot its owner's channels with include_owner_subscribed, private ones too", async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['owners-private'], { invite_only: true }));
    const priv = await streamNamed(org.realm.id, 'owners-private');
    const created = expectSuccess(
      await as(org.member, org.host).post('/bots', {
        full_name: 'Owned Bot',
        short_name: `owned${Date.now()}`,
      }),
    );
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    const listed = expectSuccess(
      await as(bot, org.host).get('/streams', {
        include_public: false,
        include_subscribed: false,
        include_owner_subscribed: true,
      }),
    ).streams as { stream_id: number }[];
    expect(listed.map((stream) => stream.stream_id)).toContain(priv.id);
  });
});

describe('subscriptions and user lifecycle', () => {
  it("tells subscribers' peers about deactivation and reactivation", async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['life']));
    expectSuccess(await subscribe(org.other, org.host, ['life']));
    const life = await streamNamed(org.realm.id, 'life');
    const deactivation = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).delete(`/users/${org.other.id}`));
    });
    expect(deactivation.find((p) => p.event.op === 'peer_remove')).toEqual({
      event: {
        type: 'subscription',
        op: 'peer_remove',
        stream_ids: [life.id],
        user_ids: [org.other.id],
      },
      users: seeingAllBut(org, org.other),
    });
    const members = await as(org.member, org.host).get(`/streams/${life.id}/members`);
    expect(expectSuccess(members).subscribers).toEqual([org.member.id]);
    const reactivation = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).post(`/users/${org.other.id}/reactivate`));
    });
    expect(reactivation.find((p) => p.event.op === 'peer_add')!.event.user_ids).toEqual([
      org.other.id,
    ]);
  });

  it('subscribes new users to the default channels', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.admin, org.host, ['welcome'], { is_default_stream: true }));
    const newcomer = await createTestUser(org.realm, Role.MEMBER);
    const subs = expectSuccess(await as(newcomer, org.host).get('/users/me/subscriptions'))
      .subscriptions as { name: string }[];
    expect(subs.map((s) => s.name)).toEqual(['welcome']);
  });
});

describe('review findings', () => {
  it('matches names and addresses exactly: % and _ are not wildcards', async () => {
    const org = await createOrg();
    const jasmith = await createTestUser(org.realm, Role.MEMBER, {
      email: `jasmith@${org.realm.stringId}.test`,
    });
    const jSmith = await createTestUser(org.realm, Role.MEMBER, {
      email: `j_smith@${org.realm.stringId}.test`,
    });
    const body = expectSuccess(
      await subscribe(org.admin, org.host, ['exact'], { principals: [jSmith.deliveryEmail] }),
    );
    expect(body.subscribed).toEqual({ [String(jSmith.id)]: ['exact'] });
    expect(jasmith.id).not.toBe(jSmith.id);
    expectError(
      await as(org.member, org.host).get('/get_stream_id', { stream: 'exa%' }),
      "Invalid channel name 'exa%'",
    );
    expectSuccess(await subscribe(org.member, org.host, ['back\\slash']));
    expect(
      expectSuccess(
        await as(org.member, org.host).delete('/users/me/subscriptions', {
          subscriptions: ['back\\slash'],
        }),
      ),
    ).toMatchObject({ removed: ['back\\slash'] });
  });

  it('answers oversized lists with a 400', async () => {
    const org = await createOrg();
    expectError(
      await subscribe(
        org.member,
        org.host,
        Array.from({ length: 501 }, (_, i) => `c${i}`),
      ),
      'subscriptions is too long',
    );
    expectError(
      await subscribe(org.member, org.host, ['x'], {
        principals: Array.from({ length: 5001 }, (_, i) => i + 1),
      }),
      'Invalid principals',
    );
  });

  it('treats an empty principals list as the caller', async () => {
    const org = await createOrg();
    const body = expectSuccess(await subscribe(org.member, org.host, ['solo'], { principals: [] }));
    expect(body.subscribed).toEqual({ [String(org.member.id)]: ['solo'] });
  });

  it('applies a requested colour to new subscriptions', async () => {
    const org = await createOrg();
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'painted', color: '#123abc' }],
      }),
    );
    const [sub] = expectSuccess(await as(org.member, org.host).get('/users/me/subscriptions'))
      .subscriptions as { color: string }[];
    expect(sub!.color).toBe('#123abc');
    expectError(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'badpaint', color: 'red' }],
      }),
      'Invalid subscriptions[0]: Value error, add.color is not a valid hex color code',
    );
    expectError(
      await as(org.member, org.host).patch('/users/me/subscriptions', {
        add: [{ name: 'fine' }, { name: 'badpaint', color: '#12' }],
      }),
      'Invalid add[1]: Value error, add.color is not a valid hex color code',
    );
  });

  it('does not subscribe bots to default channels', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.admin, org.host, ['defaults'], { is_default_stream: true }));
    const bot = expectSuccess(
      await as(org.member, org.host).post('/bots', {
        full_name: 'Helper Bot',
        short_name: 'helper',
      }),
    );
    const subs = await prisma().subscription.count({ where: { userId: bot.user_id as number } });
    expect(subs).toBe(0);
  });

  it('lets exactly one of concurrent requests archive a channel or subscribe a user', async () => {
    const org = await createOrg();
    expectSuccess(await subscribe(org.member, org.host, ['race']));
    const race = await streamNamed(org.realm.id, 'race');
    const archivals = await Promise.all(
      Array.from({ length: 4 }, () => as(org.member, org.host).delete(`/streams/${race.id}`)),
    );
    expect(archivals.filter((res) => res.status === 200)).toHaveLength(1);
    for (const res of archivals.filter((r) => r.status !== 200))
      expectError(res, 'Channel is already deactivated');

    expectSuccess(await subscribe(org.member, org.host, ['together']));
    const joins = await Promise.all(
      Array.from({ length: 4 }, () => subscribe(org.other, org.host, ['together'])),
    );
    const subscribedCount = joins.filter(
      (res) => res.status === 200 && Object.keys(res.body.subscribed as object).length === 1,
    ).length;
    expect(joins.every((res) => res.status === 200)).toBe(true);
    expect(subscribedCount).toBe(1);

    const creations = await Promise.all(
      Array.from({ length: 4 }, () => subscribe(org.other, org.host, ['fresh'])),
    );
    expect(creations.map((res) => res.status)).toEqual([200, 200, 200, 200]);
    expect(await prisma().stream.count({ where: { realmId: org.realm.id, name: 'fresh' } })).toBe(
      1,
    );
  });
});
