// Missed-message emails (docs/email-notifications.md; Zulip's maybe_enqueue_notifications,
// get_email_notification_trigger and handle_missedmessage_emails): who of a message's
// recipients may be emailed, who is idle, the batching period, and the emails themselves.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import PostalMime from 'postal-mime';
import request from 'supertest';
import { getConfig, resetConfig } from '@parley/config';
import { afterAnswerSettled, getPrisma, Role, type User } from '@parley/db';
import { getRedis } from '@parley/events';
import {
  eventsRouter,
  lastQueueGoneJobId,
  startEventsService,
  type EventsService,
} from '@parley/events-app';
import { closeQueues } from '@parley/jobs';
import { doReceiveEmail } from '../src/actions/email-gateway';
import { sendBotDirectMessage } from '../src/actions/system-bots';
import {
  emailAfterLastQueueGone,
  scheduleEmailNotifications,
  sendMissedMessageEmails,
} from '../src/actions/email-notifications';
import { pushAfterLastQueueGone, sendPushNotifications } from '../src/actions/push-notifications';
import { createApp } from '../src/app';
import { as, createTestUser, expectSuccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();
let mailQueue: Queue;
let mailDir: string;
let org: MessageOrg;

beforeAll(async () => {
  process.env.EMAIL_BACKEND = 'directory';
  mailDir = mkdtempSync(join(tmpdir(), 'parley-missed-'));
  process.env.EMAIL_DIR = mailDir;
  resetConfig();
  mailQueue = new Queue('mail', { connection: { url: getConfig().REDIS_URL } });
  org = await createMessageOrg();
});

afterAll(async () => {
  await mailQueue.close();
  await closeQueues();
  rmSync(mailDir, { recursive: true, force: true });
});

/** The candidates the send path queued for a message, or undefined when it queued no job. */
async function candidatesOf(messageId: number): Promise<number[] | undefined> {
  const job = await mailQueue.getJob(`email-notifications-${messageId}`);
  return (job?.data as { userIds: number[] } | undefined)?.userIds;
}

async function sent(sender: User, form: Record<string, unknown>): Promise<number> {
  const id = expectSuccess(await send(sender, org.host, form)).id as number;
  // The job is queued once the answer is written.
  await afterAnswerSettled();
  return id;
}

/** Sends, then runs the send's job as the worker would; returns the message's id. */
async function sendAndSchedule(sender: User, form: Record<string, unknown>): Promise<number> {
  const id = await sent(sender, form);
  const userIds = await candidatesOf(id);
  if (userIds) await scheduleEmailNotifications({ messageId: id, userIds });
  return id;
}

const waiting = (user: User) =>
  prisma().scheduledMessageNotificationEmail.findMany({
    where: { userId: user.id },
    orderBy: { id: 'asc' },
  });

async function joinGeneral(user: User): Promise<void> {
  expectSuccess(
    await as(user, org.host).post('/users/me/subscriptions', {
      subscriptions: JSON.stringify([{ name: 'general' }]),
    }),
  );
}

/** A direct message from `sender` to `to`, scheduled as the worker would; returns its id. */
function dmAndSchedule(sender: User, to: User[], content: string): Promise<number> {
  return sendAndSchedule(sender, {
    type: 'direct',
    to: JSON.stringify(to.map((user) => user.id)),
    content,
  });
}

/** Makes the user's waiting rows due now, then runs their job. */
async function mailNow(user: User): Promise<number> {
  await prisma().scheduledMessageNotificationEmail.updateMany({
    where: { userId: user.id },
    data: { scheduledTimestamp: new Date(Date.now() - 1000) },
  });
  return sendMissedMessageEmails({ userId: user.id });
}

/** The emails written so far to `to`, parsed, oldest first; each file is read once. */
const seen = new Set<string>();
async function mailsTo(to: string): Promise<PostalMime.Email[]> {
  const mails: PostalMime.Email[] = [];
  for (const file of readdirSync(mailDir).sort()) {
    if (seen.has(file)) continue;
    const mail = await PostalMime.parse(readFileSync(join(mailDir, file)));
    if (mail.to?.some((address) => address.address === to)) {
      seen.add(file);
      mails.push(mail);
    }
  }
  return mails;
}

async function newMember(fullName: string): Promise<User> {
  return createTestUser(org.realm, Role.MEMBER, { fullName });
}

describe('who may be emailed', () => {
  it('a direct message names its human recipients; a channel message only those it mentions', async () => {
    const dm = await sent(org.owner, {
      type: 'direct',
      to: JSON.stringify([org.member.id]),
      content: 'hello',
    });
    expect(await candidatesOf(dm)).toEqual([org.member.id]);
    const plain = await sent(org.owner, {
      type: 'stream',
      to: 'general',
      topic: 'plain',
      content: 'nobody in particular',
    });
    expect(await candidatesOf(plain)).toBeUndefined();
    const mention = await sent(org.owner, {
      type: 'stream',
      to: 'general',
      topic: 'plain',
      content: '@**Mia Member** look',
    });
    expect(await candidatesOf(mention)).toEqual([org.member.id]);
  });

  it('a channel message names the topic followers and those who asked for its emails', async () => {
    const follower = await newMember('Fay Follower');
    const subscriber = await newMember('Sue Subscriber');
    const byDefault = await newMember('Dee Default');
    for (const user of [follower, subscriber, byDefault]) await joinGeneral(user);
    expectSuccess(
      await as(follower, org.host).post('/user_topics', {
        stream_id: org.general.id,
        topic: 'Followed',
        visibility_policy: 3,
      }),
    );
    expectSuccess(
      await as(subscriber, org.host).post('/users/me/subscriptions/properties', {
        subscription_data: JSON.stringify([
          { stream_id: org.general.id, property: 'email_notifications', value: true },
        ]),
      }),
    );
    expectSuccess(
      await as(byDefault, org.host).patch('/settings', {
        enable_stream_email_notifications: true,
      }),
    );
    const id = await sent(org.owner, {
      type: 'stream',
      to: 'general',
      topic: 'followed',
      content: 'x',
    });
    expect((await candidatesOf(id))?.sort((a, b) => a - b)).toEqual(
      [follower.id, subscriber.id, byDefault.id].sort((a, b) => a - b),
    );
    await scheduleEmailNotifications({ messageId: id, userIds: (await candidatesOf(id))! });
    expect((await waiting(follower)).map((row) => row.trigger)).toEqual([
      'followed_topic_email_notify',
    ]);
    expect((await waiting(subscriber)).map((row) => row.trigger)).toEqual(['stream_email_notify']);
    expect((await waiting(byDefault)).map((row) => row.trigger)).toEqual(['stream_email_notify']);
    // Muting the topic silences the channel's emails, not the followed ones (a muted topic
    // cannot be followed at once: the policy is one value).
    expectSuccess(
      await as(subscriber, org.host).post('/user_topics', {
        stream_id: org.general.id,
        topic: 'muted one',
        visibility_policy: 1,
      }),
    );
    const muted = await sendAndSchedule(org.owner, {
      type: 'stream',
      to: 'general',
      topic: 'muted one',
      content: 'y',
    });
    expect((await waiting(subscriber)).map((row) => row.messageId)).not.toContain(muted);
    expect(await mailNow(follower)).toBe(1);
    const [mail] = await mailsTo(follower.deliveryEmail);
    expect(mail!.subject).toBe('#general > followed');
    expect(mail!.text).toContain('you have email notifications enabled for topics you follow');
  });

  it("the Welcome Bot's messages email and notify nobody; other bots' do", async () => {
    const newcomer = await newMember('Nia Newcomer');
    const welcome = await sendBotDirectMessage(org.realm, 'welcome', newcomer, 'Welcome!');
    const notice = await sendBotDirectMessage(org.realm, 'notification', newcomer, 'A notice');
    await afterAnswerSettled();
    expect(await candidatesOf(welcome)).toBeUndefined();
    expect(await candidatesOf(notice)).toEqual([newcomer.id]);
  });

  it('never the sender, bots, or those who muted the sender', async () => {
    const muter = await newMember('Mo Muter');
    expectSuccess(await as(muter, org.host).post(`/users/me/muted_users/${org.owner.id}`, {}));
    const bot = expectSuccess(
      await as(org.owner, org.host).post('/bots', {
        full_name: 'Some Bot',
        short_name: `b${Date.now()}`,
        bot_type: 1,
      }),
    ).user_id as number;
    const id = await sent(org.owner, {
      type: 'direct',
      to: JSON.stringify([muter.id, bot, org.member.id]),
      content: 'to all three',
    });
    expect(await candidatesOf(id)).toEqual([org.member.id]);
  });
});

describe('idle users only, by their settings', () => {
  it('a user with a client open and active is not emailed; without a client, or inactive, is', async () => {
    const present = await newMember('Pat Present');
    const closed = await newMember('Cal Closed');
    const away = await newMember('Al Away');
    const now = new Date();
    const old = new Date(Date.now() - 10 * 60_000);
    for (const [user, lastActiveTime] of [
      [present, now],
      [closed, now],
      [away, old],
    ] as const)
      await prisma().userPresence.create({
        data: { userId: user.id, realmId: org.realm.id, lastActiveTime, lastConnectedTime: now },
      });
    for (const user of [present, away])
      expectSuccess(
        await as(user, org.host, { atOnce: true }).post('/register', {
          event_types: JSON.stringify(['message']),
        }),
      );
    // A queue that takes no messages is not a client open for them (Zulip's accepts_messages).
    expectSuccess(
      await as(closed, org.host, { atOnce: true }).post('/register', {
        event_types: JSON.stringify(['presence']),
      }),
    );
    for (const user of [present, closed, away]) await dmAndSchedule(org.owner, [user], 'hi');
    expect(await waiting(present)).toEqual([]);
    expect((await waiting(closed)).map((row) => row.trigger)).toEqual(['direct_message']);
    expect((await waiting(away)).map((row) => row.trigger)).toEqual(['direct_message']);
  });

  it('respects enable_offline_email_notifications, and waits the batching period', async () => {
    const quiet = await newMember('Quinn Quiet');
    expectSuccess(
      await as(quiet, org.host).patch('/settings', { enable_offline_email_notifications: false }),
    );
    await dmAndSchedule(org.owner, [quiet], 'a');
    expect(await waiting(quiet)).toEqual([]);

    const patient = await newMember('Pia Patient');
    expectSuccess(
      await as(patient, org.host).patch('/settings', {
        email_notifications_batching_period_seconds: 600,
      }),
    );
    const before = Date.now();
    await dmAndSchedule(org.owner, [patient], 'b');
    const [row] = await waiting(patient);
    expect(row!.scheduledTimestamp.getTime()).toBeGreaterThanOrEqual(before + 599_000);
    const job = await mailQueue.getJob(
      `missed-message-email-${patient.id}-${row!.scheduledTimestamp.getTime()}`,
    );
    expect(job?.data).toEqual({ userId: patient.id });
    expect(job?.opts.delay).toBeGreaterThan(590_000);
    // Not due yet: nothing is mailed, the row stays, and the job is queued again for its time
    // (it does not wait in the worker).
    expect(await sendMissedMessageEmails({ userId: patient.id })).toBe(0);
    expect(await waiting(patient)).toHaveLength(1);
    const again = (await mailQueue.getDelayed()).filter(
      (queued) =>
        queued.id?.startsWith(`missed-message-email-${patient.id}-`) &&
        queued.id.endsWith('-again'),
    );
    expect(again).toHaveLength(1);
    expect(again[0]!.opts.delay).toBeGreaterThan(590_000);
    // Scheduling again (a retried job) adds nothing.
    const messageId = row!.messageId;
    await scheduleEmailNotifications({ messageId, userIds: [patient.id] });
    expect(await waiting(patient)).toHaveLength(1);
    // A later message joins the waiting batch: same time, same job.
    await dmAndSchedule(org.member, [patient], 'later');
    const rows = await waiting(patient);
    expect(rows).toHaveLength(2);
    expect(rows[1]!.scheduledTimestamp).toEqual(row!.scheduledTimestamp);
    expect(await mailNow(patient)).toBe(2);
    expect(await waiting(patient)).toEqual([]);
  });
});

describe('when the last client goes (Zulip’s missedmessage_hook)', () => {
  let service: EventsService;
  let eventsApp: ReturnType<typeof createApp>;
  beforeAll(async () => {
    // A real events tier in this process: message events reach the queues, and its garbage
    // collector runs often.
    service = await startEventsService({ gcIntervalMs: 50 });
    eventsApp = createApp({ mount: [eventsRouter(service)] });
  });
  afterAll(() => service.stop());

  /** A client open (a queue taking messages) of a user active just now. */
  async function openClient(user: User, lastActiveTime = new Date()): Promise<string> {
    await prisma().userPresence.create({
      data: {
        userId: user.id,
        realmId: org.realm.id,
        lastActiveTime,
        lastConnectedTime: new Date(),
      },
    });
    const body = expectSuccess(
      await as(user, org.host, { atOnce: true }).post('/register', {
        event_types: JSON.stringify(['message']),
      }),
    );
    return body.queue_id as string;
  }

  /** The message ids of the message events in the queue, polled without acknowledging. */
  async function queuedMessages(user: User, queueId: string): Promise<number[]> {
    const { body } = await request(eventsApp)
      .get('/api/v1/events')
      .set('Host', org.host)
      .auth(user.deliveryEmail, user.apiKey)
      .query({ queue_id: queueId, last_event_id: -1, dont_block: true });
    return (body.events as { type: string; message?: { id: number } }[])
      .filter((event) => event.type === 'message')
      .map((event) => event.message!.id);
  }

  async function waitForQueued(user: User, queueId: string, messageId: number): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      if ((await queuedMessages(user, queueId)).includes(messageId)) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`message ${messageId} never reached queue ${queueId}`);
  }

  async function closeClient(user: User, queueId: string): Promise<void> {
    expectSuccess(
      await request(eventsApp)
        .delete('/api/v1/events')
        .set('Host', org.host)
        .auth(user.deliveryEmail, user.apiKey)
        .type('form')
        .send({ queue_id: queueId }),
    );
  }

  /** The job the queue's removal queued, if any. */
  const goneJob = async (queueId: string) =>
    (await mailQueue.getJob(lastQueueGoneJobId(queueId)))?.data as
      { userId: number; messageIds: number[] } | undefined;

  it('emails a message not emailed because a client was open, once that client leaves it unread', async () => {
    const leaver = await newMember('Len Leaves');
    const queueId = await openClient(leaver);
    const id = await dmAndSchedule(org.owner, [leaver], 'are you there?');
    // A client open and active: not emailed when it arrived.
    expect(await waiting(leaver)).toEqual([]);
    await waitForQueued(leaver, queueId, id);
    await closeClient(leaver, queueId);
    const job = await goneJob(queueId);
    expect(job).toEqual({ userId: leaver.id, messageIds: [id] });
    expect(await emailAfterLastQueueGone(job!)).toBe(1);
    expect((await waiting(leaver)).map((row) => [row.messageId, row.trigger])).toEqual([
      [id, 'direct_message'],
    ]);
    expect(await mailNow(leaver)).toBe(1);
    expect((await mailsTo(leaver.deliveryEmail))[0]!.text).toContain('are you there?');
    // Run again (a retried job): the message is no longer set aside.
    expect(await emailAfterLastQueueGone(job!)).toBe(0);
    expect(await waiting(leaver)).toEqual([]);
  });

  it('not while another client stays, nor for what was read, nor twice, nor for the Welcome Bot', async () => {
    const twoTabs = await newMember('Tia Twotabs');
    const first = await openClient(twoTabs);
    const second = (
      expectSuccess(
        await as(twoTabs, org.host, { atOnce: true }).post('/register', {
          event_types: JSON.stringify(['message']),
        }),
      ) as { queue_id: string }
    ).queue_id;
    const unread = await dmAndSchedule(org.owner, [twoTabs], 'unread');
    const read = await dmAndSchedule(org.owner, [twoTabs], 'read');
    const welcome = await sendBotDirectMessage(org.realm, 'welcome', twoTabs, 'Welcome!');
    await afterAnswerSettled();
    await waitForQueued(twoTabs, second, welcome);
    // The other tab stays open: nothing.
    await closeClient(twoTabs, first);
    expect(await goneJob(first)).toBeUndefined();
    // Read meanwhile: its copy's flag says so when the last one goes.
    expectSuccess(
      await as(twoTabs, org.host).post('/messages/flags', {
        messages: JSON.stringify([read]),
        op: 'add',
        flag: 'read',
      }),
    );
    await closeClient(twoTabs, second);
    // The Welcome Bot's message was never a candidate, so never set aside: not reported.
    const job = await goneJob(second);
    expect(job?.messageIds.sort((a, b) => a - b)).toEqual([unread, read]);
    // The one read meanwhile is not emailed.
    expect(await emailAfterLastQueueGone(job!)).toBe(1);
    expect((await waiting(twoTabs)).map((row) => row.messageId)).toEqual([unread]);

    // Emailed when it arrived (a client open but idle): not set aside, not emailed again.
    const idle = await newMember('Ida Idle');
    const queueId = await openClient(idle, new Date(Date.now() - 10 * 60_000));
    const id = await dmAndSchedule(org.owner, [idle], 'emailed at once');
    expect((await waiting(idle)).map((row) => row.messageId)).toEqual([id]);
    await waitForQueued(idle, queueId, id);
    expect(await mailNow(idle)).toBe(1);
    await closeClient(idle, queueId);
    expect(await goneJob(queueId)).toBeUndefined();
  });

  it('pushes wait too, for those who turned enable_online_push_notifications off', async () => {
    const pushQueue = new Queue('push', { connection: { url: getConfig().REDIS_URL } });
    try {
      const quiet = await newMember('Quincy Quietphone');
      const loud = await newMember('Lola Loudphone');
      for (const [user, token] of [
        [quiet, 'quiet-token'],
        [loud, 'loud-token'],
      ] as const)
        expectSuccess(await as(user, org.host).post('/users/me/android_gcm_reg_id', { token }));
      expectSuccess(
        await as(quiet, org.host).patch('/settings', { enable_online_push_notifications: false }),
      );
      const quietQueue = await openClient(quiet);
      await openClient(loud);
      const id = await sent(org.owner, {
        type: 'direct',
        to: JSON.stringify([quiet.id, loud.id]),
        content: 'both of you',
      });
      const job = await pushQueue.getJob(`push-notifications-${id}`);
      expect(job?.data.recipients.map((r: { userId: number }) => r.userId).sort()).toEqual(
        [quiet.id, loud.id].sort(),
      );
      // Both present: Lola takes pushes while online (Zulip's default), Quincy does not.
      expect(await sendPushNotifications(job!.data)).toBe(1);
      const pushedTo = async () =>
        (await prisma().pushNotificationLog.findMany({ where: { messageId: id } })).map(
          (row) => row.userId,
        );
      expect(await pushedTo()).toEqual([loud.id]);
      await waitForQueued(quiet, quietQueue, id);
      await closeClient(quiet, quietQueue);
      const gone = (await goneJob(quietQueue))!;
      expect(await pushAfterLastQueueGone(gone.userId, gone.messageIds)).toBe(1);
      const later = (await pushQueue.getJobs(['waiting', 'delayed', 'prioritized'])).find(
        (queued) => queued.id?.startsWith(`push-notifications-${id}-for-${quiet.id}-`),
      );
      // Idle by then: the job does not look at Quincy's clients again.
      expect(later?.data).toEqual({
        messageId: id,
        recipients: [{ userId: quiet.id, trigger: 'direct_message' }],
        clientsGone: true,
      });
      expect(await sendPushNotifications(later!.data)).toBe(1);
      expect((await pushedTo()).sort()).toEqual([quiet.id, loud.id].sort());
      // No longer set aside: a retried job pushes nothing more.
      expect(await pushAfterLastQueueGone(gone.userId, gone.messageIds)).toBe(0);
    } finally {
      await pushQueue.close();
    }
  });

  it('a queue that expires is the same as one deleted', async () => {
    const gone = await newMember('Gus Gone');
    const queueId = await openClient(gone);
    const id = await dmAndSchedule(org.owner, [gone], 'laptop closed');
    await waitForQueued(gone, queueId, id);
    const meta = (await service.store.meta(queueId))!;
    await service.store.touch(meta, 1);
    for (let attempt = 0; attempt < 200 && !(await goneJob(queueId)); attempt++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await goneJob(queueId)).toEqual({ userId: gone.id, messageIds: [id] });
  });
});

describe('replies by email (with a gateway)', () => {
  beforeAll(() => {
    process.env.EMAIL_GATEWAY_PATTERN = '%s@mail.example.test';
    resetConfig();
  });
  afterAll(() => {
    delete process.env.EMAIL_GATEWAY_PATTERN;
    resetConfig();
  });

  const reply = (to: string, body: string) =>
    doReceiveEmail(
      to,
      `From: someone@example.com\r\nTo: ${to}\r\nSubject: Re: whatever\r\n\r\n${body}\r\n`,
    );

  it('a reply posts to the conversation as the user: the sender of a DM, a channel topic', async () => {
    const replier = await newMember('Ray Replier');
    await joinGeneral(replier);
    await dmAndSchedule(org.member, [replier], 'ping');
    await sendAndSchedule(org.owner, {
      type: 'stream',
      to: 'general',
      topic: 'Replies',
      content: '@**Ray Replier** what do you think?',
    });
    expect(await mailNow(replier)).toBe(2);
    const mails = await mailsTo(replier.deliveryEmail);
    const dm = mails.find((m) => m.subject === 'DMs with Mia Member')!;
    const mention = mails.find((m) => m.subject === '#general > Replies')!;
    for (const mail of [dm, mention]) {
      expect(mail.replyTo?.[0]?.address).toMatch(/^mm[0-9a-f]{32}@mail\.example\.test$/);
      expect(mail.text).toContain('Reply to this email directly, or view it in');
      expect(mail.text).not.toContain('Do not reply');
    }

    const posted = await reply(dm.replyTo![0]!.address!, 'pong');
    expect(posted.channelId).toBeNull();
    const answer = await prisma().message.findUniqueOrThrow({
      where: { id: posted.messageId },
      include: { recipient: true },
    });
    expect(answer).toMatchObject({ senderId: replier.id, content: 'pong' });
    expect(answer.recipient.typeId).toBe(org.member.id);

    const inChannel = await reply(mention.replyTo![0]!.address!, 'I agree\n\n-- \nRay');
    expect(inChannel).toMatchObject({ channelId: org.general.id, topic: 'Replies' });
    expect(
      await prisma().message.findUniqueOrThrow({ where: { id: inChannel.messageId } }),
    ).toMatchObject({ senderId: replier.id, content: 'I agree', subject: 'Replies' });
  });

  it('an unknown token is refused, and a refused send returns the mail', async () => {
    await expect(reply(`mm${'0'.repeat(32)}@mail.example.test`, 'hi')).rejects.toThrow(
      'Zulip notification reply address is invalid.',
    );
    const leaver = await newMember('Lou Leaves');
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: JSON.stringify([{ name: 'secret' }]),
        principals: JSON.stringify([leaver.id]),
      }),
    );
    await sendAndSchedule(org.member, {
      type: 'stream',
      to: 'secret',
      topic: 'plans',
      content: '@**Lou Leaves** ok?',
    });
    expect(await mailNow(leaver)).toBe(1);
    const [mail] = await mailsTo(leaver.deliveryEmail);
    expectSuccess(
      await as(leaver, org.host)
        .delete('/users/me/subscriptions')
        .query({
          subscriptions: JSON.stringify(['secret']),
        }),
    );
    await expect(reply(mail!.replyTo![0]!.address!, 'late')).rejects.toThrow(
      "Not authorized to send to channel 'secret'",
    );
  });
});

describe('the emails', () => {
  it('one per conversation, messages still unread only, then the rows are gone', async () => {
    const reader = await newMember('Rae Reader');
    await joinGeneral(reader);
    await dmAndSchedule(org.owner, [reader], 'first **bold** [link](/user_uploads/1/a.txt)');
    await dmAndSchedule(org.member, [reader], 'from Mia');
    const readLater = await dmAndSchedule(org.owner, [reader], 'read before mailing');
    await sendAndSchedule(org.owner, {
      type: 'stream',
      to: 'general',
      topic: 'Mentions',
      content: '@**Rae Reader** in a channel',
    });
    expectSuccess(
      await as(reader, org.host).post('/messages/flags', {
        messages: JSON.stringify([readLater]),
        op: 'add',
        flag: 'read',
      }),
    );
    expect(await waiting(reader)).toHaveLength(4);
    expect(await mailNow(reader)).toBe(3);
    expect(await waiting(reader)).toEqual([]);
    const mails = await mailsTo(reader.deliveryEmail);
    expect(mails.map((mail) => mail.subject).sort()).toEqual([
      '#general > Mentions',
      'DMs with Mia Member',
      'DMs with Olivia Owner',
    ]);
    const fromOwner = mails.find((mail) => mail.subject === 'DMs with Olivia Owner')!;
    expect(fromOwner.from?.name).toBe(`${org.realm.name} notifications`);
    expect(fromOwner.text).toContain(`> first **bold** http://${org.host}/user_uploads/1/a.txt`);
    expect(fromOwner.text).not.toContain('read before mailing');
    // Links into the organization are absolute in a mail.
    expect(fromOwner.html).toContain(`href="http://${org.host}/user_uploads/1/a.txt"`);
    expect(fromOwner.text).toContain(`http://${org.host}/#narrow/dm/${org.owner.id}-dm`);
    const mention = mails.find((mail) => mail.subject === '#general > Mentions')!;
    expect(mention.text).toContain('because you were personally mentioned');
    // Nothing left to mail.
    expect(await mailNow(reader)).toBe(0);
  });

  it('group conversations, group mentions, and content left out when the user asks', async () => {
    const one = await newMember('Una One');
    const two = await newMember('Tom Two');
    await dmAndSchedule(org.owner, [one, two], 'to the three of us');
    expect(await mailNow(one)).toBe(1);
    const [group] = await mailsTo(one.deliveryEmail);
    expect(group!.subject).toBe('Group DMs with Olivia Owner and Tom Two');

    const team = expectSuccess(
      await as(org.owner, org.host).post('/user_groups/create', {
        name: `team${Date.now()}`,
        description: '',
        members: JSON.stringify([two.id]),
      }),
    ).group_id as number;
    const teamName = (await prisma().userGroup.findUniqueOrThrow({ where: { id: team } })).name!;
    await joinGeneral(two);
    await sendAndSchedule(org.owner, {
      type: 'stream',
      to: 'general',
      topic: 'groups',
      content: `@*${teamName}* please`,
    });
    expect((await waiting(two)).map((row) => row.mentionedUserGroupId)).toContain(team);
    expect(await mailNow(two)).toBeGreaterThanOrEqual(1);
    const teamMail = (await mailsTo(two.deliveryEmail)).find(
      (m) => m.subject === '#general > groups',
    )!;
    expect(teamMail.text).toContain(`because @${teamName} was mentioned`);

    expectSuccess(
      await as(one, org.host).patch('/settings', { message_content_in_email_notifications: false }),
    );
    await dmAndSchedule(org.owner, [one], 'secret words');
    expect(await mailNow(one)).toBe(1);
    const [hidden] = await mailsTo(one.deliveryEmail);
    expect(hidden!.subject).toBe('New messages');
    expect(hidden!.text).not.toContain('secret words');
    expect(hidden!.text).toContain('does not include message content');
  });

  it('nothing from a channel the user can no longer read; the organization named when asked', async () => {
    const leaver = await newMember('Lee Leaver');
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: JSON.stringify([{ name: 'secret' }]),
        principals: JSON.stringify([leaver.id]),
      }),
    );
    await sendAndSchedule(org.member, {
      type: 'stream',
      to: 'secret',
      topic: 'hush',
      content: '@**Lee Leaver** private words',
    });
    expect(await waiting(leaver)).toHaveLength(1);
    expectSuccess(
      await as(leaver, org.host)
        .delete('/users/me/subscriptions')
        .query({
          subscriptions: JSON.stringify(['secret']),
        }),
    );
    expect(await mailNow(leaver)).toBe(0);
    expect(await waiting(leaver)).toEqual([]);
    expect(await mailsTo(leaver.deliveryEmail)).toEqual([]);

    expectSuccess(
      await as(leaver, org.host).patch('/settings', {
        realm_name_in_email_notifications_policy: 2,
      }),
    );
    await dmAndSchedule(org.owner, [leaver], 'c');
    expect(await mailNow(leaver)).toBe(1);
    const [named] = await mailsTo(leaver.deliveryEmail);
    expect(named!.subject).toBe(`DMs with Olivia Owner [${org.realm.name}]`);
  });

  it("a mention's email shows the topic's ten earlier messages of the last 15 minutes it may", async () => {
    const reader = await newMember('Cora Context');
    await joinGeneral(reader);
    const topic = `context${Date.now()}`;
    const channelMessage = (sender: User, content: string, to = 'general', subject = topic) =>
      sent(sender, { type: 'stream', to, topic: subject, content });
    const stale = await channelMessage(org.member, 'stale words');
    // Sent more than 15 minutes before the mention: too old to be its context.
    await prisma().message.update({
      where: { id: stale },
      data: { dateSent: new Date(Date.now() - 16 * 60_000) },
    });
    for (let n = 1; n <= 12; n += 1) await channelMessage(org.member, `early ${n}.`);
    await channelMessage(org.member, 'elsewhere words', 'general', `${topic} other`);
    // The topic compared as Zulip compares it: whatever its case.
    await channelMessage(org.member, 'cased 13.', 'general', topic.toUpperCase());
    await sendAndSchedule(org.owner, {
      type: 'stream',
      to: 'general',
      topic,
      content: '@**Cora Context** look',
    });
    expect(await mailNow(reader)).toBe(1);
    const [mail] = await mailsTo(reader.deliveryEmail);
    const shown = [...mail!.text!.matchAll(/(early|cased) (\d+)\./g)].map((m) => Number(m[2]));
    expect(shown).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(mail!.text).toContain('look');
    expect(mail!.text).not.toContain('stale words');
    expect(mail!.text).not.toContain('elsewhere words');
    expect(mail!.html).toContain('early 12.');
    // The context is shown, not mailed: the mention alone was waiting, and the sender of the
    // context is named before their run of messages.
    expect(mail!.text).toContain('Mia Member:');
    expect(mail!.text).toContain('because you were personally mentioned');
    expect(await waiting(reader)).toEqual([]);

    // No mention, no context (Zulip: the channel's own emails).
    expectSuccess(
      await as(reader, org.host).patch('/settings', { enable_stream_email_notifications: true }),
    );
    await channelMessage(org.member, 'before plain.', 'general', `${topic} plain`);
    await sendAndSchedule(org.owner, {
      type: 'stream',
      to: 'general',
      topic: `${topic} plain`,
      content: 'plain news',
    });
    expect(await mailNow(reader)).toBe(1);
    const [plain] = await mailsTo(reader.deliveryEmail);
    expect(plain!.text).toContain('plain news');
    expect(plain!.text).not.toContain('before plain.');
    expectSuccess(
      await as(reader, org.host).patch('/settings', { enable_stream_email_notifications: false }),
    );

    // A channel that keeps its history from new subscribers: only what the user received.
    const vault = `vault${Date.now()}`;
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: JSON.stringify([{ name: vault }]),
        invite_only: true,
        history_public_to_subscribers: false,
      }),
    );
    await channelMessage(org.owner, 'before you came.', vault, 'vaulted');
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: JSON.stringify([{ name: vault }]),
        principals: JSON.stringify([reader.id]),
      }),
    );
    await channelMessage(org.owner, 'after you came.', vault, 'vaulted');
    await sendAndSchedule(org.owner, {
      type: 'stream',
      to: vault,
      topic: 'vaulted',
      content: '@**Cora Context** in the vault',
    });
    expect(await mailNow(reader)).toBe(1);
    const [vaulted] = await mailsTo(reader.deliveryEmail);
    expect(vaulted!.text).toContain('after you came.');
    expect(vaulted!.text).not.toContain('before you came.');
  });

  it('one job mails a user at a time', async () => {
    const busy = await newMember('Bo Busy');
    await dmAndSchedule(org.owner, [busy], 'd');
    await getRedis().set(`missed-message-email:lock:${busy.id}`, 'another job', 'PX', 60_000);
    await prisma().scheduledMessageNotificationEmail.updateMany({
      where: { userId: busy.id },
      data: { scheduledTimestamp: new Date(Date.now() - 1000) },
    });
    await expect(sendMissedMessageEmails({ userId: busy.id })).rejects.toThrow(/another job/);
    expect(await waiting(busy)).toHaveLength(1);
    await getRedis().del(`missed-message-email:lock:${busy.id}`);
    expect(await sendMissedMessageEmails({ userId: busy.id })).toBe(1);
  });
});
