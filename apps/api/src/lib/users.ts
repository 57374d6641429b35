// Reading users and deciding who may see what (Zulip's access_user_* and email visibility).
import {
  getPrisma,
  type Prisma,
  idsByLowerEquals,
  query,
  RecipientType,
  Role,
  statement,
  type Realm,
  type Tx,
  type User,
  SYSTEM_GROUPS,
} from '@parley/db';
import {
  InsufficientPermissionError,
  JsonableError,
  OrganizationOwnerRequiredError,
} from '@parley/errors';
import { isEmailDomain, realmEmailDomain, realmHost } from '@parley/auth';
import type { ProfileValue } from '../presenters/users';
import { exchangedDirectMessagesSql } from './direct-message-partners';
import { PROFILE_VALUE_JSON, profileDataOf, type ProfileValueRow } from './profile-fields';

/** email_address_visibility values (Zulip's EMAIL_ADDRESS_VISIBILITY_*). */
export const EmailVisibility = {
  EVERYONE: 1,
  MEMBERS: 2,
  ADMINS: 3,
  NOBODY: 4,
  MODERATORS: 5,
} as const;

export const isOwner = (user: Pick<User, 'role'>) => user.role === Role.OWNER;
export const isAdmin = (user: Pick<User, 'role'>) => user.role <= Role.ADMINISTRATOR;
export const isModerator = (user: Pick<User, 'role'>) => user.role <= Role.MODERATOR;
export const isGuest = (user: Pick<User, 'role'>) => user.role === Role.GUEST;

/** Whether `viewer` may see `target`'s real address, per the target's setting. Bots' addresses
 * are always visible. */
export function canSeeDeliveryEmail(
  viewer: Pick<User, 'id' | 'role'>,
  target: Pick<User, 'id' | 'isBot' | 'emailAddressVisibility'>,
): boolean {
  if (viewer.id === target.id || target.isBot) return true;
  switch (target.emailAddressVisibility) {
    case EmailVisibility.EVERYONE:
      return true;
    case EmailVisibility.MEMBERS:
      return !isGuest(viewer);
    case EmailVisibility.MODERATORS:
      return isModerator(viewer);
    case EmailVisibility.ADMINS:
      return isAdmin(viewer);
    default:
      return false;
  }
}

export function dummyEmail(user: Pick<User, 'id'>, realm: Pick<Realm, 'stringId'>): string {
  return `user${user.id}@${realmEmailDomain(realm)}`;
}

/** The API email `viewer` sees for `target`: the real one when visible, else the dummy. */
export function apiEmailFor(
  viewer: Pick<User, 'id' | 'role'>,
  target: User,
  realm: Pick<Realm, 'stringId'>,
): string {
  return canSeeDeliveryEmail(viewer, target) ? target.deliveryEmail : dummyEmail(target, realm);
}

/** Zulip's UserProfile.can_admin_user: administrators (owners included) administer everyone in
 * the organization, owners too, and a bot's owner administers the bot. What only owners may do
 * to owners (the owner role, deactivation) is checked where it is done. */
export function canAdminUser(actor: User, target: User): boolean {
  if (isAdmin(actor)) return true;
  return target.isBot && target.botOwnerId === actor.id;
}

/** Zulip's require_member_or_admin: no guests, no bots (invitations, bot management). */
export function requireMemberOrAdmin(user: User): void {
  if (isGuest(user)) throw new JsonableError('Not allowed for guest users');
  if (user.isBot) throw new JsonableError('This endpoint does not accept bot requests.');
}

export function requireAdmin(actor: User): void {
  if (!isAdmin(actor)) throw new InsufficientPermissionError();
}

/** A user of the actor's organization by id, deactivated users included. */
export async function accessUserById(
  actor: User,
  userId: number,
  { forAdmin = false, db = getPrisma() }: { forAdmin?: boolean; db?: Tx } = {},
): Promise<User> {
  // An id no user_profile row can have (callers may pass a number parsed from a path).
  const target =
    Number.isSafeInteger(userId) && userId >= 0 && userId <= 2 ** 31 - 1
      ? await db.user.findFirst({ where: { id: userId, realmId: actor.realmId } })
      : null;
  if (!target) throw new JsonableError('No such user');
  if (forAdmin && !canAdminUser(actor, target)) throw new InsufficientPermissionError();
  return target;
}

/** Zulip's access_bot_by_id: a bot of the actor's organization that the actor administers
 * (their own, or any for administrators). Bots `hidden` says are not there for the caller
 * (the organization's system bots, which Zulip keeps in an organization of their own). */
export async function accessBotById(
  actor: User,
  botId: number,
  { hidden = () => false }: { hidden?: (bot: User) => boolean } = {},
): Promise<User> {
  let target: User;
  try {
    target = await accessUserById(actor, botId);
  } catch (error) {
    if (error instanceof JsonableError) throw new JsonableError('No such bot');
    throw error;
  }
  if (!target.isBot || hidden(target)) throw new JsonableError('No such bot');
  if (!canAdminUser(actor, target)) throw new InsufficientPermissionError();
  if (target.canCreateUsers && !isOwner(actor)) throw new OrganizationOwnerRequiredError();
  return target;
}

/** The user id in a dummy address `user{id}@{realm host}` of this organization, else null.
 * The dummy domain is the realm host without its port; the host with it is accepted too. */
export function dummyEmailUserId(realm: Pick<Realm, 'stringId'>, email: string): number | null {
  const dummy = /^user(\d{1,10})@(.+)$/i.exec(email.trim());
  if (!dummy || Number(dummy[1]) > 2 ** 31 - 1) return null;
  const domains = [realmEmailDomain(realm), realmHost(realm)].map((d) => d.toLowerCase());
  return domains.includes(dummy[2]!.toLowerCase()) ? Number(dummy[1]) : null;
}

/** GET/PATCH /users/{email}: the real address when the actor may see it, or the dummy form
 * `user{id}@{realm host}` of this organization (spec 4.5). */
export async function accessUserByEmail(
  actor: User,
  realm: Realm,
  email: string,
  options: { forAdmin?: boolean; db?: Tx } = {},
): Promise<User> {
  const db = options.db ?? getPrisma();
  const dummyId = dummyEmailUserId(realm, email);
  if (dummyId !== null) return accessUserById(actor, dummyId, options);
  const [id] = await idsByLowerEquals(db, 'user_profile', 'delivery_email', realm.id, [email]);
  const target = id === undefined ? null : await db.user.findUnique({ where: { id } });
  if (!target || !canSeeDeliveryEmail(actor, target)) throw new JsonableError('No such user');
  if (options.forAdmin && !canAdminUser(actor, target)) throw new InsufficientPermissionError();
  return target;
}

export type Viewer = Pick<User, 'id' | 'role'>;

/** Every active user of the organization, with whether they can access `$2` (Zulip's
 * get_user_ids_who_can_access_user): everyone when `$2` is a bot (`$3`) or the organization's
 * can_access_all_users_group is "everyone" (also when unset: its default); otherwise the
 * user themselves, every non-guest (the setting may only name everyone or members), the
 * guests subscribed to a channel or direct-message group `$2` is subscribed to, and those
 * who exchanged a 1:1 direct message with `$2`. */
const activeUsersWithAccessTo = statement<
  Viewer & { canAccess: boolean },
  [number, number, boolean]
>(`
  SELECT u.id, u.role,
    (u.role <> ${Role.GUEST} OR u.id = $2 OR $3::boolean
      OR NOT EXISTS (SELECT 1 FROM realm r JOIN user_group g ON g.id = r.can_access_all_users_group_id
        WHERE r.id = $1 AND g.name <> '${SYSTEM_GROUPS.EVERYONE}')
      OR EXISTS (SELECT 1 FROM subscription theirs
        JOIN recipient rc ON rc.id = theirs.recipient_id
          AND rc.type IN (${RecipientType.STREAM}, ${RecipientType.DIRECT_MESSAGE_GROUP})
        JOIN subscription mine ON mine.recipient_id = theirs.recipient_id
          AND mine.user_profile_id = u.id AND mine.active AND mine.is_user_active
        WHERE theirs.user_profile_id = $2 AND theirs.active)
      OR ${exchangedDirectMessagesSql('u.id', '$2')}) AS "canAccess"
  FROM user_profile u
  WHERE u.realm_id = $1 AND u.is_active
  ORDER BY u.id`);

/** Active users split by whether they can access `target` under the organization's
 * can_access_all_users_group (one statement, in the current action's transaction). */
export async function activeUsersByAccessTo(
  target: Pick<User, 'id' | 'realmId' | 'isBot'>,
): Promise<{ withAccess: Viewer[]; withoutAccess: Viewer[] }> {
  const rows = await query(activeUsersWithAccessTo, [target.realmId, target.id, target.isBot]);
  const strip = ({ id, role }: Viewer) => ({ id, role });
  return {
    withAccess: rows.filter((row) => row.canAccess).map(strip),
    withoutAccess: rows.filter((row) => !row.canAccess).map(strip),
  };
}

/** Active users who may see `target` (the audience of its realm_user events), or, without a
 * target, every active user of the organization (the audience of organization-wide data).
 * Only id and role: audience decisions need no more (email visibility is role-based). With a
 * target the read is typed SQL, in the current runAction transaction rather than `db`. */
export async function usersWhoCanAccess(
  realmId: number,
  db: Tx = getPrisma(),
  target?: Pick<User, 'id' | 'isBot'>,
): Promise<Viewer[]> {
  if (target) return (await activeUsersByAccessTo({ ...target, realmId })).withAccess;
  return db.user.findMany({ where: { realmId, isActive: true }, select: { id: true, role: true } });
}

/** The ids of the organization's active users whose role passes `role` (people only, with
 * `humansOnly`), in id order. */
async function activeIdsWithRole(
  realmId: number,
  db: Tx,
  role?: Prisma.IntFilter<'User'>,
  humansOnly = false,
): Promise<number[]> {
  const users = await db.user.findMany({
    where: {
      realmId,
      isActive: true,
      ...(role ? { role } : {}),
      ...(humansOnly ? { isBot: false } : {}),
    },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  return users.map((user) => user.id);
}

/** Every active user of the organization (Zulip's active_user_ids): the audience of
 * organization-wide data (settings, emoji, linkifiers, groups, folders …). */
export function activeUserIds(realmId: number, db: Tx = getPrisma()): Promise<number[]> {
  return activeIdsWithRole(realmId, db);
}

/** Every active user but guests (Zulip's active_non_guest_user_ids): the audience of default
 * channels and their groups, which guests do not see. */
export function activeNonGuestIds(realmId: number, db: Tx = getPrisma()): Promise<number[]> {
  return activeIdsWithRole(realmId, db, { not: Role.GUEST });
}

export function activeAdminIds(realmId: number, db: Tx = getPrisma()): Promise<number[]> {
  return activeIdsWithRole(realmId, db, { lte: Role.ADMINISTRATOR });
}

/** The active human administrators and owners (Zulip's get_human_admin_users): who hears of
 * data exports and of export consents. */
export function humanAdminIds(realmId: number, db: Tx = getPrisma()): Promise<number[]> {
  return activeIdsWithRole(realmId, db, { lte: Role.ADMINISTRATOR }, true);
}

const EMAIL = /^[^\s@]+@([^\s@]+)$/;

/** An address as Zulip's validate_email accepts it, trimmed; JsonableError otherwise. */
export function checkEmail(email: string): string {
  const trimmed = email.trim();
  const domain = EMAIL.exec(trimmed)?.[1];
  if (trimmed.length > 254 || !domain || !isEmailDomain(domain) || trimmed.includes('\0')) {
    throw new JsonableError(`Invalid email '${email}'`);
  }
  return trimmed;
}

/** The human account that `email` logs in to (case-insensitive, as Zulip's
 * get_user_by_delivery_email), if any. */
export async function getLoginUser(realm: Realm, email: string): Promise<User | undefined> {
  const prisma = getPrisma();
  const ids = await idsByLowerEquals(prisma, 'user_profile', 'delivery_email', realm.id, [email]);
  const [user] = await prisma.user.findMany({ where: { id: { in: ids }, isBot: false }, take: 1 });
  return user;
}

/** A user as stored now (after an action changed it). */
export async function getUser(id: number): Promise<User> {
  return getPrisma().user.findUniqueOrThrow({ where: { id } });
}

/** Users of the organization, all or the ones named (each must exist: "Invalid user ID"),
 * by id. */
export async function getRealmUsers(realmId: number, ids?: number[]): Promise<User[]> {
  const users = await getPrisma().user.findMany({
    where: { realmId, ...(ids ? { id: { in: ids } } : {}) },
    orderBy: { id: 'asc' },
  });
  if (ids) {
    const found = new Set(users.map((u) => u.id));
    const missing = ids.find((id) => !found.has(id));
    if (missing !== undefined) throw new JsonableError(`Invalid user ID: ${missing}`);
  }
  return users;
}

const ownProfileState = statement<
  { newestMessageId: number | null; profileValues: ProfileValueRow[] },
  [number, number]
>(`
  SELECT (SELECT message_id FROM user_message WHERE user_profile_id = $2
      ORDER BY message_id DESC LIMIT 1) AS "newestMessageId",
    COALESCE((SELECT json_agg(${PROFILE_VALUE_JSON})
      FROM custom_profile_field_value v JOIN custom_profile_field f ON f.id = v.field_id
      WHERE f.realm_id = $1 AND v.user_profile_id = $2), '[]') AS "profileValues"`);

/** What GET /users/me adds to the user's row, in one statement: the newest message the user
 * received (-1 for none) and their custom profile field values. */
export async function ownProfileStateOf(
  user: Pick<User, 'id' | 'realmId'>,
): Promise<{ maxMessageId: number; profileData: Record<string, ProfileValue> }> {
  const [row] = await query(ownProfileState, [user.realmId, user.id]);
  return {
    maxMessageId: row?.newestMessageId ?? -1,
    profileData: profileDataOf(row?.profileValues ?? []).get(user.id) ?? {},
  };
}
