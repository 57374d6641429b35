// Uploaded files (Zulip's Attachment): names and path ids, who may open one, and the
// attachment objects of `attachment` events.
import { randomBytes } from 'node:crypto';
import { getPrisma, Role, type Tx, type User } from '@parley/db';

// `Prisma.Attachment` without importing the generated namespace everywhere.
export type Attachment = NonNullable<Awaited<ReturnType<Tx['attachment']['findUnique']>>>;

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
  return [...new Set([...content.matchAll(UPLOAD_LINK)].map((m) => decodePath(m[1]!)))];
}

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** Zulip's validate_attachment_request: the owner; any non-guest once a public-channel
 * message links it; whoever received a message linking it; subscribers of a channel with
 * shared history where it was linked. */
export async function canAccessAttachment(
  user: User,
  attachment: Attachment,
  db: Tx = getPrisma(),
): Promise<boolean> {
  if (attachment.realmId !== user.realmId) return false;
  if (attachment.ownerId === user.id) return true;
  if (attachment.isRealmPublic && user.role !== Role.GUEST) return true;
  const received = await db.userMessage.findFirst({
    where: { userId: user.id, message: { attachments: { some: { attachmentId: attachment.id } } } },
    select: { messageId: true },
  });
  if (received) return true;
  const shared = await db.$queryRaw<{ found: number }[]>`
    SELECT 1 AS found
    FROM attachment_messages am
    JOIN message m ON m.id = am.message_id
    JOIN stream s ON s.recipient_id = m.recipient_id AND s.history_public_to_subscribers
    JOIN subscription sub ON sub.recipient_id = m.recipient_id
      AND sub.user_profile_id = ${user.id} AND sub.active
    WHERE am.attachment_id = ${attachment.id}
    LIMIT 1`;
  return shared.length > 0;
}

/** The attachment object of `attachment` events and GET /attachments. */
export async function presentAttachment(
  attachment: Attachment,
  db: Tx = getPrisma(),
): Promise<Record<string, unknown>> {
  const links = await db.attachmentMessage.findMany({
    where: { attachmentId: attachment.id },
    select: { message: { select: { id: true, dateSent: true } } },
    orderBy: { messageId: 'asc' },
  });
  return {
    id: attachment.id,
    name: attachment.fileName,
    path_id: attachment.pathId,
    size: attachment.size,
    create_time: attachment.createTime.getTime(),
    messages: links.map(({ message }) => ({
      id: message.id,
      date_sent: message.dateSent.getTime(),
    })),
  };
}

/** Bytes of everything the organization has uploaded (upload_space_used). */
export async function uploadSpaceUsed(realmId: number, db: Tx = getPrisma()): Promise<number> {
  const total = await db.attachment.aggregate({ where: { realmId }, _sum: { size: true } });
  return total._sum.size ?? 0;
}
