// POST /streams/{id}/delete_topic (Zulip's delete_in_topic): administrators delete the topic's
// messages they can read, in batches with bulk delete_message events, then its visibility
// policies; refusals; the time budget's partial answer.
import { getPrisma, type User } from '@parley/db';
import { doDeleteTopic } from '../src/actions/topic-deletion';
import { as, captureEvents, createChannel, expectError, expectSuccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();

describe('POST /streams/{id}/delete_topic', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });

  const post = async (sender: User, to: string, topic: string, content = 'hi') =>
    expectSuccess(await send(sender, org.host, { type: 'stream', to, topic, content }))
      .id as number;
  const remaining = (ids: number[]) =>
    prisma().message.findMany({ where: { id: { in: ids } }, select: { id: true } });
  const deleteTopic = (user: User, streamId: number, topic: unknown) =>
    as(user, org.host).post(`/streams/${streamId}/delete_topic`, { topic_name: topic });

  it("deletes every message of the topic, whatever the case, and the topic's policies", async () => {
    const doomed = [
      await post(org.member, 'general', 'Food'),
      await post(org.other, 'general', 'food'),
      await post(org.owner, 'general', 'FOOD'),
    ];
    const kept = await post(org.member, 'general', 'drinks');
    expectSuccess(
      await as(org.member, org.host).post('/user_topics', {
        stream_id: org.general.id,
        topic: 'food',
        visibility_policy: 1,
      }),
    );
    let body: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      body = expectSuccess(await deleteTopic(org.admin, org.general.id, 'food'));
    });
    expect(body.complete).toBe(true);
    expect(await remaining(doomed)).toEqual([]);
    expect(await remaining([kept])).toEqual([{ id: kept }]);
    const deletions = published.filter((p) => p.event.type === 'delete_message');
    expect(deletions).toEqual([
      {
        event: {
          type: 'delete_message',
          message_ids: doomed,
          message_type: 'stream',
          stream_id: org.general.id,
          topic: 'FOOD',
        },
        users: [org.owner.id, org.admin.id, org.member.id, org.other.id, org.guest.id].sort(
          (a, b) => a - b,
        ),
      },
    ]);
    // The member's muting of the topic went with it.
    expect(published.map((p) => p.event)).toContainEqual(
      expect.objectContaining({
        type: 'user_topic',
        stream_id: org.general.id,
        topic_name: 'food',
        visibility_policy: 0,
      }),
    );
    expect(
      await prisma().userTopic.count({
        where: {
          userId: org.member.id,
          recipientId: org.general.recipientId!,
          topicName: { equals: 'food', mode: 'insensitive' },
        },
      }),
    ).toBe(0);
  });

  it('deletes in batches, each its own bulk event, and stops when its time is up', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await post(org.other, 'general', 'batches'));
    expect(await doDeleteTopic(org.admin, org.general, 'batches', { budgetMs: 0 })).toBe(false);
    expect(await remaining(ids)).toHaveLength(5);
    const published = await captureEvents(org.realm.id, async () => {
      expect(await doDeleteTopic(org.admin, org.general, 'batches', { batchSize: 2 })).toBe(true);
    });
    expect(
      published.filter((p) => p.event.type === 'delete_message').map((p) => p.event.message_ids),
    ).toEqual([ids.slice(3), ids.slice(1, 3), ids.slice(0, 1)]);
    expect(await remaining(ids)).toEqual([]);
  });

  it('leaves what the administrator cannot read in a channel with protected history', async () => {
    const vault = await createChannel(org.realm, org.member, 'vault', [org.member, org.other], {
      inviteOnly: true,
      historyPublicToSubscribers: false,
    });
    const before = await post(org.member, 'vault', 'plans');
    expectSuccess(
      await as(org.other, org.host).post('/user_topics', {
        stream_id: vault.id,
        topic: 'plans',
        visibility_policy: 3,
      }),
    );
    // Not subscribed: no access to its content at all.
    expectError(await deleteTopic(org.admin, vault.id, 'plans'), 'Invalid channel ID');
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: JSON.stringify([{ name: 'vault' }]),
        principals: JSON.stringify([org.admin.id]),
      }),
    );
    const after = await post(org.member, 'vault', 'plans');
    expect(expectSuccess(await deleteTopic(org.admin, vault.id, 'plans')).complete).toBe(true);
    expect(await remaining([before, after])).toEqual([{ id: before }]);
    // Others can still read the message left, so their policies stay.
    expect(
      await prisma().userTopic.count({
        where: { userId: org.other.id, recipientId: vault.recipientId! },
      }),
    ).toBe(1);
  });

  it('takes "general chat" for the empty topic, and moves first_message_id on', async () => {
    const notes = await createChannel(org.realm, org.owner, 'notes', [org.owner]);
    const first = await post(org.owner, 'notes', '');
    const second = await post(org.owner, 'notes', 'later');
    expect(
      (await prisma().stream.findUniqueOrThrow({ where: { id: notes.id } })).firstMessageId,
    ).toBe(first);
    expectSuccess(await deleteTopic(org.owner, notes.id, 'general chat'));
    expect(await remaining([first, second])).toEqual([{ id: second }]);
    expect(
      (await prisma().stream.findUniqueOrThrow({ where: { id: notes.id } })).firstMessageId,
    ).toBe(second);
  });

  it('refuses anyone but administrators, and bad input', async () => {
    expectError(
      await deleteTopic(org.member, org.general.id, 'x'),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectError(await deleteTopic(org.admin, 999_999, 'x'), 'Invalid channel ID');
    expectError(
      await as(org.admin, org.host).post(`/streams/${org.general.id}/delete_topic`, {}),
      "Missing 'topic_name' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    // A topic without messages is simply done.
    expect(
      expectSuccess(await deleteTopic(org.admin, org.general.id, 'nothing here')).complete,
    ).toBe(true);
  });
});
