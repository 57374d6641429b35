// Uploaded files (Zulip's Attachment): names and path ids, who may open one, and the
// attachment objects of `attachment` events.
import { getRedis, uploadTokenKey } from '@parley/events';
import { randomBytes } from 'node:crypto';
import { getPrisma, Role, type Tx, type User } from '@parley/db';
import { FileAccessDeniedError, ResourceNotFoundError } from '@parley/errors';
import { isStorableText } from '@parley/http';
import { presentAttachment, type Attachment } from '../presenters/attachments';
import { groupIdsOfUser } from './groups';

export type { Attachment } from '../presenters/attachments';

const MAX_NAME_LENGTH = 200;

/** Zulip's sanitize_name: letters, digits, `_`, `.` and `-`, with runs of spaces and dashes
 * as one dash; never empty, `.` or `..`. Long names keep their extension. */
export function sanitizeFileName(name: string): string {
  let value = name
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}\p{M}_\s.-]/gu, '')
    .trim()
    .replace(/[-\s]+/g, '-');
  if (value.length > MAX_NAME_LENGTH) {
    const dot = value.lastIndexOf('.');
    const extension = dot > 0 && value.length - dot <= 10 ? value.slice(dot) : '';
    value = value.slice(0, MAX_NAME_LENGTH - extension.length) + extension;
  }
  return value === '' || value === '.' || value === '..' ? 'uploaded-file' : value;
}

/** `{realm}/{two hex digits}/{24 random characters}/{name}`, as Zulip's local uploads. */
export function newPathId(realmId: number, fileName: string): string {
  return [
    realmId,
    randomBytes(1).toString('hex'),
    randomBytes(18).toString('base64url'),
    sanitizeFileName(fileName),
  ].join('/');
}

const UPLOAD_LINK = /\/user_uploads\/(\d+\/[0-9a-f]{2}\/[\w-]{24}\/[^\s"'()<>[\]]+)/g;

/** Path ids of the uploads a message's content links to (Zulip's
 * potential_attachment_path_ids). */
export function linkedPathIds(content: string): string[] {
  const ids = [...content.matchAll(UPLOAD_LINK)].map((m) => decodePath(m[1]!));
  // A decoded %00 or broken UTF-8 cannot be one of our path ids (nor reach Postgres).
  return [...new Set(ids.filter(isStorableText))];
}

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** Zulip's validate_attachment_request: the owner; any non-guest while a message linking it
 * is in a public channel (archived or not); whoever received a direct message linking it; in
 * a channel, its subscribers who received the message or, with shared history, all of them,
 * and likewise the members of the groups that may subscribe to it or add subscribers.
 * Worked out from where the messages and subscriptions are now: moving a message to a private
 * channel, making its channel private or leaving it narrows access at once. */
export async function canAccessAttachment(
  user: User,
  attachment: Attachment,
  db: Tx = getPrisma(),
): Promise<boolean> {
  if (attachment.realmId !== user.realmId) return false;
  if (attachment.ownerId === user.id) return true;
  const isGuest = user.role === Role.GUEST;
  // Guests get no content access through groups (Zulip's can_subscribe_group and
  // can_add_subscribers_group never include them).
  const groups = isGuest ? [] : [...(await groupIdsOfUser(user.id))];
  const found = await db.$queryRaw<{ found: number }[]>`
    SELECT 1 AS found
    FROM attachment_messages am
    JOIN message m ON m.id = am.message_id
    LEFT JOIN stream s ON s.recipient_id = m.recipient_id
    LEFT JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${user.id}
    LEFT JOIN subscription sub ON sub.recipient_id = m.recipient_id
      AND sub.user_profile_id = ${user.id} AND sub.active
    WHERE am.attachment_id = ${attachment.id}
      AND (
        (s.id IS NULL AND um.message_id IS NOT NULL)
        OR (s.id IS NOT NULL AND NOT s.invite_only AND NOT ${isGuest})
        OR ((sub.id IS NOT NULL
              OR s.can_subscribe_group_id = ANY(${groups}::int[])
              OR s.can_add_subscribers_group_id = ANY(${groups}::int[]))
            AND (s.history_public_to_subscribers OR um.message_id IS NOT NULL))
      )
    LIMIT 1`;
  return found.length > 0;
}

/** Path ids are the server's own: text that could not be one (null bytes, broken UTF-16,
 * absurd lengths) is simply not found, and never reaches the database. */
function plausiblePathId(pathId: string): boolean {
  return pathId.length <= 1000 && isStorableText(pathId);
}

/** Zulip's validate_attachment_request for a path id: the attachment, or 404 / 403. */
export async function accessAttachmentByPath(user: User, pathId: string): Promise<Attachment> {
  if (!plausiblePathId(pathId)) throw new ResourceNotFoundError('File not found');
  const attachment = await getPrisma().attachment.findUnique({ where: { pathId } });
  if (!attachment || attachment.realmId !== user.realmId)
    throw new ResourceNotFoundError('File not found');
  if (!(await canAccessAttachment(user, attachment))) throw new FileAccessDeniedError();
  return attachment;
}

/** The attachment object with the messages that link it now. */
export async function attachmentObject(
  attachment: Attachment,
  db: Tx = getPrisma(),
): Promise<Record<string, unknown>> {
  const links = await db.attachmentMessage.findMany({
    where: { attachmentId: attachment.id },
    select: { message: { select: { id: true, dateSent: true } } },
    orderBy: { messageId: 'asc' },
  });
  return presentAttachment(
    attachment,
    links.map((link) => link.message),
  );
}

/** Bytes of everything the organization has uploaded (upload_space_used). */
export async function uploadSpaceUsed(realmId: number, db: Tx = getPrisma()): Promise<number> {
  const total = await db.attachment.aggregate({ where: { realmId }, _sum: { size: true } });
  return total._sum.size ?? 0;
}

/** The user's uploads with the messages linking each (GET /attachments). */
export async function attachmentsOf(userId: number) {
  return getPrisma().attachment.findMany({
    where: { ownerId: userId },
    orderBy: { id: 'asc' },
    include: {
      messages: {
        select: { message: { select: { id: true, dateSent: true } } },
        orderBy: { messageId: 'asc' },
      },
    },
  });
}

export async function attachmentByPathId(pathId: string): Promise<Attachment | null> {
  return getPrisma().attachment.findUnique({ where: { pathId } });
}

/** The file a temporary URL's token names, while the token lives. */
export async function attachmentByTemporaryToken(token: string): Promise<Attachment | null> {
  const pathId = token.length <= 64 ? await getRedis().get(uploadTokenKey(token)) : null;
  return pathId ? attachmentByPathId(pathId) : null;
}
