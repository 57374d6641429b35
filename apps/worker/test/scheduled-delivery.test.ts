// Delivery of scheduled messages and reminders by a real BullMQ worker
// (docs/scheduled-messages.md): at (never before) their time, exactly once however many times
// the job runs; a deletion cancels, an edit re-schedules; a message that can no longer be sent
// is kept as failed and the user told; and, with the worker and an API replica killed in
// between, every message still goes out once.
import type { ChildProcess } from 'node:child_process';
import { getPrisma, Role, type Message, type User } from '@parley/db';
import {
  freePort,
  requestJson,
  spawnReplica,
  waitForReady,
  type JsonAnswer,
} from '@parley/devservices';
import { getRedis } from '@parley/events';
import { closeQueues, queueFor, type JobWorkers } from '@parley/jobs';
import {
  deliverScheduledMessage,
  requeueScheduledMessages,
} from '@parley/api/actions/scheduled-messages';
import { welcomeBotReply } from '@parley/api/actions/onboarding';
import { ensureSystemBot } from '@parley/api/actions/system-bots';
import { as, captureEvents, createTestUser, expectSuccess } from '../../api/test/helpers';
import { createMessageOrg, send, type MessageOrg } from '../../api/test/message-helpers';
import { startWorkers } from '../src/jobs';
import { until } from '../../api/test/until';

const prisma = () => getPrisma();
let org: MessageOrg;
let user: User;
let workers: JobWorkers | null = null;
let serial = 0;

beforeAll(async () => {
  org = await createMessageOrg();
  // No sweep here: each test decides what is queued.
  workers = startWorkers({ concurrency: 2, sweepIntervalMs: 0 });
  await workers.ready();
});

afterAll(async () => {
  await workers?.close();
  await closeQueues();
});

beforeEach(async () => {
  user = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Sam Scheduler' });
  expectSuccess(
    await as(org.owner, org.host).post('/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }],
      principals: [user.id],
    }),
  );
});

/** `seconds` from now, in whole seconds (the API's unit). */
const inSeconds = (seconds: number) => Math.floor(Date.now() / 1000) + seconds;

/** A content no other test sends. */
const unique = (text: string) => `${text} #${process.pid}-${(serial += 1)}-${Date.now()}`;

const messagesWith = (content: string): Promise<Message[]> =>
  prisma().message.findMany({ where: { realmId: org.realm.id, content } });

const rowOf = (id: number) => prisma().scheduledMessage.findUniqueOrThrow({ where: { id } });

async function scheduleChannel(content: string, at: number, who: User = user, to = org.general.id) {
  return expectSuccess(
    await as(who, org.host).post('/scheduled_messages', {
      type: 'stream',
      to,
      topic: 'later',
      content,
      scheduled_delivery_timestamp: at,
    }),
  ).scheduled_message_id as number;
}

/** BullMQ's keys for the `scheduled` queue (its default prefix). */
const jobKey = (id: number, version: number) => `scheduled-message-${id}-${version}`;
const jobKnown = async (id: number, version: number) =>
  (await getRedis().exists(`bull:scheduled:${jobKey(id, version)}`)) === 1;
const jobCompleted = async (id: number, version: number) =>
  (await getRedis().zscore('bull:scheduled:completed', jobKey(id, version))) !== null;

/** A scheduled message committed without its delivery job (as when the process died between
 * COMMIT and Redis). */
const committedButNotQueued = (content: string, at: number) =>
  prisma().scheduledMessage.create({
    data: {
      realmId: org.realm.id,
      senderId: user.id,
      type: 'stream',
      streamId: org.general.id,
      subject: 'sweep',
      content,
      renderedContent: `<p>${content}</p>`,
      scheduledTimestamp: new Date(at * 1000),
    },
  });

const notificationBot = () =>
  prisma().user.findFirstOrThrow({
    where: { realmId: org.realm.id, email: 'notification-bot@zulip.com' },
  });

describe('delivery', () => {
  it('sends the message at its time, once, and tells the user’s clients it left', async () => {
    const content = unique('Good morning');
    const at = inSeconds(2);
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = await scheduleChannel(content, at);
      await until(async () => (await rowOf(id)).delivered, 'the delivery');
    });
    const [message, ...more] = await messagesWith(content);
    expect(more).toEqual([]);
    expect(message).toMatchObject({
      senderId: user.id,
      subject: 'later',
      recipientId: org.general.recipientId,
    });
    // Not before its time.
    expect(message!.dateSent.getTime()).toBeGreaterThanOrEqual(at * 1000);
    expect(await rowOf(id)).toMatchObject({
      delivered: true,
      deliveredMessageId: message!.id,
      failed: false,
    });
    const events = published.map(({ event }) => event);
    expect(events).toContainEqual({
      type: 'scheduled_messages',
      op: 'remove',
      scheduled_message_id: id,
    });
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'message',
        message: expect.objectContaining({ id: message!.id }),
      }),
    );
    expect(
      expectSuccess(await as(user, org.host).get('/scheduled_messages')).scheduled_messages,
    ).toEqual([]);
    // The job again (a retry, another worker): nothing more.
    expect(await deliverScheduledMessage({ scheduledMessageId: id, version: 1 })).toBe('skipped');
    expect(await messagesWith(content)).toHaveLength(1);
  });

  it('sends direct messages to their recipients', async () => {
    const content = unique('psst');
    const id = expectSuccess(
      await as(user, org.host).post('/scheduled_messages', {
        type: 'direct',
        to: [org.other.id],
        content,
        scheduled_delivery_timestamp: inSeconds(2),
      }),
    ).scheduled_message_id as number;
    await until(async () => (await rowOf(id)).delivered, 'the delivery');
    const [message] = await messagesWith(content);
    const copies = await prisma().userMessage.findMany({ where: { messageId: message!.id } });
    expect(copies.map((copy) => copy.userId).sort((a, b) => a - b)).toEqual(
      [user.id, org.other.id].sort((a, b) => a - b),
    );
  });

  it("gets the Welcome Bot's answer to a direct message sent to it", async () => {
    const bot = await ensureSystemBot(org.realm, 'welcome');
    const content = unique('help?');
    const id = expectSuccess(
      await as(user, org.host).post('/scheduled_messages', {
        type: 'direct',
        to: [bot.id],
        content,
        scheduled_delivery_timestamp: inSeconds(2),
      }),
    ).scheduled_message_id as number;
    await until(async () => (await rowOf(id)).delivered, 'the delivery');
    const answer = await until(
      () =>
        prisma().message.findFirst({
          where: { senderId: bot.id, content: welcomeBotReply(content) },
        }),
      "the Welcome Bot's answer",
    );
    const copies = await prisma().userMessage.findMany({ where: { messageId: answer.id } });
    expect(copies.map((copy) => copy.userId).sort((a, b) => a - b)).toEqual(
      [user.id, bot.id].sort((a, b) => a - b),
    );
  });

  it('sends once when several runs of the job race', async () => {
    const content = unique('Only once');
    const row = await prisma().scheduledMessage.create({
      data: {
        realmId: org.realm.id,
        senderId: user.id,
        type: 'stream',
        streamId: org.general.id,
        subject: 'race',
        content,
        renderedContent: `<p>${content}</p>`,
        scheduledTimestamp: new Date(Date.now() - 1000),
      },
    });
    const outcomes = await Promise.all(
      Array.from({ length: 4 }, () =>
        deliverScheduledMessage({ scheduledMessageId: row.id, version: 1 }),
      ),
    );
    expect(outcomes.sort()).toEqual(['sent', 'skipped', 'skipped', 'skipped']);
    expect(await messagesWith(content)).toHaveLength(1);
  });

  it('sends nothing for a deleted scheduled message', async () => {
    const content = unique('Never mind');
    // Far enough ahead for the deletion to come first on a loaded machine (inSeconds(1) may be
    // a few milliseconds away: it counts from the current whole second).
    const id = await scheduleChannel(content, inSeconds(4));
    expectSuccess(await as(user, org.host).delete(`/scheduled_messages/${id}`));
    await until(() => jobCompleted(id, 1), 'the job to run');
    expect(await messagesWith(content)).toEqual([]);
  });

  it('sends an edited message at its new time, with its new content, once', async () => {
    const content = unique('First draft');
    const edited = unique('Second draft');
    // The first time far enough ahead for the edit to come first (see the deletion above).
    const id = await scheduleChannel(content, inSeconds(4));
    const at = inSeconds(3);
    expectSuccess(
      await as(user, org.host).patch(`/scheduled_messages/${id}`, {
        content: edited,
        scheduled_delivery_timestamp: at,
      }),
    );
    await until(async () => (await rowOf(id)).delivered, 'the delivery');
    // The first version's job ran and did nothing.
    await until(() => jobCompleted(id, 1), 'the old job to run');
    expect(await messagesWith(content)).toEqual([]);
    const [message, ...more] = await messagesWith(edited);
    expect(more).toEqual([]);
    expect(message!.dateSent.getTime()).toBeGreaterThanOrEqual(at * 1000);
    expect((await rowOf(id)).deliveredMessageId).toBe(message!.id);
  });

  it('delivers a reminder from the Notification Bot', async () => {
    const about = expectSuccess(
      await send(org.other, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'launch',
        content: unique('Ship it'),
      }),
    ).id as number;
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = expectSuccess(
        await as(user, org.host).post('/reminders', {
          message_id: about,
          scheduled_delivery_timestamp: inSeconds(2),
          note: 'check the launch',
        }),
      ).reminder_id as number;
      await until(async () => (await rowOf(id)).delivered, 'the reminder');
    });
    const bot = await notificationBot();
    const message = await prisma().message.findUniqueOrThrow({
      where: { id: (await rowOf(id)).deliveredMessageId! },
    });
    expect(message.senderId).toBe(bot.id);
    expect(message.content).toMatch(
      /^You requested a reminder for the following message\. Note:\n > check the launch\n\n/,
    );
    const copies = await prisma().userMessage.findMany({ where: { messageId: message.id } });
    expect(copies.map((copy) => copy.userId).sort((a, b) => a - b)).toEqual(
      [user.id, bot.id].sort((a, b) => a - b),
    );
    expect(published.map(({ event }) => event)).toContainEqual({
      type: 'reminders',
      op: 'remove',
      reminder_id: id,
    });
    expect(expectSuccess(await as(user, org.host).get('/reminders')).reminders).toEqual([]);
  });
});

describe('failure', () => {
  async function expectFailed(
    id: number,
    at: number,
    reason: string,
    published: { event: Record<string, unknown> }[],
  ) {
    const row = await rowOf(id);
    expect(row).toMatchObject({ failed: true, delivered: false, failureMessage: reason });
    const [listed] = expectSuccess(await as(user, org.host).get('/scheduled_messages'))
      .scheduled_messages as Record<string, unknown>[];
    expect(listed).toMatchObject({ scheduled_message_id: id, failed: true });
    const events = published.map(({ event }) => event);
    expect(events).toContainEqual({
      type: 'scheduled_messages',
      op: 'update',
      scheduled_message: listed,
    });
    const time = new Date(at * 1000).toISOString().replace('.000Z', '+00:00');
    const notice = await prisma().message.findMany({
      where: {
        realmId: org.realm.id,
        senderId: (await notificationBot()).id,
        content: { contains: `<time:${time}>` },
      },
    });
    const mine = [];
    for (const message of notice)
      if (
        await prisma().userMessage.findFirst({ where: { messageId: message.id, userId: user.id } })
      )
        mine.push(message);
    expect(mine.map((message) => message.content)).toEqual([
      `The message you scheduled for <time:${time}> was not sent because of the following error:` +
        `\n\n> ${reason}\n\n[View scheduled messages](#scheduled)`,
    ]);
  }

  it('keeps a message to a private channel the sender left as failed, and tells the sender', async () => {
    const name = `hideout-${process.pid}-${(serial += 1)}`;
    expectSuccess(
      await as(user, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name }],
        invite_only: true,
      }),
    );
    const channel = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name },
    });
    const content = unique('Secret plan');
    const at = inSeconds(2);
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = await scheduleChannel(content, at, user, channel.id);
      expectSuccess(
        await as(user, org.host).delete('/users/me/subscriptions', { subscriptions: [name] }),
      );
      await until(async () => (await rowOf(id)).failed, 'the failure');
    });
    expect(await messagesWith(content)).toEqual([]);
    await expectFailed(id, at, `Not authorized to send to channel '${name}'`, published);
    // A failed message is not tried again; editing it with a new time schedules it again.
    expect(await deliverScheduledMessage({ scheduledMessageId: id, version: 1 })).toBe('skipped');
  });

  it('keeps a message to an archived channel as failed, and tells the sender', async () => {
    const name = `attic-${process.pid}-${(serial += 1)}`;
    expectSuccess(
      await as(user, org.host).post('/users/me/subscriptions', { subscriptions: [{ name }] }),
    );
    const channel = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name },
    });
    const content = unique('Dusty');
    const at = inSeconds(2);
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = await scheduleChannel(content, at, user, channel.id);
      expectSuccess(await as(org.owner, org.host).delete(`/streams/${channel.id}`));
      await until(async () => (await rowOf(id)).failed, 'the failure');
    });
    expect(await messagesWith(content)).toEqual([]);
    const archived = await prisma().stream.findUniqueOrThrow({ where: { id: channel.id } });
    await expectFailed(id, at, `Not authorized to send to channel '${archived.name}'`, published);
  });

  it('sends an edited failed message at its new time', async () => {
    const content = unique('Second chance');
    const row = await prisma().scheduledMessage.create({
      data: {
        realmId: org.realm.id,
        senderId: user.id,
        type: 'stream',
        streamId: org.general.id,
        subject: 'retry',
        content,
        renderedContent: `<p>${content}</p>`,
        scheduledTimestamp: new Date(Date.now() - 60_000),
        failed: true,
        failureMessage: 'Not authorized',
      },
    });
    const at = inSeconds(2);
    expectSuccess(
      await as(user, org.host).patch(`/scheduled_messages/${row.id}`, {
        scheduled_delivery_timestamp: at,
      }),
    );
    await until(async () => (await rowOf(row.id)).delivered, 'the delivery');
    const [message] = await messagesWith(content);
    expect(message!.dateSent.getTime()).toBeGreaterThanOrEqual(at * 1000);
  });
});

describe('the sweep', () => {
  it('queues again a message whose job was lost, without sending it twice', async () => {
    const content = unique('Lost and found');
    const at = inSeconds(2);
    const row = await committedButNotQueued(content, at);
    await requeueScheduledMessages();
    await requeueScheduledMessages();
    await until(async () => (await rowOf(row.id)).delivered, 'the delivery');
    await requeueScheduledMessages();
    expect(await messagesWith(content)).toHaveLength(1);
    expect((await messagesWith(content))[0]!.dateSent.getTime()).toBeGreaterThanOrEqual(at * 1000);
  });
});

describe('a delivery job that failed for good', () => {
  it('is replaced by the sweep, and the message is sent once', async () => {
    const content = unique('Failed once');
    const at = inSeconds(2);
    const row = await committedButNotQueued(content, at);
    // The row's job, run and failed with its one attempt used up (as after retries while the
    // database was away): its data names no message, so the handler throws.
    const queue = queueFor('scheduled');
    await queue.add(
      'deliver-scheduled-message',
      { scheduledMessageId: 'not a number', version: row.version },
      { jobId: jobKey(row.id, row.version), attempts: 1 },
    );
    await until(
      async () => (await (await queue.getJob(jobKey(row.id, row.version)))?.isFailed()) === true,
      'the failure',
    );
    await until(async () => Date.now() >= at * 1000, 'its time');
    await requeueScheduledMessages();
    await until(async () => (await rowOf(row.id)).delivered, 'the delivery');
    expect(await messagesWith(content)).toHaveLength(1);
  });
});

describe('restarts', () => {
  const children: ChildProcess[] = [];
  const exited = (child: ChildProcess) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawn = (kind: 'api' | 'worker', port: number, env: Record<string, string> = {}) => {
    const child = spawnReplica(kind, port, { LOG_LEVEL: 'error', ...env });
    children.push(child);
    return child;
  };
  const kill = async (child: ChildProcess) => {
    child.kill('SIGKILL');
    await exited(child);
  };

  beforeAll(async () => {
    // Only the worker processes of this test deliver now.
    await workers?.close();
    workers = null;
  });
  afterAll(async () => {
    await Promise.all(children.map(kill));
  });

  it('delivers every message once, at its time, with the worker and an API replica killed in between', async () => {
    const [apiPort, faultyPort, workerPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const worker = spawn('worker', workerPort);
    const api = spawn('api', apiPort);
    const faulty = spawn('api', faultyPort, { PARLEY_FAULT_KILL_AFTER_COMMIT: '1' });
    await Promise.all([waitForReady(apiPort, 60_000), waitForReady(faultyPort, 60_000)]);
    const post = (port: number, content: string, at: number): Promise<JsonAnswer | null> =>
      requestJson(`http://127.0.0.1:${port}`, {
        host: org.host,
        user,
        method: 'POST',
        path: '/api/v1/scheduled_messages',
        form: {
          type: 'stream',
          to: String(org.general.id),
          topic: 'restarts',
          content,
          scheduled_delivery_timestamp: String(at),
        },
      }).catch(() => null);
    const contents = [unique('Queued'), unique('Forgotten by Redis'), unique('Never queued')];
    const at = [inSeconds(6), inSeconds(7), inSeconds(6)];
    const queued = await post(apiPort, contents[0]!, at[0]!);
    const forgotten = await post(apiPort, contents[1]!, at[1]!);
    expect(queued?.status).toBe(200);
    expect(forgotten?.status).toBe(200);
    // This replica commits, then dies before queueing the job: the request fails.
    expect(await post(faultyPort, contents[2]!, at[2]!)).toBeNull();
    await exited(faulty);
    const ids = await Promise.all(
      contents.map(
        async (content) =>
          (await prisma().scheduledMessage.findFirstOrThrow({ where: { content } })).id,
      ),
    );
    expect(ids[0]).toBe(queued!.body!.scheduled_message_id);
    // Before anything is due: the worker and the API replica die.
    await kill(worker);
    await kill(api);
    expect(await jobKnown(ids[2]!, 1)).toBe(false);
    // Redis loses one job.
    expect(await jobKnown(ids[1]!, 1)).toBe(true);
    await getRedis().zrem('bull:scheduled:delayed', jobKey(ids[1]!, 1));
    await getRedis().del(`bull:scheduled:${jobKey(ids[1]!, 1)}`);
    // Both start again (the worker's first sweep queues what Redis does not know).
    spawn('worker', workerPort);
    spawn('api', apiPort);
    await waitForReady(apiPort, 60_000);

    for (const id of ids) await until(async () => (await rowOf(id)).delivered, `delivery of ${id}`);
    for (const [index, content] of contents.entries()) {
      const messages = await messagesWith(content);
      expect(messages).toHaveLength(1);
      expect(messages[0]!.dateSent.getTime()).toBeGreaterThanOrEqual(at[index]! * 1000);
      expect((await rowOf(ids[index]!)).deliveredMessageId).toBe(messages[0]!.id);
    }
    const listed = await requestJson(`http://127.0.0.1:${apiPort}`, {
      host: org.host,
      user,
      method: 'GET',
      path: '/api/v1/scheduled_messages',
    });
    expect(listed.body).toMatchObject({ result: 'success', scheduled_messages: [] });
  }, 150_000);
});
