// Changing one's own email address (Zulip's do_start_email_change_process and
// confirm_email_change): PATCH /settings with `email` records the request and mails a link to
// the new address; opening the link changes the address and tells the old one. Until then
// nothing about the account changes.
import { realmUrl } from '@parley/auth';
import { getConfig } from '@parley/config';
import { runAction, type ActionContext, type Realm, type Tx, type User } from '@parley/db';
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

const Status = { PENDING: 0, CONFIRMED: 1 } as const;

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
 * here has it. Returns the address as it will be stored. */
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
 * with its link (valid a day) and queues the mail to the new address once committed. The
 * caller has counted it against email_change_by_user. */
export async function doStartEmailChange(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  email: string,
): Promise<void> {
  const { tx } = ctx;
  await checkEmailChange(tx, user, realm, email);
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

/** GET /accounts/confirm_new_email/{key}/: Zulip's confirm_email_change. The link works once;
 * the request is checked again as when it was made (the address may have been taken since,
 * or changes disabled). */
export async function confirmEmailChange(
  realm: Realm,
  key: string,
): Promise<{ oldEmail: string; newEmail: string }> {
  if (realm.deactivated) throw new RealmDeactivatedError();
  if (!isWellFormedKey(key)) throw new JsonableError(CONFIRMATION_LINK_INVALID);
  return runAction(async (ctx) => {
    const { tx } = ctx;
    const [found] = await tx.$queryRaw<(ChangeRow & { expiry_date: Date | null })[]>`
      SELECT s.*, c.expiry_date FROM confirmation c
      JOIN email_change_status s ON s.id = c.email_change_status_id
      WHERE c.confirmation_key = ${key} AND c.realm_id = ${realm.id}
        AND c.type = ${ConfirmationType.EMAIL_CHANGE}
      FOR UPDATE OF s`;
    if (!found) throw new JsonableError(CONFIRMATION_LINK_INVALID);
    if (
      found.status !== Status.PENDING ||
      (found.expiry_date !== null && found.expiry_date < new Date())
    )
      throw new JsonableError(CONFIRMATION_LINK_EXPIRED);
    const user = await tx.user.findUnique({ where: { id: found.user_profile_id } });
    if (!user) throw new JsonableError(CONFIRMATION_LINK_INVALID);
    // The same lock as every other change of the account's row.
    await tx.$queryRaw`SELECT 1 AS locked FROM user_profile WHERE id = ${user.id} FOR NO KEY UPDATE`;
    await checkEmailChange(tx, user, realm, found.new_email);
    await doChangeEmail(ctx, user, found.new_email, user.id);
    await tx.$executeRaw`
      UPDATE email_change_status SET status = ${Status.CONFIRMED}, updated_at = now()
      WHERE id = ${found.id}`;
    ctx.onCommit(() => queueMail(found.id, 'notice'));
    return { oldEmail: found.old_email, newEmail: found.new_email };
  });
}

/** The `email-change-mail` job: the link to the new address (`confirm`), or, once confirmed,
 * the notice to the old one (`notice`); each at most once (the row records it in the
 * transaction that sent it, so a retry after a failed send sends it then). */
export async function sendEmailChangeMail(job: {
  changeId: number;
  kind: 'confirm' | 'notice';
}): Promise<void> {
  await runAction(
    async ({ tx }) => {
      const [change] = await tx.$queryRaw<(ChangeRow & { key: string; expiry_date: Date })[]>`
        SELECT s.*, c.confirmation_key AS key, c.expiry_date FROM email_change_status s
        JOIN confirmation c ON c.email_change_status_id = s.id
        WHERE s.id = ${job.changeId} FOR UPDATE OF s`;
      if (!change) return;
      const realm = await tx.realm.findUniqueOrThrow({ where: { id: change.realm_id } });
      if (job.kind === 'confirm') {
        if (change.mail_sent || change.status !== Status.PENDING) return;
        if (change.expiry_date < new Date()) return;
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
