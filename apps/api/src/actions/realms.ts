// Creating an organization: the realm row, its system groups and its first owner, in one
// transaction.
import {
  AuditLogEvent,
  isUniqueViolation,
  Role,
  type ActionContext,
  type Realm,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { REALM_PERMISSION_SETTINGS, type RealmPermissionSetting } from '../lib/permission-settings';
import { REALM_GROUP_COLUMNS } from '../lib/realm-state';
import { createSystemGroups } from './system-groups';
import { checkCreateUser, doCreateUser } from './users';

// Subdomains are DNS labels; "" is the root organization.
const SUBDOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?)?$/;

export interface NewOrganization {
  name: string;
  subdomain: string;
  ownerEmail: string;
  ownerFullName: string;
  ownerPassword: string | null;
}

export function checkOrganization(org: NewOrganization): NewOrganization {
  const name = org.name.trim();
  if (name === '' || name.length > 40 || name.includes('\0')) {
    throw new JsonableError('Organization name must be 1 to 40 characters');
  }
  const subdomain = org.subdomain.trim().toLowerCase();
  if (!SUBDOMAIN.test(subdomain)) {
    throw new JsonableError(
      'Subdomains can only have lowercase letters, numbers, and dashes, and must start and end with a letter or number',
    );
  }
  return { ...org, name, subdomain };
}

export async function doCreateOrganization(
  ctx: ActionContext,
  org: NewOrganization,
  ownerPasswordHash: string | null,
): Promise<{ realm: Realm; owner: User }> {
  const { tx } = ctx;
  if (await tx.realm.findUnique({ where: { stringId: org.subdomain } })) {
    throw new JsonableError('Subdomain is already in use');
  }
  // The check above can race another creation; the unique index decides.
  const realm = await tx.realm
    .create({ data: { name: org.name, stringId: org.subdomain } })
    .catch((error: unknown) => {
      throw isUniqueViolation(error) ? new JsonableError('Subdomain is already in use') : error;
    });
  const groups = await createSystemGroups(tx, realm.id);
  const withSettings = await tx.realm.update({
    where: { id: realm.id },
    // Every organization permission names its default system group (Zulip's
    // REALM_PERMISSION_GROUP_SETTINGS defaults).
    data: Object.fromEntries(
      Object.entries(REALM_GROUP_COLUMNS).map(([setting, column]) => [
        column,
        groups.get(REALM_PERMISSION_SETTINGS[setting as RealmPermissionSetting].default)!,
      ]),
    ),
  });
  const ownerFields = await checkCreateUser(tx, withSettings, {
    email: org.ownerEmail,
    fullName: org.ownerFullName,
    password: org.ownerPassword,
    role: Role.OWNER,
  });
  const owner = await doCreateUser(ctx, withSettings, ownerFields, ownerPasswordHash);
  await tx.auditLog.create({
    data: { realmId: realm.id, actingUserId: owner.id, eventType: AuditLogEvent.REALM_CREATED },
  });
  return { realm: withSettings, owner };
}
