// The `thumbnail` job (Zulip's ThumbnailWorker / ensure_thumbnails): thumbnails of uploaded
// PNG, JPEG, animated GIF and WebP images in Zulip's formats, stored at Zulip's paths and
// recorded on the attachment; images that cannot or should not be decoded lose their
// preview; messages showing the loading placeholder get the thumbnail and their readers a
// rendering_only update_message. Test images are made with sharp.
import { getPrisma, type User } from '@parley/db';
import { closeQueues, queueFor, type JobWorkers } from '@parley/jobs';
import {
  cachedLoader,
  ensureThumbnails,
  requeuePendingThumbnails,
  rewriteThumbnailedImages,
} from '@parley/api/actions/thumbnails';
import { flagNames } from '@parley/api/lib/messages';
import { readUpload } from '@parley/api/lib/upload-store';
import {
  as,
  captureEvents,
  expectSuccess,
  uploadFile,
  type UploadedFile,
} from '../../api/test/helpers';
import { animatedGif, imageInfo, pngClaiming, solid } from '../../api/test/images';
import { createMessageOrg, send, type MessageOrg } from '../../api/test/message-helpers';
import { startWorkers } from '../src/jobs';
import { until } from '../../api/test/until';

const prisma = () => getPrisma();
const PLACEHOLDER = '/static/images/loading/loader-black.svg';

let org: MessageOrg;
let workers: JobWorkers | undefined;

beforeAll(async () => {
  org = await createMessageOrg();
});

afterAll(async () => {
  await workers?.close();
  await closeQueues();
});

const upload = (name: string, data: Buffer, user: User = org.member) =>
  uploadFile(org.host, user, name, data);

async function sendLink(content: string, user: User = org.member): Promise<number> {
  return expectSuccess(
    await send(user, org.host, { type: 'stream', to: 'general', topic: 'pictures', content }),
  ).id as number;
}

const contentOf = async (id: number) =>
  (await prisma().message.findUniqueOrThrow({ where: { id } })).renderedContent;

const thumbnailUrl = (u: UploadedFile, name: string) =>
  `/user_uploads/thumbnail/${u.pathId}/${name}`;

function preview(u: UploadedFile, title: string, img: string): string {
  return `<div class="message_inline_image"><a href="${u.url}" title="${title}">${img}</a></div>`;
}

describe('the thumbnail job', () => {
  it('makes an 840x560 WebP of a PNG, records it and shows it in the message', async () => {
    const image = await upload('wide.png', await solid(1200, 900).png().toBuffer());
    const id = await sendLink(`[wide.png](${image.url})`);
    const placeholder = preview(
      image,
      'wide.png',
      `<img class="image-loading-placeholder" data-original-content-type="image/png" ` +
        `data-original-dimensions="1200x900" src="${PLACEHOLDER}">`,
    );
    expect(await contentOf(id)).toBe(`<p><a href="${image.url}">wide.png</a></p>\n${placeholder}`);

    let result: Awaited<ReturnType<typeof ensureThumbnails>> | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      result = await ensureThumbnails(image.id);
    });
    expect(result).toEqual({ made: 1, bad: false, messagesUpdated: 1 });

    const row = await prisma().attachment.findUniqueOrThrow({ where: { id: image.id } });
    expect(row.frames).toBe(1);
    const stored = (await readUpload(`thumbnail/${image.pathId}/840x560.webp`))!;
    expect(row.thumbnailMetadata).toEqual([
      {
        extension: 'webp',
        max_width: 840,
        max_height: 560,
        animated: false,
        content_type: 'image/webp',
        width: 747,
        height: 560,
        byte_size: stored.length,
      },
    ]);
    expect(await imageInfo(stored)).toMatchObject({
      format: 'webp',
      width: 747,
      height: 560,
    });

    const rendered =
      `<p><a href="${image.url}">wide.png</a></p>\n` +
      preview(
        image,
        'wide.png',
        `<img data-original-content-type="image/png" data-original-dimensions="1200x900" ` +
          `src="${thumbnailUrl(image, '840x560.webp')}">`,
      );
    expect(await contentOf(id)).toBe(rendered);
    // What a reader fetches, too.
    const fetched = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`)).message as {
      content: string;
    };
    expect(fetched.content).toBe(rendered);

    // Zulip's do_update_embedded_data: a silent edit, to everyone with a copy, with their flags.
    const updates = published.filter((p) => p.event.type === 'update_message');
    const event = {
      type: 'update_message',
      user_id: null,
      edit_timestamp: expect.any(Number),
      message_id: id,
      message_ids: [id],
      content: `[wide.png](${image.url})`,
      rendered_content: rendered,
      rendering_only: true,
    };
    const copies = await prisma().userMessage.findMany({ where: { messageId: id } });
    const flagsOf = new Map(copies.map((c) => [c.userId, flagNames(c.flags)]));
    expect(updates.flatMap((u) => u.users).sort()).toEqual([...flagsOf.keys()].sort());
    for (const update of updates) {
      expect(update.event).toEqual({ ...event, flags: expect.any(Array) });
      for (const user of update.users) expect(update.event.flags).toEqual(flagsOf.get(user));
    }

    // Again: nothing to make, nothing to tell.
    const again = await captureEvents(org.realm.id, async () => {
      result = await ensureThumbnails(image.id);
    });
    expect(result).toEqual({ made: 0, bad: false, messagesUpdated: 0 });
    expect(again.filter((p) => p.event.type === 'update_message')).toEqual([]);
  });

  it('thumbnails JPEG and WebP, never enlarging, and follows the EXIF orientation', async () => {
    const jpeg = await upload(
      'portrait.jpg',
      await solid(1000, 500).jpeg().withMetadata({ orientation: 6 }).toBuffer(),
    );
    expect(await ensureThumbnails(jpeg.id)).toMatchObject({ made: 1, bad: false });
    const jpegRow = await prisma().attachment.findUniqueOrThrow({ where: { id: jpeg.id } });
    // Shown rotated: 500 wide, 1000 high, so 280x560 fits the box.
    expect(jpegRow).toMatchObject({ width: 500, height: 1000, frames: 1 });
    expect(jpegRow.thumbnailMetadata).toEqual([
      expect.objectContaining({ width: 280, height: 560, animated: false }),
    ]);
    const jpegThumb = await readUpload(`thumbnail/${jpeg.pathId}/840x560.webp`);
    expect(await imageInfo(jpegThumb!)).toMatchObject({ width: 280, height: 560 });

    const webp = await upload('small.webp', await solid(100, 80).webp().toBuffer());
    expect(await ensureThumbnails(webp.id)).toMatchObject({ made: 1, bad: false });
    const webpRow = await prisma().attachment.findUniqueOrThrow({ where: { id: webp.id } });
    expect(webpRow.thumbnailMetadata).toEqual([
      expect.objectContaining({ width: 100, height: 80, content_type: 'image/webp' }),
    ]);
  });

  it('makes an animated and a still thumbnail of an animated GIF, and shows the animated one', async () => {
    const gif = await upload('dance.gif', await animatedGif(128, 56, 3));
    const id = await sendLink(`[dance](${gif.url})`);
    expect(await ensureThumbnails(gif.id)).toEqual({ made: 2, bad: false, messagesUpdated: 1 });
    const row = await prisma().attachment.findUniqueOrThrow({ where: { id: gif.id } });
    expect(row.frames).toBe(3);
    expect(row.thumbnailMetadata).toEqual([
      expect.objectContaining({ animated: true, width: 128, height: 56 }),
      expect.objectContaining({ animated: false, width: 128, height: 56 }),
    ]);
    const animated = await readUpload(`thumbnail/${gif.pathId}/840x560-anim.webp`);
    expect(await imageInfo(animated!)).toMatchObject({ format: 'webp', pages: 3 });
    const still = await readUpload(`thumbnail/${gif.pathId}/840x560.webp`);
    expect((await imageInfo(still!)).pages).toBe(1);
    expect(await contentOf(id)).toContain(
      `<img data-animated="true" data-original-content-type="image/gif" ` +
        `data-original-dimensions="128x56" src="${thumbnailUrl(gif, '840x560-anim.webp')}">`,
    );
  });

  it('leaves files that are not images alone', async () => {
    const text = await upload('notes.txt', Buffer.from('not an image'));
    expect(await ensureThumbnails(text.id)).toEqual({ made: 0, bad: false, messagesUpdated: 0 });
    const row = await prisma().attachment.findUniqueOrThrow({ where: { id: text.id } });
    expect(row.thumbnailMetadata).toBeNull();
    // And no job was queued for it.
    expect(await queueFor('thumbnail').getJob(`thumbnail-${text.id}`)).toBeUndefined();
  });

  it('takes the preview away from an image that cannot be decoded', async () => {
    // A PNG header with nothing behind it: the upload takes it for an image.
    const header = (await solid(64, 48).png().toBuffer()).subarray(0, 40);
    const broken = await upload('broken.png', header);
    const id = await sendLink(`Look: [broken](${broken.url})`);
    expect(await contentOf(id)).toContain('image-loading-placeholder');
    let result: Awaited<ReturnType<typeof ensureThumbnails>> | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      result = await ensureThumbnails(broken.id);
    });
    expect(result).toEqual({ made: 0, bad: true, messagesUpdated: 1 });
    expect(await contentOf(id)).toBe(`<p>Look: <a href="${broken.url}">broken</a></p>`);
    const row = await prisma().attachment.findUniqueOrThrow({ where: { id: broken.id } });
    expect(row).toMatchObject({ width: null, height: null, thumbnailMetadata: null });
    const updates = published.filter((p) => p.event.type === 'update_message');
    expect(updates.flatMap((u) => u.users).sort()).toEqual(
      [org.owner.id, org.member.id, org.other.id, org.guest.id].sort(),
    );
    for (const update of updates)
      expect(update.event).toMatchObject({
        message_id: id,
        rendering_only: true,
        rendered_content: `<p>Look: <a href="${broken.url}">broken</a></p>`,
      });
    // Sent again, the link has no preview at all.
    const later = await sendLink(`[broken](${broken.url})`);
    expect(await contentOf(later)).toBe(`<p><a href="${broken.url}">broken</a></p>`);
  });

  it('takes the preview from a message saved with the placeholder after the image was found bad', async () => {
    const header = (await solid(64, 48).png().toBuffer()).subarray(0, 40);
    const broken = await upload('late-broken.png', header);
    expect(await ensureThumbnails(broken.id)).toEqual({ made: 0, bad: true, messagesUpdated: 0 });
    // A send that rendered before the bad result committed saves the placeholder after it.
    const id = await sendLink(`[late](${broken.url})`);
    const stale =
      `<p><a href="${broken.url}">late</a></p>\n` +
      preview(
        broken,
        'late',
        `<img class="image-loading-placeholder" data-original-content-type="image/png" ` +
          `data-original-dimensions="64x48" src="${PLACEHOLDER}">`,
      );
    await prisma().message.update({ where: { id }, data: { renderedContent: stale } });
    // The bad result queued a settling run too; it takes the preview away.
    expect(await queueFor('thumbnail').getJob(`thumbnail-${broken.id}-settle`)).toBeDefined();
    let result: Awaited<ReturnType<typeof ensureThumbnails>> | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      result = await ensureThumbnails(broken.id);
    });
    expect(result).toEqual({ made: 0, bad: true, messagesUpdated: 1 });
    expect(await contentOf(id)).toBe(`<p><a href="${broken.url}">late</a></p>`);
    expect(published.filter((p) => p.event.type === 'update_message')).not.toEqual([]);
    // Once more: nothing left to change.
    expect(await ensureThumbnails(broken.id)).toEqual({ made: 0, bad: true, messagesUpdated: 0 });
  });

  it('refuses decompression bombs before decoding them (Zulip’s pixel limits)', async () => {
    // 10000 × 9001 is just over IMAGE_BOMB_TOTAL_PIXELS (90 million).
    const bomb = await upload('bomb.png', await pngClaiming(10_000, 9_001));
    expect(await ensureThumbnails(bomb.id)).toMatchObject({ made: 0, bad: true });
    expect(await readUpload(`thumbnail/${bomb.pathId}/840x560.webp`)).toBeNull();

    // Just under it, but not a real image behind the header: still no crash, no thumbnail.
    const fake = await upload('fake.png', await pngClaiming(9_000, 9_000));
    expect(await ensureThumbnails(fake.id)).toMatchObject({ made: 0, bad: true });
  });

  it('brings a message rendered before the thumbnails were recorded up to date', async () => {
    const image = await upload('late.png', await solid(50, 40).png().toBuffer());
    expect(await ensureThumbnails(image.id)).toMatchObject({ made: 1, messagesUpdated: 0 });
    // A send that rendered while the job was still running commits the placeholder after it.
    const id = await sendLink(`[late](${image.url})`);
    const stale =
      `<p><a href="${image.url}">late</a></p>\n` +
      preview(
        image,
        'late',
        `<img class="image-loading-placeholder" data-original-content-type="image/png" ` +
          `data-original-dimensions="50x40" src="${PLACEHOLDER}">`,
      );
    await prisma().message.update({ where: { id }, data: { renderedContent: stale } });
    // The settling run (queued by the first) rewrites it.
    expect(await ensureThumbnails(image.id)).toEqual({ made: 0, bad: false, messagesUpdated: 1 });
    expect(await contentOf(id)).toContain(`src="${thumbnailUrl(image, '840x560.webp')}"`);
    expect(await queueFor('thumbnail').getJob(`thumbnail-${image.id}-settle`)).toBeDefined();
  });

  it('rewrites only the placeholders of the image it made', () => {
    const a = '/user_uploads/2/ab/aaaaaaaaaaaaaaaaaaaaaaaa/a.png';
    const b = '/user_uploads/2/ab/bbbbbbbbbbbbbbbbbbbbbbbb/b%20c.png';
    const img = (type: string) =>
      `<img class="image-loading-placeholder" data-original-content-type="${type}" ` +
      `data-original-dimensions="4x3" src="${PLACEHOLDER}">`;
    const html =
      `<div class="message_inline_image"><a href="${a}">${img('image/png')}</a></div>` +
      `<div class="message_inline_image"><a href="${b}" title="b">${img('image/png')}</a></div>`;
    const thumbnail = {
      contentType: 'image/png',
      width: 4,
      height: 3,
      thumbnail: { url: '/user_uploads/thumbnail/x/840x560.webp', animated: false },
    };
    const rewritten = rewriteThumbnailedImages(
      html,
      '2/ab/bbbbbbbbbbbbbbbbbbbbbbbb/b c.png',
      thumbnail,
    );
    expect(rewritten).toBe(
      `<div class="message_inline_image"><a href="${a}">${img('image/png')}</a></div>` +
        `<div class="message_inline_image"><a href="${b}" title="b"><img ` +
        `data-original-content-type="image/png" data-original-dimensions="4x3" ` +
        `src="/user_uploads/thumbnail/x/840x560.webp"></a></div>`,
    );
    expect(
      rewriteThumbnailedImages(rewritten!, '2/ab/bbbbbbbbbbbbbbbbbbbbbbbb/b c.png', thumbnail),
    ).toBeNull();
  });

  it('is queued again by the sweep when its job was lost', async () => {
    const image = await upload('lost.png', await solid(60, 40).png().toBuffer());
    const queue = queueFor('thumbnail');
    await (await queue.getJob(`thumbnail-${image.id}`))!.remove();
    // Not yet: a minute's grace for the job queued on commit.
    await requeuePendingThumbnails({ batchSize: 10_000 });
    expect(await queue.getJob(`thumbnail-${image.id}`)).toBeUndefined();
    await prisma().attachment.update({
      where: { id: image.id },
      data: { createTime: new Date(Date.now() - 120_000) },
    });
    await requeuePendingThumbnails({ batchSize: 10_000 });
    expect((await queue.getJob(`thumbnail-${image.id}`))?.data).toEqual({ attachmentId: image.id });
  });

  it('tries loading sharp again after a failed load, and keeps it once loaded', async () => {
    let calls = 0;
    const load = cachedLoader(async () => {
      calls += 1;
      if (calls === 1) throw new Error('libvips is missing');
      return { loaded: calls };
    });
    await expect(load()).rejects.toThrow('libvips is missing');
    // Not cached: the next job loads it again.
    expect(await load()).toEqual({ loaded: 2 });
    expect(await load()).toEqual({ loaded: 2 });
    expect(calls).toBe(2);
  });

  it('runs in the worker tier, queued by the upload', async () => {
    workers = startWorkers({ concurrency: 1, sweepIntervalMs: 0 });
    await workers.ready();
    const image = await upload('queued.png', await solid(300, 200).png().toBuffer());
    const id = await sendLink(`[queued](${image.url})`);
    await until(
      async () => !(await contentOf(id))?.includes('image-loading-placeholder'),
      'the worker to thumbnail the upload',
    );
    expect(await contentOf(id)).toContain(`src="${thumbnailUrl(image, '840x560.webp')}"`);
  });
});
