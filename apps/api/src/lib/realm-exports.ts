// The organization's data exports as the API shows them (Zulip's RealmExport and
// get_realm_exports_serialized), and who may be exported: what GET /export/realm, its
// realm_export event, the export job and GET /export/realm/consents read.
import { realmUrl } from '@parley/auth';
import { getPrisma, Role, type Realm, type Tx } from '@parley/db';
import { EmailVisibility } from './users';

/** RealmExport.type: the API names them since feature level 449 (integers before). Parley's
 * organizations have no owner_full_content_access, so a full export without member consent
 * (Zulip's type 3) is never offered. */
export const EXPORT_TYPE_VALUES = { public: 1, full_with_consent: 2 } as const;
export type ExportTypeName = keyof typeof EXPORT_TYPE_VALUES;
export type ExportTypeValue = (typeof EXPORT_TYPE_VALUES)[ExportTypeName];
export const EXPORT_TYPE_NAMES = Object.keys(EXPORT_TYPE_VALUES) as [
  ExportTypeName,
  ...ExportTypeName[],
];
export const ExportType = {
  PUBLIC: EXPORT_TYPE_VALUES.public,
  FULL_WITH_CONSENT: EXPORT_TYPE_VALUES.full_with_consent,
} as const;
const nameOf = (value: number): ExportTypeName =>
  EXPORT_TYPE_NAMES.find((name) => EXPORT_TYPE_VALUES[name] === value) ?? 'public';

/** RealmExport.status. */
export const ExportStatus = {
  REQUESTED: 1,
  STARTED: 2,
  SUCCEEDED: 3,
  FAILED: 4,
  DELETED: 5,
} as const;

export interface SerializedExport {
  id: number;
  acting_user_id: number;
  export_time: number;
  deleted_timestamp: number | null;
  failed_timestamp: number | null;
  export_url: string | null;
  pending: boolean;
  export_type: ExportTypeName;
}

const seconds = (date: Date | null) => (date ? date.getTime() / 1000 : null);

/** Where a tarball is stored (a path id of the upload store) for its URL path, which is what
 * export_path holds, as Zulip's does: `/user_avatars/exports/{realm}/{random}/{file}`. */
export const exportStorePath = (exportPath: string) => exportPath.replace(/^\//, '');

/** Every export an administrator asked for, oldest first (Zulip leaves out those of the
 * command line, which have no acting user; Parley makes none). */
export async function realmExportsOf(
  realm: Pick<Realm, 'id' | 'stringId'>,
  db: Tx = getPrisma(),
): Promise<SerializedExport[]> {
  const rows = await db.realmExport.findMany({
    where: { realmId: realm.id, actingUserId: { not: null } },
    orderBy: { id: 'asc' },
  });
  return rows.map((row) => ({
    id: row.id,
    acting_user_id: row.actingUserId!,
    export_time: row.dateRequested.getTime() / 1000,
    deleted_timestamp: seconds(row.dateDeleted),
    failed_timestamp: seconds(row.dateFailed),
    export_url:
      row.status === ExportStatus.SUCCEEDED && row.exportPath
        ? `${realmUrl(realm)}${row.exportPath}`
        : null,
    pending: row.status === ExportStatus.REQUESTED || row.status === ExportStatus.STARTED,
    export_type: nameOf(row.type),
  }));
}

/** Zulip's get_consented_user_ids: the humans who allow their private data to be exported,
 * bots that allow it, and the bots of consenting humans. (Zulip's mirror dummies count too;
 * Parley has none.) */
export async function consentingUserIds(realmId: number, db: Tx = getPrisma()): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    WITH humans AS (
      SELECT id FROM user_profile
      WHERE realm_id = ${realmId} AND allow_private_data_export AND NOT is_bot)
    SELECT id FROM user_profile
    WHERE realm_id = ${realmId}
      AND (id IN (SELECT id FROM humans)
        OR (is_bot AND allow_private_data_export)
        OR (is_bot AND bot_owner_id IN (SELECT id FROM humans)))
    ORDER BY id`;
  return rows.map((row) => row.id);
}

/** Zulip's check_export_with_consent_is_usable: users who did not consent are deactivated in
 * such an export, so an organization with no consenting owner would import with none. (Zulip
 * also counts deactivated owners, who would not make it usable either.) */
export async function consentExportIsUsable(
  realmId: number,
  db: Tx = getPrisma(),
): Promise<boolean> {
  const consenting = await consentingUserIds(realmId, db);
  const owner = await db.user.findFirst({
    where: { realmId, id: { in: consenting }, role: Role.OWNER, isActive: true },
    select: { id: true },
  });
  return owner !== null;
}

/** Zulip's check_public_export_is_usable: a public export carries real addresses only of users
 * whose address someone may see, so at least one active owner's must be among them. */
export async function publicExportIsUsable(
  realmId: number,
  db: Tx = getPrisma(),
): Promise<boolean> {
  const owner = await db.user.findFirst({
    where: {
      realmId,
      role: Role.OWNER,
      isActive: true,
      emailAddressVisibility: { not: EmailVisibility.NOBODY },
    },
    select: { id: true },
  });
  return owner !== null;
}

/** GET /export/realm/consents (Zulip's get_users_export_consents): each active human's consent,
 * and since feature level 430 their address's visibility. */
export async function exportConsentsOf(
  realmId: number,
): Promise<{ user_id: number; consented: boolean; email_address_visibility: number }[]> {
  const users = await getPrisma().user.findMany({
    where: { realmId, isActive: true, isBot: false },
    select: { id: true, allowPrivateDataExport: true, emailAddressVisibility: true },
    orderBy: { id: 'asc' },
  });
  return users.map((user) => ({
    user_id: user.id,
    consented: user.allowPrivateDataExport,
    email_address_visibility: user.emailAddressVisibility,
  }));
}

/** Whether the tarball at `exportPath` is of an export that succeeded and was not deleted
 * since. */
export async function isDownloadable(exportPath: string): Promise<boolean> {
  const found = await getPrisma().realmExport.findUnique({
    where: { exportPath },
    select: { status: true },
  });
  return found?.status === ExportStatus.SUCCEEDED;
}
