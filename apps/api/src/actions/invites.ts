// Invitations and sign-up (Zulip's zerver/actions/invites.py and the invitation half of
// zerver/actions/create_user.py): sending, resending and revoking email invitations,
// reusable links, the invitation email job, and creating an account from a confirmation key.
import { realmUrl } from '@parley/auth';
import { getConfig } from '@parley/config';
import {
  getPrisma,
  runAction,
  type ActionContext,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import { InsufficientPermissionError, InvitationError, JsonableError } from '@parley/errors';
import { enqueueJob, sendMail } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { silentMentionSyntax } from '@parley/markdown';
import { addNewUserHistory } from '../lib/new-user-history';
import { sendEventOnCommit } from '../lib/events';
import { codePoints } from '../lib/text';
import {
  accessConfirmationKey,
  accessStreamsForInvite,
  checkInviteAs,
  CONFIRMATION_LINK_EXPIRED,
  ConfirmationType,
  confirmationUrl,
  existingUserErrors,
  generateConfirmationKey,
  invalidEmailReason,
  invitesAudience,
  InviteStatus,
  MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH,
  multiuseInviteUrl,
  parseInviteeEmails,
  type PreregistrationUser,
} from '../lib/invites';
import { requireMemberOrAdmin } from '../lib/users';
import { hasRealmPermission } from '../lib/realm-permissions';
import { checkCanAddMembersToGroups } from '../lib/user-group-permissions';
import { checkEmail, isAdmin } from '../lib/users';
import { checkEmailAllowedForRealm, realmEmailValidator } from '../lib/realm-domains';
import { doAddSubscriptions } from './subscriptions';
import { sendNewUserMessages } from './onboarding';
import { sendBotDirectMessage } from './system-bots';
import {
  checkCreateUser,
  checkFullName,
  doCreateUser,
  passwordHashFor,
  type NewUser,
} from './users';

// ---- Checking a request ------------------------------------------------------------------------

/** What POST /invites and POST /invites/multiuse ask for. */
export interface InviteRequest {
  expiresInMinutes: number | null;
  inviteAs: number;
  streamIds: number[];
  groupIds: number[] | null;
  includeRealmDefaultSubscriptions: boolean;
  welcomeMessageCustomText: string | null;
}

/** A request that passed every check: what the invitations will grant. */
export interface CheckedInvite {
  expiresInMinutes: number | null;
  inviteAs: number;
  streams: Stream[];
  groupIds: number[];
  includeRealmDefaultSubscriptions: boolean;
  welcomeMessageCustomText: string | null;
}

function checkWelcomeText(text: string | null): void {
  if (text !== null && codePoints(text) > MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH)
    throw new JsonableError(
      `welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH} characters)`,
    );
}

/** The checks both kinds of invitation share once the inviter may invite at all and give
 * the role: the channels, then the groups. Custom welcome texts are kept from
 * administrators only; others' become null (the organization's text, spec 4.6). */
async function checkGrants(
  realm: Realm,
  user: User,
  request: InviteRequest,
): Promise<CheckedInvite> {
  const streams = await accessStreamsForInvite(realm, user, request.streamIds);
  const groupIds = [...new Set(request.groupIds ?? [])];
  if (groupIds.length > 0) await checkCanAddMembersToGroups(realm, user, groupIds);
  return {
    expiresInMinutes: request.expiresInMinutes,
    inviteAs: request.inviteAs,
    streams,
    groupIds,
    includeRealmDefaultSubscriptions: request.includeRealmDefaultSubscriptions,
    welcomeMessageCustomText: isAdmin(user) ? request.welcomeMessageCustomText : null,
  };
}

/** Zulip's invite_users_backend checks, in its order. Returns the addresses to invite. */
export async function checkInviteUsers(
  realm: Realm,
  user: User,
  inviteeEmails: string,
  request: InviteRequest,
): Promise<{ emails: string[]; invite: CheckedInvite }> {
  checkWelcomeText(request.welcomeMessageCustomText);
  requireMemberOrAdmin(user);
  if (!(await hasRealmPermission(realm, user, 'can_invite_users_group')))
    throw new InsufficientPermissionError();
  checkInviteAs(user, request.inviteAs);
  if (inviteeEmails === '') throw new JsonableError('You must specify at least one email address.');
  const emails = parseInviteeEmails(inviteeEmails);
  return { emails, invite: await checkGrants(realm, user, request) };
}

/** Zulip's generate_multiuse_invite_backend checks. */
export async function checkCreateMultiuseInvite(
  realm: Realm,
  user: User,
  request: InviteRequest,
): Promise<CheckedInvite> {
  checkWelcomeText(request.welcomeMessageCustomText);
  requireMemberOrAdmin(user);
  if (!(await hasRealmPermission(realm, user, 'create_multiuse_invite_group')))
    throw new InsufficientPermissionError();
  checkInviteAs(user, request.inviteAs);
  return checkGrants(realm, user, request);
}

// ---- Limits ------------------------------------------------------------------------------------

const DAILY_LIMIT_MSG =
  'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.';

function dailyLimitError(): InvitationError {
  return new InvitationError(DAILY_LIMIT_MSG, {
    errors: [],
    sentInvitations: false,
    dailyLimitReached: true,
  });
}

/** Serializes invitations of one organization (Zulip locks the realm row), so two requests
 * cannot both pass the limit. */
async function lockRealm(tx: Tx, realmId: number): Promise<void> {
  await tx.$queryRaw`SELECT id FROM realm WHERE id = ${realmId} FOR NO KEY UPDATE`;
}

/** Zulip's check_invite_limit: the organization's daily maximum, and for organizations
 * younger than INVITES_NEW_REALM_DAYS a limit shared by all of them. */
async function checkInviteLimit(tx: Tx, realm: Realm, count: number): Promise<void> {
  const config = getConfig();
  const [recent] = await tx.$queryRaw<{ sent: number }[]>`
    SELECT coalesce(sum(count), 0)::int AS sent FROM realm_invites_sent
    WHERE realm_id = ${realm.id} AND day >= current_date - 1`;
  if (count + (recent?.sent ?? 0) > config.INVITES_DEFAULT_REALM_DAILY_MAX) throw dailyLimitError();
  const newRealmDays = config.INVITES_NEW_REALM_DAYS;
  const isNew = realm.dateCreated.getTime() > Date.now() - newRealmDays * 86_400_000;
  if (!isNew) return;
  for (const [days, limit] of config.INVITES_NEW_REALM_LIMIT_DAYS) {
    const [shared] = await tx.$queryRaw<{ sent: number }[]>`
      SELECT coalesce(sum(s.count), 0)::int AS sent FROM realm_invites_sent s
      JOIN realm r ON r.id = s.realm_id
      WHERE r.date_created >= now() - make_interval(days => ${newRealmDays})
        AND s.day >= current_date - ${days}::int`;
    if (count + (shared?.sent ?? 0) > limit) throw dailyLimitError();
  }
}

async function countInvitesSent(tx: Tx, realmId: number, count: number): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO realm_invites_sent (realm_id, day, count) VALUES (${realmId}, current_date, ${count})
    ON CONFLICT (realm_id, day) DO UPDATE SET count = realm_invites_sent.count + ${count}`;
}

// ---- Email invitations ---------------------------------------------------------------------------

function expiryDate(minutes: number | null, from = new Date()): Date | null {
  return minutes === null ? null : new Date(from.getTime() + minutes * 60_000);
}

function sendInvitesChanged(ctx: ActionContext, audience: number[]): void {
  sendEventOnCommit(ctx, { type: 'invites_changed' }, audience);
}

/** Queues the `sequence`-th email of an invitation once the transaction commits. */
function queueInvitationEmail(ctx: ActionContext, invitationId: number, sequence: number): void {
  ctx.onCommit(() =>
    enqueueJob(
      'invitation-email',
      { invitationId, sequence },
      `invitation-email-${invitationId}-${sequence}`,
    ),
  );
}

/** Zulip's do_invite_users: validates every address (one bad address sends nothing), skips
 * addresses that already have accounts, and invites the rest. Returns the skipped addresses
 * with their reasons. */
export async function doInviteUsers(
  ctx: ActionContext,
  realm: Realm,
  referrer: User,
  emails: string[],
  invite: CheckedInvite,
  notifyReferrerOnJoin: boolean,
): Promise<[string, string, boolean][]> {
  const { tx } = ctx;
  await lockRealm(tx, realm.id);
  await checkInviteLimit(tx, realm, emails.length);
  const config = getConfig();
  if (!realm.inviteRequired && !isAdmin(referrer)) {
    const minAge = config.INVITES_MIN_USER_AGE_DAYS * 86_400_000;
    if (referrer.dateJoined.getTime() > Date.now() - minAge)
      throw new InvitationError(
        'Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.',
        { errors: [], sentInvitations: false },
      );
  }
  const errors: [string, string, boolean][] = [];
  const good: string[] = [];
  const allowed = await realmEmailValidator(tx, realm);
  for (const email of emails) {
    // An empty entry ("a@x.com,") is passed over, though it still counts below (Zulip's
    // do_invite_users).
    if (email === '') continue;
    const reason = invalidEmailReason(email, allowed);
    if (reason) errors.push([email, reason, false]);
    else good.push(email);
  }
  const existing = await existingUserErrors(realm, good, tx);
  const skipped: [string, string, boolean][] = [...existing].map(([email, [reason, off]]) => [
    email,
    reason,
    off,
  ]);
  if (errors.length > 0)
    throw new InvitationError("Some emails did not validate, so we didn't send any invitations.", {
      errors: [...errors, ...skipped],
      sentInvitations: false,
    });
  if (skipped.length > 0 && skipped.length === emails.length)
    throw new InvitationError("We weren't able to invite anyone.", {
      errors: skipped,
      sentInvitations: false,
    });
  const invitedAt = new Date();
  const toInvite = good.filter((email) => !existing.has(email));
  for (const email of toInvite) {
    const prereg = await tx.preregistrationUser.create({
      data: {
        realmId: realm.id,
        email,
        referredById: referrer.id,
        invitedAs: invite.inviteAs,
        streamIds: invite.streams.map((stream) => stream.id),
        groupIds: invite.groupIds,
        includeRealmDefaultSubscriptions: invite.includeRealmDefaultSubscriptions,
        notifyReferrerOnJoin,
        welcomeMessageCustomText: invite.welcomeMessageCustomText,
        invitedAt,
        mailRequested: 1,
      },
    });
    await tx.confirmation.create({
      data: {
        realmId: realm.id,
        key: generateConfirmationKey(),
        type: ConfirmationType.INVITATION,
        preregistrationUserId: prereg.id,
        dateSent: invitedAt,
        expiryDate: expiryDate(invite.expiresInMinutes, invitedAt),
      },
    });
    queueInvitationEmail(ctx, prereg.id, 1);
  }
  await countInvitesSent(tx, realm.id, toInvite.length);
  sendInvitesChanged(ctx, await invitesAudience(realm.id, referrer.id, tx));
  return skipped;
}

/** Zulip's do_send_user_invite_email for POST /invites/{id}/resend: one more email, within
 * the daily limit. Invitations that can no longer be used are not resent. */
export async function doResendInvite(
  ctx: ActionContext,
  realm: Realm,
  invite: PreregistrationUser,
): Promise<void> {
  const { tx } = ctx;
  await lockRealm(tx, realm.id);
  if (invite.status !== InviteStatus.PENDING) throw new JsonableError('No such invitation');
  await checkInviteLimit(tx, realm, 1);
  const updated = await tx.preregistrationUser.update({
    where: { id: invite.id },
    data: { mailRequested: { increment: 1 } },
  });
  await countInvitesSent(tx, realm.id, 1);
  queueInvitationEmail(ctx, invite.id, updated.mailRequested);
}

/** Zulip's do_revoke_user_invite. */
export async function doRevokeInvite(
  ctx: ActionContext,
  realm: Realm,
  invite: PreregistrationUser,
): Promise<void> {
  await ctx.tx.preregistrationUser.update({
    where: { id: invite.id },
    data: { status: InviteStatus.REVOKED },
  });
  sendInvitesChanged(ctx, await invitesAudience(realm.id, invite.referredById, ctx.tx));
}

// ---- Reusable links ------------------------------------------------------------------------------

/** Zulip's do_create_multiuse_invite_link: returns the link. */
export async function doCreateMultiuseInvite(
  ctx: ActionContext,
  realm: Realm,
  referrer: User,
  invite: CheckedInvite,
): Promise<string> {
  const { tx } = ctx;
  const row = await tx.multiuseInvite.create({
    data: {
      realmId: realm.id,
      referredById: referrer.id,
      invitedAs: invite.inviteAs,
      streamIds: invite.streams.map((stream) => stream.id),
      groupIds: invite.groupIds,
      includeRealmDefaultSubscriptions: invite.includeRealmDefaultSubscriptions,
      welcomeMessageCustomText: invite.welcomeMessageCustomText,
    },
  });
  const key = generateConfirmationKey();
  await tx.confirmation.create({
    data: {
      realmId: realm.id,
      key,
      type: ConfirmationType.MULTIUSE_INVITE,
      multiuseInviteId: row.id,
      dateSent: row.dateCreated,
      expiryDate: expiryDate(invite.expiresInMinutes, row.dateCreated),
    },
  });
  sendInvitesChanged(ctx, await invitesAudience(realm.id, referrer.id, tx));
  return multiuseInviteUrl(realm, key);
}

/** Zulip's do_revoke_multi_use_invite. */
export async function doRevokeMultiuseInvite(
  ctx: ActionContext,
  realm: Realm,
  inviteId: number,
  referrerId: number,
): Promise<void> {
  await ctx.tx.multiuseInvite.update({
    where: { id: inviteId },
    data: { status: InviteStatus.REVOKED },
  });
  sendInvitesChanged(ctx, await invitesAudience(realm.id, referrerId, ctx.tx));
}

/** Someone followed a reusable link and gave their address (Zulip's registration form on
 * /join/{key}/): a registration with the link's grants, confirmed by an email to that
 * address, exactly like an email invitation. */
export async function doStartSignupFromLink(
  ctx: ActionContext,
  realm: Realm,
  key: string,
  email: string,
): Promise<void> {
  const { tx } = ctx;
  const confirmed = await accessConfirmationKey(realm, key, tx);
  if (confirmed.kind !== 'multiuse') throw new JsonableError('Invalid confirmation link.');
  const address = checkEmail(email);
  await checkEmailAllowedForRealm(tx, realm, address, 'signup');
  const existing = await existingUserErrors(realm, [address], tx);
  const problem = existing.get(address);
  if (problem) throw new JsonableError(problem[0]);
  await lockRealm(tx, realm.id);
  await checkInviteLimit(tx, realm, 1);
  const { invite } = confirmed;
  const prereg = await tx.preregistrationUser.create({
    data: {
      realmId: realm.id,
      email: address,
      referredById: invite.referredById,
      multiuseInviteId: invite.id,
      invitedAs: invite.invitedAs,
      streamIds: invite.streamIds,
      groupIds: invite.groupIds,
      includeRealmDefaultSubscriptions: invite.includeRealmDefaultSubscriptions,
      welcomeMessageCustomText: invite.welcomeMessageCustomText,
      // Zulip tells nobody when someone joins through a reusable link.
      notifyReferrerOnJoin: false,
      mailRequested: 1,
    },
  });
  await tx.confirmation.create({
    data: {
      realmId: realm.id,
      key: generateConfirmationKey(),
      type: ConfirmationType.USER_REGISTRATION,
      preregistrationUserId: prereg.id,
      // Zulip's registration links last a day.
      expiryDate: expiryDate(24 * 60),
    },
  });
  await countInvitesSent(tx, realm.id, 1);
  queueInvitationEmail(ctx, prereg.id, 1);
}

// ---- The email job -------------------------------------------------------------------------------

/** Emails asked for but not sent more than a minute ago: their job was lost (Redis was down
 * when the request committed, or lost its data). Queued again under the same job id, so a job
 * that still exists is not duplicated; the job itself skips what was sent meanwhile. */
export async function requeueUnsentInvitationEmails({
  realmId = null,
  limit = 1000,
}: { realmId?: number | null; limit?: number } = {}): Promise<number> {
  const rows = await getPrisma().$queryRaw<{ id: number; mail_requested: number }[]>`
    SELECT p.id, p.mail_requested FROM preregistration_user p
    WHERE p.status = ${InviteStatus.PENDING} AND p.mail_sent < p.mail_requested
      AND (${realmId}::int IS NULL OR p.realm_id = ${realmId}::int)
      AND p.invited_at < now() - interval '1 minute'
      AND EXISTS (SELECT 1 FROM confirmation c WHERE c.preregistration_user_id = p.id
        AND (c.expiry_date IS NULL OR c.expiry_date > now()))
    ORDER BY p.id LIMIT ${limit}`;
  for (const row of rows)
    await enqueueJob(
      'invitation-email',
      { invitationId: row.id, sequence: row.mail_requested },
      `invitation-email-${row.id}-${row.mail_requested}`,
    );
  return rows.length;
}

interface MailRow {
  id: number;
  email: string;
  status: number;
  mail_sent: number;
  realm_id: number;
}

/** The `invitation-email` job: sends the invitation's `sequence`-th email unless that one (or
 * a later one) was sent already or the invitation can no longer be used. An advisory lock on
 * the invitation is held while sending, so two workers never both send it; it is not the
 * row's lock, which sign-up, revocation and resending take and must not wait on a slow mail
 * server for. A crash after sending and before the commit sends it again on retry (at least
 * once, never twice otherwise). */
export async function sendInvitationEmail(job: {
  invitationId: number;
  sequence: number;
}): Promise<void> {
  await runAction(
    async (ctx) => {
      const { tx } = ctx;
      await tx.$queryRaw`
        SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(
          hashtext('parley.invitation_email'), ${job.invitationId}::int)) AS l`;
      const [row] = await tx.$queryRaw<MailRow[]>`
        SELECT id, email, status, mail_sent, realm_id FROM preregistration_user
        WHERE id = ${job.invitationId}`;
      if (!row || row.status !== InviteStatus.PENDING || row.mail_sent >= job.sequence) return;
      const prereg = await tx.preregistrationUser.findUniqueOrThrow({
        where: { id: row.id },
        include: {
          realm: true,
          referredBy: true,
          confirmations: { orderBy: { id: 'desc' }, take: 1 },
        },
      });
      const confirmation = prereg.confirmations[0];
      if (!confirmation) return;
      if (confirmation.expiryDate !== null && confirmation.expiryDate < new Date()) return;
      const url = confirmationUrl(prereg.realm, confirmation.key);
      await sendMail(
        confirmation.type === ConfirmationType.USER_REGISTRATION
          ? registrationMail(prereg.email, prereg.realm, url)
          : invitationMail(
              prereg.email,
              prereg.realm,
              prereg.referredBy,
              url,
              confirmation.expiryDate,
            ),
      );
      await tx.preregistrationUser.update({
        where: { id: row.id },
        data: { mailSent: job.sequence },
      });
    },
    { timeout: 120_000 },
  );
}

function invitationMail(
  to: string,
  realm: Realm,
  referrer: User | null,
  url: string,
  expires: Date | null,
) {
  const who = referrer ? `${referrer.fullName} (${referrer.deliveryEmail})` : 'Someone';
  return {
    to,
    fromName: realm.name,
    subject: `${referrer?.fullName ?? 'Someone'} invited you to join ${realm.name}`,
    text: [
      'Hi there,',
      '',
      `${who} wants you to join them on ${realm.name} (${realmUrl(realm)}).`,
      '',
      'To create your account, open this link:',
      '',
      url,
      '',
      expires
        ? `The invitation expires on ${expires.toUTCString()}.`
        : 'The invitation does not expire.',
      '',
    ].join('\n'),
  };
}

function registrationMail(to: string, realm: Realm, url: string) {
  return {
    to,
    fromName: realm.name,
    subject: `Create your account on ${realm.name}`,
    text: [
      'Hi there,',
      '',
      `To finish creating your account on ${realm.name} (${realmUrl(realm)}), open this link:`,
      '',
      url,
      '',
      'The link is valid for one day.',
      '',
    ].join('\n'),
  };
}

// ---- Sign-up -------------------------------------------------------------------------------------

/** Zulip's PASSWORD_MIN_LENGTH (its guessability check is not reproduced). */
const PASSWORD_MIN_LENGTH = 6;
const PASSWORD_MAX_LENGTH = 100;

/** Checks a password for a new account; null when the organization has no password login. */
export function checkNewPassword(realm: Realm, password: string | undefined): string | null {
  if (!realm.passwordAuthEnabled) return null;
  if (password === undefined) throw new JsonableError("Missing 'password' argument");
  if ([...password].length < PASSWORD_MIN_LENGTH)
    throw new JsonableError('The password is too weak.');
  if ([...password].length > PASSWORD_MAX_LENGTH)
    throw new JsonableError('The password is too long.');
  return password;
}

export interface SignupResult {
  user: User;
  /** Whom to tell (Zulip's notify_referrer_on_join), once the account is committed. */
  notify: User | null;
  /** The invitation's welcome_message_custom_text (null: the organization's). */
  welcomeText: string | null;
}

/** The invitation's channels, and the organization's default channels when it asked for
 * them (Zulip's set_up_streams_for_new_human_user). Archived channels are left out. */
async function grantedStreams(
  tx: Tx,
  realm: Realm,
  prereg: PreregistrationUser,
): Promise<Stream[]> {
  return tx.stream.findMany({
    where: { realmId: realm.id, id: { in: prereg.streamIds }, deactivated: false },
  });
}

/** Adds the new user to the invitation's groups (named, active ones) and tells everyone,
 * as Zulip's bulk_add_members_to_user_groups does. */
async function addToInvitedGroups(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  groupIds: number[],
): Promise<void> {
  if (groupIds.length === 0) return;
  const { tx } = ctx;
  const groups = await tx.userGroup.findMany({
    where: { realmId: realm.id, id: { in: groupIds }, name: { not: null }, deactivated: false },
    select: { id: true },
  });
  if (groups.length === 0) return;
  await tx.userGroupMembership.createMany({
    data: groups.map((group) => ({ userGroupId: group.id, userId: user.id })),
    skipDuplicates: true,
  });
  const everyone = (
    await tx.user.findMany({ where: { realmId: realm.id, isActive: true }, select: { id: true } })
  ).map((row) => row.id);
  for (const group of groups) {
    sendEventOnCommit(
      ctx,
      { type: 'user_group', op: 'add_members', group_id: group.id, user_ids: [user.id] },
      everyone,
    );
  }
}

/** Creates the account an invitation (or a confirmed registration from a reusable link)
 * grants: Zulip's do_create_user with a PreregistrationUser and process_new_human_user. */
export async function doCreateUserFromInvite(
  ctx: ActionContext,
  realm: Realm,
  key: string,
  fullName: string,
  passwordHash: string | null,
  password: string | null,
): Promise<SignupResult> {
  const { tx } = ctx;
  const confirmed = await accessConfirmationKey(realm, key, tx);
  if (confirmed.kind !== 'invitation') throw new JsonableError('Invalid confirmation link.');
  const [locked] = await tx.$queryRaw<{ status: number }[]>`
    SELECT status FROM preregistration_user WHERE id = ${confirmed.prereg.id} FOR UPDATE`;
  // A concurrent sign-up with the same key got there first.
  if (locked?.status !== InviteStatus.PENDING) throw new JsonableError(CONFIRMATION_LINK_EXPIRED);
  const prereg = confirmed.prereg;
  // Again: the organization's domains may have changed since the invitation (Zulip's
  // accounts_register checks here too).
  await checkEmailAllowedForRealm(tx, realm, prereg.email, 'signup');
  const newUser: NewUser = await checkCreateUser(tx, realm, {
    email: prereg.email,
    fullName,
    password,
    role: prereg.invitedAs as NewUser['role'],
  });
  const user = await doCreateUser(ctx, realm, newUser, passwordHash, null, {
    defaultStreams: prereg.includeRealmDefaultSubscriptions,
    history: false,
  });
  const streams = await grantedStreams(tx, realm, prereg);
  if (streams.length > 0)
    await doAddSubscriptions(
      ctx,
      realm,
      streams.map((stream) => ({ user, stream })),
      prereg.referredById,
      { notifySubscribers: false },
    );
  // Once, over every channel the invitation gave, as Zulip's add_new_user_history.
  await addNewUserHistory(user.id, realm.id);
  await addToInvitedGroups(ctx, realm, user, prereg.groupIds);
  await tx.preregistrationUser.update({
    where: { id: prereg.id },
    data: { status: InviteStatus.USED, createdUserId: user.id },
  });
  // Other invitations of the same address can no longer be used (Zulip revokes them too).
  await tx.$executeRaw`
    UPDATE preregistration_user SET status = ${InviteStatus.REVOKED}
    WHERE realm_id = ${realm.id} AND lower(email) = lower(${prereg.email}) AND id <> ${prereg.id}
      AND status = ${InviteStatus.PENDING}`;
  const referrer = prereg.referredById
    ? await tx.user.findUnique({ where: { id: prereg.referredById } })
    : null;
  if (referrer) sendInvitesChanged(ctx, await invitesAudience(realm.id, referrer.id, tx));
  return {
    user,
    notify: referrer && referrer.isActive && prereg.notifyReferrerOnJoin ? referrer : null,
    welcomeText: prereg.welcomeMessageCustomText,
  };
}

/** The whole sign-up: checks, the account in one transaction, then the referrer's notice. */
export async function registerFromInvite(
  realm: Realm,
  key: string,
  fullNameRaw: string,
  passwordRaw: string | undefined,
): Promise<User> {
  // Validate the key and the fields before the (deliberately slow) password hash.
  const confirmed = await accessConfirmationKey(realm, key);
  if (confirmed.kind !== 'invitation') throw new JsonableError('Invalid confirmation link.');
  const fullName = checkFullName(fullNameRaw);
  const password = checkNewPassword(realm, passwordRaw);
  const hash = await passwordHashFor(password);
  const { user, notify, welcomeText } = await runAction((ctx) =>
    doCreateUserFromInvite(ctx, realm, key, fullName, hash, password),
  );
  if (notify) await notifyReferrer(realm, notify, user);
  await sendNewUserMessages(realm, user);
  await sendWelcomeText(realm, user, welcomeText);
  return user;
}

// ---- After sign-up: the referrer's notice and the welcome text ---------------------------------

/** Zulip's "{user} accepted your invitation to join …!" direct message from the
 * Notification Bot. A failure is logged: the account exists either way. */
async function notifyReferrer(realm: Realm, referrer: User, user: User): Promise<void> {
  try {
    await sendBotDirectMessage(
      realm,
      'notification',
      referrer,
      `${silentMentionSyntax(user)} accepted your invitation to join ${realm.name}!`,
    );
  } catch (error) {
    getLogger().error('invitation notice failed', { realm_id: realm.id, user_id: user.id, error });
  }
}

/** The invitation's welcome text (null: the organization's; empty: none) from the Welcome
 * Bot, as Zulip sends it to accounts made from invitations. A failure is logged. */
async function sendWelcomeText(realm: Realm, user: User, text: string | null): Promise<void> {
  const content = (text ?? realm.welcomeMessageCustomText).trim();
  if (content === '') return;
  try {
    await sendBotDirectMessage(realm, 'welcome', user, content);
  } catch (error) {
    getLogger().error('welcome message failed', { realm_id: realm.id, user_id: user.id, error });
  }
}
