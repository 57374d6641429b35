// Zulip's delete_old_unclaimed_attachments (a daily cron there, a periodic job here): an upload
// that no message links, nor a scheduled message waiting to be sent, is deleted, file and row,
// once older than the grace period (UNCLAIMED_UPLOADS_RETENTION_WEEKS, Zulip's 5 weeks). That
// covers uploads never sent and uploads whose every linking message was deleted or edited
// away: deleting a message drops its attachment_messages rows (ON DELETE CASCADE), leaving the
// row as if never claimed. Zulip keeps the files of deleted messages while its archive keeps
// the messages; Parley has no archive, so they follow the same rule as any unclaimed upload.
import { getConfig } from '@parley/config';
import { Prisma, runAction, type ActionContext } from '@parley/db';
import { getLogger } from '@parley/logger';
import { sendEventOnCommit } from '../lib/events';
import { uploadSpaceUsed } from '../lib/attachments';
import { removeUploadFiles } from './thumbnails';

/** Uploads deleted per run (one transaction): a backlog is worked off run after run. */
export const UPLOAD_CLEANUP_BATCH_SIZE = 1000;

const WEEK_MS = 7 * 24 * 3600 * 1000;

/** No message links upload `a`, and no scheduled message of its owner waiting to be sent
 * mentions it (Zulip links scheduled messages to attachments too; here their content is
 * matched on the path id's random part, which the link has whatever the name's encoding). */
const UNCLAIMED = Prisma.sql`
  NOT EXISTS (SELECT FROM attachment_messages am WHERE am.attachment_id = a.id)
  AND NOT EXISTS (
    SELECT FROM scheduled_message sm
    WHERE sm.sender_id = a.owner_id AND NOT sm.delivered
      AND strpos(sm.content, split_part(a.path_id, '/', 3)) > 0)`;

export interface UploadCleanupOptions {
  /** Unclaimed uploads created before this are deleted (default: the configured number of
   * weeks ago). */
  createdBefore?: Date;
  batchSize?: number;
}

interface DeletedUpload {
  id: number;
  realm_id: number;
  owner_id: number;
  path_id: string;
  thumbnail_metadata: unknown;
}

/** Deletes up to `batchSize` unclaimed uploads created before the cutoff and tells each owner
 * (an `attachment` remove event, as DELETE /attachments/{id} sends). Safe to run twice at once
 * or again after a failure: each run locks the rows it takes and skips rows another run holds;
 * a row is deleted only if, once locked, no message links it (a link committed meanwhile keeps
 * it, and a link cannot be added while the row is locked); files go after the commit, and a
 * file already gone is fine. Returns how many uploads it deleted. */
export async function deleteOldUnclaimedUploads({
  createdBefore = new Date(Date.now() - getConfig().UNCLAIMED_UPLOADS_RETENTION_WEEKS * WEEK_MS),
  batchSize = UPLOAD_CLEANUP_BATCH_SIZE,
}: UploadCleanupOptions = {}): Promise<number> {
  return runAction(async (ctx) => {
    const candidates = await ctx.tx.$queryRaw<{ id: number }[]>`
      SELECT a.id FROM attachment a
      WHERE a.create_time < ${createdBefore} AND ${UNCLAIMED}
      ORDER BY a.id
      LIMIT ${batchSize}
      FOR UPDATE OF a SKIP LOCKED`;
    if (candidates.length === 0) return 0;
    // A new statement, so a new snapshot: a link committed after the first one was taken but
    // before the lock is seen here and keeps its upload.
    const deleted = await ctx.tx.$queryRaw<DeletedUpload[]>`
      DELETE FROM attachment a
      WHERE a.id = ANY(${candidates.map((row) => row.id)}::int[]) AND ${UNCLAIMED}
      RETURNING a.id, a.realm_id, a.owner_id, a.path_id, a.thumbnail_metadata`;
    await notifyOwners(ctx, deleted);
    ctx.onCommit(() => removeFiles(deleted));
    return deleted.length;
  });
}

async function notifyOwners(ctx: ActionContext, deleted: DeletedUpload[]): Promise<void> {
  const spaceUsed = new Map<number, number>();
  for (const upload of deleted) {
    let used = spaceUsed.get(upload.realm_id);
    if (used === undefined) {
      used = await uploadSpaceUsed(upload.realm_id, ctx.tx);
      spaceUsed.set(upload.realm_id, used);
    }
    sendEventOnCommit(
      ctx,
      {
        type: 'attachment',
        op: 'remove',
        attachment: { id: upload.id },
        upload_space_used: used,
      },
      [upload.owner_id],
    );
  }
}

/** Each upload's original and thumbnails. One failure does not stop the others; a file left
 * behind has no row any more and is only disk space (logged with its path id). */
async function removeFiles(deleted: DeletedUpload[]): Promise<void> {
  const results = await Promise.allSettled(
    deleted.map((upload) => removeUploadFiles(upload.path_id, upload.thumbnail_metadata)),
  );
  results.forEach((result, index) => {
    if (result.status === 'rejected')
      getLogger().warn('removing an unclaimed upload failed', {
        path_id: deleted[index]!.path_id,
        error: result.reason as unknown,
      });
  });
}
