// Attachment rows → Zulip's attachment objects (attachment events, detached_uploads).
import type { Prisma } from '@parley/db';

export type Attachment = Prisma.AttachmentGetPayload<object>;

export function presentAttachment(
  attachment: Attachment,
  messages: { id: number; dateSent: Date }[],
): Record<string, unknown> {
  return {
    id: attachment.id,
    name: attachment.fileName,
    path_id: attachment.pathId,
    size: attachment.size,
    create_time: attachment.createTime.getTime(),
    messages: messages.map((message) => ({
      id: message.id,
      date_sent: message.dateSent.getTime(),
    })),
  };
}
