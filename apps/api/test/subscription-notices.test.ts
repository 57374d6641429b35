// The Notification Bot's messages when POST /users/me/subscriptions subscribes people (Zulip's
// send_messages_for_new_subscribers): direct messages to those someone else subscribed, the
// announcement of new channels, and each new channel's first message.
import { bitmaskToFlags, getPrisma, Role, type User } from '@parley/db';
import { ensureSystemBot } from '../src/actions/system-bots';
import { MAX_BULK_NEW_SUBSCRIPTION_MESSAGES } from '../src/lib/subscriptions';
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

describe('Notification Bot messages about new subscriptions', () => {
  let org: TestRealm;
  let member: User;
  let other: User;
  let bot: User;
  let notificationBot: User;
  beforeEach(async () => {
    org = await createTestRealm();
    member = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Mia Member' });
    other = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Otto Other' });
    bot = await prisma().user.update({
      where: { id: (await createTestUser(org.realm, Role.MEMBER)).id },
      data: { isBot: true, botType: 1, botOwnerId: member.id },
    });
    notificationBot = await ensureSystemBot(org.realm, 'notification');
  });

  const subscribe = async (user: User, form: Record<string, unknown>) =>
    expectSuccess(await as(user, org.host).post('/users/me/subscriptions', form));
  const mention = (user: User) => `@_**${user.fullName}|${user.id}**`;
  /** The Notification Bot's messages since `after`, oldest first. */
  const notices = async (after = 0) =>
    prisma().message.findMany({
      where: { realmId: org.realm.id, senderId: notificationBot.id, id: { gt: after } },
      orderBy: { id: 'asc' },
      include: { recipient: true },
    });
  const flagsOf = async (user: User, messageId: number) => {
    const row = await prisma().userMessage.findUnique({
      where: { userId_messageId: { userId: user.id, messageId } },
    });
    return row ? bitmaskToFlags(row.flags) : null;
  };
  const lastId = async () =>
    (await prisma().message.aggregate({ _max: { id: true } }))._max.id ?? 0;

  it('starts each new channel with a message in "channel events", naming its kind', async () => {
    const body = await subscribe(member, {
      subscriptions: [{ name: 'plans', description: 'Where we plan' }, { name: 'empty' }],
    });
    expect(body.new_subscription_messages_sent).toBe(true);
    const sent = await notices();
    expect(sent.map((m) => [m.subject, m.content])).toEqual([
      [
        'channel events',
        `**Public** channel created by ${mention(member)}. **Description:**\n` +
          '```` quote\nWhere we plan\n````',
      ],
      [
        'channel events',
        `**Public** channel created by ${mention(member)}. **Description:**\n` +
          '```` quote\n*No description.*\n````',
      ],
    ]);
    // Read for the creator, who needs no news of what they did.
    expect(await flagsOf(member, sent[0]!.id)).toEqual(['read']);
    const plans = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'plans' },
    });
    expect(sent[0]!.recipientId).toBe(plans.recipientId);
    expect(plans.firstMessageId).toBe(sent[0]!.id);

    const kinds: [Record<string, unknown>, string][] = [
      [{ invite_only: true, history_public_to_subscribers: true }, 'Private, shared history'],
      // Zulip's default for a private channel: protected history.
      [{ invite_only: true }, 'Private, protected history'],
    ];
    for (const [settings, kind] of kinds) {
      const before = await lastId();
      await subscribe(org.owner, { subscriptions: [{ name: `c${before}` }], ...settings });
      const [notice] = await notices(before);
      expect(notice!.content.split(' channel created')[0]).toBe(`**${kind}**`);
    }
    const before = await lastId();
    expectSuccess(await as(org.owner, org.host).patch('/realm', { enable_spectator_access: true }));
    await subscribe(org.owner, { subscriptions: [{ name: 'open' }], is_web_public: true });
    expect((await notices(before))[0]!.content).toMatch(/^\*\*Web-public\*\* channel created/);
  });

  it('posts in the empty topic of a channel that allows only that', async () => {
    await subscribe(org.owner, {
      subscriptions: [{ name: 'chat' }],
      topics_policy: 'empty_topic_only',
    });
    expect((await notices()).map((m) => m.subject)).toEqual(['']);
  });

  it('tells people someone else subscribed to existing channels, once each', async () => {
    await subscribe(org.owner, { subscriptions: [{ name: 'design' }, { name: 'art' }] });
    const before = await lastId();
    const published = await captureEvents(org.realm.id, () =>
      subscribe(org.owner, {
        subscriptions: [{ name: 'design' }, { name: 'art' }, { name: 'brand new' }],
        principals: [org.owner.id, member.id, other.id, bot.id],
      }),
    );
    const sent = await notices(before);
    const direct = sent.filter((m) => m.recipient.type !== 2);
    // No message for the acting owner or the bot; "brand new" is announced in the channel.
    expect(direct.map((m) => m.content)).toEqual([
      `${mention(org.owner)} subscribed you to the following channels:\n\n* #**art**\n* #**design**\n`,
      `${mention(org.owner)} subscribed you to the following channels:\n\n* #**art**\n* #**design**\n`,
    ]);
    expect(await flagsOf(member, direct[0]!.id)).toEqual(['is_private']);
    expect(await flagsOf(other, direct[1]!.id)).toEqual(['is_private']);
    expect(await flagsOf(org.owner, direct[0]!.id)).toBeNull();
    expect(sent.filter((m) => m.recipient.type === 2)).toHaveLength(1);
    // The subscriptions' events come before the messages about them.
    const types = published.map((p) => p.event.type);
    expect(types.indexOf('subscription')).toBeLessThan(types.indexOf('message'));

    const one = await lastId();
    const body = await subscribe(member, {
      subscriptions: [{ name: 'design' }],
      principals: [other.id, member.id],
    });
    expect(body.subscribed).toEqual({});
    expect(await notices(one)).toEqual([]);
    await subscribe(member, { subscriptions: [{ name: 'solo' }] });
    const two = await lastId();
    await subscribe(member, { subscriptions: [{ name: 'solo' }], principals: [other.id] });
    expect((await notices(two)).map((m) => m.content)).toEqual([
      `${mention(member)} subscribed you to #**solo**.`,
    ]);
  });

  it('sends no direct messages when asked not to, and says so only when asked', async () => {
    await subscribe(org.owner, { subscriptions: [{ name: 'quiet' }] });
    const before = await lastId();
    const body = await subscribe(org.owner, {
      subscriptions: [{ name: 'quiet' }],
      principals: [member.id],
      send_new_subscription_messages: false,
    });
    expect(body).not.toHaveProperty('new_subscription_messages_sent');
    expect(body).not.toHaveProperty('ignored_parameters_unsupported');
    expect(await notices(before)).toEqual([]);
  });

  it('announces new channels in the announcements channel when asked (announce)', async () => {
    await subscribe(org.owner, { subscriptions: [{ name: 'design' }] });
    const announcements = await createChannel(org.realm, org.owner, 'news', [org.owner, member]);
    // Without an announcements channel, announce asks for nothing.
    let before = await lastId();
    const quiet = await subscribe(member, { subscriptions: [{ name: 'unheard' }], announce: true });
    expect(quiet).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await notices(before)).map((m) => m.subject)).toEqual(['channel events']);

    expectSuccess(
      await as(org.owner, org.host).patch('/realm', {
        new_stream_announcements_stream_id: announcements.id,
      }),
    );
    before = await lastId();
    await subscribe(member, {
      subscriptions: [{ name: 'design' }, { name: 'Sw*den' }, { name: 'ops' }],
      principals: [member.id, other.id],
      announce: true,
    });
    const [swden, ops] = await prisma().stream.findMany({
      where: { realmId: org.realm.id, name: { in: ['Sw*den', 'ops'] } },
      orderBy: { name: 'asc' },
    });
    const sent = await notices(before);
    // Zulip's order: the direct message, the announcement, then each channel's first message.
    expect(sent.map((m) => [m.recipientId, m.subject])).toEqual([
      [sent[0]!.recipientId, ''],
      [announcements.recipientId, 'new channels'],
      [swden!.recipientId, 'channel events'],
      [ops!.recipientId, 'channel events'],
    ]);
    expect(sent[1]!.content).toBe(
      `${mention(member)} created the following channels: ` +
        `[#Sw&#42;den](#narrow/channel/${swden!.id}-Sw*den), #**ops**.`,
    );
    expect(await flagsOf(member, sent[1]!.id)).toEqual(['read']);
    expect(await flagsOf(org.owner, sent[1]!.id)).toEqual([]);

    before = await lastId();
    await subscribe(member, { subscriptions: [{ name: 'solo' }], announce: true });
    await subscribe(member, { subscriptions: [{ name: 'unannounced' }] });
    // Joining an existing channel announces nothing.
    await subscribe(other, { subscriptions: [{ name: 'solo' }], announce: true });
    expect(
      (await notices(before))
        .filter((m) => m.recipientId === announcements.recipientId)
        .map((m) => m.content),
    ).toEqual([`${mention(member)} created a new channel #**solo**.`]);
    expectError(
      await as(member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'x' }],
        announce: 'loudly',
      }),
      'announce is not a boolean',
    );
  });

  it(`sends none when more than ${MAX_BULK_NEW_SUBSCRIPTION_MESSAGES} people join at once`, async () => {
    await subscribe(org.owner, { subscriptions: [{ name: 'crowd' }] });
    const people = [member, other];
    for (let i = people.length; i <= MAX_BULK_NEW_SUBSCRIPTION_MESSAGES; i++)
      people.push(await createTestUser(org.realm));
    const before = await lastId();
    const body = await subscribe(org.owner, {
      subscriptions: [{ name: 'crowd' }],
      principals: people.map((user) => user.id),
    });
    expect(Object.keys(body.subscribed as object)).toHaveLength(
      MAX_BULK_NEW_SUBSCRIPTION_MESSAGES + 1,
    );
    expect(body.new_subscription_messages_sent).toBe(false);
    expect(await notices(before)).toEqual([]);
  });
});
