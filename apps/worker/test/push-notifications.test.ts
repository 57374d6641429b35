// Mobile push notifications (Zulip's handle_push_notification): sending a message queues one
// `push-notifications` job when some recipient should be notified on a registered device; a
// real BullMQ worker builds Zulip's APNs and FCM payloads and hands them to the transport —
// the default one records them in push_notification_log, the bouncer one posts them to a
// push bouncer (here a local HTTP server) in Zulip's format, retried on a 5xx, not on a 4xx.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getConfig, resetConfig } from '@parley/config';
import { flagBit, getPrisma, runAction, type User } from '@parley/db';
import { closeQueues, queueFor, type JobWorkers } from '@parley/jobs';
import { outboxSettled } from '@parley/api/lib/outbox';
import {
  doClearMobilePushNotifications,
  prunePushNotificationLog,
  sendPushNotifications,
} from '@parley/api/actions/push-notifications';
import { as, expectError, expectSuccess, recordPostAnswers } from '../../api/test/helpers';
import { createMessageOrg, send, type MessageOrg } from '../../api/test/message-helpers';
import { startWorkers } from '../src/jobs';
import { until } from '../../api/test/until';

const prisma = () => getPrisma();
const APP_ID = 'org.zulip.Zulip';
const APNS_TOKEN = 'c0ffee'.repeat(10) + 'beef';

let workers: JobWorkers;
let org: MessageOrg;
/** Gets a notification of every direct message from the owner: when it arrives, every job
 * queued before it has run (one worker, taking jobs in order). */
let sentinel: User;

beforeAll(async () => {
  workers = startWorkers({ concurrency: 1, sweepIntervalMs: 0 });
  await workers.ready();
  org = await createMessageOrg();
  // Otto has an iPhone and an Android phone, the owner an Android phone; Mia, the sender of
  // most messages, has one too (senders are never notified); Gus the guest has none.
  expectSuccess(
    await as(org.other, org.host).post('/users/me/apns_device_token', {
      token: APNS_TOKEN,
      appid: APP_ID,
    }),
  );
  expectSuccess(
    await as(org.other, org.host).post('/users/me/android_gcm_reg_id', { token: 'otto-fcm' }),
  );
  expectSuccess(
    await as(org.owner, org.host).post('/users/me/android_gcm_reg_id', { token: 'owner-fcm' }),
  );
  expectSuccess(
    await as(org.member, org.host).post('/users/me/android_gcm_reg_id', { token: 'mia-fcm' }),
  );
  sentinel = org.admin;
  expectSuccess(
    await as(sentinel, org.host).post('/users/me/android_gcm_reg_id', { token: 'sentinel' }),
  );
});

afterAll(async () => {
  await workers.close();
  await closeQueues();
});

async function sendMessage(sender: User, form: Record<string, unknown>): Promise<number> {
  return expectSuccess(await send(sender, org.host, form)).id as number;
}

const dm = (sender: User, to: User[], content: string) =>
  sendMessage(sender, { type: 'private', to: JSON.stringify(to.map((u) => u.id)), content });
const toGeneral = (content: string, topic = 'plans', sender: User = org.member) =>
  sendMessage(sender, { type: 'stream', to: 'general', topic, content });

/** Waits until every job queued so far has run. */
async function settle(): Promise<void> {
  const id = await dm(org.owner, [sentinel], 'sentinel');
  await until(() => prisma().pushNotificationLog.findFirst({ where: { messageId: id } }));
}

const logOf = (messageId: number) =>
  prisma().pushNotificationLog.findMany({ where: { messageId }, orderBy: { id: 'asc' } });

/** The users notified of a message, once every queued job has run. */
async function notifiedOf(messageId: number): Promise<number[]> {
  await settle();
  return (await logOf(messageId)).map((row) => row.userId).sort((a, b) => a - b);
}

async function entryFor(messageId: number, user: User) {
  return until(() =>
    prisma().pushNotificationLog.findFirst({ where: { messageId, userId: user.id } }),
  );
}

/** What a viewer's clients see of the sender and the organization. */
async function viewed(viewer: User, sender: User) {
  const settings = expectSuccess(await as(viewer, org.host).get('/server_settings'));
  const shown = expectSuccess(
    await as(viewer, org.host).get(`/users/${sender.id}`, { client_gravatar: false }),
  ).user as { email: string; avatar_url: string };
  return {
    base: {
      server: getConfig().EXTERNAL_HOST,
      realm_id: org.realm.id,
      realm_uri: settings.realm_url,
      realm_url: settings.realm_url,
      realm_name: settings.realm_name,
      user_id: viewer.id,
    },
    email: shown.email,
    avatar: shown.avatar_url,
  };
}

const timeOf = async (messageId: number) =>
  Math.floor(
    (await prisma().message.findUniqueOrThrow({ where: { id: messageId } })).dateSent.getTime() /
      1000,
  );

describe('the default transport', () => {
  it('records a direct message’s notification in Zulip’s APNs and FCM formats', async () => {
    const id = await dm(org.member, [org.other], 'Hello **there** :smile:');
    const entry = await entryFor(id, org.other);
    const { base, email, avatar } = await viewed(org.other, org.member);
    const zulip = {
      ...base,
      sender_id: org.member.id,
      sender_email: email,
      time: await timeOf(id),
      recipient_type: 'private',
    };
    expect(entry).toMatchObject({ event: 'message', appleDevices: 1, androidDevices: 1 });
    expect(entry.apnsPayload).toEqual({
      alert: { title: 'Mia Member', subtitle: '', body: 'Hello there 🙂' },
      sound: 'default',
      badge: 0,
      custom: { zulip: { ...zulip, message_ids: [id] } },
    });
    expect(entry.gcmPayload).toEqual({
      ...zulip,
      event: 'message',
      zulip_message_id: id,
      content: 'Hello there 🙂',
      content_truncated: false,
      sender_full_name: 'Mia Member',
      sender_avatar_url: avatar,
    });
    expect(entry.gcmOptions).toEqual({ priority: 'high' });
    // Sent once: the copy is marked, and a second run of the job does nothing.
    const copy = await prisma().userMessage.findFirstOrThrow({
      where: { messageId: id, userId: org.other.id },
    });
    expect(copy.flags & flagBit('active_mobile_push_notification')).not.toBe(0n);
    expect(
      await sendPushNotifications({
        messageId: id,
        recipients: [{ userId: org.other.id, trigger: 'direct_message' }],
      }),
    ).toBe(0);
    expect(await notifiedOf(id)).toEqual([org.other.id]);
  });

  it('never notifies the sender, nor users without devices', async () => {
    const id = await dm(org.member, [org.guest, org.other], 'To both of you');
    expect(await notifiedOf(id)).toEqual([org.other.id]);
    const alone = await dm(org.member, [org.guest], 'Only Gus');
    expect(await notifiedOf(alone)).toEqual([]);
    const self = await dm(org.member, [org.member], 'Note to self');
    expect(await notifiedOf(self)).toEqual([]);
  });

  it('queues a message’s notifications once its send is answered', async () => {
    const order: string[] = [];
    const queue = queueFor('push');
    const add = queue.add.bind(queue);
    const adds = jest.spyOn(queue, 'add').mockImplementation(async (...args) => {
      const job = await add(...args);
      order.push('queued');
      return job;
    });
    const ends = recordPostAnswers(order);
    let id: number;
    try {
      id = await dm(org.member, [org.other], 'Answered first');
      // What a stopping process waits for.
      await outboxSettled();
    } finally {
      adds.mockRestore();
      ends.mockRestore();
    }
    expect(order).toEqual(['answered', 'queued']);
    expect(await notifiedOf(id)).toEqual([org.other.id]);
  });

  it('titles a group conversation with its members and lists them', async () => {
    const id = await dm(org.member, [org.other, org.owner], 'All three of us');
    const entry = await entryFor(id, org.other);
    const ids = [org.member.id, org.other.id, org.owner.id].sort((a, b) => a - b).join(',');
    expect(entry.apnsPayload).toMatchObject({
      alert: {
        title: 'Mia Member, Olivia Owner, Otto Other',
        subtitle: 'Mia Member:',
        body: 'All three of us',
      },
      custom: { zulip: { recipient_type: 'private', pm_users: ids } },
    });
    expect(entry.gcmPayload).toMatchObject({ recipient_type: 'private', pm_users: ids });
    expect(await notifiedOf(id)).toEqual([org.owner.id, org.other.id].sort((a, b) => a - b));
  });

  it('notifies a user mentioned in a channel, and nobody else', async () => {
    const id = await toGeneral('Look @**Otto Other**, a > b');
    const entry = await entryFor(id, org.other);
    expect(entry.apnsPayload).toMatchObject({
      alert: {
        title: '#general > plans',
        subtitle: 'Mia Member mentioned you:',
        body: 'Look @Otto Other, a > b',
      },
      custom: {
        zulip: {
          recipient_type: 'stream',
          stream: 'general',
          stream_id: org.general.id,
          topic: 'plans',
          message_ids: [id],
        },
      },
    });
    expect(entry.gcmPayload).toMatchObject({
      recipient_type: 'stream',
      stream: 'general',
      stream_id: org.general.id,
      topic: 'plans',
      content: 'Look @Otto Other, a > b',
    });
    expect(entry.gcmPayload).not.toHaveProperty('mentioned_user_group_id');
    // The owner has a device and is subscribed, but is not mentioned.
    expect(await notifiedOf(id)).toEqual([org.other.id]);
  });

  it('shows a guest who may not see the sender an "Unknown user"', async () => {
    // can_access_all_users_group limited to members: the guest shares #general with Mia, not
    // with the administrator, who posts there without being subscribed.
    const group = async (name: string) =>
      (await prisma().userGroup.findFirstOrThrow({ where: { realmId: org.realm.id, name } })).id;
    const restrict = async (name: string) =>
      expectSuccess(
        await as(org.owner, org.host).patch('/realm', {
          can_access_all_users_group: { new: await group(name) },
        }),
      );
    expectSuccess(
      await as(org.guest, org.host).post('/users/me/android_gcm_reg_id', { token: 'gus-fcm' }),
    );
    await restrict('role:members');
    try {
      const hidden = await toGeneral('@**Gus Guest** hello', 'guests', org.admin);
      expect((await entryFor(hidden, org.guest)).gcmPayload).toMatchObject({
        sender_id: org.admin.id,
        sender_email: `user${org.admin.id}@${org.host.split(':')[0]}`,
        sender_full_name: 'Unknown user',
        sender_avatar_url: '/static/images/unknown-user-avatar.png',
      });
      expect((await entryFor(hidden, org.guest)).apnsPayload).toMatchObject({
        alert: { subtitle: 'Unknown user mentioned you:' },
      });
      const seen = await toGeneral('@**Gus Guest** hello', 'guests', org.member);
      expect((await entryFor(seen, org.guest)).gcmPayload).toMatchObject({
        sender_full_name: 'Mia Member',
      });
    } finally {
      await restrict('role:everyone');
      expectSuccess(
        await as(org.guest, org.host).delete('/users/me/android_gcm_reg_id', { token: 'gus-fcm' }),
      );
    }
  });

  it('a plain channel message notifies nobody, unless their channel push setting is on', async () => {
    // A new topic: Otto follows `plans` since he was mentioned there (Zulip's
    // automatically_follow_topics_where_mentioned), and followed topics notify him.
    const plain = await toGeneral('Nothing special', 'quiet');
    expect(await notifiedOf(plain)).toEqual([]);
    const followed = await toGeneral('In a followed topic', 'plans');
    const otto = await entryFor(followed, org.other);
    expect(otto.apnsPayload).toMatchObject({
      alert: { title: '#general > plans', subtitle: 'Mia Member:', body: 'In a followed topic' },
    });
    expect(await notifiedOf(followed)).toEqual([org.other.id]);
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions/properties', {
        subscription_data: [
          { stream_id: org.general.id, property: 'push_notifications', value: true },
        ],
      }),
    );
    try {
      const id = await toGeneral('Now the owner hears of it', '');
      const entry = await entryFor(id, org.owner);
      expect(entry.apnsPayload).toMatchObject({
        alert: { title: '#general > general chat', subtitle: 'Mia Member:' },
        custom: { zulip: { topic: 'general chat' } },
      });
      expect(await notifiedOf(id)).toEqual([org.owner.id]);
    } finally {
      expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions/properties', {
          subscription_data: [
            { stream_id: org.general.id, property: 'push_notifications', value: false },
          ],
        }),
      );
    }
  });

  it('names the group a user was mentioned through', async () => {
    const created = expectSuccess(
      await as(org.owner, org.host).post('/user_groups/create', {
        name: 'pushers',
        description: 'People with phones',
        members: JSON.stringify([org.owner.id]),
      }),
    );
    const groupId = created.group_id as number;
    const id = await toGeneral('Ping @*pushers* and @**Otto Other**');
    const owner = await entryFor(id, org.owner);
    expect(owner.apnsPayload).toMatchObject({
      alert: { subtitle: 'Mia Member mentioned @pushers:' },
      custom: { zulip: { mentioned_user_group_id: groupId, mentioned_user_group_name: 'pushers' } },
    });
    expect(owner.gcmPayload).toMatchObject({
      mentioned_user_group_id: groupId,
      mentioned_user_group_name: 'pushers',
    });
    const other = await entryFor(id, org.other);
    expect(other.apnsPayload).toMatchObject({ alert: { subtitle: 'Mia Member mentioned you:' } });
    expect(await notifiedOf(id)).toEqual([org.owner.id, org.other.id].sort((a, b) => a - b));
  });

  it('wildcard mentions notify those who allow them', async () => {
    const id = await toGeneral('@**all** meeting now');
    const entry = await entryFor(id, org.other);
    expect(entry.apnsPayload).toMatchObject({
      alert: { subtitle: 'Mia Member mentioned everyone:', body: '@all meeting now' },
    });
    expect(await notifiedOf(id)).toEqual([org.owner.id, org.other.id].sort((a, b) => a - b));
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions/properties', {
        subscription_data: [
          { stream_id: org.general.id, property: 'wildcard_mentions_notify', value: false },
        ],
      }),
    );
    const quieter = await toGeneral('@**all** again');
    expect(await notifiedOf(quieter)).toEqual([org.other.id]);
  });

  it('nothing for users who muted the sender or turned off mobile notifications', async () => {
    expectSuccess(await as(org.other, org.host).post(`/users/me/muted_users/${org.member.id}`));
    try {
      expect(await notifiedOf(await dm(org.member, [org.other], 'Muted'))).toEqual([]);
    } finally {
      expectSuccess(await as(org.other, org.host).delete(`/users/me/muted_users/${org.member.id}`));
    }
    expectSuccess(
      await as(org.owner, org.host).patch('/settings', {
        enable_offline_push_notifications: false,
      }),
    );
    try {
      expect(await notifiedOf(await dm(org.member, [org.owner], 'Off'))).toEqual([]);
    } finally {
      expectSuccess(
        await as(org.owner, org.host).patch('/settings', {
          enable_offline_push_notifications: true,
        }),
      );
    }
  });

  it('cuts long messages to 200 characters, as Zulip does', async () => {
    const text = 'ab'.repeat(150);
    const id = await dm(org.member, [org.other], text);
    const entry = await entryFor(id, org.other);
    expect(entry.gcmPayload).toMatchObject({
      content: `${text.slice(0, 200)}…`,
      content_truncated: true,
    });
    expect(entry.apnsPayload).toMatchObject({ alert: { body: `${text.slice(0, 200)}…` } });
  });

  it('renders quotes, lists and spoilers as Zulip’s plain text', async () => {
    const id = await dm(
      org.member,
      [org.other],
      '```quote\nearlier words\n```\nMy answer:\n```spoiler Secret\nhidden\n```\n1. first\n2. second',
    );
    const entry = await entryFor(id, org.other);
    expect((entry.gcmPayload as { content: string }).content).toBe(
      '[…]\nMy answer:\nSecret (…)\n1. first\n2. second',
    );
  });
});

describe('removing notifications', () => {
  it('tells the devices to remove notifications of messages read, once', async () => {
    const first = await dm(org.member, [org.other], 'First');
    const second = await dm(org.member, [org.other], 'Second');
    await entryFor(first, org.other);
    await entryFor(second, org.other);
    const removals = () =>
      prisma().pushNotificationLog.findMany({
        where: { userId: org.other.id, event: 'remove' },
        orderBy: { id: 'asc' },
      });
    const before = (await removals()).length;
    // As the flags path does when the messages are marked read (a message without a
    // notification showing, here the sentinel's, is left out).
    await runAction((ctx) =>
      doClearMobilePushNotifications(ctx, org.other.id, [second, first, first + 100_000]),
    );
    const entry = await until(async () => (await removals())[before]);
    const { base } = await viewed(org.other, org.member);
    const ids = `${first},${second}`;
    expect(entry).toMatchObject({ messageId: null, appleDevices: 1, androidDevices: 1 });
    expect(entry.gcmPayload).toEqual({
      ...base,
      event: 'remove',
      zulip_message_ids: ids,
      zulip_message_id: first,
    });
    expect(entry.gcmOptions).toEqual({ priority: 'normal' });
    expect(entry.apnsPayload).toEqual({
      badge: 0,
      custom: { zulip: { ...base, event: 'remove', zulip_message_ids: ids } },
    });
    const copies = await prisma().userMessage.findMany({
      where: { userId: org.other.id, messageId: { in: [first, second] } },
    });
    for (const copy of copies)
      expect(copy.flags & flagBit('active_mobile_push_notification')).toBe(0n);
    // Nothing is showing any more: clearing again queues nothing.
    await runAction((ctx) => doClearMobilePushNotifications(ctx, org.other.id, [first, second]));
    await settle();
    expect(await removals()).toHaveLength(before + 1);
  });
});

describe('reading a message', () => {
  const removals = () =>
    prisma().pushNotificationLog.findMany({
      where: { userId: org.other.id, event: 'remove' },
      orderBy: { id: 'asc' },
    });

  it('removes its notification: POST /messages/flags and POST /mark_all_as_read', async () => {
    const first = await dm(org.member, [org.other], 'Read me');
    await entryFor(first, org.other);
    let before = (await removals()).length;
    expectSuccess(
      await as(org.other, org.host).post('/messages/flags', {
        messages: [first],
        op: 'add',
        flag: 'read',
      }),
    );
    let entry = await until(async () => (await removals())[before]);
    expect(entry.gcmPayload).toMatchObject({ event: 'remove', zulip_message_ids: String(first) });

    const second = await dm(org.member, [org.other], 'Read me too');
    await entryFor(second, org.other);
    before = (await removals()).length;
    expectSuccess(await as(org.other, org.host).post('/mark_all_as_read'));
    entry = await until(async () => (await removals())[before]);
    // Every notification still showing goes, earlier tests' unread ones too.
    const removed = entry.gcmPayload as { event: string; zulip_message_ids: string };
    expect(removed.event).toBe('remove');
    expect(removed.zulip_message_ids.split(',')).toContain(String(second));
  });
});

describe('deleting a message', () => {
  it('removes its notification from the phones still showing it', async () => {
    const id = await dm(org.member, [org.other], 'Soon deleted');
    await entryFor(id, org.other);
    expectSuccess(await as(org.member, org.host).delete(`/messages/${id}`));
    const removal = await until(async () =>
      (
        await prisma().pushNotificationLog.findMany({
          where: { userId: org.other.id, event: 'remove' },
          orderBy: { id: 'desc' },
        })
      ).find((row) =>
        (row.gcmPayload as { zulip_message_ids: string }).zulip_message_ids
          .split(',')
          .includes(String(id)),
      ),
    );
    expect(removal!.messageId).toBeNull();
  });
});

describe('the log transport’s rows', () => {
  it('are pruned once older than PUSH_LOG_RETENTION_HOURS (they hold message text)', async () => {
    const id = await dm(org.member, [org.other], 'Kept a day');
    const entry = await entryFor(id, org.other);
    await prisma().pushNotificationLog.update({
      where: { id: entry.id },
      data: { created: new Date(Date.now() - 25 * 3600_000) },
    });
    const fresh = await dm(org.member, [org.other], 'Just sent');
    await entryFor(fresh, org.other);
    expect(await prunePushNotificationLog()).toBeGreaterThanOrEqual(1);
    expect(await prisma().pushNotificationLog.findUnique({ where: { id: entry.id } })).toBeNull();
    expect(await prisma().pushNotificationLog.count({ where: { messageId: fresh } })).toBe(1);
  });
});

describe('POST /mobile_push/test_notification', () => {
  const testRows = (user: User) =>
    prisma().pushNotificationLog.findMany({
      where: { userId: user.id, event: 'test' },
      orderBy: { id: 'asc' },
    });

  it('records a test notification for all the user’s devices, or the one named', async () => {
    const before = Math.floor(Date.now() / 1000);
    expectSuccess(await as(org.other, org.host).post('/mobile_push/test_notification'));
    const [all] = await testRows(org.other);
    const base = {
      server: expect.any(String) as string,
      realm_id: org.realm.id,
      realm_uri: expect.any(String) as string,
      realm_url: expect.any(String) as string,
      realm_name: org.realm.name,
      user_id: org.other.id,
    };
    expect(all).toMatchObject({
      messageId: null,
      appleDevices: 1,
      androidDevices: 1,
      apnsPayload: {
        alert: {
          title: 'Test notification',
          body: expect.stringMatching(/^This is a test notification from .+ \(https?:\/\/.+\)\.$/),
        },
        sound: 'default',
        custom: { zulip: { ...base, event: 'test' } },
      },
      gcmPayload: { ...base, event: 'test' },
      gcmOptions: { priority: 'high' },
    });
    expect((all!.gcmPayload as { time: number }).time).toBeGreaterThanOrEqual(before);

    expectSuccess(
      await as(org.other, org.host).post('/mobile_push/test_notification', { token: 'otto-fcm' }),
    );
    const rows = await testRows(org.other);
    expect(rows.map((r) => [r.appleDevices, r.androidDevices])).toEqual([
      [1, 1],
      [0, 1],
    ]);
  });

  it('refuses a token that is not one of the user’s devices', async () => {
    expectError(
      await as(org.other, org.host).post('/mobile_push/test_notification', { token: 'owner-fcm' }),
      'Device not recognized',
      400,
      'INVALID_PUSH_DEVICE_TOKEN',
    );
    // Without devices there is nothing to send, and nothing is recorded.
    expectSuccess(await as(org.guest, org.host).post('/mobile_push/test_notification'));
    expect(await testRows(org.guest)).toEqual([]);
  });
});

describe('the bouncer transport', () => {
  const ORG_ID = '6cde5f7a-1f7e-4978-9716-49f69ebfc9fe';
  const ORG_KEY = 'k'.repeat(64);
  let server: Server;
  const requests: { url: string; auth: string; type: string; body: Record<string, unknown> }[] = [];
  /** Statuses to answer, by user id, in order (then 200). */
  const answers = new Map<number, number[]>();
  /** The error code of a refusal, by user id (BAD_REQUEST otherwise). */
  const refusalCodes = new Map<number, string>();
  /** Runs (once) while the bouncer holds a user's next request, before answering it. */
  const beforeAnswer = new Map<number, () => Promise<void>>();
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        const body = (
          req.headers['content-type']?.startsWith('application/json')
            ? JSON.parse(text)
            : Object.fromEntries(new URLSearchParams(text))
        ) as Record<string, unknown>;
        requests.push({
          url: req.url ?? '',
          auth: req.headers.authorization ?? '',
          type: req.headers['content-type'] ?? '',
          body,
        });
        const status = answers.get(body.user_id as number)?.shift() ?? 200;
        const answer = () => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify(
              status === 200
                ? {
                    result: 'success',
                    msg: '',
                    total_android_devices: 1,
                    total_apple_devices: 1,
                    deleted_devices: { android_devices: [], apple_devices: [] },
                  }
                : {
                    result: 'error',
                    msg: 'nope',
                    code: refusalCodes.get(body.user_id as number) ?? 'BAD_REQUEST',
                  },
            ),
          );
        };
        const hook = beforeAnswer.get(body.user_id as number);
        if (hook) hook().then(answer, answer);
        else answer();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const env = {
      PUSH_TRANSPORT: 'bouncer',
      PUSH_BOUNCER_URL: `http://127.0.0.1:${port}`,
      ZULIP_ORG_ID: ORG_ID,
      ZULIP_ORG_KEY: ORG_KEY,
    };
    for (const [key, value] of Object.entries(env)) {
      saved[key] = process.env[key];
      process.env[key] = value;
    }
    resetConfig();
  });

  afterAll(async () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    resetConfig();
    await new Promise((resolve) => server.close(resolve));
  });

  const requestsFor = (user: User, messageId: number) =>
    requests.filter(
      (r) =>
        r.body.user_id === user.id &&
        (r.body.gcm_payload as { zulip_message_id?: number } | undefined)?.zulip_message_id ===
          messageId,
    );

  it('removes a notification whose message was read while it was being sent', async () => {
    beforeAnswer.set(org.other.id, async () => {
      beforeAnswer.delete(org.other.id);
      // The newest copy is the message being sent: read on another device meanwhile.
      await prisma().$executeRaw`
        UPDATE user_message SET flags = flags | ${flagBit('read')}
        WHERE user_profile_id = ${org.other.id}
          AND message_id = (SELECT max(message_id) FROM user_message WHERE user_profile_id = ${org.other.id})`;
    });
    const id = await dm(org.member, [org.other], 'Read while sending');
    const removal = await until(async () =>
      requests.find((r) => {
        const payload = r.body.gcm_payload as { event?: string; zulip_message_ids?: string };
        return (
          r.body.user_id === org.other.id &&
          payload?.event === 'remove' &&
          String(payload.zulip_message_ids).split(',').includes(String(id))
        );
      }),
    );
    expect(removal!.url).toBe('/api/v1/remotes/push/notify');
    const [copy] = await prisma().userMessage.findMany({
      where: { userId: org.other.id, messageId: id },
    });
    expect(copy!.flags & flagBit('active_mobile_push_notification')).toBe(0n);
  });

  it('posts Zulip’s push/notify request with the server’s credentials', async () => {
    const id = await dm(org.member, [org.other], 'Through the bouncer');
    const [request] = await until(async () => {
      const found = requestsFor(org.other, id);
      return found.length > 0 && found;
    });
    expect(request!.url).toBe('/api/v1/remotes/push/notify');
    expect(request!.auth).toBe(`Basic ${Buffer.from(`${ORG_ID}:${ORG_KEY}`).toString('base64')}`);
    expect(request!.type).toMatch(/^application\/json/);
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    expect(request!.body).toEqual({
      user_id: org.other.id,
      user_uuid: expect.stringMatching(uuid),
      realm_uuid: expect.stringMatching(uuid),
      apns_payload: expect.objectContaining({
        alert: { title: 'Mia Member', subtitle: '', body: 'Through the bouncer' },
      }),
      gcm_payload: expect.objectContaining({
        event: 'message',
        zulip_message_id: id,
        content: 'Through the bouncer',
        user_id: org.other.id,
      }),
      gcm_options: { priority: 'high' },
      android_devices: ['otto-fcm'],
      apple_devices: [APNS_TOKEN],
    });
    // Nothing is recorded by the log transport meanwhile.
    expect(await logOf(id)).toEqual([]);
  });

  it('registers devices with the bouncer, and unregisters them', async () => {
    const auth = `Basic ${Buffer.from(`${ORG_ID}:${ORG_KEY}`).toString('base64')}`;
    const token = 'ab12'.repeat(16);
    expectSuccess(
      await as(org.other, org.host).post('/users/me/apns_device_token', { token, appid: APP_ID }),
    );
    const registration = await until(async () =>
      requests.find((r) => r.url === '/api/v1/remotes/push/register' && r.body.token === token),
    );
    expect(registration.auth).toBe(auth);
    expect(registration.type).toMatch(/^application\/x-www-form-urlencoded/);
    expect(registration.body).toEqual({
      server_uuid: ORG_ID,
      user_uuid: expect.any(String),
      realm_uuid: expect.any(String),
      user_id: String(org.other.id),
      token,
      token_kind: '1',
      ios_app_id: APP_ID,
    });
    // The same UUIDs as in notifications.
    const id = await dm(org.member, [org.other], 'Same identity');
    const [notify] = await until(async () => {
      const found = requestsFor(org.other, id);
      return found.length > 0 && found;
    });
    expect(notify!.body.user_uuid).toBe(registration.body.user_uuid);
    expect(notify!.body.realm_uuid).toBe(registration.body.realm_uuid);
    expect(notify!.body.apple_devices).toEqual([APNS_TOKEN, token]);

    expectSuccess(await as(org.other, org.host).delete('/users/me/apns_device_token', { token }));
    const removal = requests.find(
      (r) => r.url === '/api/v1/remotes/push/unregister' && r.body.token === token,
    );
    expect(removal?.body).toEqual({
      server_uuid: ORG_ID,
      realm_uuid: registration.body.realm_uuid,
      user_uuid: registration.body.user_uuid,
      user_id: String(org.other.id),
      token,
      token_kind: '1',
    });
    expect(removal?.auth).toBe(auth);
  });

  it('sends test notifications through push/test_notification, one per device', async () => {
    const before = requests.length;
    expectSuccess(await as(org.other, org.host).post('/mobile_push/test_notification'));
    const tests = requests
      .slice(before)
      .filter((r) => r.url === '/api/v1/remotes/push/test_notification');
    expect(tests.map((r) => [r.body.token, r.body.token_kind])).toEqual([
      [APNS_TOKEN, 1],
      ['otto-fcm', 2],
    ]);
    expect(tests[0]!.type).toMatch(/^application\/json/);
    expect(tests[0]!.body).toMatchObject({
      user_id: org.other.id,
      user_uuid: expect.any(String),
      realm_uuid: expect.any(String),
      base_payload: { user_id: org.other.id, realm_id: org.realm.id, realm_name: org.realm.name },
    });
    // The bouncer's refusals are the caller's errors.
    answers.set(org.owner.id, [400]);
    refusalCodes.set(org.owner.id, 'INVALID_REMOTE_PUSH_DEVICE_TOKEN');
    expectError(
      await as(org.owner, org.host).post('/mobile_push/test_notification'),
      'Device not recognized by the push bouncer',
      400,
      'INVALID_REMOTE_PUSH_DEVICE_TOKEN',
    );
    refusalCodes.delete(org.owner.id);
    answers.set(org.owner.id, [400]);
    expectError(await as(org.owner, org.host).post('/mobile_push/test_notification'), 'nope');
    // A bouncer failing (5xx) or out of reach is a 502 the app may retry.
    answers.set(org.owner.id, [503]);
    const failed = await as(org.owner, org.host).post('/mobile_push/test_notification');
    expect({ status: failed.status, result: failed.body.result }).toEqual({
      status: 502,
      result: 'error',
    });
  });

  it('retries after a 5xx answer until the bouncer takes it, and not after a 4xx', async () => {
    // The owner's notification is refused for good (400); Otto's meets a 503 first.
    answers.set(org.owner.id, [400]);
    answers.set(org.other.id, [503]);
    const refused = await dm(org.member, [org.owner], 'Refused');
    await until(async () => requestsFor(org.owner, refused).length > 0);
    const flaky = await dm(org.member, [org.other], 'Eventually');
    // BullMQ tries the job again after its backoff; the second attempt succeeds. A retry of
    // the refused job, queued earlier with the same backoff, would have come first.
    await until(async () => requestsFor(org.other, flaky).length >= 2, 'the retried delivery');
    expect(requestsFor(org.other, flaky)).toHaveLength(2);
    expect(requestsFor(org.owner, refused)).toHaveLength(1);
    // The flag is set once the bouncer's answer is back, after it recorded the request.
    const flagged = async (messageId: number, user: User) => {
      const where = { messageId, userId: user.id };
      const copy = await prisma().userMessage.findFirstOrThrow({ where });
      return (copy.flags & flagBit('active_mobile_push_notification')) !== 0n;
    };
    expect(await until(() => flagged(flaky, org.other))).toBe(true);
    // A refused notification is done with, as in Zulip.
    expect(await until(() => flagged(refused, org.owner))).toBe(true);
  });
});
