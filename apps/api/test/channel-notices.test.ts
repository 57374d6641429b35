// The Notification Bot's notices in a channel's "channel events" topic when PATCH or DELETE
// /streams/{id} changes it (Zulip's maybe_send_channel_events_notice callers).
import { bitmaskToFlags, getPrisma, Role, type Stream, type User } from '@parley/db';
import { ensureSystemBot } from '../src/actions/system-bots';
import {
  as,
  captureEvents,
  createChannel,
  createTestRealm,
  createTestUser,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();

describe('channel events notices', () => {
  let org: TestRealm;
  let member: User;
  let channel: Stream;
  let notificationBot: User;
  beforeEach(async () => {
    org = await createTestRealm();
    member = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Mia Member' });
    channel = await createChannel(org.realm, org.owner, 'design', [org.owner, member]);
    notificationBot = await ensureSystemBot(org.realm, 'notification');
  });

  const mention = (user: User) => `@_**${user.fullName}|${user.id}**`;
  const patch = async (form: Record<string, unknown>, user = org.owner) =>
    expectSuccess(await as(user, org.host).patch(`/streams/${channel.id}`, form));
  /** The channel's notices, oldest first. */
  const notices = async () =>
    (
      await prisma().message.findMany({
        where: { recipientId: channel.recipientId!, senderId: notificationBot.id },
        orderBy: { id: 'asc' },
      })
    ).map((m) => ({ id: m.id, topic: m.subject, content: m.content }));
  const contents = async () => (await notices()).map((notice) => notice.content);
  const flagsOf = async (user: User, messageId: number) =>
    bitmaskToFlags(
      (
        await prisma().userMessage.findUniqueOrThrow({
          where: { userId_messageId: { userId: user.id, messageId } },
        })
      ).flags,
    );

  it('reports a rename after its event, unread for the subscribers', async () => {
    const published = await captureEvents(org.realm.id, () => patch({ new_name: 'studio' }));
    expect(published.map((p) => [p.event.type, p.event.property])).toEqual([
      ['stream', 'name'],
      ['message', undefined],
    ]);
    const [notice] = await notices();
    expect(notice).toMatchObject({
      topic: 'channel events',
      content: `${mention(org.owner)} renamed channel **design** to **studio**.`,
    });
    expect(await flagsOf(member, notice!.id)).toEqual([]);
    // A change that changes nothing says nothing.
    await patch({ description: '' });
    expect(await notices()).toHaveLength(1);
  });

  it('quotes the old and the new description', async () => {
    await patch({ description: 'Pixels' });
    await patch({ description: '' });
    expect(await contents()).toEqual([
      `${mention(org.owner)} changed the description for this channel.\n\n` +
        '* **Old description:**\n```` quote\n*No description.*\n````\n' +
        '* **New description:**\n```` quote\nPixels\n````',
      `${mention(org.owner)} changed the description for this channel.\n\n` +
        '* **Old description:**\n```` quote\nPixels\n````\n' +
        '* **New description:**\n```` quote\n*No description.*\n````',
    ]);
  });

  it('names the access policies, the retention periods and the topics policies', async () => {
    await patch({ is_private: true, history_public_to_subscribers: true });
    await patch({ message_retention_days: 30 });
    await patch({ message_retention_days: 'unlimited' });
    await patch({ topics_policy: 'disable_empty_topic' });
    expect(await contents()).toEqual([
      `${mention(org.owner)} changed the [access permissions](/help/channel-permissions) for ` +
        'this channel from **Public** to **Private, shared history**.',
      `${mention(org.owner)} has changed the [message retention period]` +
        '(/help/message-retention-policy) for this channel:\n' +
        '* **Old retention period**: Forever\n* **New retention period**: 30 days\n\n' +
        'Messages in this channel will now be automatically deleted 30 days after they are sent.',
      `${mention(org.owner)} has changed the [message retention period]` +
        '(/help/message-retention-policy) for this channel:\n' +
        '* **Old retention period**: 30 days\n* **New retention period**: Forever\n\n' +
        'Messages in this channel will now be retained forever.',
      `${mention(org.owner)} changed the "Allow posting to the *general chat* topic?" setting ` +
        'from **Automatic** to **No *general chat* topic**.',
    ]);
  });

  it('posts in the empty topic once a channel allows only that', async () => {
    await patch({ topics_policy: 'empty_topic_only' });
    expect(await notices()).toEqual([
      expect.objectContaining({
        topic: '',
        content: expect.stringMatching(/to \*\*Only \*general chat\* topic allowed\*\*\.$/),
      }),
    ]);
  });

  it('lists who may post, by group and by person', async () => {
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    await patch({
      can_send_message_group: JSON.stringify({
        new: { direct_members: [member.id], direct_subgroups: [admins.id] },
      }),
    });
    await patch({ can_send_message_group: JSON.stringify({ new: admins.id }) });
    expect(await contents()).toEqual([
      `${mention(org.owner)} changed the [posting permissions](/help/channel-posting-policy) ` +
        `for this channel:\n\n* **Old**: @_*role:everyone*\n` +
        `* **New**: @_*role:administrators*, ${mention(member)}`,
      `${mention(org.owner)} changed the [posting permissions](/help/channel-posting-policy) ` +
        `for this channel:\n\n* **Old**: @_*role:administrators*, ${mention(member)}\n` +
        `* **New**: @_*role:administrators*`,
    ]);
    // System groups show their display names.
    const [first] = await notices();
    const rendered = await prisma().message.findUniqueOrThrow({ where: { id: first!.id } });
    expect(rendered.renderedContent).toContain(
      `<strong>Old</strong>: <span class="user-group-mention silent" data-user-group-id="`,
    );
    expect(rendered.renderedContent).toMatch(/>Everyone<\/span><\/li>/);
    // Other group settings are not reported, as in Zulip.
    await patch({ can_remove_subscribers_group: JSON.stringify({ new: admins.id }) });
    expect(await notices()).toHaveLength(2);
  });

  it('reports archiving read for everyone, and unarchiving', async () => {
    expectSuccess(await as(org.owner, org.host).delete(`/streams/${channel.id}`));
    await patch({ is_archived: false });
    const [archived, unarchived] = await notices();
    expect([archived!.content, unarchived!.content]).toEqual([
      'Channel #**design** has been archived.',
      'Channel #**design** has been unarchived.',
    ]);
    expect(await flagsOf(member, archived!.id)).toEqual(['read']);
    expect(await flagsOf(member, unarchived!.id)).toEqual([]);
  });
});
