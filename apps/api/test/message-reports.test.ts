// POST /messages/{id}/report (Zulip's report_message_backend and send_message_report): who may
// report what, Zulip's errors in its order, and the report the Notification Bot posts in the
// moderation request channel for channel messages, direct messages and group direct messages.
import { realmUrl } from '@parley/auth';
import { getPrisma, Role, type Message, type User } from '@parley/db';
import { ensureSystemBot } from '../src/actions/system-bots';
import { as, createChannel, createTestUser, expectError, expectSuccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();

/** <time:…> of a message's send time, seconds only, as Zulip writes it. */
const timeOf = (message: Message) =>
  `<time:${message.dateSent.toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;
const mention = (user: Pick<User, 'id' | 'fullName'>) => `@_**${user.fullName}|${user.id}**`;

describe('POST /messages/{id}/report', () => {
  let org: MessageOrg;
  let moderation: Awaited<ReturnType<typeof createChannel>>;
  let notificationBot: User;

  const sendMessage = async (sender: User, form: Record<string, unknown>) => {
    const body = expectSuccess(await send(sender, org.host, form));
    return prisma().message.findUniqueOrThrow({ where: { id: body.id as number } });
  };
  const report = (user: User, messageId: number, form: Record<string, unknown>) =>
    as(user, org.host).post(`/messages/${messageId}/report`, form);
  /** The reports posted since `after`, oldest first. */
  const reports = (after: number) =>
    prisma().message.findMany({
      where: {
        senderId: notificationBot.id,
        recipientId: moderation.recipientId!,
        id: { gt: after },
      },
      orderBy: { id: 'asc' },
    });
  const lastId = async () =>
    (await prisma().message.aggregate({ _max: { id: true } }))._max.id ?? 0;

  beforeAll(async () => {
    org = await createMessageOrg();
    notificationBot = await ensureSystemBot(org.realm, 'notification');
    moderation = await createChannel(org.realm, org.owner, 'moderation', [org.owner, org.admin], {
      inviteOnly: true,
    });
    await setModerationChannel(moderation.id);
  });

  const setModerationChannel = async (id: number) =>
    expectSuccess(
      await as(org.owner, org.host).patch('/realm', { moderation_request_channel_id: id }),
    );

  it('is refused while the organization has no moderation request channel', async () => {
    const message = await sendMessage(org.other, {
      type: 'stream',
      to: 'general',
      topic: 'food',
      content: 'hi',
    });
    await setModerationChannel(-1);
    expectError(
      await report(org.member, message.id, { report_type: 'spam' }),
      'Message reporting is not enabled in this organization.',
    );
    await setModerationChannel(moderation.id);
    expectSuccess(await report(org.member, message.id, { report_type: 'spam' }));
  });

  it('posts a channel message report in "{name} moderation", with a link and a quote', async () => {
    const message = await sendMessage(org.other, {
      type: 'stream',
      to: 'general',
      topic: 'food',
      content: 'I squeeze toothpaste from the middle\n```\ncode\n```',
    });
    const before = await lastId();
    expectSuccess(
      await report(org.member, message.id, {
        report_type: 'harassment',
        description: 'this is crime against food',
      }),
    );
    const [posted, ...more] = await reports(before);
    expect(more).toEqual([]);
    expect(posted!.subject).toBe('Otto Other moderation');
    expect(posted!.content).toBe(
      `${mention(org.member)} reported a message sent by ${mention(org.other)} at ${timeOf(message)}.\n` +
        '```quote\n**Harassment**. this is crime against food\n```\n\n' +
        `\`\`\`\` spoiler Original message at #**general>food@${message.id}**\n` +
        'I squeeze toothpaste from the middle\n```\ncode\n```\n````',
    );
    // The moderators get it, unread; nobody else does.
    const copies = await prisma().userMessage.findMany({
      where: { messageId: posted!.id },
      orderBy: { userId: 'asc' },
    });
    expect(copies.map((copy) => copy.userId)).toEqual(
      [org.owner.id, org.admin.id].sort((a, b) => a - b),
    );
    // Reporting one's own message is allowed; the description may be empty.
    const again = await lastId();
    expectSuccess(await report(org.other, message.id, { report_type: 'spam' }));
    expect((await reports(again))[0]!.content).toContain('```quote\n**Spam**. \n```');
  });

  it('reports direct messages, naming the recipients of group ones', async () => {
    const dm = await sendMessage(org.other, {
      type: 'direct',
      to: JSON.stringify([org.member.id]),
      content: 'I dip fries in ice cream',
    });
    const ids = [org.member.id, org.other.id].sort((a, b) => a - b);
    const dmLink = `[Original message](${realmUrl(org.realm)}/#narrow/dm/${ids.join(',')}-dm/near/${dm.id})`;
    let before = await lastId();
    expectSuccess(
      await report(org.member, dm.id, { report_type: 'norms', description: 'not nice' }),
    );
    // The sender reporting their own direct message says to whom it went.
    expectSuccess(await report(org.other, dm.id, { report_type: 'other', description: 'oops' }));
    expect((await reports(before)).map((m) => m.content)).toEqual([
      `${mention(org.member)} reported a direct message sent by ${mention(org.other)} at ${timeOf(dm)}.\n` +
        '```quote\n**Violates community norms**. not nice\n```\n\n' +
        `\`\`\` spoiler ${dmLink}\nI dip fries in ice cream\n\`\`\``,
      `${mention(org.other)} reported a direct message sent by ${mention(org.other)} to ${mention(org.member)} at ${timeOf(dm)}.\n` +
        '```quote\n**Other reason**. oops\n```\n\n' +
        `\`\`\` spoiler ${dmLink}\nI dip fries in ice cream\n\`\`\``,
    ]);

    const group = await sendMessage(org.other, {
      type: 'direct',
      to: JSON.stringify([org.member.id, org.admin.id, org.owner.id]),
      content: 'cereal with water',
    });
    before = await lastId();
    expectSuccess(await report(org.member, group.id, { report_type: 'inappropriate' }));
    const others = [org.member, org.admin, org.owner].map(mention).sort();
    expect((await reports(before))[0]!.content.split('\n')[0]).toBe(
      `${mention(org.member)} reported a direct message sent by ${mention(org.other)} to ` +
        `${others[0]}, ${others[1]}, and ${others[2]} at ${timeOf(group)}.`,
    );
  });

  it("cuts a topic made long by the sender's name, as Zulip cuts topics", async () => {
    const longName = await createTestUser(org.realm, Role.MEMBER, { fullName: 'L'.repeat(70) });
    expectSuccess(
      await as(longName, org.host).post('/users/me/subscriptions', {
        subscriptions: JSON.stringify([{ name: 'general' }]),
      }),
    );
    const message = await sendMessage(longName, {
      type: 'stream',
      to: 'general',
      topic: 'names',
      content: 'hello',
    });
    const before = await lastId();
    expectSuccess(await report(org.member, message.id, { report_type: 'spam' }));
    expect((await reports(before))[0]!.subject).toBe(`${'L'.repeat(57)}...`);
  });

  it("refuses what the reporter cannot read, and bad input, in Zulip's order", async () => {
    const secret = await sendMessage(org.member, {
      type: 'stream',
      to: 'secret',
      topic: 'plans',
      content: 'hidden',
    });
    const dm = await sendMessage(org.member, {
      type: 'direct',
      to: JSON.stringify([org.admin.id]),
      content: 'private',
    });
    const before = await lastId();
    for (const id of [secret.id, dm.id, 999_999_999])
      expectError(await report(org.other, id, { report_type: 'spam' }), 'Invalid message(s)');
    expectError(
      await report(org.other, secret.id, {}),
      "Missing 'report_type' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(await report(org.other, secret.id, { report_type: 'rude' }), 'Invalid report_type');
    expectError(
      await report(org.other, secret.id, { report_type: 'other' }),
      'An explanation is required.',
    );
    expectError(
      await report(org.other, secret.id, { report_type: 'spam', description: 'x'.repeat(1001) }),
      'description is too long (limit: 1000 characters)',
    );
    expectError(
      await report(org.other, secret.id, { report_type: 'spam', description: 'a\u0000b' }),
      'Invalid description: null bytes are not allowed',
    );
    expect(await reports(before)).toEqual([]);
  });

  it('cuts a long message, and posts in the empty topic where the channel allows only that', async () => {
    const long = await sendMessage(org.other, {
      type: 'stream',
      to: 'general',
      topic: 'essays',
      content: 'word '.repeat(1990),
    });
    moderation = await createChannel(org.realm, org.owner, 'quiet moderation', [org.owner], {
      inviteOnly: true,
      topicsPolicy: 'empty_topic_only',
    });
    await setModerationChannel(moderation.id);
    const before = await lastId();
    expectSuccess(await report(org.member, long.id, { report_type: 'spam' }));
    const [posted] = await reports(before);
    expect(posted!.subject).toBe('');
    const quote = posted!.content.split('\n').slice(6, -1).join('\n');
    expect([...quote].length).toBe(8500);
    expect(quote.endsWith('\n[message truncated]')).toBe(true);
  });
});
