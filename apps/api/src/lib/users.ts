// Reading users and deciding who may see what (Zulip's access_user_* and email visibility).
import { getPrisma, idsByLowerEquals, Role, type Realm, type Tx, type User } from '@parley/db';
import { InsufficientPermissionError, JsonableError } from '@parley/errors';
import { realmEmailDomain, realmHost } from '@parley/auth';

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

/** Zulip's UserProfile.can_admin_user: owners administer anyone, administrators everyone but
 * owners, and a bot's owner administers the bot. */
export function canAdminUser(actor: User, target: User): boolean {
  if (isOwner(actor)) return true;
  if (isAdmin(actor)) return !isOwner(target);
  return target.isBot && target.botOwnerId === actor.id;
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
  const target = await db.user.findFirst({ where: { id: userId, realmId: actor.realmId } });
  if (!target) throw new JsonableError('No such user');
  if (forAdmin && !canAdminUser(actor, target)) throw new InsufficientPermissionError();
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

/** Users who may see `target` at all: every active user of the organization (the realm
 * setting can_access_all_users_group is "everyone" until a later issue adds it). */
export type Viewer = Pick<User, 'id' | 'role'>;

/** Only what audience decisions need: id and role (email visibility is role-based). */
export async function usersWhoCanAccess(realmId: number, db: Tx = getPrisma()): Promise<Viewer[]> {
  return db.user.findMany({ where: { realmId, isActive: true }, select: { id: true, role: true } });
}

export async function activeAdminIds(realmId: number, db: Tx = getPrisma()): Promise<number[]> {
  const admins = await db.user.findMany({
    where: { realmId, isActive: true, role: { lte: Role.ADMINISTRATOR } },
    select: { id: true },
  });
  return admins.map((admin) => admin.id);
}
