// The Notification Bot's notices when messages are moved or a topic is resolved (Zulip's
// send_message_moved_breadcrumbs and maybe_send_resolve_topic_notifications).
import { bitmaskToFlags, getPrisma, MessageType, type Stream, type User } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, expectSuccess } from './helpers';

const prisma = () => getPrisma();

describe('notices of moved and resolved topics', () => {
  let org: MessageOrg;
  beforeEach(async () => {
    org = await createMessageOrg();
  });

  const post = async (user: User, topic: string, content: string, stream = org.general) =>
    expectSuccess(await send(user, org.host, { type: 'stream', to: stream.id, topic, content }))
      .id as number;
  const patch = async (user: User, id: number, form: Record<string, unknown>) =>
    expectSuccess(await as(user, org.host).patch(`/messages/${id}`, form));
  /** The topic's messages, oldest first, with who sent them. */
  const topic = async (stream: Stream, name: string) =>
    (
      await prisma().message.findMany({
        where: { recipientId: stream.recipientId!, subject: name },
        orderBy: { id: 'asc' },
        include: { sender: { select: { fullName: true, email: true } } },
      })
    ).map((m) => ({ id: m.id, from: m.sender.fullName, content: m.content, type: m.type }));
  const flagsOf = async (user: User, messageId: number) => {
    const row = await prisma().userMessage.findUnique({
      where: { userId_messageId: { userId: user.id, messageId } },
    });
    return row ? bitmaskToFlags(row.flags) : null;
  };
  const mention = (user: User) => `@_**${user.fullName}|${user.id}**`;

  it('tells the new topic where a whole topic came from, read for the one who moved it', async () => {
    const a = await post(org.member, 'old', 'a');
    await post(org.other, 'old', 'b');
    const published = await captureEvents(org.realm.id, () =>
      patch(org.member, a, { topic: 'new', propagate_mode: 'change_all' }),
    );
    const moved = await topic(org.general, 'new');
    expect(moved.map((m) => m.content)).toEqual([
      'a',
      'b',
      `This topic was moved here from #**general>old** by ${mention(org.member)}.`,
    ]);
    const notice = moved[2]!;
    expect(notice).toMatchObject({ from: 'Notification Bot', type: MessageType.NORMAL });
    // Nothing is left in the old topic: no notice there unless asked for.
    expect(await topic(org.general, 'old')).toEqual([]);
    expect(await flagsOf(org.member, notice.id)).toEqual(['read']);
    expect(await flagsOf(org.other, notice.id)).toEqual([]);
    // The move's event comes first, then the notice, rendered with its links.
    const types = published.map((p) => p.event.type);
    expect(types.indexOf('update_message')).toBeLessThan(types.indexOf('message'));
    const { message } = published.find((p) => p.event.type === 'message')!.event as {
      message?: { content: string };
    };
    expect(message!.content).toContain(
      `href="/#narrow/channel/${org.general.id}-general/topic/old"`,
    );
  });

  it('counts what moved when only part of the topic did, in both places when asked', async () => {
    const a = await post(org.member, 'old', 'a');
    const b = await post(org.member, 'old', 'b');
    await post(org.member, 'old', 'c');
    await patch(org.member, b, {
      topic: 'new',
      propagate_mode: 'change_later',
      send_notification_to_old_thread: true,
    });
    expect((await topic(org.general, 'new')).map((m) => m.content)).toEqual([
      'b',
      'c',
      `2 messages were moved here from #**general>old** by ${mention(org.member)}.`,
    ]);
    expect((await topic(org.general, 'old')).map((m) => m.content)).toEqual([
      'a',
      `2 messages were moved from this topic to #**general>new** by ${mention(org.member)}.`,
    ]);

    // One message, into a topic that already has some: a link to it.
    await patch(org.other, a, { topic: 'new', send_notification_to_old_thread: true });
    const url = `http://${org.host}/#narrow/channel/${org.general.id}-general/topic/new/near/${a}`;
    expect((await topic(org.general, 'new')).at(-1)!.content).toBe(
      `[A message](${url}) was moved here from #**general>old** by ${mention(org.other)}.`,
    );
    // The old topic kept its earlier notice, which the user can see: not all of it moved.
    expect((await topic(org.general, 'old')).at(-1)!.content).toBe(
      `A message was moved from this topic to #**general>new** by ${mention(org.other)}.`,
    );
  });

  it('posts nothing when told not to, and writes links the topic name would break', async () => {
    const a = await post(org.member, 'quiet', 'a');
    await patch(org.member, a, { topic: 'hush', send_notification_to_new_thread: false });
    expect((await topic(org.general, 'hush')).map((m) => m.content)).toEqual(['a']);

    await patch(org.member, a, { topic: 'a > b', send_notification_to_old_thread: true });
    expect((await topic(org.general, 'hush')).at(-1)!.content).toBe(
      `This topic was moved to [#general > a &gt; b](#narrow/channel/${org.general.id}-general/topic/a.20.3E.20b) by ${mention(org.member)}.`,
    );
  });

  it('posts in a private channel the bot is not subscribed to', async () => {
    const a = await post(org.member, 'plans', 'secret plans');
    await patch(org.member, a, { stream_id: org.secret.id, propagate_mode: 'change_all' });
    expect(await topic(org.secret, 'plans')).toEqual([
      expect.objectContaining({ content: 'secret plans' }),
      expect.objectContaining({
        from: 'Notification Bot',
        content: `This topic was moved here from #**general>plans** by ${mention(org.member)}.`,
      }),
    ]);
  });

  it('says who resolved a topic, unread as each member chose, and no move notice', async () => {
    const a = await post(org.member, 'bug', 'broken');
    await prisma().user.update({
      where: { id: org.owner.id },
      data: { resolvedTopicNoticeAutoReadPolicy: 'never' },
    });
    await prisma().user.update({
      where: { id: org.guest.id },
      data: { resolvedTopicNoticeAutoReadPolicy: 'always' },
    });
    // "except_followed", the default: unread only for those who follow the topic.
    expectSuccess(
      await as(org.other, org.host).post('/user_topics', {
        stream_id: org.general.id,
        topic: 'bug',
        visibility_policy: 3,
      }),
    );
    await patch(org.member, a, { topic: '✔ bug', propagate_mode: 'change_all' });
    const resolved = await topic(org.general, '✔ bug');
    expect(resolved.map((m) => m.content)).toEqual([
      'broken',
      `${mention(org.member)} has marked this topic as resolved.`,
    ]);
    const notice = resolved[1]!;
    expect(notice).toMatchObject({
      from: 'Notification Bot',
      type: MessageType.RESOLVE_TOPIC_NOTIFICATION,
    });
    expect(await flagsOf(org.owner, notice.id)).toEqual([]);
    expect(await flagsOf(org.other, notice.id)).toEqual([]);
    expect(await flagsOf(org.guest, notice.id)).toEqual(['read']);
    expect(await flagsOf(org.member, notice.id)).toEqual(['read']);
  });

  it('deletes the notice instead when the topic is unresolved within a minute', async () => {
    const a = await post(org.member, 'bug', 'broken');
    await patch(org.member, a, { topic: '✔ bug', propagate_mode: 'change_all' });
    const [, notice] = await topic(org.general, '✔ bug');
    const published = await captureEvents(org.realm.id, () =>
      patch(org.other, a, { topic: 'bug', propagate_mode: 'change_all' }),
    );
    expect((await topic(org.general, 'bug')).map((m) => m.content)).toEqual(['broken']);
    expect(published.map((p) => p.event)).toContainEqual(
      expect.objectContaining({ type: 'delete_message', message_ids: [notice!.id] }),
    );
    expect(published.some((p) => p.event.type === 'message')).toBe(false);

    // Later than that, unresolving is news of its own.
    await patch(org.member, a, { topic: '✔ bug', propagate_mode: 'change_all' });
    await prisma().message.updateMany({
      where: { recipientId: org.general.recipientId!, subject: '✔ bug' },
      data: { dateSent: new Date(Date.now() - 120_000) },
    });
    await patch(org.other, a, { topic: 'bug', propagate_mode: 'change_all' });
    expect((await topic(org.general, 'bug')).map((m) => m.content)).toEqual([
      'broken',
      `${mention(org.member)} has marked this topic as resolved.`,
      `${mention(org.other)} has marked this topic as unresolved.`,
    ]);
  });
});
