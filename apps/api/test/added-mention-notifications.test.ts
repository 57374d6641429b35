// Notifications of the mentions an edit adds (Zulip's
// maybe_enqueue_notifications_for_message_update): who the edit newly mentions, and of them
// who is pushed and who emailed.
import { Queue } from 'bullmq';
import { getConfig } from '@parley/config';
import { afterAnswerSettled, flagBit, getPrisma, Role, type User } from '@parley/db';
import { getRedis, keys, shardOf } from '@parley/events';
import { closeQueues } from '@parley/jobs';
import { notifyAddedMentions } from '../src/actions/added-mention-notifications';
import { as, createTestUser, expectSuccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();
let pushQueue: Queue;
let org: MessageOrg;

beforeAll(async () => {
  pushQueue = new Queue('push', { connection: { url: getConfig().REDIS_URL } });
  org = await createMessageOrg();
});

afterAll(async () => {
  await pushQueue.close();
  await closeQueues();
});

async function joinGeneral(fullName: string): Promise<User> {
  const user = await createTestUser(org.realm, Role.MEMBER, { fullName });
  expectSuccess(
    await as(user, org.host).post('/users/me/subscriptions', {
      subscriptions: JSON.stringify([{ name: 'general' }]),
    }),
  );
  return user;
}

async function sendToGeneral(
  content: string,
  topic = 'edits',
  sender = org.owner,
): Promise<number> {
  const id = expectSuccess(
    await send(sender, org.host, { type: 'stream', to: 'general', topic, content }),
  ).id as number;
  await afterAnswerSettled();
  return id;
}

/** Edits the message's content; returns the job the edit queued, if any. */
async function edit(
  id: number,
  content: string,
): Promise<{ messageId: number; userIds: number[]; editedAt: number } | undefined> {
  expectSuccess(await as(org.owner, org.host).patch(`/messages/${id}`, { content }));
  const jobs = await pushQueue.getJobs(['waiting', 'delayed', 'prioritized']);
  const job = jobs.find((queued) => queued.id?.startsWith(`added-mention-notifications-${id}-`));
  if (job) await job.remove();
  return job?.data as { messageId: number; userIds: number[]; editedAt: number } | undefined;
}

const waiting = (user: User) =>
  prisma().scheduledMessageNotificationEmail.findMany({ where: { userId: user.id } });

describe('mentions an edit adds', () => {
  it('notify those newly mentioned, not those mentioned before', async () => {
    const before = await joinGeneral('Bea Before');
    const added = await joinGeneral('Adam Added');
    const id = await sendToGeneral('hi @**Bea Before**');
    // A typo fixed: nobody new.
    expect(await edit(id, 'hello @**Bea Before**')).toBeUndefined();
    const job = await edit(id, 'hello @**Bea Before** and @**Adam Added**');
    expect(job).toMatchObject({ messageId: id, userIds: [added.id] });
    // Adam has no client open: emailed (after the batching period); no device, no push.
    expect(await notifyAddedMentions(job!)).toEqual({ pushed: 0, emailed: 1 });
    expect((await waiting(added)).map((row) => [row.messageId, row.trigger])).toEqual([
      [id, 'mentioned'],
    ]);
    expect(await waiting(before)).toEqual([]);
    // Dropped, then mentioned again: new again (Zulip compares with the mentions before).
    expect(await edit(id, 'hello all')).toBeUndefined();
    expect((await edit(id, 'hello @**Bea Before**'))?.userIds).toEqual([before.id]);
  });

  it('a wildcard mention counts, and those with a device are pushed', async () => {
    const phone = await joinGeneral('Pam Phone');
    expectSuccess(
      await as(phone, org.host).post('/users/me/android_gcm_reg_id', { token: 'pam-token' }),
    );
    const id = await sendToGeneral('nothing yet');
    const job = await edit(id, 'hello @**all**');
    expect(job?.userIds).toEqual(expect.arrayContaining([phone.id, org.member.id]));
    expect(job?.userIds).not.toContain(org.owner.id);
    const result = await notifyAddedMentions(job!);
    expect(result.pushed).toBe(1);
    const push = await pushQueue.getJob(`push-notifications-${id}-mentions-${job!.editedAt}`);
    // Whose clients are open is read as of the edit.
    expect(push?.data).toEqual({
      messageId: id,
      recipients: [{ userId: phone.id, trigger: 'stream_wildcard_mentioned' }],
      editedAt: job!.editedAt,
    });
    await push?.remove();
  });

  it('who has a client open at the edit is not emailed, even one opened after the send', async () => {
    const late = await joinGeneral('Lee Late');
    const id = await sendToGeneral('before anyone looked');
    await prisma().userPresence.create({
      data: {
        userId: late.id,
        realmId: org.realm.id,
        lastActiveTime: new Date(),
        lastConnectedTime: new Date(),
      },
    });
    expectSuccess(
      await as(late, org.host, { atOnce: true }).post('/register', {
        event_types: JSON.stringify(['message']),
      }),
    );
    const job = await edit(id, 'before anyone looked, @**Lee Late**');
    expect(job?.userIds).toEqual([late.id]);
    expect(await notifyAddedMentions(job!)).toEqual({ pushed: 0, emailed: 0 });
    expect(await waiting(late)).toEqual([]);
    // Set aside, for when that client goes.
    const key = keys.setAside(shardOf(late.id, getConfig().EVENT_SHARDS), 'email', late.id);
    expect(await getRedis().zscore(key, id)).not.toBeNull();
  });

  it('@topic reaches those who posted in the topic, as on send', async () => {
    const poster = await joinGeneral('Pete Poster');
    const lurker = await joinGeneral('Lucy Lurker');
    await sendToGeneral('first!', 'participants', poster);
    const id = await sendToGeneral('a question', 'participants');
    const job = await edit(id, 'a question, @**topic**');
    expect(job?.userIds).toContain(poster.id);
    expect(job?.userIds).not.toContain(lurker.id);
    const flags = await prisma().userMessage.findMany({
      where: { messageId: id, userId: { in: [poster.id, lurker.id] } },
    });
    const topicWildcard = (userId: number) =>
      (flags.find((row) => row.userId === userId)!.flags & flagBit('topic_wildcard_mentioned')) !==
      0n;
    expect(topicWildcard(poster.id)).toBe(true);
    expect(topicWildcard(lurker.id)).toBe(false);
  });

  it('not those who follow the topic (notified of it anyway)', async () => {
    const follower = await joinGeneral('Fay Follower');
    expectSuccess(
      await as(follower, org.host).post('/users/me/android_gcm_reg_id', { token: 'fay-token' }),
    );
    expectSuccess(
      await as(follower, org.host).post('/user_topics', {
        stream_id: org.general.id,
        topic: 'followed',
        visibility_policy: 3,
      }),
    );
    const id = await sendToGeneral('news', 'followed');
    const job = await edit(id, 'news for @**Fay Follower**');
    expect(job?.userIds).toEqual([follower.id]);
    expect(await notifyAddedMentions(job!)).toEqual({ pushed: 0, emailed: 0 });
  });

  it('not those the message notified anyway, nor for direct messages, nor muters', async () => {
    const loud = await joinGeneral('Lou Loud');
    expectSuccess(
      await as(loud, org.host).post('/users/me/subscriptions/properties', {
        subscription_data: JSON.stringify([
          { stream_id: org.general.id, property: 'email_notifications', value: true },
        ]),
      }),
    );
    const muter = await joinGeneral('Mo Muter');
    expectSuccess(await as(muter, org.host).post(`/users/me/muted_users/${org.owner.id}`));
    const id = await sendToGeneral('plain');
    const job = await edit(id, '@**Lou Loud** @**Mo Muter**');
    expect(job?.userIds).toEqual(expect.arrayContaining([loud.id, muter.id]));
    // Lou had the channel's emails of it; Mo muted the sender.
    expect(await notifyAddedMentions(job!)).toEqual({ pushed: 0, emailed: 0 });
    expect(await waiting(loud)).toEqual([]);
    expect(await waiting(muter)).toEqual([]);

    const dm = expectSuccess(
      await send(org.owner, org.host, {
        type: 'direct',
        to: JSON.stringify([org.member.id, org.other.id]),
        content: 'hi',
      }),
    ).id as number;
    expect(await edit(dm, 'hi @**Mia Member**')).toBeUndefined();
  });
});
