// Data exports (Zulip's zerver/views/realm_export.py and zerver/actions/realm_export.py): an
// administrator asks for one, the worker makes it (the `realm-export` job, Zulip's
// deferred_work) and stores its tarball where the upload store keeps files, the Notification
// Bot tells the administrator, and administrators may delete it. Every change of an export's
// state reaches the organization's human administrators as a realm_export event with the whole
// list.
import { randomBytes } from 'node:crypto';
import {
  AuditLogEvent,
  getPrisma,
  runAction,
  type ActionContext,
  type Realm,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { enqueueJob, jobIsRunning, removeIfFailed, supportAddress } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { sendEventOnCommit } from '../lib/events';
import { buildRealmExport } from '../lib/realm-export-data';
import {
  consentExportIsUsable,
  ExportStatus,
  ExportType,
  exportStorePath,
  publicExportIsUsable,
  realmExportsOf,
  type ExportTypeValue,
} from '../lib/realm-exports';
import { removeUpload, storeUpload } from '../lib/upload-store';
import { humanAdminIds } from '../lib/users';
import { auditRealmChange } from './audit';
import { sendBotDirectMessage } from './system-bots';

/** Zulip's limits on exports asked for through the API: five a week per organization, and
 * organizations whose history or uploads are this large are exported by the server's
 * administrator instead. Zulip allows 20 GiB of uploads; the worker here builds the tarball
 * in its memory, which bounds them lower. */
export const EXPORT_LIMIT = 5;
export const MAX_MESSAGE_HISTORY = 250_000;
export const MAX_UPLOAD_BYTES = 1024 ** 3;
const EXPORT_LIMIT_DAYS = 7;

const jobId = (exportId: number) => `realm-export-${exportId}`;

/** The export list reaches the organization's human administrators (Zulip's
 * notify_realm_export), as it stands when the transaction commits. */
async function notifyRealmExport(ctx: ActionContext, realm: Realm): Promise<void> {
  sendEventOnCommit(
    ctx,
    { type: 'realm_export', exports: await realmExportsOf(realm, ctx.tx) },
    await humanAdminIds(realm.id, ctx.tx),
  );
}

/** Zulip's refusals of POST /export/realm other than the week's count. Counting stops at the
 * limit: an organization far over it is refused as quickly as one just over. */
async function checkExportable(ctx: ActionContext, realm: Realm, type: ExportTypeValue) {
  const counted =
    type === ExportType.PUBLIC
      ? ctx.tx.$queryRaw<[{ messages: number }]>`
          SELECT count(*)::int AS messages FROM (
            SELECT 1 FROM message
            WHERE realm_id = ${realm.id} AND recipient_id IN (
              SELECT recipient_id FROM stream WHERE realm_id = ${realm.id} AND NOT invite_only)
            LIMIT ${MAX_MESSAGE_HISTORY + 1}) m`
      : ctx.tx.$queryRaw<[{ messages: number }]>`
          SELECT count(*)::int AS messages FROM (
            SELECT 1 FROM message WHERE realm_id = ${realm.id}
            LIMIT ${MAX_MESSAGE_HISTORY + 1}) m`;
  const [{ messages }] = await counted;
  const uploaded = await ctx.tx.attachment.aggregate({
    where: { realmId: realm.id },
    _sum: { size: true },
  });
  if (messages > MAX_MESSAGE_HISTORY || Number(uploaded._sum.size ?? 0) > MAX_UPLOAD_BYTES)
    throw new JsonableError(
      `The export you requested is too large for automatic processing. Please request a manual export by contacting ${supportAddress()}.`,
    );

  if (type === ExportType.FULL_WITH_CONSENT && !(await consentExportIsUsable(realm.id, ctx.tx)))
    throw new JsonableError(
      'Make sure at least one Organization Owner is consenting to the export ' +
        `or contact ${supportAddress()} for help.`,
    );
  if (type === ExportType.PUBLIC && !(await publicExportIsUsable(realm.id, ctx.tx)))
    throw new JsonableError(
      'Make sure at least one Organization Owner allows other Administrators to see their ' +
        `email address or contact ${supportAddress()} for help`,
    );
}

/** POST /export/realm: Zulip's checks, then the export's row and its job; returns its id. */
export async function doRequestRealmExport(
  ctx: ActionContext,
  actor: User,
  realm: Realm,
  type: ExportTypeValue,
): Promise<number> {
  // The week's count first, as in Zulip; again under the organization's lock, so that two
  // requests at once do not both pass it (the lock is taken after the slower checks and held
  // only for the count and the insert).
  const since = new Date(Date.now() - EXPORT_LIMIT_DAYS * 86_400_000);
  const checkRecent = async () => {
    const recent = await ctx.tx.realmExport.count({
      where: { realmId: realm.id, dateRequested: { gte: since } },
    });
    if (recent >= EXPORT_LIMIT) throw new JsonableError('Exceeded rate limit.');
  };
  await checkRecent();
  await checkExportable(ctx, realm, type);
  await ctx.tx.$queryRaw`SELECT id FROM realm WHERE id = ${realm.id} FOR NO KEY UPDATE`;
  await checkRecent();

  const row = await ctx.tx.realmExport.create({
    data: { realmId: realm.id, type, actingUserId: actor.id, status: ExportStatus.REQUESTED },
  });
  await notifyRealmExport(ctx, realm);
  ctx.onCommit(() => enqueueJob('realm-export', { exportId: row.id }, jobId(row.id)));
  return row.id;
}

/** DELETE /export/realm/{export_id}: Zulip's do_delete_realm_export. The tarball goes once the
 * deletion has committed (a failure leaves only an unlinked file, logged). */
export async function doDeleteRealmExport(
  ctx: ActionContext,
  actor: User,
  realm: Realm,
  exportId: number,
): Promise<void> {
  const [row] = await ctx.tx.$queryRaw<{ status: number; export_path: string | null }[]>`
    SELECT status, export_path FROM realm_export
    WHERE id = ${exportId} AND realm_id = ${realm.id} FOR UPDATE`;
  if (!row) throw new JsonableError('Invalid data export ID');
  if (row.status === ExportStatus.DELETED) throw new JsonableError('Export already deleted');
  if (row.status === ExportStatus.FAILED)
    throw new JsonableError('Export failed, nothing to delete');
  if (row.status !== ExportStatus.SUCCEEDED) throw new JsonableError('Export still in progress');
  const deletedAt = new Date();
  await ctx.tx.realmExport.update({
    where: { id: exportId },
    data: { status: ExportStatus.DELETED, dateDeleted: deletedAt },
  });
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_EXPORT_DELETED, {
    realm_export_id: exportId,
  });
  await notifyRealmExport(ctx, realm);
  const stored = row.export_path;
  if (stored) ctx.onCommit(() => removeTarball(stored, exportId));
}

/** The `realm-export` job (Zulip's export_realm_from_event): makes the export, stores it, and
 * tells the administrator who asked. A job run again for an export already started (its
 * worker died, possibly out of memory) marks it failed, as Zulip does, rather than start it
 * over. A failure marks the export failed and is logged; the job is not retried. */
export async function runRealmExport({ exportId }: { exportId: number }): Promise<void> {
  const row = await getPrisma().realmExport.findUnique({ where: { id: exportId } });
  if (!row) return;
  const realm = await getPrisma().realm.findUniqueOrThrow({ where: { id: row.realmId } });
  const started = await getPrisma().realmExport.updateMany({
    where: { id: exportId, status: ExportStatus.REQUESTED },
    data: { status: ExportStatus.STARTED, dateStarted: new Date() },
  });
  if (started.count === 0) {
    if (row.status === ExportStatus.STARTED) {
      getLogger().error('marking a data export failed: it was started before (out of memory?)', {
        exportId,
        realmId: realm.id,
      });
      await markFailed(realm, exportId);
    }
    return;
  }
  const began = Date.now();
  let stored: string | null = null;
  try {
    const random = randomBytes(18).toString('base64url');
    const name = `zulip-export-${randomBytes(6).toString('hex')}`;
    const built = await buildRealmExport(realm, row.type as ExportTypeValue, name);
    const exportPath = `/user_avatars/exports/${realm.id}/${random}/${name}.tar.gz`;
    await storeUpload(exportStorePath(exportPath), built.tarball, 'application/gzip');
    stored = exportPath;
    const finished = await runAction(async (ctx) => {
      // Only the run that started it: one the queue thought stalled and ran again has marked
      // it failed meanwhile, and that stands.
      const updated = await ctx.tx.realmExport.updateMany({
        where: { id: exportId, status: ExportStatus.STARTED },
        data: {
          status: ExportStatus.SUCCEEDED,
          dateSucceeded: new Date(),
          exportPath,
          sha256sumHex: built.sha256,
          tarballSizeBytes: built.tarball.length,
          stats: built.stats,
        },
      });
      if (updated.count === 0) return false;
      await ctx.tx.auditLog.create({
        data: {
          realmId: realm.id,
          actingUserId: row.actingUserId,
          eventType: AuditLogEvent.REALM_EXPORTED,
          extraData: { realm_export_id: exportId },
        },
      });
      await notifyRealmExport(ctx, realm);
      return true;
    });
    if (!finished) {
      await removeTarball(exportPath, exportId);
      return;
    }
  } catch (error) {
    getLogger().error('data export failed', {
      error,
      exportId,
      realmId: realm.id,
      seconds: (Date.now() - began) / 1000,
    });
    if (stored) await removeTarball(stored, exportId);
    await markFailed(realm, exportId);
    return;
  }
  getLogger().info('data export completed', {
    exportId,
    realmId: realm.id,
    seconds: (Date.now() - began) / 1000,
  });
  if (row.actingUserId === null) return;
  // The export is done whatever becomes of the message: a failure here is logged, not retried
  // (a retry would find the export finished and do nothing).
  await sendBotDirectMessage(
    realm,
    'notification',
    { id: row.actingUserId },
    'Your data export is complete. [View and download exports](/#organization/data-exports-admin).',
  ).catch((error: unknown) => {
    getLogger().warn('telling of a finished data export failed', { error, exportId });
  });
}

/** An export not finished is failed (one that finished, or was deleted, stays so). */
async function markFailed(realm: Realm, exportId: number): Promise<void> {
  await runAction(async (ctx) => {
    const updated = await ctx.tx.realmExport.updateMany({
      where: { id: exportId, status: { in: [ExportStatus.REQUESTED, ExportStatus.STARTED] } },
      data: { status: ExportStatus.FAILED, dateFailed: new Date() },
    });
    if (updated.count > 0) await notifyRealmExport(ctx, realm);
  });
}

/** A tarball no export row names any more; a failure leaves only an unlinked file, logged. */
async function removeTarball(exportPath: string, exportId: number): Promise<void> {
  await removeUpload(exportStorePath(exportPath)).catch((error: unknown) => {
    getLogger().warn('deleting an export tarball failed', { error, exportId });
  });
}

/** How long an export may stay started with no job working on it before the sweep calls it
 * failed: far longer than the largest export the limits allow takes. */
export const STARTED_EXPORT_GIVE_UP_MS = 6 * 3600_000;

/** The worker's sweep: exports asked for a minute ago or more and still waiting had their job
 * lost (a Redis that lost its data, an enqueue lost between commit and Redis) and are queued
 * again (a job that failed for good, the database away through its retries, is replaced);
 * exports started hours ago whose job is no longer running (lost with its worker and with
 * Redis's data, or failed for good) are marked failed, never left pending. Returns how many
 * were queued again. */
export async function sweepExports(): Promise<number> {
  const now = Date.now();
  const waiting = await getPrisma().realmExport.findMany({
    where: { status: ExportStatus.REQUESTED, dateRequested: { lt: new Date(now - 60_000) } },
    select: { id: true },
  });
  for (const { id } of waiting) {
    await removeIfFailed('realm-export', jobId(id));
    await enqueueJob('realm-export', { exportId: id }, jobId(id));
  }
  const stuck = await getPrisma().realmExport.findMany({
    where: {
      status: ExportStatus.STARTED,
      dateStarted: { lt: new Date(now - STARTED_EXPORT_GIVE_UP_MS) },
    },
    select: { id: true, realmId: true },
  });
  for (const { id, realmId } of stuck) {
    if (await jobIsRunning('realm-export', jobId(id))) continue;
    getLogger().error('marking a data export failed: started hours ago, no job runs it', {
      exportId: id,
      realmId,
    });
    await markFailed(await getPrisma().realm.findUniqueOrThrow({ where: { id: realmId } }), id);
  }
  return waiting.length;
}
