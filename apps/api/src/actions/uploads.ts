// Uploads (spec 4.22, Zulip's upload_message_attachment and do_claim_attachments): files are
// stored first, then recorded; a message that links an upload shares it with its readers.
import { randomBytes } from 'node:crypto';
import { imageSize } from 'image-size';
import { lookup as lookupType } from 'mime-types';
import type { ActionContext, Message, Realm, User } from '@parley/db';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { isStorableText } from '@parley/http';
import { getLogger } from '@parley/logger';
import { getRedis, uploadTokenKey } from '@parley/events';
import { sendEventOnCommit } from '../lib/events';
import {
  attachmentByPathId,
  canAccessAttachment,
  linkedPathIds,
  newPathId,
  attachmentObject,
  sanitizeFileName,
  uploadSpaceUsed,
  type Attachment,
} from '../lib/attachments';
import { removeUpload, storeUpload } from '../lib/upload-store';
import { queueThumbnailOnCommit, removeUploadFiles } from './thumbnails';
import {
  checkFileSize,
  checkUploadWithinQuota,
  lockUploadQuota,
  maxFileUploadSizeMib,
  uploadQuotaMib,
} from '../lib/upload-limits';

export interface UploadedFile {
  originalname: string;
  mimetype: string;
  buffer: Buffer;
  size: number;
}

// Only these are previewed inline; anything else is a plain link.
const PREVIEWABLE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp']);

/** Size and real content type of a previewable image, or null. */
function inspectImage(
  file: UploadedFile,
): { width: number; height: number; contentType: string } | null {
  try {
    const size = imageSize(file.buffer);
    const contentType = size.type === 'jpg' ? 'image/jpeg' : `image/${size.type}`;
    if (!PREVIEWABLE.has(contentType) || !size.width || !size.height) return null;
    return { width: size.width, height: size.height, contentType };
  } catch {
    return null;
  }
}

/** The name an upload keeps (Zulip's get_file_info): the client's, percent-decoded; only its
 * URL path is sanitized (newPathId). Text Postgres cannot hold, or none, is the sanitized
 * name instead. */
function uploadedFileName(original: string): string {
  let name = original;
  try {
    name = decodeURIComponent(original);
  } catch {
    // Not percent-encoded (a lone "%"): kept as sent, as Python's unquote does.
  }
  return name !== '' && isStorableText(name) ? name : sanitizeFileName(original);
}

/** The type the client declared, or (Zulip's get_file_info) the one its name suggests when it
 * declared none. A multipart part without a Content-Type reaches us as text/plain (RFC 7578's
 * default, which busboy applies): the Python client sends its files so, and a PDF would be
 * served as text. So text/plain counts as undeclared when the name says otherwise. */
function declaredType(mimetype: string, fileName: string): string {
  if (mimetype !== '' && mimetype !== 'text/plain' && mimetype !== 'application/octet-stream')
    return mimetype;
  return lookupType(fileName) || mimetype || 'application/octet-stream';
}

/** `pathId`: the path id to store the file at, chosen by the caller (the tus endpoint names it
 * in its claim before the row exists); a new one by default. */
export async function doUploadFile(
  user: User,
  realm: Realm,
  file: UploadedFile,
  options: { pathId?: string } = {},
): Promise<Attachment> {
  const fileName = uploadedFileName(file.originalname);
  const pathId = options.pathId ?? newPathId(realm.id, fileName);
  const image = inspectImage(file);
  // The content type decides how the file is served: an image's comes from its bytes, and a
  // claimed image type that is not one is not believed.
  const claimed = declaredType(file.mimetype, fileName);
  const contentType =
    image?.contentType ?? (claimed.startsWith('image/') ? 'application/octet-stream' : claimed);
  // The organization's limits (lib/upload-limits): checked before storing anything, and the
  // quota again under its lock with the row's insert, so racing uploads cannot overshoot it.
  checkFileSize(realm, file.size);
  await checkUploadWithinQuota(realm, file.size);
  await storeUpload(pathId, file.buffer);
  try {
    return await runAction(async (ctx) => {
      await lockUploadQuota(ctx.tx, realm.id);
      await checkUploadWithinQuota(realm, file.size, { db: ctx.tx });
      const attachment = await ctx.tx.attachment.create({
        data: {
          realmId: realm.id,
          ownerId: user.id,
          fileName,
          pathId,
          size: file.size,
          contentType,
          width: image?.width ?? null,
          height: image?.height ?? null,
        },
      });
      await sendAttachmentEvent(ctx, 'add', attachment);
      // Its thumbnails are made in the background (worker tier), once the row is committed.
      queueThumbnailOnCommit(ctx, attachment);
      return attachment;
    });
  } catch (error) {
    // Only bytes no row names: a COMMIT whose acknowledgement was lost did store the row,
    // and a caller that finds it (the tus endpoint's retry) must find the file too. When
    // that cannot be known (the database is what failed), the bytes stay: a stray file costs
    // space, a row naming a missing file loses the upload.
    const named = await attachmentByPathId(pathId).then(
      (row) => row !== null,
      (lookupError: unknown) => {
        getLogger().warn('upload kept: could not tell whether a row names it', {
          pathId,
          error: lookupError,
        });
        return true;
      },
    );
    if (!named) await removeUpload(pathId);
    throw error;
  }
}

/** Zulip's do_delete_old_unclaimed_attachments for one file, on request (DELETE
 * /attachments/{id}): the owner's only; the bytes (with the thumbnails) go once the row is
 * gone. */
export async function doRemoveAttachment(
  ctx: ActionContext,
  user: User,
  attachmentId: number,
): Promise<void> {
  const attachment = await ctx.tx.attachment.findFirst({
    where: { id: attachmentId, ownerId: user.id },
  });
  if (!attachment) throw new JsonableError('Invalid attachment');
  // As deleted: a thumbnail recorded since the lookup above is in this row too.
  const deleted = await ctx.tx.attachment.delete({ where: { id: attachment.id } });
  sendEventOnCommit(
    ctx,
    {
      type: 'attachment',
      op: 'remove',
      attachment: { id: attachment.id },
      upload_space_used: await uploadSpaceUsed(attachment.realmId, ctx.tx),
    },
    [user.id],
  );
  // The original and its thumbnails: no copy of a deleted image is left.
  ctx.onCommit(() => removeUploadFiles(deleted.pathId, deleted.thumbnailMetadata));
}

async function sendAttachmentEvent(
  ctx: ActionContext,
  op: 'add' | 'update',
  attachment: Attachment,
): Promise<void> {
  sendEventOnCommit(
    ctx,
    {
      type: 'attachment',
      op,
      attachment: await attachmentObject(attachment, ctx.tx),
      upload_space_used: await uploadSpaceUsed(attachment.realmId, ctx.tx),
    },
    [attachment.ownerId],
  );
}

export interface AttachmentLinks {
  /** Whether the message links any upload (Message.has_attachment). */
  linked: boolean;
  /** The sender's uploads this change unlinked that no message links any more (Zulip's
   * detached_uploads, offered for deletion). */
  detached: Attachment[];
}

/** Zulip's do_claim_attachments and check_attachment_reference_change: links the uploads
 * `content` refers to that the sender may share (their own, or ones they can open) and drops
 * links the content no longer has. Who may open an upload follows from the messages that
 * link it (lib/attachments canAccessAttachment). */
export async function doUpdateAttachmentLinks(
  ctx: ActionContext,
  sender: User,
  message: Pick<Message, 'id'>,
  content: string,
): Promise<AttachmentLinks> {
  const { tx } = ctx;
  const pathIds = linkedPathIds(content);
  const dropped = await tx.attachmentMessage.findMany({
    where: { messageId: message.id, attachment: { pathId: { notIn: pathIds } } },
    select: { attachmentId: true },
  });
  let detached: Attachment[] = [];
  if (dropped.length > 0) {
    const ids = dropped.map((row) => row.attachmentId);
    await tx.attachmentMessage.deleteMany({
      where: { messageId: message.id, attachmentId: { in: ids } },
    });
    detached = await tx.attachment.findMany({
      where: { id: { in: ids }, ownerId: sender.id, messages: { none: {} } },
      orderBy: { id: 'asc' },
    });
  }
  let linked = false;
  if (pathIds.length > 0) {
    // Held until commit: the upload clean-up (actions/upload-cleanup.ts) cannot delete an
    // upload this message is linking, and one it already deleted is simply not found here
    // (instead of a foreign-key failure on the link).
    await tx.$queryRaw`SELECT id FROM attachment
      WHERE realm_id = ${sender.realmId} AND path_id = ANY(${pathIds}::text[]) FOR KEY SHARE`;
    const attachments = await tx.attachment.findMany({
      where: { realmId: sender.realmId, pathId: { in: pathIds } },
    });
    for (const attachment of attachments) {
      if (!(await canAccessAttachment(sender, attachment, tx))) continue;
      linked = true;
      const created = await tx.attachmentMessage.createMany({
        data: [{ attachmentId: attachment.id, messageId: message.id }],
        skipDuplicates: true,
      });
      if (created.count > 0) await sendAttachmentEvent(ctx, 'update', attachment);
    }
  }
  return { linked, detached };
}

/** How long a temporary file URL works (Zulip's get-file-temporary-url: a minute). */
const TEMPORARY_URL_SECONDS = 60;

/** A token under which anyone may fetch the file for a minute (the caller checked access). */
export async function doCreateTemporaryUploadToken(attachment: {
  pathId: string;
}): Promise<string> {
  const token = randomBytes(24).toString('base64url');
  await getRedis().set(uploadTokenKey(token), attachment.pathId, 'EX', TEMPORARY_URL_SECONDS);
  return token;
}

export interface RealmUploadLimits {
  /** GiB; null: the server's UPLOAD_QUOTA_GB (none if unset). */
  uploadQuotaGb?: number | null;
  /** MiB; null: the server's MAX_FILE_UPLOAD_SIZE_MIB (also the most it can be). */
  maxFileUploadSizeMib?: number | null;
}

/** Sets the organization's upload quota and file size limit (`pnpm manage set-upload-limits`;
 * Zulip's change with the plan type) and tells its users with Zulip's realm update_dict event
 * (feature level 306), which carries both as clients see them. */
export async function doSetRealmUploadLimits(
  ctx: ActionContext,
  realm: Realm,
  limits: RealmUploadLimits,
): Promise<Realm> {
  const updated = await ctx.tx.realm.update({ where: { id: realm.id }, data: limits });
  const users = await ctx.tx.user.findMany({
    where: { realmId: realm.id, isActive: true },
    select: { id: true },
  });
  sendEventOnCommit(
    ctx,
    {
      type: 'realm',
      op: 'update_dict',
      property: 'default',
      data: {
        upload_quota_mib: uploadQuotaMib(updated),
        max_file_upload_size_mib: maxFileUploadSizeMib(updated),
      },
    },
    users.map((user) => user.id),
  );
  return updated;
}
