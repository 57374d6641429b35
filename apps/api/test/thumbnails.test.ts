// Thumbnails through the API (Zulip 9+): server_thumbnail_formats in POST /register, the
// loading placeholder then the thumbnail in rendered messages, the job queued by an image
// upload, and GET /user_uploads/thumbnail/{path id}/{format} with the original's access
// checks; deleting an upload deletes its thumbnails; the sweep that queues lost jobs again. The
// thumbnails are made by calling the worker's job directly.
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import request from 'supertest';
import { getPrisma, Role, type User } from '@parley/db';
import { closeQueues, jobsConnection, queueFor } from '@parley/jobs';
import {
  ensureThumbnails,
  requeuePendingThumbnails,
  type ThumbnailSweepOptions,
} from '../src/actions/thumbnails';
import { deleteOldUnclaimedUploads } from '../src/actions/upload-cleanup';
import { readUpload } from '../src/lib/upload-store';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import {
  app,
  as,
  createTestUser,
  expectError,
  expectSuccess,
  uploadFile,
  type UploadedFile,
} from './helpers';
import { animatedGif, imageInfo, solid } from './images';

let org: MessageOrg;

beforeAll(async () => {
  org = await createMessageOrg();
});

afterAll(async () => {
  await closeQueues();
});

const png = (width: number, height: number) => solid(width, height).png().toBuffer();

const upload = (user: User, name: string, data: Buffer) => uploadFile(org.host, user, name, data);

const download = (user: User | null, url: string) => {
  const test = request(app).get(url).set('Host', org.host);
  return user ? test.auth(user.deliveryEmail, user.apiKey) : test;
};

const sendTo = (user: User, to: string, content: string) =>
  send(user, org.host, { type: 'stream', to, topic: 'photos', content }).then(
    (res) => expectSuccess(res).id as number,
  );

const contentAs = async (user: User, id: number) =>
  (expectSuccess(await as(user, org.host).get(`/messages/${id}`)).message as { content: string })
    .content;

describe('POST /register', () => {
  it('advertises server_thumbnail_formats in Zulip’s shape', async () => {
    const state = expectSuccess(
      await as(org.member, org.host).post('/register', { fetch_event_types: ['realm'] }),
    );
    expect(state.server_thumbnail_formats).toEqual([
      {
        name: '840x560-anim.webp',
        max_width: 840,
        max_height: 560,
        format: 'webp',
        animated: true,
      },
      { name: '840x560.webp', max_width: 840, max_height: 560, format: 'webp', animated: false },
    ]);
  });
});

describe('uploaded images in messages', () => {
  it('show the loading placeholder until the thumbnail is made, then the thumbnail', async () => {
    const image = await upload(org.member, 'sky.png', await png(1680, 1120));
    // The upload queued the job, under one id per upload.
    const job = await queueFor('thumbnail').getJob(`thumbnail-${image.id}`);
    expect(job?.data).toEqual({ attachmentId: image.id });

    const id = await sendTo(org.member, 'general', `[sky](${image.url})`);
    const link = `<p><a href="${image.url}">sky</a></p>\n`;
    const wrap = (img: string) =>
      `<div class="message_inline_image"><a href="${image.url}" title="sky">${img}</a></div>`;
    expect(await contentAs(org.other, id)).toBe(
      link +
        wrap(
          '<img class="image-loading-placeholder" data-original-content-type="image/png" ' +
            'data-original-dimensions="1680x1120" src="/static/images/loading/loader-black.svg">',
        ),
    );
    await ensureThumbnails(image.id);
    const thumbnail = `/user_uploads/thumbnail/${image.pathId}/840x560.webp`;
    expect(await contentAs(org.other, id)).toBe(
      link +
        wrap(
          '<img data-original-content-type="image/png" data-original-dimensions="1680x1120" ' +
            `src="${thumbnail}">`,
        ),
    );
    // A message sent now shows the thumbnail at once.
    const later = await sendTo(org.other, 'general', `again: [sky](${image.url})`);
    expect(await contentAs(org.member, later)).toContain(`src="${thumbnail}"`);
  });
});

describe('GET /user_uploads/thumbnail/{path_id}/{format}', () => {
  it('serves the thumbnail to whoever may open the original, and no one else', async () => {
    const image = await upload(org.member, 'secret plan.png', await png(900, 600));
    const thumbnail = `/user_uploads/thumbnail/${image.pathId}/840x560.webp`;
    // Nothing made yet.
    expect((await download(org.member, thumbnail)).status).toBe(404);
    await ensureThumbnails(image.id);

    const served = await download(org.member, thumbnail);
    expect(served.status).toBe(200);
    expect(served.headers['content-type']).toBe('image/webp');
    expect(served.headers['x-content-type-options']).toBe('nosniff');
    expect(served.headers['content-disposition']).toBe('inline; filename="840x560.webp"');
    expect(await imageInfo(served.body as Buffer)).toMatchObject({
      format: 'webp',
      width: 840,
      height: 560,
    });

    // Unshared, only the uploader sees it — the same answers as for the original.
    for (const url of [image.url, thumbnail]) {
      expectError(await download(org.other, url), 'You are not authorized to view this file.', 403);
      expect((await download(null, url)).status).toBe(401);
    }
    // Shared in the private #secret: its subscribers only.
    await sendTo(org.member, 'secret', `[plan](${image.url})`);
    for (const url of [image.url, thumbnail]) {
      expectError(await download(org.other, url), 'You are not authorized to view this file.', 403);
      expectError(await download(org.guest, url), 'You are not authorized to view this file.', 403);
    }
    // Shared in #general: its readers too.
    await sendTo(org.member, 'general', `[plan](${image.url})`);
    for (const url of [image.url, thumbnail])
      expect((await download(org.other, url)).status).toBe(200);
    // The original is still served as it was.
    const original = await download(org.other, image.url);
    expect(original.headers['content-type']).toBe('image/png');
  });

  it('answers a format not made with the closest one made, and nonsense with 404', async () => {
    const image = await upload(org.member, 'tiny.png', await png(30, 20));
    await ensureThumbnails(image.id);
    const base = `/user_uploads/thumbnail/${image.pathId}`;
    // An old client asking for another size gets the still WebP (it is not animated).
    const closest = await download(org.member, `${base}/100x75-anim.webp`);
    expect(closest.status).toBe(200);
    expect(await imageInfo(closest.body as Buffer)).toMatchObject({ width: 30 });
    expect((await download(org.member, `${base}/original.png`)).status).toBe(404);
    expect((await download(org.member, `/user_uploads/thumbnail/${base}`)).status).toBe(404);
    // Not an image: nothing to thumbnail.
    const text = await upload(org.member, 'notes.txt', Buffer.from('hello'));
    expect(
      (await download(org.member, `/user_uploads/thumbnail/${text.pathId}/840x560.webp`)).status,
    ).toBe(404);
    // Another organization's upload does not exist here.
    expect(
      (
        await download(
          org.member,
          `/user_uploads/thumbnail/999999/ab/abcdefghijklmnopqrstuvwx/x.png/840x560.webp`,
        )
      ).status,
    ).toBe(404);
  });
});

describe('deleting an upload', () => {
  const thumbnailsOf = (image: UploadedFile) => [
    `thumbnail/${image.pathId}/840x560-anim.webp`,
    `thumbnail/${image.pathId}/840x560.webp`,
  ];

  it('DELETE /attachments/{id} removes the thumbnails with the original', async () => {
    const owner = await createTestUser(org.realm, Role.MEMBER);
    const image = await upload(owner, 'private.gif', await animatedGif(64, 32, 2));
    expect(await ensureThumbnails(image.id)).toMatchObject({ made: 2 });
    for (const path of thumbnailsOf(image)) expect(await readUpload(path)).not.toBeNull();
    expectSuccess(await as(owner, org.host).delete(`/attachments/${image.id}`));
    expect(await readUpload(image.pathId)).toBeNull();
    for (const path of thumbnailsOf(image)) expect(await readUpload(path)).toBeNull();
    expect(
      (await download(owner, `/user_uploads/thumbnail/${image.pathId}/840x560.webp`)).status,
    ).toBe(404);
  });

  it('the unclaimed-upload clean-up removes the thumbnails with the original', async () => {
    const image = await upload(org.member, 'forgotten.gif', await animatedGif(64, 32, 2));
    const kept = await upload(org.member, 'kept.png', await png(40, 30));
    await ensureThumbnails(image.id);
    await ensureThumbnails(kept.id);
    await sendTo(org.member, 'general', `[kept](${kept.url})`);
    // Aged far past anything another test makes, so this run takes only these.
    await getPrisma().attachment.updateMany({
      where: { id: { in: [image.id, kept.id] } },
      data: { createTime: new Date('2002-01-01T00:00:00Z') },
    });
    await deleteOldUnclaimedUploads({ createdBefore: new Date('2002-01-02T00:00:00Z') });
    expect(await getPrisma().attachment.findUnique({ where: { id: image.id } })).toBeNull();
    expect(await readUpload(image.pathId)).toBeNull();
    for (const path of thumbnailsOf(image)) expect(await readUpload(path)).toBeNull();
    // A linked upload keeps its thumbnail.
    expect(await readUpload(`thumbnail/${kept.pathId}/840x560.webp`)).not.toBeNull();
  });
});

describe('the thumbnail sweep', () => {
  /** Puts the upload's job in the failed set as a job that used up its attempts just now
   * (storage down, say), taken by a worker of the test's own ahead of any waiting job. */
  async function failJob(image: UploadedFile): Promise<void> {
    const queue = queueFor('thumbnail');
    const jobId = `thumbnail-${image.id}`;
    await (await queue.getJob(jobId))?.remove();
    await queue.add(
      'thumbnail',
      { attachmentId: image.id },
      { jobId, lifo: true, attempts: 1, removeOnFail: { age: 3600 } },
    );
    const worker = new Worker('thumbnail', null, { connection: jobsConnection(), autorun: false });
    try {
      const token = randomUUID();
      const job = await worker.getNextJob(token, { block: false });
      expect(job?.id).toBe(jobId);
      await job!.moveToFailed(new Error('upload storage is down'), token);
    } finally {
      await worker.close();
    }
    expect(await (await queue.getJob(jobId))!.isFailed()).toBe(true);
  }

  const pendingCount = async () =>
    (
      await getPrisma().$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM attachment
        WHERE thumbnail_metadata IS NULL AND width IS NOT NULL`
    )[0]!.n;

  /** Sweeps (`batchSize` at a time) until `done`, at most as often as it takes to look at
   * every pending upload twice. */
  async function sweepUntil(
    done: () => Promise<boolean>,
    options: ThumbnailSweepOptions & { batchSize: number },
  ): Promise<boolean> {
    const sweeps = 2 * Math.ceil((await pendingCount()) / options.batchSize) + 2;
    for (let sweep = 0; sweep < sweeps; sweep += 1) {
      if (await done()) return true;
      await requeuePendingThumbnails(options);
    }
    return done();
  }

  it('reaches every pending upload in turn, and leaves jobs that failed recently alone', async () => {
    const queue = queueFor('thumbnail');
    const failing = [
      await upload(org.member, 'failing-1.png', await png(20, 10)),
      await upload(org.member, 'failing-2.png', await png(20, 10)),
    ];
    const lost = await upload(org.member, 'lost.png', await png(20, 10));
    await getPrisma().attachment.updateMany({
      where: { id: { in: [...failing.map((f) => f.id), lost.id] } },
      data: { createTime: new Date(Date.now() - 120_000) },
    });
    for (const image of failing) await failJob(image);
    await (await queue.getJob(`thumbnail-${lost.id}`))!.remove();
    // Sweeps of two: the older failing uploads do not take every sweep's batch.
    const isQueued = async () => (await queue.getJob(`thumbnail-${lost.id}`)) !== undefined;
    expect(await sweepUntil(isQueued, { batchSize: 2 })).toBe(true);
    expect(await queue.getJob(`thumbnail-${lost.id}`)).toMatchObject({
      data: { attachmentId: lost.id },
    });
    // Failed within the hour: not queued again, however often the sweep looks at them.
    for (const image of failing)
      expect(await (await queue.getJob(`thumbnail-${image.id}`))!.isFailed()).toBe(true);
    // Once long enough ago, they are.
    const requeued = async () => {
      for (const image of failing)
        if ((await (await queue.getJob(`thumbnail-${image.id}`))!.isFailed()) !== false)
          return false;
      return true;
    };
    expect(await sweepUntil(requeued, { batchSize: 2, retryFailedAfterMs: 0 })).toBe(true);
  });
});
