// What a new organization starts with (Zulip's do_create_realm channels and
// send_initial_realm_messages), as the demo organization and `pnpm manage
// create-organization` make it.
import { bitmaskToFlags, getPrisma, Role, runAction } from '@parley/db';
import {
  doCreateInitialChannels,
  removeSingleNewlines,
  sendInitialRealmMessages,
} from '../src/actions/initial-realm';
import { ensureSystemBot } from '../src/actions/system-bots';
import { as, createChannel, createTestRealm, createTestUser, expectSuccess } from './helpers';

const prisma = () => getPrisma();

describe('a new organization', () => {
  it('has #Zulip, #sandbox and #general, with the Welcome Bot’s conversations in them', async () => {
    const org = await createTestRealm();
    await runAction((ctx) => doCreateInitialChannels(ctx, org.realm, org.owner));
    await sendInitialRealmMessages(org.realm, org.owner);

    const channels = await prisma().stream.findMany({
      where: { realmId: org.realm.id },
      orderBy: { id: 'asc' },
    });
    expect(channels.map((c) => [c.name, c.description, c.inviteOnly])).toEqual([
      ['Zulip', 'Questions and discussion about using Zulip.', false],
      ['sandbox', 'Experiment with Zulip here. :test_tube:', false],
      ['general', 'For team-wide conversations', false],
    ]);
    const defaults = await prisma().defaultStream.findMany({ where: { realmId: org.realm.id } });
    expect(defaults.map((d) => d.streamId).sort()).toEqual(channels.map((c) => c.id).sort());
    // #general takes new-channel and Zulip-update announcements; signups are not announced.
    const general = channels.find((c) => c.name === 'general')!;
    expect(
      await prisma().realm.findUniqueOrThrow({
        where: { id: org.realm.id },
        select: {
          newStreamAnnouncementsStreamId: true,
          signupAnnouncementsStreamId: true,
          zulipUpdateAnnouncementsStreamId: true,
          moderationRequestChannelId: true,
        },
      }),
    ).toEqual({
      newStreamAnnouncementsStreamId: general.id,
      signupAnnouncementsStreamId: null,
      zulipUpdateAnnouncementsStreamId: general.id,
      moderationRequestChannelId: null,
    });

    const welcomeBot = await ensureSystemBot(org.realm, 'welcome');
    const messages = await prisma().message.findMany({
      where: { realmId: org.realm.id, senderId: welcomeBot.id },
      orderBy: { id: 'asc' },
      include: { reactions: true },
    });
    const nameOf = new Map(channels.map((c) => [c.recipientId, c.name]));
    expect(messages.map((m) => `${nameOf.get(m.recipientId)} > ${m.subject}`)).toEqual([
      'Zulip > moving messages',
      'Zulip > moving messages',
      'sandbox > experiments',
      'sandbox > experiments',
      'sandbox > start a conversation',
      'sandbox > start a conversation',
      'sandbox > start a conversation',
      'general > greetings',
      'general > greetings',
      'Zulip > welcome to Zulip!',
      'Zulip > welcome to Zulip!',
      'Zulip > welcome to Zulip!',
    ]);
    // Single line breaks are joined, as Zulip's remove_single_newlines does.
    expect(messages[4]!.content).toBe(
      'To kick off a new conversation, pick a channel in the left sidebar, and click the `+` ' +
        'button next to its name.',
    );
    // The examples render: a spoiler around code, a list and a topic link.
    const examples = messages[3]!.renderedContent!;
    expect(examples).toContain('<div class="spoiler-block">');
    expect(examples).toContain('<li>bulleted</li>');
    expect(examples).toContain(
      `href="/#narrow/channel/${channels[0]!.id}-Zulip/topic/welcome.20to.20Zulip.21"`,
    );
    // The Welcome Bot waves at the greeting.
    expect(messages[7]!.reactions.map((r) => [r.userId, r.emojiName])).toEqual([
      [welcomeBot.id, 'wave'],
    ]);

    // The owner has them all, unread, the first of each conversation starred.
    const copies = await prisma().userMessage.findMany({
      where: { userId: org.owner.id, messageId: { in: messages.map((m) => m.id) } },
      orderBy: { messageId: 'asc' },
    });
    expect(copies.map((c) => bitmaskToFlags(c.flags))).toEqual(
      [0, 2, 4, 7, 9].reduce(
        (flags, index) => flags.map((f, i) => (i === index ? ['starred'] : f)),
        messages.map((): string[] => []),
      ),
    );
    const unread = expectSuccess(
      await as(org.owner, org.host).post('/register', { fetch_event_types: ['message'] }),
    );
    expect(unread.max_message_id).toBe(messages[11]!.id);

    // Someone who joins later gets them too, historical: only these unread, the same starred,
    // and the channels' other recent messages read (Zulip's add_new_user_history).
    const other = expectSuccess(
      await as(org.owner, org.host).post('/messages', {
        type: 'stream',
        to: 'general',
        topic: 'chat',
        content: 'hello',
      }),
    ).id as number;
    const joiner = await createTestUser(org.realm, Role.MEMBER);
    const theirs = await prisma().userMessage.findMany({
      where: { userId: joiner.id },
      orderBy: { messageId: 'asc' },
    });
    const flagsOf = new Map(theirs.map((c) => [c.messageId, bitmaskToFlags(c.flags)]));
    for (const [index, message] of messages.entries())
      expect(flagsOf.get(message.id)).toEqual(
        [0, 2, 4, 7, 9].includes(index) ? ['starred', 'historical'] : ['historical'],
      );
    expect(flagsOf.get(other)).toEqual(['read', 'historical']);
  });

  it('gives newcomers the newest channel history, only the last 20 unread, without onboarding messages', async () => {
    const org = await createTestRealm();
    const channel = await createChannel(org.realm, org.owner, 'busy', [org.owner]);
    expectSuccess(
      await as(org.owner, org.host).post('/default_streams', { stream_id: channel.id }),
    );
    const secret = await createChannel(org.realm, org.owner, 'hidden', [org.owner], {
      inviteOnly: true,
    });
    const ids: number[] = [];
    for (let i = 0; i < 25; i++)
      ids.push(
        expectSuccess(
          await as(org.owner, org.host).post('/messages', {
            type: 'stream',
            to: channel.id,
            topic: 't',
            content: `m${i}`,
          }),
        ).id as number,
      );
    expectSuccess(
      await as(org.owner, org.host).post('/messages', {
        type: 'stream',
        to: secret.id,
        topic: 't',
        content: 'private',
      }),
    );
    const joiner = await createTestUser(org.realm, Role.MEMBER);
    const theirs = await prisma().userMessage.findMany({
      where: { userId: joiner.id, messageId: { in: ids } },
      orderBy: { messageId: 'asc' },
    });
    expect(theirs.map((c) => c.messageId)).toEqual(ids);
    expect(theirs.map((c) => bitmaskToFlags(c.flags).includes('read'))).toEqual(
      ids.map((_, index) => index < 5),
    );
    // Nothing from the private channel they did not join.
    expect(
      await prisma().userMessage.count({ where: { userId: joiner.id, messageId: { notIn: ids } } }),
    ).toBe(0);
  });

  it('joins single line breaks but keeps paragraphs and lists', () => {
    expect(removeSingleNewlines('\none\ntwo\n\nthree\n- four\n- five\n1. six\n')).toBe(
      'one two\n\nthree\n- four\n- five\n1. six',
    );
    expect(removeSingleNewlines('a\n   b')).toBe('a b');
  });
});
