// Invitations (Zulip's zerver/views/invite.py, zerver/lib/invites.py and confirmation/models.py):
// parsing invitee lists, confirmation keys and links, who may see and manage which
// invitation, and reading invitations and confirmation keys back.
import { randomBytes } from 'node:crypto';
import { realmUrl } from '@parley/auth';
import {
  getPrisma,
  Role,
  type Prisma,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import {
  InsufficientPermissionError,
  JsonableError,
  OrganizationOwnerRequiredError,
  RealmDeactivatedError,
} from '@parley/errors';
import { checkEmail } from './users';
import { emailRefusalMessage, type EmailRefusal } from './realm-domains';
import { canAddSubscribers, hasContentAccess, loadPermissions, subscriptionOf } from './streams';
import { isAdmin, isOwner } from './users';

// Row types of the invitation tables (@parley/db re-exports only the older models' types).
export type PreregistrationUser = Prisma.PreregistrationUserGetPayload<object>;
export type MultiuseInvite = Prisma.MultiuseInviteGetPayload<object>;
export type Confirmation = Prisma.ConfirmationGetPayload<object>;

/** The roles an invitation may give (Zulip's PreregistrationUser.INVITE_AS). */
export const INVITE_AS = [
  Role.OWNER,
  Role.ADMINISTRATOR,
  Role.MODERATOR,
  Role.MEMBER,
  Role.GUEST,
] as const;

/** Zulip's confirmation statuses (confirmation/settings.py). */
export const InviteStatus = { PENDING: 0, USED: 1, REVOKED: 2 } as const;

/** Zulip's Confirmation types used here. */
export const ConfirmationType = {
  USER_REGISTRATION: 1,
  INVITATION: 2,
  EMAIL_CHANGE: 3,
  MULTIUSE_INVITE: 6,
} as const;

/** Zulip's Realm.MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH, in code points. */
export const MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH = 8000;

/** Zulip's get_invitee_emails_set: split on commas and newlines, take the address out of
 * "Name <address>", trim, and drop duplicates (an empty entry stays: doInviteUsers passes it
 * over but counts it). */
export function parseInviteeEmails(raw: string): string[] {
  const emails = new Set<string>();
  for (const entry of raw.split(/[,\n]/)) {
    const named = /<(.*)>/.exec(entry);
    emails.add((named ? named[1]! : entry).trim());
  }
  return [...emails];
}

/** Zulip's validate_email_is_valid: the address itself, then whether the organization's
 * domains (realmEmailValidator) allow it. */
export function invalidEmailReason(
  email: string,
  allowed: (email: string) => EmailRefusal | null,
): string | null {
  try {
    checkEmail(email);
  } catch {
    return 'Invalid address.';
  }
  if (email.trim() !== email) return 'Invalid address.';
  const refusal = allowed(email);
  return refusal ? emailRefusalMessage('invite', refusal, email) : null;
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** Zulip's generate_key: 15 random bytes as 24 lowercase base32 characters. */
export function generateConfirmationKey(): string {
  const bytes = randomBytes(15);
  let bits = 0;
  let value = 0;
  let key = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      key += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return key;
}

/** Keys are 24 characters; anything else cannot be one (Zulip checks the length first). */
export function isWellFormedKey(key: string): boolean {
  return /^[a-z2-7]{24}$/.test(key);
}

/** The link of an email invitation or registration (Zulip's confirmation_url). */
export function confirmationUrl(realm: Pick<Realm, 'stringId'>, key: string): string {
  return `${realmUrl(realm)}/accounts/do_confirm/${key}`;
}

/** The link of a reusable invitation (Zulip's MULTIUSE_INVITE url). */
export function multiuseInviteUrl(realm: Pick<Realm, 'stringId'>, key: string): string {
  return `${realmUrl(realm)}/join/${key}/`;
}

/** Zulip's get_existing_user_errors: addresses that already belong to someone here, with
 * the reason and whether that account is deactivated. */
export async function existingUserErrors(
  realm: Realm,
  emails: string[],
  db: Tx = getPrisma(),
): Promise<Map<string, [reason: string, deactivated: boolean]>> {
  const errors = new Map<string, [string, boolean]>();
  if (emails.length === 0) return errors;
  const rows = await db.$queryRaw<
    { email: string; is_active: boolean; is_mirror_dummy: boolean }[]
  >`
    SELECT lower(delivery_email) AS email, is_active, is_mirror_dummy FROM user_profile
    WHERE realm_id = ${realm.id} AND lower(delivery_email) = ANY(${emails.map((e) => e.toLowerCase())}::text[])`;
  const byEmail = new Map(rows.map((row) => [row.email, row]));
  for (const email of emails) {
    const existing = byEmail.get(email.toLowerCase());
    if (!existing) continue;
    // An inactive mirror dummy (an imported placeholder) may still be invited.
    if (existing.is_mirror_dummy && !existing.is_active) continue;
    errors.set(
      email,
      existing.is_active
        ? ['Already has an account.', false]
        : ['Account has been deactivated.', true],
    );
  }
  return errors;
}

/** Zulip's check_role_based_permissions: only owners give the owner role; the other
 * elevated roles and other people's invitations need an administrator. */
export function checkInviteRole(user: User, invitedAs: number, requireAdmin: boolean): void {
  if (invitedAs === Role.OWNER && !isOwner(user)) throw new OrganizationOwnerRequiredError();
  if (requireAdmin && !isAdmin(user))
    throw new JsonableError('Must be an organization administrator');
}

/** Spec 4.6: a user invites only to roles as restricted as their own or more. Zulip's
 * messages for owners and administrators; a member inviting a moderator gets "Insufficient
 * permission" (Zulip's code asks administrators for moderator invitations, its API
 * documentation and the spec let moderators give their own role). */
export function checkInviteAs(user: User, invitedAs: number): void {
  checkInviteRole(user, invitedAs, invitedAs <= Role.ADMINISTRATOR);
  if (invitedAs < user.role) throw new InsufficientPermissionError();
}

/** Zulip's access_streams_for_invite: each channel must be one the inviter can read, and a
 * default channel or one they may add subscribers to. Nothing is sent otherwise. */
export async function accessStreamsForInvite(
  realm: Realm,
  user: User,
  streamIds: number[],
  db: Tx = getPrisma(),
): Promise<Stream[]> {
  const ids = [...new Set(streamIds)];
  if (ids.length === 0) return [];
  const perms = await loadPermissions(user);
  const rows = await db.stream.findMany({
    where: { realmId: realm.id, id: { in: ids.filter((id) => id > 0 && id <= 2 ** 31 - 1) } },
  });
  const byId = new Map(rows.map((row) => [row.id, row]));
  const streams: Stream[] = [];
  for (const id of ids) {
    const stream = byId.get(id);
    const readable =
      stream !== undefined &&
      !stream.deactivated &&
      hasContentAccess(perms, stream, (await subscriptionOf(user.id, stream, db)) !== null);
    if (!readable) throw new JsonableError(`Invalid channel ID ${id}. No invites were sent.`);
    streams.push(stream);
  }
  const defaults = new Set(
    (
      await db.defaultStream.findMany({
        where: { realmId: realm.id, streamId: { in: ids } },
        select: { streamId: true },
      })
    ).map((row) => row.streamId),
  );
  const refused = streams.some(
    (stream) =>
      !defaults.has(stream.id) && !canAddSubscribers(perms, stream, realm.canAddSubscribersGroupId),
  );
  if (refused)
    throw new JsonableError('You do not have permission to subscribe other users to channels.');
  return streams;
}

/** Zulip's notify_invites_changed audience: the organization's administrators (bots
 * included) and the invitation's referrer. */
export async function invitesAudience(
  realmId: number,
  referrerId: number | null,
  db: Tx = getPrisma(),
): Promise<number[]> {
  const admins = await db.user.findMany({
    where: { realmId, isActive: true, role: { lte: Role.ADMINISTRATOR } },
    select: { id: true },
  });
  const ids = admins.map((admin) => admin.id);
  if (referrerId !== null && !ids.includes(referrerId)) ids.push(referrerId);
  return ids;
}

export type InviteWithConfirmation = PreregistrationUser & { confirmations: Confirmation[] };
export type MultiuseWithConfirmation = MultiuseInvite & { confirmations: Confirmation[] };

const notExpired = (now: Date) => ({ OR: [{ expiryDate: null }, { expiryDate: { gte: now } }] });

/** Zulip's do_get_invites_controlled_by_user: pending, unexpired email invitations and
 * reusable links; administrators see everyone's, others their own. */
export async function invitesControlledBy(
  realm: Realm,
  user: User,
): Promise<{ invites: InviteWithConfirmation[]; multiuse: MultiuseWithConfirmation[] }> {
  const now = new Date();
  const mine = isAdmin(user) ? {} : { referredById: user.id };
  const [invites, multiuse] = await Promise.all([
    getPrisma().preregistrationUser.findMany({
      where: {
        realmId: realm.id,
        referredById: { not: null },
        multiuseInviteId: null,
        status: InviteStatus.PENDING,
        confirmations: { some: { type: ConfirmationType.INVITATION, ...notExpired(now) } },
        ...mine,
      },
      include: { confirmations: { where: { type: ConfirmationType.INVITATION } } },
      orderBy: { id: 'asc' },
    }),
    getPrisma().multiuseInvite.findMany({
      where: {
        realmId: realm.id,
        status: { not: InviteStatus.REVOKED },
        confirmations: { some: notExpired(now) },
        ...mine,
      },
      include: { confirmations: true },
      orderBy: { id: 'asc' },
    }),
  ]);
  return { invites, multiuse };
}

/** Zulip's access_invite_by_id: an email invitation of this organization that the user
 * created, or (administrators; owners for owner invitations) anyone's. */
export async function accessInviteById(
  realm: Realm,
  user: User,
  inviteId: number,
  db: Tx = getPrisma(),
): Promise<PreregistrationUser> {
  const invite = await db.preregistrationUser.findFirst({
    // Registrations started from a reusable link are not email invitations; used and revoked
    // invitations are gone as far as the API is concerned (they are not listed either).
    where: {
      id: inviteId,
      realmId: realm.id,
      referredById: { not: null },
      multiuseInviteId: null,
      status: InviteStatus.PENDING,
    },
  });
  if (!invite) throw new JsonableError('No such invitation');
  if (invite.referredById !== user.id) checkInviteRole(user, invite.invitedAs, true);
  return invite;
}

/** Zulip's access_multiuse_invite_by_id. */
export async function accessMultiuseInviteById(
  realm: Realm,
  user: User,
  inviteId: number,
  db: Tx = getPrisma(),
): Promise<MultiuseInvite> {
  const invite = await db.multiuseInvite.findFirst({ where: { id: inviteId, realmId: realm.id } });
  if (!invite) throw new JsonableError('No such invitation');
  if (invite.referredById !== user.id) checkInviteRole(user, invite.invitedAs, true);
  if (invite.status === InviteStatus.REVOKED)
    throw new JsonableError('Invitation has already been revoked');
  return invite;
}

/** A confirmation key of this organization with what it confirms. */
export type ConfirmedObject =
  | { kind: 'invitation'; confirmation: Confirmation; prereg: PreregistrationUser }
  | { kind: 'multiuse'; confirmation: Confirmation; invite: MultiuseInvite };

export const CONFIRMATION_LINK_INVALID = 'Invalid confirmation link.';
export const CONFIRMATION_LINK_EXPIRED = 'The confirmation link has expired or been deactivated.';

/** Zulip's get_object_from_key: unknown keys, keys of another organization and malformed
 * keys are invalid; expired keys, revoked invitations and used email invitations are
 * expired. */
export async function accessConfirmationKey(
  realm: Realm,
  key: string,
  db: Tx = getPrisma(),
): Promise<ConfirmedObject> {
  if (realm.deactivated) throw new RealmDeactivatedError();
  if (!isWellFormedKey(key)) throw new JsonableError(CONFIRMATION_LINK_INVALID);
  const confirmation = await db.confirmation.findUnique({
    where: { key },
    include: { preregistrationUser: true, multiuseInvite: true },
  });
  // An email change's key is not an invitation's (Zulip filters by type: unknown to the caller).
  if (
    !confirmation ||
    confirmation.realmId !== realm.id ||
    confirmation.type === ConfirmationType.EMAIL_CHANGE
  )
    throw new JsonableError(CONFIRMATION_LINK_INVALID);
  if (confirmation.expiryDate !== null && confirmation.expiryDate < new Date())
    throw new JsonableError(CONFIRMATION_LINK_EXPIRED);
  const { preregistrationUser, multiuseInvite, ...row } = confirmation;
  if (preregistrationUser) {
    if (preregistrationUser.status !== InviteStatus.PENDING)
      throw new JsonableError(CONFIRMATION_LINK_EXPIRED);
    return { kind: 'invitation', confirmation: row, prereg: preregistrationUser };
  }
  if (!multiuseInvite || multiuseInvite.status === InviteStatus.REVOKED)
    throw new JsonableError(CONFIRMATION_LINK_EXPIRED);
  return { kind: 'multiuse', confirmation: row, invite: multiuseInvite };
}
