// Message retention (Zulip's archive_messages): messages past their channel's or organization's
// message_retention_days are deleted by a periodic job, and their recipients told. Messages are
// made old by moving their date_sent back, never by waiting.
import { getPrisma, type User } from '@parley/db';
import { closeQueues, repeatingJobSchedule, type JobWorkers } from '@parley/jobs';
import { deleteExpiredMessages } from '@parley/api/actions/message-retention';
import { as, captureEvents, expectSuccess } from '../../api/test/helpers';
import { createMessageOrg, send, type MessageOrg } from '../../api/test/message-helpers';
import { until } from '../../api/test/until';
import { JOB_HANDLERS, RETENTION_EVERY_MS, startWorkers } from '../src/jobs';

const prisma = () => getPrisma();
const DAY_MS = 24 * 3600 * 1000;
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

let org: MessageOrg;

beforeAll(async () => {
  org = await createMessageOrg();
});

afterAll(async () => {
  await closeQueues();
});

/** Sends a message `days` days old. */
async function sent(
  days: number,
  form: Record<string, unknown>,
  sender: User = org.member,
): Promise<number> {
  const id = expectSuccess(await send(sender, org.host, form)).id as number;
  if (days > 0)
    await prisma().message.update({
      where: { id },
      data: { dateSent: new Date(Date.now() - days * DAY_MS) },
    });
  return id;
}
const inChannel = (days: number, to: string, topic = 'old talk') =>
  sent(days, { type: 'stream', to, topic, content: `${days} days` });
const direct = (days: number) =>
  sent(days, { type: 'direct', to: JSON.stringify([org.other.id]), content: `${days} days` });

async function remaining(ids: number[]): Promise<number[]> {
  const rows = await prisma().message.findMany({
    where: { id: { in: ids } },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  return rows.map((row) => row.id);
}

async function channelWithRetention(
  name: string,
  retention: number | string | null,
): Promise<number> {
  expectSuccess(
    await as(org.owner, org.host).post('/users/me/subscriptions', {
      subscriptions: [{ name }],
      principals: [org.owner.id, org.member.id, org.other.id],
      ...(retention === null ? {} : { message_retention_days: JSON.stringify(retention) }),
    }),
  );
  return (await prisma().stream.findFirstOrThrow({ where: { realmId: org.realm.id, name } })).id;
}

describe('message retention', () => {
  it("deletes a channel's messages past its period, and tells who had them", async () => {
    const name = `kept 30 days ${Math.random()}`;
    const streamId = await channelWithRetention(name, 30);
    // The Notification Bot's notice of the channel's creation is its first message: old too.
    const notice = (await prisma().stream.findUniqueOrThrow({ where: { id: streamId } }))
      .firstMessageId!;
    await prisma().message.update({
      where: { id: notice },
      data: { dateSent: new Date(Date.now() - 50 * DAY_MS) },
    });
    const old = [await inChannel(40, name), await inChannel(31, name)];
    const young = await inChannel(10, name);
    // The organization keeps everything: #general's old messages and direct messages stay.
    const elsewhere = [await inChannel(400, 'general'), await direct(400)];

    const published = await captureEvents(org.realm.id, () =>
      JOB_HANDLERS['delete-expired-messages']({}),
    );

    expect(await remaining([notice, ...old, young, ...elsewhere])).toEqual([young, ...elsewhere]);
    const deletions = published.filter((p) => p.event.type === 'delete_message');
    expect(deletions).toEqual([
      {
        event: {
          type: 'delete_message',
          message_ids: [notice],
          message_type: 'stream',
          stream_id: streamId,
          topic: 'channel events',
        },
        users: sorted([org.owner.id, org.member.id, org.other.id]),
      },
      {
        event: {
          type: 'delete_message',
          message_ids: old,
          message_type: 'stream',
          stream_id: streamId,
          topic: 'old talk',
        },
        users: sorted([org.owner.id, org.member.id, org.other.id]),
      },
    ]);
    // Its first message went: the oldest left is the channel's first message now.
    const stream = await prisma().stream.findUniqueOrThrow({ where: { id: streamId } });
    expect(stream.firstMessageId).toBe(young);
    expect(published.map((p) => p.event)).toContainEqual(
      expect.objectContaining({ type: 'stream', op: 'update', property: 'first_message_id' }),
    );
  });

  it("applies the organization's period to direct messages and channels that inherit it", async () => {
    const inheriting = `inherits ${Math.random()}`;
    const forever = `forever ${Math.random()}`;
    await channelWithRetention(inheriting, null);
    await channelWithRetention(forever, 'unlimited');
    const oldInherited = await inChannel(100, inheriting);
    const oldForever = await inChannel(100, forever);
    const oldDirect = await direct(100);
    const youngDirect = await direct(5);
    expectSuccess(await as(org.owner, org.host).patch('/realm', { message_retention_days: 60 }));
    try {
      const published = await captureEvents(org.realm.id, () => deleteExpiredMessages());
      expect(await remaining([oldInherited, oldForever, oldDirect, youngDirect])).toEqual([
        oldForever,
        youngDirect,
      ]);
      const deleted = published
        .filter((p) => p.event.type === 'delete_message')
        .map((p) => ({ type: p.event.message_type, ids: p.event.message_ids as number[] }));
      expect(deleted.find((d) => d.ids.includes(oldInherited))?.type).toBe('stream');
      expect(deleted.find((d) => d.ids.includes(oldDirect))?.type).toBe('private');
    } finally {
      expectSuccess(
        await as(org.owner, org.host).patch('/realm', {
          message_retention_days: JSON.stringify('unlimited'),
        }),
      );
    }
  });

  it('works through a backlog in batches', async () => {
    const name = `backlog ${Math.random()}`;
    await channelWithRetention(name, 1);
    const old: number[] = [];
    for (let i = 0; i < 5; i++) old.push(await inChannel(3, name, `topic ${i % 2}`));
    expect(await deleteExpiredMessages({ batchSize: 2 })).toBeGreaterThanOrEqual(5);
    expect(await remaining(old)).toEqual([]);
  });

  it('is scheduled by the workers', async () => {
    const workers: JobWorkers = startWorkers({ concurrency: 1, sweepIntervalMs: 60_000 });
    try {
      await workers.ready();
      const schedule = await until(
        () => repeatingJobSchedule('delete-expired-messages'),
        'the retention schedule',
      );
      expect(schedule.every).toBe(RETENTION_EVERY_MS);
    } finally {
      await workers.close();
    }
  });
});
