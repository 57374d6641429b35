// Where resumable uploads (/api/v1/tus) are staged until they are complete: a directory under
// LOCAL_UPLOADS_DIR, which every API replica shares, so any replica can take the next chunk or
// answer where an upload stands. Each upload is a data file and its `.json` description
// (@tus/file-store). A finished upload becomes an ordinary one (lib/upload-store, whatever
// backend) and leaves the staging area; unfinished ones expire (deleteExpiredTusUploads, run by
// the worker's hourly upload clean-up).
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FileStore } from '@tus/file-store';
import { getConfig } from '@parley/config';
import { getRedis, tusKeys } from '@parley/events';

export function tusStagingDir(): string {
  return resolve(getConfig().LOCAL_UPLOADS_DIR, 'tus');
}

export function tusExpirationMs(): number {
  return getConfig().TUS_UPLOAD_EXPIRATION_HOURS * 3600_000;
}

/** The staging store (one per process; the worker makes its own to clean up). */
export function createTusStore(): FileStore {
  const directory = tusStagingDir();
  // FileStore creates its directory asynchronously and throws from a callback on failure
  // (taking the process down): created here first, where a failure is an ordinary error.
  mkdirSync(directory, { recursive: true });
  const store = new FileStore({ directory, expirationPeriodInMilliseconds: tusExpirationMs() });
  // Uploads of unknown length are refused (the limits are checked when one is created), so the
  // store does not offer the extension either.
  store.extensions = store.extensions.filter((name) => name !== 'creation-defer-length');
  return store;
}

/** The data file of a staged upload. */
export function stagedFilePath(uploadId: string): string {
  return join(tusStagingDir(), uploadId);
}

/** A new upload's id: its owner and 32 random hex digits. Only the owner may touch it (the
 * id alone tells, before anything is read). */
export function newTusUploadId(userId: number): string {
  return `${userId}-${randomBytes(16).toString('hex')}`;
}

const UPLOAD_ID = /^(\d{1,12})-[0-9a-f]{32}$/;

/** The owner's user id of a well-formed upload id, or null. */
export function tusUploadOwner(uploadId: string): number | null {
  const match = UPLOAD_ID.exec(uploadId);
  return match ? Number(match[1]) : null;
}

/** What the request that finished an upload answered, kept a day: a client repeating its last
 * PATCH (its answer lost) gets the same answer, and a HEAD learns the upload is complete,
 * after the staged files are gone. `pending` while the upload is being finished. */
export type FinishedTusUpload =
  { state: 'pending' } | { state: 'done'; size: number; answer: Record<string, unknown> };

const FINISHED_TTL_SECONDS = 24 * 3600;
/** Longer than finishing any upload takes (storing the file, one transaction). */
const PENDING_TTL_SECONDS = 300;

export async function finishedTusUpload(uploadId: string): Promise<FinishedTusUpload | null> {
  const value = await getRedis().get(tusKeys.finished(uploadId));
  return value ? (JSON.parse(value) as FinishedTusUpload) : null;
}

/** Claims the finishing of an upload: true for the one request that gets to do it. */
export async function claimTusFinish(uploadId: string): Promise<boolean> {
  const pending: FinishedTusUpload = { state: 'pending' };
  const set = await getRedis().set(
    tusKeys.finished(uploadId),
    JSON.stringify(pending),
    'EX',
    PENDING_TTL_SECONDS,
    'NX',
  );
  return set === 'OK';
}

export async function recordTusFinish(
  uploadId: string,
  size: number,
  answer: Record<string, unknown>,
): Promise<void> {
  const done: FinishedTusUpload = { state: 'done', size, answer };
  await getRedis().set(
    tusKeys.finished(uploadId),
    JSON.stringify(done),
    'EX',
    FINISHED_TTL_SECONDS,
  );
}

/** Gives up a claim that failed, so that the client's retry may finish the upload. */
export async function releaseTusFinish(uploadId: string): Promise<void> {
  await getRedis().del(tusKeys.finished(uploadId));
}

/** Deletes staged uploads older than TUS_UPLOAD_EXPIRATION_HOURS (unfinished ones, and any a
 * crash left behind); returns how many. */
export async function deleteExpiredTusUploads(): Promise<number> {
  return createTusStore().deleteExpired();
}
