// Thumbnailing uploaded images (Zulip's zerver/worker/thumbnail.py ensure_thumbnails and
// update_message_rendered_content), run by the worker tier from the `thumbnail` job that an
// image upload queues on commit. The formats, paths and markup rules are in lib/thumbnails.ts.
//
// The image is decoded outside any transaction (it may take seconds); the result is recorded
// in one short transaction that locks the attachment row and rewrites the messages showing
// the loading placeholder, each with a silent update_message (rendering_only) to its readers.
import { getPrisma, runAction, type ActionContext, type Tx } from '@parley/db';
import { enqueueJob, queueFor } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { uploadImageTag } from '@parley/markdown';
import type { Attachment } from '../lib/attachments';
import { sendEventOnCommit } from '../lib/events';
import { flagNames } from '../lib/messages';
import {
  IMAGE_BOMB_TOTAL_PIXELS,
  IMAGE_MAX_ANIMATED_PIXELS,
  THUMBNAIL_ACCEPT_IMAGE_TYPES,
  formatName,
  isBadImage,
  isThumbnailable,
  missingThumbnails,
  storedThumbnailFormat,
  storedThumbnailPaths,
  storedThumbnails,
  thumbnailContentType,
  thumbnailPath,
  uploadPreview,
  type StoredThumbnail,
  type ThumbnailFormat,
} from '../lib/thumbnails';
import { readUpload, removeUpload, storeUpload } from '../lib/upload-store';

/** How long after a run that made thumbnails, or found the image bad, a second, settling run
 * looks again for messages still showing the placeholder: one rendered before the first run
 * committed but saved after it (the send renders before its transaction) is then brought up to
 * date. */
export const THUMBNAIL_SETTLE_DELAY_MS = 30_000;

/** A thumbnail job that failed for good (its attempts used up, for a reason other than a bad
 * image: storage down, sharp missing …) is queued again by the sweep only this long after it
 * failed, not every minute. */
export const THUMBNAIL_RETRY_FAILED_AFTER_MS = 3600_000;

/** Queues the thumbnails of a new upload once its row is committed (Zulip's maybe_thumbnail
 * queues on commit too). Anything but a thumbnailable image is left alone. */
export function queueThumbnailOnCommit(ctx: ActionContext, attachment: Attachment): void {
  if (!isThumbnailable(attachment)) return;
  ctx.onCommit(() =>
    enqueueJob('thumbnail', { attachmentId: attachment.id }, `thumbnail-${attachment.id}`),
  );
}

/** Where the next sweep starts: each takes the batch of pending uploads after the last one
 * the previous sweep looked at, and starts over once it reaches the end, so uploads that keep
 * failing cannot hold every sweep's batch while newer ones wait. Per process: a replica
 * restarting starts over, which is harmless (queueing is idempotent). */
let sweepCursor = 0;

export interface ThumbnailSweepOptions {
  batchSize?: number;
  retryFailedAfterMs?: number;
}

/** Uploads whose thumbnails are still to be made a minute after upload: their job was lost
 * (between COMMIT and Redis, or with Redis' data), failed for good, or the upload predates
 * thumbnails. Queued again, a batch per sweep (the worker's periodic sweep calls this): a job
 * still waiting, running or recently done is left as it is, and one that failed for good is
 * queued again once it failed more than `retryFailedAfterMs` ago. Returns how many uploads
 * were looked at. */
export async function requeuePendingThumbnails({
  batchSize = 100,
  retryFailedAfterMs = THUMBNAIL_RETRY_FAILED_AFTER_MS,
}: ThumbnailSweepOptions = {}): Promise<number> {
  const pending = await getPrisma().$queryRaw<{ id: number }[]>`
    SELECT id FROM attachment
    WHERE thumbnail_metadata IS NULL AND width IS NOT NULL AND height IS NOT NULL
      AND content_type = ANY(${[...THUMBNAIL_ACCEPT_IMAGE_TYPES]}::text[])
      AND create_time < now() - interval '1 minute'
      AND id > ${sweepCursor}
    ORDER BY id
    LIMIT ${batchSize}`;
  sweepCursor = pending.length < batchSize ? 0 : pending[pending.length - 1]!.id;
  const queue = queueFor('thumbnail');
  for (const { id } of pending) {
    const jobId = `thumbnail-${id}`;
    const job = await queue.getJob(jobId);
    if (job && (await job.isFailed())) {
      if (Date.now() - (job.finishedOn ?? 0) < retryFailedAfterMs) continue;
      // A job that failed for good is kept, and would make adding its id again a no-op.
      await job.remove();
    }
    // A no-op while the job is waiting, running or recently done.
    await enqueueJob('thumbnail', { attachmentId: id }, jobId);
  }
  return pending.length;
}

export type Sharp = typeof import('sharp');

/** Loads a module once and keeps it; a load that fails is not kept, so the next call tries
 * again (a library installed or fixed since works without a restart). */
export function cachedLoader<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    if (!loaded) {
      const attempt = load();
      loaded = attempt;
      attempt.catch(() => {
        if (loaded === attempt) loaded = undefined;
      });
    }
    return loaded;
  };
}

/** sharp, loaded on first use: the worker thumbnails; the API process loads it only when an
 * avatar is uploaded (actions/avatars.ts), never for anything else. */
export const loadSharp = cachedLoader(() =>
  import('sharp').then((module) => {
    const sharp = ((module as unknown as { default?: Sharp }).default ?? module) as Sharp;
    // Thumbnails are made once per upload; libvips' operation cache would only hold memory.
    sharp.cache(false);
    return sharp;
  }),
);

/** An image sharp will not decode, or should not (Zulip's BadImageError). */
class BadImageError extends Error {}

/** The sharp loaders an accepted type may reach: a PNG is decoded as a PNG, never as
 * whatever else the bytes might also parse as (Zulip blocks every other libvips loader). */
const SHARP_FORMATS: Record<string, string> = {
  'image/gif': 'gif',
  'image/jpeg': 'jpeg',
  'image/png': 'png',
  'image/webp': 'webp',
};

interface Inspected {
  /** As shown: after the EXIF orientation. */
  width: number;
  height: number;
  frames: number;
}

/** Zulip's libvips_check_image with truncated_animation: reads the header only and refuses
 * decompression bombs before anything is decoded. */
async function inspect(sharp: Sharp, bytes: Buffer, contentType: string): Promise<Inspected> {
  let metadata: Awaited<ReturnType<ReturnType<Sharp>['metadata']>>;
  try {
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw new BadImageError('Could not decode image; did you upload an image file?');
  }
  if (metadata.format !== SHARP_FORMATS[contentType] || !metadata.width || !metadata.height)
    throw new BadImageError('Could not decode image; did you upload an image file?');
  // For a multi-page image metadata.height is one page's height.
  const { width, height } = metadata;
  const frames = metadata.pages ?? 1;
  if (
    frames === 1
      ? width * height > IMAGE_BOMB_TOTAL_PIXELS
      : width * height * Math.min(3, frames) > IMAGE_MAX_ANIMATED_PIXELS
  )
    throw new BadImageError('Image size exceeds limit.');
  const rotated = metadata.orientation !== undefined && metadata.orientation >= 5;
  return rotated ? { width: height, height: width, frames } : { width, height, frames };
}

/** One thumbnail: fitted within the format's box, never enlarged. An animated format keeps
 * as many frames as fit in IMAGE_MAX_ANIMATED_PIXELS (Zulip's n=… load option); a still
 * format of an animated image is its first frame. */
async function makeThumbnail(
  sharp: Sharp,
  bytes: Buffer,
  image: Inspected,
  format: ThumbnailFormat,
): Promise<{ data: Buffer; stored: StoredThumbnail }> {
  let pages = 1;
  if (image.frames > 1 && format.animated) {
    const perFrame = image.width * image.height;
    pages =
      perFrame * image.frames < IMAGE_MAX_ANIMATED_PIXELS
        ? -1
        : Math.max(1, Math.floor(IMAGE_MAX_ANIMATED_PIXELS / perFrame));
  }
  let pipeline = sharp(bytes, {
    pages,
    // A second guard on what is decoded (the header was checked already).
    limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS,
    // A truncated or corrupt image is an error, not a half-grey thumbnail.
    failOn: 'error',
  })
    .rotate()
    .resize(format.maxWidth, format.maxHeight, { fit: 'inside', withoutEnlargement: true });
  if (format.extension === 'webp') pipeline = pipeline.webp();
  else if (format.extension === 'jpg') pipeline = pipeline.jpeg();
  else if (format.extension === 'png') pipeline = pipeline.png();
  else pipeline = pipeline.gif();
  const { data, info } = await pipeline.toBuffer({ resolveWithObject: true });
  return {
    data,
    stored: {
      extension: format.extension,
      max_width: format.maxWidth,
      max_height: format.maxHeight,
      animated: format.animated,
      content_type: thumbnailContentType(format.extension),
      width: info.width,
      // An animated output is a strip of pages: its height is one page's.
      height: format.animated && info.pageHeight ? info.pageHeight : info.height,
      byte_size: data.length,
    },
  };
}

/** Stores a thumbnail. A path is never reused, but a run that died after storing and before
 * recording leaves an unrecorded file: nobody serves it, so it is replaced. */
async function storeThumbnail(path: string, data: Buffer, contentType: string): Promise<void> {
  try {
    await storeUpload(path, data, contentType);
  } catch (error) {
    if ((await readUpload(path)) === null) throw error;
    await removeUpload(path);
    await storeUpload(path, data, contentType);
  }
}

/** Removes an upload's stored bytes once its row is deleted (after the commit): the original
 * and every thumbnail recorded in its thumbnail_metadata, so no copy of a deleted image is
 * left behind. An object already gone is fine; every removal is tried, and the first failure
 * is thrown once all have settled. */
export async function removeUploadFiles(pathId: string, thumbnailMetadata: unknown): Promise<void> {
  const results = await Promise.allSettled(
    [pathId, ...storedThumbnailPaths(pathId, thumbnailMetadata)].map((path) => removeUpload(path)),
  );
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}

export interface ThumbnailResult {
  /** Thumbnails made by this run. */
  made: number;
  /** The image could not be decoded (or is too large): it gets no preview. */
  bad: boolean;
  /** Messages whose rendering changed. */
  messagesUpdated: number;
}

/** The `thumbnail` job (Zulip's ensure_thumbnails): makes the missing thumbnails of an
 * uploaded image, records them, and shows them in the messages that link it. An image that
 * cannot be decoded loses its preview instead. Running it again makes nothing new but still
 * brings messages showing the placeholder up to date. */
export async function ensureThumbnails(attachmentId: number): Promise<ThumbnailResult> {
  const log = getLogger();
  const attachment = await getPrisma().attachment.findUnique({ where: { id: attachmentId } });
  if (!attachment) return { made: 0, bad: false, messagesUpdated: 0 };
  // Found bad by an earlier run: this one (the settling run) only takes the preview from
  // messages saved with the placeholder since.
  const alreadyBad = isBadImage(attachment);
  if (!alreadyBad && !isThumbnailable(attachment))
    return { made: 0, bad: false, messagesUpdated: 0 };
  let inspected: Inspected | null = null;
  const made: { path: string; stored: StoredThumbnail }[] = [];
  let bad = alreadyBad;
  const needed =
    alreadyBad || attachment.frames === null
      ? null
      : missingThumbnails(attachment, attachment.frames);
  if (!alreadyBad && (needed === null || needed.length > 0)) {
    const bytes = await readUpload(attachment.pathId);
    const sharp = await loadSharp();
    try {
      // The file is gone (the upload being deleted): there is nothing to preview either.
      if (!bytes) throw new BadImageError('File not found');
      inspected = await inspect(sharp, bytes, attachment.contentType!);
      for (const format of missingThumbnails(attachment, inspected.frames)) {
        let thumbnail: Awaited<ReturnType<typeof makeThumbnail>>;
        try {
          thumbnail = await makeThumbnail(sharp, bytes, inspected, format);
        } catch (error) {
          // sharp's errors are plain Errors: while decoding, they mean a corrupt or truncated
          // image.
          throw new BadImageError((error as Error).message);
        }
        const { data, stored } = thumbnail;
        const path = thumbnailPath(attachment.pathId, format);
        await storeThumbnail(path, data, stored.content_type);
        made.push({ path, stored });
      }
    } catch (error) {
      if (!(error instanceof BadImageError)) throw error;
      log.warn('image could not be thumbnailed', {
        attachment_id: attachment.id,
        content_type: attachment.contentType,
        size: attachment.size,
        error: (error as Error).message,
      });
      // Thumbnails made before a later format failed are kept, as Zulip does; an image
      // none was ever made of is not an image to preview.
      bad = made.length === 0 && storedThumbnails(attachment.thumbnailMetadata) === null;
    }
  }
  const result = await runAction(async (ctx) => {
    // The row, locked: another run (or a deletion) waits for this one. NO KEY UPDATE, not
    // UPDATE: a message being sent or edited holds KEY SHARE on the uploads it links while it
    // waits for its own row, which this run then locks.
    const rows = await ctx.tx.$queryRaw<{ id: number }[]>`
      SELECT id FROM attachment WHERE id = ${attachment.id} FOR NO KEY UPDATE`;
    if (rows.length === 0) return null;
    const current = await ctx.tx.attachment.findUniqueOrThrow({ where: { id: attachment.id } });
    if (bad) {
      // Zulip deletes the ImageAttachment row; here the upload stops being an image.
      if (!alreadyBad)
        await ctx.tx.attachment.update({
          where: { id: current.id },
          data: { width: null, height: null, frames: null },
        });
      return { messagesUpdated: await rewriteMessages(ctx, current.pathId, null) };
    }
    const stored = storedThumbnails(current.thumbnailMetadata);
    const recorded = new Set((stored ?? []).map((s) => formatName(storedThumbnailFormat(s))));
    const added = made
      .map((m) => m.stored)
      .filter((s) => !recorded.has(formatName(storedThumbnailFormat(s))));
    const metadata = [...(stored ?? []), ...added];
    const updated =
      inspected || added.length > 0
        ? await ctx.tx.attachment.update({
            where: { id: current.id },
            data: {
              ...(inspected
                ? { width: inspected.width, height: inspected.height, frames: inspected.frames }
                : {}),
              thumbnailMetadata: metadata as unknown as object,
            },
          })
        : current;
    const preview = uploadPreview(updated);
    if (!preview?.thumbnail) return { messagesUpdated: 0 };
    return { messagesUpdated: await rewriteMessages(ctx, updated.pathId, preview) };
  });
  if (result === null) {
    // Deleted while the thumbnails were made: they belong to nothing.
    await Promise.all(made.map((m) => removeUpload(m.path)));
    return { made: 0, bad: false, messagesUpdated: 0 };
  }
  // Made thumbnails or found the image bad just now: a message rendered with the placeholder
  // before this commit and saved after it is brought up to date by a settling run.
  if (made.length > 0 || (bad && !alreadyBad))
    await enqueueJob(
      'thumbnail',
      { attachmentId: attachment.id },
      `thumbnail-${attachment.id}-settle`,
      { delayMs: THUMBNAIL_SETTLE_DELAY_MS },
    );
  return { made: made.length, bad, messagesUpdated: result.messagesUpdated };
}

const PLACEHOLDER_PREVIEW =
  /<div class="message_inline_image"><a href="([^"]*)"(?: title="[^"]*")?>(<img class="image-loading-placeholder"[^>]*>)<\/a><\/div>/g;

function unescapeHtml(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The upload path id an inline preview's link points at (as the Markdown reads it). */
function linkedPathId(href: string): string | null {
  const url = unescapeHtml(href);
  if (!url.startsWith('/user_uploads/')) return null;
  try {
    return decodeURIComponent(url.slice('/user_uploads/'.length));
  } catch {
    return null;
  }
}

/** Zulip's rewrite_thumbnailed_images for one upload: its placeholders become the thumbnail,
 * or, for an image that turned out bad, its previews go. Null when nothing changed (the
 * message shows it already, or another image's placeholder only). */
export function rewriteThumbnailedImages(
  html: string,
  pathId: string,
  preview: ThumbnailSourcePreview | null,
): string | null {
  let changed = false;
  const rewritten = html.replace(PLACEHOLDER_PREVIEW, (whole, href: string, img: string) => {
    if (linkedPathId(href) !== pathId) return whole;
    changed = true;
    return preview === null ? '' : whole.replace(img, uploadImageTag(preview));
  });
  // Trimmed as a rendering is (a removed preview may leave the paragraph's newline last).
  return changed ? rewritten.trim() : null;
}

type ThumbnailSourcePreview = NonNullable<ReturnType<typeof uploadPreview>>;

/** Rewrites the messages linking the upload and tells their readers (Zulip's
 * do_update_embedded_data: update_message with rendering_only, user_id null, the message's
 * content and new rendered_content, to each user with a copy, with their flags). */
async function rewriteMessages(
  ctx: ActionContext,
  pathId: string,
  preview: ThumbnailSourcePreview | null,
): Promise<number> {
  const { tx } = ctx;
  const messages = await lockLinkingMessages(tx, pathId);
  let updated = 0;
  const timestamp = Math.floor(Date.now() / 1000);
  for (const message of messages) {
    const html = rewriteThumbnailedImages(message.rendered_content ?? '', pathId, preview);
    if (html === null) continue;
    updated += 1;
    await tx.message.update({
      where: { id: message.id },
      data: {
        renderedContent: html,
        hasImage: html.includes('<div class="message_inline_image">'),
      },
    });
    const event = {
      type: 'update_message',
      user_id: null,
      edit_timestamp: timestamp,
      message_id: message.id,
      message_ids: [message.id],
      content: message.content,
      rendered_content: html,
      rendering_only: true,
    };
    const copies = await tx.userMessage.findMany({
      where: { messageId: message.id },
      select: { userId: true, flags: true },
    });
    const byFlags = new Map<string, number[]>();
    for (const copy of copies) {
      const key = JSON.stringify(flagNames(copy.flags));
      byFlags.set(key, [...(byFlags.get(key) ?? []), copy.userId]);
    }
    for (const [flags, users] of byFlags)
      sendEventOnCommit(ctx, { ...event, flags: JSON.parse(flags) as string[] }, users);
  }
  return updated;
}

/** The messages that link the upload, locked in id order (as edits lock them), so a
 * concurrent edit either precedes this rewrite or sees its result. */
async function lockLinkingMessages(
  tx: Tx,
  pathId: string,
): Promise<{ id: number; content: string; rendered_content: string | null }[]> {
  return tx.$queryRaw`
    SELECT m.id, m.content, m.rendered_content FROM message m
    JOIN attachment_messages am ON am.message_id = m.id
    JOIN attachment a ON a.id = am.attachment_id
    WHERE a.path_id = ${pathId}
    ORDER BY m.id
    FOR NO KEY UPDATE OF m`;
}
