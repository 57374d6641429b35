// Changing one's own email address (Zulip's do_start_email_change_process and
// confirm_email_change): PATCH /settings with `email` records the request and mails a link to
// the new address; confirming through the link changes the address and tells the old one.
// Until then nothing about the account changes.
import { realmUrl } from '@parley/auth';
import { getConfig } from '@parley/config';
import {
  getPrisma,
  lockUserRow,
  runAction,
  type ActionContext,
  type Realm,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError, RealmDeactivatedError, UserDeactivatedError } from '@parley/errors';
import { enqueueJob, sendMail } from '@parley/jobs';
import {
  CONFIRMATION_LINK_EXPIRED,
  CONFIRMATION_LINK_INVALID,
  ConfirmationType,
  generateConfirmationKey,
  invalidEmailReason,
  isWellFormedKey,
} from '../lib/invites';
import { realmEmailValidator } from '../lib/realm-domains';
import { isAdmin } from '../lib/users';
import { doChangeEmail } from './users';

/** Zulip's CONFIRMATION_LINK_DEFAULT_VALIDITY_DAYS, which email-change links use. */
const LINK_VALIDITY_MS = 24 * 60 * 60 * 1000;

/** A newer request revokes the pending ones before it: only the latest link works. */
const Status = { PENDING: 0, CONFIRMED: 1, REVOKED: 2 } as const;

interface ChangeRow {
  id: number;
  realm_id: number;
  user_profile_id: number;
  old_email: string;
  new_email: string;
  status: number;
  mail_sent: boolean;
  notice_sent: boolean;
}

/** The link mailed to the new address (Zulip's confirm_new_email URL). */
export function emailChangeUrl(realm: Pick<Realm, 'stringId'>, key: string): string {
  return `${realmUrl(realm)}/accounts/confirm_new_email/${key}/`;
}

/** Zulip's validate_email_change_request, checked when asked and again when confirmed: the
 * account is active, the organization lets its members change addresses (administrators
 * always may), the address is valid and admitted by the organization's domains, and nobody
 * here has it. */
async function checkEmailChange(tx: Tx, user: User, realm: Realm, email: string): Promise<void> {
  if (!user.isActive) throw new UserDeactivatedError();
  if (realm.emailChangesDisabled && !isAdmin(user))
    throw new JsonableError('Email address changes are disabled in this organization.');
  const invalid = invalidEmailReason(email, await realmEmailValidator(tx, realm));
  if (invalid) throw new JsonableError(invalid);
  // Zulip's validate_email_not_already_in_realm(verbose=False): imported placeholders count.
  const [taken] = await tx.$queryRaw<{ is_active: boolean }[]>`
    SELECT is_active FROM user_profile
    WHERE realm_id = ${realm.id} AND lower(delivery_email) = lower(${email})
    ORDER BY is_active DESC LIMIT 1`;
  if (taken)
    throw new JsonableError(
      taken.is_active ? 'Already has an account.' : 'Account has been deactivated.',
    );
}

/** PATCH /settings `email`, inside the settings' transaction: checks, records the request
 * with its link (valid a day), revokes the user's earlier pending requests and queues the mail
 * to the new address once committed. The caller counts it against email_change_by_user. */
export async function doStartEmailChange(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  email: string,
): Promise<void> {
  const { tx } = ctx;
  // Every change of an account's rows takes its user row first (one lock order).
  await lockUserRow(ctx, user.id);
  await checkEmailChange(tx, user, realm, email);
  await tx.$executeRaw`
    UPDATE email_change_status SET status = ${Status.REVOKED}, updated_at = now()
    WHERE user_profile_id = ${user.id} AND status = ${Status.PENDING}`;
  const [change] = await tx.$queryRaw<{ id: number }[]>`
    INSERT INTO email_change_status (realm_id, user_profile_id, old_email, new_email)
    VALUES (${realm.id}, ${user.id}, ${user.deliveryEmail}, ${email})
    RETURNING id`;
  await tx.$executeRaw`
    INSERT INTO confirmation (realm_id, confirmation_key, type, email_change_status_id, expiry_date)
    VALUES (${realm.id}, ${generateConfirmationKey()}, ${ConfirmationType.EMAIL_CHANGE},
      ${change!.id}, ${new Date(Date.now() + LINK_VALIDITY_MS)})`;
  ctx.onCommit(() => queueMail(change!.id, 'confirm'));
}

function queueMail(changeId: number, kind: 'confirm' | 'notice'): Promise<void> {
  return enqueueJob('email-change-mail', { changeId, kind }, `email-change-${kind}-${changeId}`);
}

/** POST /accounts/confirm_new_email/{key}/: Zulip's confirm_email_change. The link works once,
 * only while it is the user's latest request and their address is still the one it replaces
 * (an administrator may have changed it since); the request is checked again as when it was
 * made (the address may have been taken since, or changes disabled). */
export async function confirmEmailChange(
  realm: Realm,
  key: string,
): Promise<{ oldEmail: string; newEmail: string }> {
  if (realm.deactivated) throw new RealmDeactivatedError();
  if (!isWellFormedKey(key)) throw new JsonableError(CONFIRMATION_LINK_INVALID);
  return runAction(async (ctx) => {
    const { tx } = ctx;
    const [link] = await tx.$queryRaw<{ id: number; user_profile_id: number }[]>`
      SELECT s.id, s.user_profile_id FROM confirmation c
      JOIN email_change_status s ON s.id = c.email_change_status_id
      WHERE c.confirmation_key = ${key} AND c.realm_id = ${realm.id}
        AND c.type = ${ConfirmationType.EMAIL_CHANGE}`;
    if (!link) throw new JsonableError(CONFIRMATION_LINK_INVALID);
    // The user row first, then the request's (the order of every change of the account), and
    // both read again under their locks.
    await lockUserRow(ctx, link.user_profile_id);
    const [found] = await tx.$queryRaw<(ChangeRow & { expiry_date: Date | null })[]>`
      SELECT s.*, c.expiry_date FROM email_change_status s
      JOIN confirmation c ON c.email_change_status_id = s.id
      WHERE s.id = ${link.id} FOR UPDATE OF s`;
    const user = await tx.user.findUnique({ where: { id: link.user_profile_id } });
    if (!found || !user) throw new JsonableError(CONFIRMATION_LINK_INVALID);
    if (
      found.status !== Status.PENDING ||
      (found.expiry_date !== null && found.expiry_date < new Date()) ||
      user.deliveryEmail !== found.old_email
    )
      throw new JsonableError(CONFIRMATION_LINK_EXPIRED);
    await checkEmailChange(tx, user, realm, found.new_email);
    await doChangeEmail(ctx, realm, user, found.new_email, user.id);
    await tx.$executeRaw`
      UPDATE email_change_status SET status = ${Status.CONFIRMED}, updated_at = now()
      WHERE id = ${found.id}`;
    ctx.onCommit(() => queueMail(found.id, 'notice'));
    return { oldEmail: found.old_email, newEmail: found.new_email };
  });
}

/** The `email-change-mail` job: the link to the new address (`confirm`), or, once confirmed,
 * the notice to the old one (`notice`). The row records a sent mail in the transaction that
 * sent it, so a job run twice sends it once; only a commit failing after the mail server took
 * the mail sends it again on the retry. */
export async function sendEmailChangeMail(job: {
  changeId: number;
  kind: 'confirm' | 'notice';
}): Promise<void> {
  await runAction(
    async ({ tx }) => {
      const [change] = await tx.$queryRaw<
        (ChangeRow & { key: string; expiry_date: Date; confirmable: boolean })[]
      >`
        SELECT s.*, c.confirmation_key AS key, c.expiry_date,
          u.is_active AND u.delivery_email = s.old_email AND NOT r.deactivated AS confirmable
        FROM email_change_status s
        JOIN confirmation c ON c.email_change_status_id = s.id
        JOIN user_profile u ON u.id = s.user_profile_id
        JOIN realm r ON r.id = s.realm_id
        WHERE s.id = ${job.changeId} FOR UPDATE OF s`;
      if (!change) return;
      const realm = await tx.realm.findUniqueOrThrow({ where: { id: change.realm_id } });
      if (job.kind === 'confirm') {
        if (change.mail_sent || change.status !== Status.PENDING) return;
        // A link that could no longer be confirmed (the address changed meanwhile, the account
        // or organization deactivated, the day passed) is not mailed.
        if (change.expiry_date < new Date() || !change.confirmable) return;
        await sendMail(confirmationMail(realm, change, emailChangeUrl(realm, change.key)));
        await tx.$executeRaw`UPDATE email_change_status SET mail_sent = true WHERE id = ${change.id}`;
        return;
      }
      if (change.notice_sent || change.status !== Status.CONFIRMED) return;
      await sendMail(noticeMail(realm, change));
      await tx.$executeRaw`UPDATE email_change_status SET notice_sent = true WHERE id = ${change.id}`;
    },
    { timeout: 120_000 },
  );
}

/** The worker's sweep: mails whose job was lost (an enqueue lost between COMMIT and Redis, a
 * Redis that lost its data) are queued again, a minute after their request or confirmation:
 * links still valid, and notices of the last day. A job still known is left as it is. */
export async function requeueUnsentEmailChangeMails(limit = 1000): Promise<number> {
  const rows = await getPrisma().$queryRaw<{ id: number; kind: 'confirm' | 'notice' }[]>`
    SELECT s.id, 'confirm' AS kind FROM email_change_status s
    JOIN confirmation c ON c.email_change_status_id = s.id
    WHERE s.status = ${Status.PENDING} AND NOT s.mail_sent
      AND s.updated_at < now() - interval '1 minute' AND c.expiry_date > now()
    UNION ALL
    SELECT s.id, 'notice' AS kind FROM email_change_status s
    WHERE s.status = ${Status.CONFIRMED} AND NOT s.notice_sent
      AND s.updated_at < now() - interval '1 minute' AND s.updated_at > now() - interval '1 day'
    ORDER BY id LIMIT ${limit}`;
  for (const row of rows) await queueMail(row.id, row.kind);
  return rows.length;
}

function confirmationMail(realm: Realm, change: ChangeRow, url: string) {
  return {
    to: change.new_email,
    fromName: realm.name,
    subject: `Verify your new email address for ${realm.name}`,
    text: [
      'Hi,',
      '',
      `We received a request to change the email address for the account ${change.old_email}`,
      `on ${realm.name} (${realmUrl(realm)}) to ${change.new_email}.`,
      '',
      'To confirm this change, open this link (valid for one day):',
      url,
      '',
      "If you did not ask for this, ignore this email: your account's address stays as it is.",
      '',
      `Questions? Contact ${getConfig().ZULIP_ADMINISTRATOR}.`,
    ].join('\n'),
  };
}

function noticeMail(realm: Realm, change: ChangeRow) {
  return {
    to: change.old_email,
    fromName: realm.name,
    subject: `Email address changed for ${realm.name}`,
    text: [
      'Hi,',
      '',
      `The email address for your account on ${realm.name} (${realmUrl(realm)}) was changed`,
      `from ${change.old_email} to ${change.new_email}.`,
      '',
      `If you did not make this change, contact ${getConfig().ZULIP_ADMINISTRATOR} right away.`,
    ].join('\n'),
  };
}
