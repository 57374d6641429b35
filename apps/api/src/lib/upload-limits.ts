// An organization's upload limits (Zulip's Realm.get_max_file_upload_size_mebibytes,
// upload_quota_bytes and check_upload_within_quota), the same for POST /user_uploads and the
// resumable uploads of /api/v1/tus. docs/uploads.md says how operators set them.
import { getConfig } from '@parley/config';
import { getPrisma, type Realm, type Tx } from '@parley/db';
import { JsonableError, RealmUploadQuotaError } from '@parley/errors';
import { uploadSpaceUsed } from './attachments';

type RealmLimits = Pick<Realm, 'id' | 'maxFileUploadSizeMib' | 'uploadQuotaGb'>;

const MIB = 1024 * 1024;

/** The largest file the organization takes, in MiB: its own limit, never above the server's
 * MAX_FILE_UPLOAD_SIZE_MIB (as Zulip's plan limits are min(plan, MAX_FILE_UPLOAD_SIZE)): the
 * server's is what its memory, proxies and disks are sized for. No organization (the root
 * domain of a server without a root organization, where unauthenticated requests such as
 * tus's OPTIONS still arrive): the server's limit. */
export function maxFileUploadSizeMib(
  realm: Pick<RealmLimits, 'maxFileUploadSizeMib'> | null,
): number {
  const server = getConfig().MAX_FILE_UPLOAD_SIZE_MIB;
  const own = realm?.maxFileUploadSizeMib;
  return own === null || own === undefined ? server : Math.min(own, server);
}

export function maxFileUploadBytes(
  realm: Pick<RealmLimits, 'maxFileUploadSizeMib'> | null,
): number {
  return maxFileUploadSizeMib(realm) * MIB;
}

/** The organization's quota in GiB (Zulip's upload_quota_gb, applied as GiB like Zulip's),
 * else the server's UPLOAD_QUOTA_GB; null: no quota. */
export function uploadQuotaGb(realm: Pick<RealmLimits, 'uploadQuotaGb'>): number | null {
  return realm.uploadQuotaGb ?? getConfig().UPLOAD_QUOTA_GB ?? null;
}

/** POST /register's realm_upload_quota_mib (Zulip's optional_bytes_to_mib of the quota). */
export function uploadQuotaMib(realm: Pick<RealmLimits, 'uploadQuotaGb'>): number | null {
  const gb = uploadQuotaGb(realm);
  return gb === null ? null : gb * 1024;
}

/** Zulip's message for a file over the limit (its tusd hook and older upload view; see
 * docs/uploads.md for the newer wording Parley does not use). */
export class FileTooLargeError extends JsonableError {
  override readonly httpStatus: number;
  constructor(limitMib: number, httpStatus = 400) {
    super(`Uploaded file is larger than the allowed limit of ${limitMib} MiB`);
    this.httpStatus = httpStatus;
  }
}

/** Throws FileTooLargeError for a file over the organization's limit. `httpStatus`: 400 for
 * POST /user_uploads (Zulip's JsonableError), 413 for tus (Zulip's tusd hook). */
export function checkFileSize(
  realm: Pick<RealmLimits, 'maxFileUploadSizeMib'>,
  size: number,
  httpStatus = 400,
): void {
  if (size > maxFileUploadBytes(realm))
    throw new FileTooLargeError(maxFileUploadSizeMib(realm), httpStatus);
}

/** Zulip's check_upload_within_quota: what the organization has stored plus `size` must fit
 * in its quota. In a transaction holding lockUploadQuota the answer stays true until commit. */
export async function checkUploadWithinQuota(
  realm: RealmLimits,
  size: number,
  { db = getPrisma(), httpStatus = 400 }: { db?: Tx; httpStatus?: number } = {},
): Promise<void> {
  const remaining = await uploadQuotaRemaining(realm, db);
  if (remaining !== null && size > remaining) throw new RealmUploadQuotaError(httpStatus);
}

/** Bytes left in the organization's quota by its stored uploads (negative when over it), or
 * null: no quota. (The tus endpoint also subtracts its unfinished uploads: lib/tus-store.) */
export async function uploadQuotaRemaining(
  realm: RealmLimits,
  db: Tx = getPrisma(),
): Promise<number | null> {
  const gb = uploadQuotaGb(realm);
  if (gb === null) return null;
  return gb * 1024 * MIB - (await uploadSpaceUsed(realm.id, db));
}

/** Serializes the organization's quota checks with their inserts until the transaction ends,
 * so two uploads checked at once cannot both fit a quota only one of them fits. */
export async function lockUploadQuota(tx: Tx, realmId: number): Promise<void> {
  await tx.$queryRaw`
    SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(hashtext('upload_quota'), ${realmId})) AS l`;
}
