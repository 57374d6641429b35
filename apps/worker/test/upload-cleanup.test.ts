// The periodic upload clean-up (Zulip's delete_old_unclaimed_attachments): uploads no message
// links are deleted, row and file, once older than the grace period; the owner is told.
// Uploads are made old by moving their create_time back, never by waiting.
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { getPrisma } from '@parley/db';
import { closeQueues, repeatingJobSchedule, type JobWorkers } from '@parley/jobs';
import { deleteOldUnclaimedUploads } from '@parley/api/actions/upload-cleanup';
import { uploadFilePath } from '@parley/api/lib/upload-store';
import { api, as, captureEvents, expectSuccess } from '../../api/test/helpers';
import { createMessageOrg, send, type MessageOrg } from '../../api/test/message-helpers';
import { JOB_HANDLERS, UPLOAD_CLEANUP_EVERY_MS, startWorkers } from '../src/jobs';

const prisma = () => getPrisma();
const WEEK_MS = 7 * 24 * 3600 * 1000;
const ago = (ms: number) => new Date(Date.now() - ms);

let org: MessageOrg;

beforeAll(async () => {
  org = await createMessageOrg();
});

afterAll(async () => {
  await closeQueues();
});

interface Upload {
  id: number;
  pathId: string;
  url: string;
}

/** Uploads a file as the member, created `age` ms ago. */
async function upload(age = 0, name = 'notes.txt'): Promise<Upload> {
  const body = expectSuccess(
    await api
      .post(org.host, '/user_uploads')
      .auth(org.member.deliveryEmail, org.member.apiKey)
      .attach('filename', Buffer.from(`contents of ${name}`), name),
  ) as { url: string };
  const pathId = body.url.slice('/user_uploads/'.length);
  const row = await prisma().attachment.findUniqueOrThrow({ where: { pathId } });
  if (age > 0)
    await prisma().attachment.update({ where: { id: row.id }, data: { createTime: ago(age) } });
  return { id: row.id, pathId, url: body.url };
}

async function exists(upload: Upload): Promise<{ row: boolean; file: boolean }> {
  const row = await prisma().attachment.findUnique({ where: { id: upload.id } });
  return { row: row !== null, file: existsSync(uploadFilePath(upload.pathId)!) };
}

const runJob = () => JOB_HANDLERS['delete-unclaimed-uploads']({});

describe('the upload clean-up', () => {
  it('deletes old unclaimed uploads, keeps young and linked ones, and tells the owner', async () => {
    const old = await upload(6 * WEEK_MS, 'old.txt');
    const young = await upload(4 * WEEK_MS, 'young.txt');
    const linked = await upload(0, 'linked.txt');
    expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'files',
        content: `[linked.txt](${linked.url})`,
      }),
    );
    await prisma().attachment.update({
      where: { id: linked.id },
      data: { createTime: ago(6 * WEEK_MS) },
    });
    expect(await exists(old)).toEqual({ row: true, file: true });

    const published = await captureEvents(org.realm.id, runJob);

    expect(await exists(old)).toEqual({ row: false, file: false });
    expect(await exists(young)).toEqual({ row: true, file: true });
    expect(await exists(linked)).toEqual({ row: true, file: true });
    const space = await prisma().attachment.aggregate({
      where: { realmId: org.realm.id },
      _sum: { size: true },
    });
    expect(published).toContainEqual({
      event: {
        type: 'attachment',
        op: 'remove',
        attachment: { id: old.id },
        upload_space_used: space._sum.size,
      },
      users: [org.member.id],
    });
    expect(
      published.filter(
        (entry) =>
          entry.event.type === 'attachment' &&
          [young.id, linked.id].includes((entry.event.attachment as { id: number }).id),
      ),
    ).toEqual([]);
    const listed = expectSuccess(await as(org.member, org.host).get('/attachments')) as {
      attachments: { id: number }[];
    };
    expect(listed.attachments.map((a) => a.id)).not.toContain(old.id);
    expect(listed.attachments.map((a) => a.id)).toContain(young.id);
  });

  it('deletes an old upload once the message that linked it is deleted', async () => {
    const shared = await upload(6 * WEEK_MS, 'shared.txt');
    const sent = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'files',
        content: `[shared.txt](${shared.url})`,
      }),
    ) as { id: number };
    await runJob();
    expect(await exists(shared)).toEqual({ row: true, file: true });

    expectSuccess(await as(org.owner, org.host).delete(`/messages/${sent.id}`));
    await runJob();
    expect(await exists(shared)).toEqual({ row: false, file: false });
  });

  it('keeps an old upload a scheduled message will link, until it is sent', async () => {
    const later = await upload(6 * WEEK_MS, 'later résumé.txt');
    expectSuccess(
      await as(org.member, org.host).post('/scheduled_messages', {
        type: 'stream',
        to: String(org.general.id),
        topic: 'files',
        content: `[later](${encodeURI(later.url)})`,
        scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 10 * 7 * 24 * 3600,
      }),
    );
    await runJob();
    expect(await exists(later)).toEqual({ row: true, file: true });
  });

  it('takes its cut-off from the caller, for tests and tools', async () => {
    const hours = await upload(3 * 3600_000, 'hours.txt');
    await runJob();
    expect(await exists(hours)).toEqual({ row: true, file: true });
    await deleteOldUnclaimedUploads({ createdBefore: ago(2 * 3600_000) });
    expect(await exists(hours)).toEqual({ row: false, file: false });
  });

  it('is harmless run twice at once, run again, or with the file already gone', async () => {
    const uploads = [
      await upload(6 * WEEK_MS, 'a.txt'),
      await upload(6 * WEEK_MS, 'b.txt'),
      await upload(6 * WEEK_MS, 'c.txt'),
    ];
    await rm(uploadFilePath(uploads[2]!.pathId)!);

    const published = await captureEvents(org.realm.id, async () => {
      await Promise.all([runJob(), runJob()]);
      await runJob();
    });

    for (const gone of uploads) expect(await exists(gone)).toEqual({ row: false, file: false });
    const removals = published
      .filter((entry) => entry.event.type === 'attachment' && entry.event.op === 'remove')
      .map((entry) => (entry.event.attachment as { id: number }).id)
      .filter((id) => uploads.some((u) => u.id === id));
    expect(removals.sort((a, b) => a - b)).toEqual(uploads.map((u) => u.id).sort((a, b) => a - b));
  });

  it('deletes at most one batch per run', async () => {
    const uploads = [
      await upload(6 * WEEK_MS, 'd.txt'),
      await upload(6 * WEEK_MS, 'e.txt'),
      await upload(6 * WEEK_MS, 'f.txt'),
    ];
    expect(await deleteOldUnclaimedUploads({ batchSize: 2 })).toBe(2);
    const left = await prisma().attachment.count({
      where: { id: { in: uploads.map((u) => u.id) } },
    });
    expect(left).toBeGreaterThanOrEqual(1);
    while ((await deleteOldUnclaimedUploads({ batchSize: 2 })) > 0);
    for (const gone of uploads) expect(await exists(gone)).toEqual({ row: false, file: false });
  });

  it('is scheduled by the workers', async () => {
    const workers: JobWorkers = startWorkers({ concurrency: 1, sweepIntervalMs: 60_000 });
    try {
      await workers.ready();
      let schedule: Awaited<ReturnType<typeof repeatingJobSchedule>>;
      for (let attempt = 0; attempt < 200 && !schedule; attempt += 1) {
        schedule = await repeatingJobSchedule('delete-unclaimed-uploads');
        if (!schedule) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(schedule?.every).toBe(UPLOAD_CLEANUP_EVERY_MS);
    } finally {
      await workers.close();
    }
  });
});
