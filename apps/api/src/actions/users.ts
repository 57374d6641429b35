// Creating users and changing their credentials. check* validates, do* writes (house style).
import {
  AuditLogEvent,
  isRoleValue,
  RecipientType,
  Role,
  type ActionContext,
  type Realm,
  type RoleValue,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { generateApiKey, hashPassword } from '../lib/credentials';
import { SYSTEM_GROUPS, systemGroupsForRole } from './system-groups';

// Django's EmailValidator accepts more, but every address it accepts has this shape.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface NewUser {
  email: string;
  fullName: string;
  /** null: no password login (bots, or users who will log in another way). */
  password: string | null;
  role: RoleValue;
  isBot?: boolean;
  botType?: number | null;
  botOwnerId?: number | null;
  timezone?: string;
  isImportedStub?: boolean;
}

export function checkEmail(email: string): string {
  const trimmed = email.trim();
  if (trimmed.length > 254 || !EMAIL.test(trimmed) || trimmed.includes('\0')) {
    throw new JsonableError(`Invalid email '${email}'`);
  }
  return trimmed;
}

export function checkFullName(fullName: string): string {
  const trimmed = fullName.trim();
  if (trimmed === '') throw new JsonableError('Name too short!');
  if (trimmed.length > 100) throw new JsonableError('Name too long!');
  // Control characters and the characters Zulip's check_full_name refuses.
  // eslint-disable-next-line no-control-regex
  if (/[\0-\x1f\x7f*`\\>"@]/.test(trimmed)) throw new JsonableError('Invalid characters in name!');
  return trimmed;
}

export function checkRole(role: number): RoleValue {
  if (!isRoleValue(role)) throw new JsonableError('Invalid role');
  return role;
}

/** Validates a new user against the organization; returns the normalized fields. */
export async function checkCreateUser(tx: Tx, realm: Realm, user: NewUser): Promise<NewUser> {
  const email = checkEmail(user.email);
  const existing = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM user_profile
    WHERE realm_id = ${realm.id} AND (lower(email) = lower(${email}) OR lower(delivery_email) = lower(${email}))
    LIMIT 1`;
  if (existing.length > 0) throw new JsonableError('Email is already in use.');
  return { ...user, email, fullName: checkFullName(user.fullName), role: checkRole(user.role) };
}

/** Writes a user that checkCreateUser accepted. `passwordHash` is computed outside the
 * transaction by the caller (scrypt is deliberately slow). */
export async function doCreateUser(
  { tx }: ActionContext,
  realm: Realm,
  user: NewUser,
  passwordHash: string | null,
  actingUserId: number | null = null,
): Promise<User> {
  const created = await tx.user.create({
    data: {
      realmId: realm.id,
      email: user.email,
      deliveryEmail: user.email,
      fullName: user.fullName,
      role: user.role,
      isBot: user.isBot ?? false,
      botType: user.botType ?? null,
      botOwnerId: user.botOwnerId ?? null,
      apiKey: generateApiKey(),
      passwordHash,
      timezone: user.timezone ?? '',
      isImportedStub: user.isImportedStub ?? false,
      emailAddressVisibility: realm.defaultEmailAddressVisibility,
      defaultLanguage: realm.defaultLanguage,
    },
  });
  await tx.recipient.create({ data: { type: RecipientType.PERSONAL, typeId: created.id } });
  await addToSystemGroups(tx, realm.id, created.id, user.role);
  await tx.auditLog.create({
    data: {
      realmId: realm.id,
      actingUserId: actingUserId ?? created.id,
      modifiedUserId: created.id,
      eventType: AuditLogEvent.USER_CREATED,
      extraData: { role: user.role },
    },
  });
  // The realm_user "add" event needs the per-viewer person form (email visibility); it is
  // published by the users issue together with the user presenter.
  return created;
}

async function addToSystemGroups(
  tx: Tx,
  realmId: number,
  userId: number,
  role: RoleValue,
): Promise<void> {
  const names = systemGroupsForRole(role);
  const groups = await tx.userGroup.findMany({
    where: { realmId, isSystemGroup: true, name: { in: names } },
    select: { id: true },
  });
  await tx.userGroupMembership.createMany({
    data: groups.map((group) => ({ userGroupId: group.id, userId })),
  });
}

export async function doSetPassword(
  { tx }: ActionContext,
  user: User,
  passwordHash: string,
  actingUserId: number | null,
): Promise<void> {
  await tx.user.update({ where: { id: user.id }, data: { passwordHash } });
  await tx.auditLog.create({
    data: {
      realmId: user.realmId,
      actingUserId,
      modifiedUserId: user.id,
      eventType: AuditLogEvent.USER_PASSWORD_CHANGED,
    },
  });
}

/** Hashes a password if one is given; kept out of transactions. */
export async function passwordHashFor(password: string | null): Promise<string | null> {
  if (password === null) return null;
  if (password.length === 0) throw new JsonableError('Password cannot be empty');
  return hashPassword(password);
}

export { Role, SYSTEM_GROUPS };
