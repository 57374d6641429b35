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
import { JsonableError, RealmUploadQuotaError } from '@parley/errors';
import { getRedis, LuaScript, tusKeys } from '@parley/events';
import { getLogger } from '@parley/logger';
import { attachmentByPathId, type Attachment } from './attachments';

export function tusStagingDir(): string {
  return resolve(getConfig().LOCAL_UPLOADS_DIR, 'tus');
}

/** Whole milliseconds: the open-upload bookkeeping (RESERVE) reads them as integers. */
export function tusExpirationMs(): number {
  return Math.round(getConfig().TUS_UPLOAD_EXPIRATION_HOURS * 3600_000);
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
 * after the staged files are gone. `pending` while the upload is being finished, with the path
 * id its attachment gets: once that row is committed the claim is never given up, and the
 * answer can be rebuilt from the row if recording it failed (finishedTusResult). */
export type FinishedTusUpload =
  | { state: 'pending'; pathId?: string }
  | { state: 'done'; size: number; answer: Record<string, unknown> };

const FINISHED_TTL_SECONDS = 24 * 3600;
/** Longer than finishing any upload takes (storing the file, one transaction). */
const PENDING_TTL_SECONDS = 300;

export async function finishedTusUpload(uploadId: string): Promise<FinishedTusUpload | null> {
  const value = await getRedis().get(tusKeys.finished(uploadId));
  return value ? (JSON.parse(value) as FinishedTusUpload) : null;
}

/** The answer of the request that finishes an upload: POST /user_uploads's. */
export function tusFinishAnswer(
  attachment: Pick<Attachment, 'pathId' | 'fileName'>,
): Record<string, unknown> {
  const url = `/user_uploads/${attachment.pathId}`;
  return { result: 'success', msg: '', uri: url, url, filename: attachment.fileName };
}

/** How a finished upload ended (its size and answer), or null if it is not finished (or is
 * being finished right now). An upload whose attachment was committed but whose answer was
 * not recorded (Redis failed in between) is finished too: the answer comes from the row its
 * claim names, and is recorded now. */
export async function finishedTusResult(
  uploadId: string,
): Promise<{ size: number; answer: Record<string, unknown> } | null> {
  const finished = await finishedTusUpload(uploadId);
  if (!finished) return null;
  if (finished.state === 'done') return finished;
  if (!finished.pathId) return null;
  const attachment = await attachmentByPathId(finished.pathId);
  if (!attachment) return null;
  const result = { size: attachment.size, answer: tusFinishAnswer(attachment) };
  await recordTusFinish(uploadId, result.size, result.answer).catch((error: unknown) =>
    getLogger().warn('tus finish not recorded', { error }),
  );
  return result;
}

/** Claims the finishing of an upload, whose attachment will have `pathId`: true for the one
 * request that gets to do it. */
export async function claimTusFinish(uploadId: string, pathId: string): Promise<boolean> {
  const pending: FinishedTusUpload = { state: 'pending', pathId };
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

/** Gives up a claim whose upload was not stored, so that the client's retry may finish the
 * upload. Never after the attachment is committed: the retry would make a second one. */
export async function releaseTusFinish(uploadId: string): Promise<void> {
  await getRedis().del(tusKeys.finished(uploadId));
}

/** How many unfinished uploads one user may have at a time: with the quota (which counts
 * their declared lengths) this bounds what one user can stage on the shared volume. */
export const MAX_OPEN_TUS_UPLOADS_PER_USER = 20;

export class TooManyOpenUploadsError extends JsonableError {
  override readonly httpStatus = 429;
  constructor() {
    super(
      `You have too many unfinished uploads (at most ${MAX_OPEN_TUS_UPLOADS_PER_USER}); finish or cancel some first`,
    );
  }
}

// KEYS[1]: the organization's open uploads; ARGV: now (ms), upload id, declared length, its
// expiry (ms), the owner's id prefix, the per-user limit, the quota's room ('none': no quota).
// Drops expired entries, then refuses ('too_many', 'quota') or adds the upload ('ok').
const RESERVE = new LuaScript(
  'reserveUpload',
  `
local now = tonumber(ARGV[1])
local entries = redis.call('hgetall', KEYS[1])
local staged, mine, latest = 0, 0, tonumber(ARGV[4])
for i = 1, #entries, 2 do
  local length, expires = string.match(entries[i + 1], '^(%d+):(%d+)$')
  if not length or tonumber(expires) <= now then
    redis.call('hdel', KEYS[1], entries[i])
  else
    staged = staged + tonumber(length)
    if string.sub(entries[i], 1, #ARGV[5]) == ARGV[5] then mine = mine + 1 end
    if tonumber(expires) > latest then latest = tonumber(expires) end
  end
end
if mine >= tonumber(ARGV[6]) then return 'too_many' end
if ARGV[7] ~= 'none' and staged + tonumber(ARGV[3]) > tonumber(ARGV[7]) then return 'quota' end
redis.call('hset', KEYS[1], ARGV[2], ARGV[3] .. ':' .. ARGV[4])
redis.call('pexpireat', KEYS[1], latest)
return 'ok'`,
);

/** Counts a new upload of `length` bytes among the organization's unfinished ones until it is
 * finished, deleted or expires (with its staged bytes): refused with RealmUploadQuotaError
 * (413) if the declared lengths of the unfinished uploads would not fit in `room` (what the
 * stored uploads leave of the quota; null: no quota), and with TooManyOpenUploadsError if the
 * user has MAX_OPEN_TUS_UPLOADS_PER_USER already. */
export async function reserveTusUpload(
  realmId: number,
  uploadId: string,
  length: number,
  room: number | null,
): Promise<void> {
  const now = Date.now();
  const owner = tusUploadOwner(uploadId);
  const outcome = await RESERVE.run(
    getRedis(),
    1,
    tusKeys.open(realmId),
    now,
    uploadId,
    length,
    now + tusExpirationMs(),
    `${owner}-`,
    MAX_OPEN_TUS_UPLOADS_PER_USER,
    room === null ? 'none' : Math.max(room, 0),
  );
  if (outcome === 'too_many') throw new TooManyOpenUploadsError();
  if (outcome === 'quota') throw new RealmUploadQuotaError(413);
}

/** The upload is finished or deleted: its bytes no longer count as staged. */
export async function releaseTusUpload(realmId: number, uploadId: string): Promise<void> {
  await getRedis().hdel(tusKeys.open(realmId), uploadId);
}

/** Deletes staged uploads older than TUS_UPLOAD_EXPIRATION_HOURS (unfinished ones, and any a
 * crash left behind); returns how many. */
export async function deleteExpiredTusUploads(): Promise<number> {
  return createTusStore().deleteExpired();
}
