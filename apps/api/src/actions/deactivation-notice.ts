// The email that tells a deactivated user so (Zulip's zerver/emails/deactivate): sent when the
// administrator who deactivated them gave a deactivation_notification_comment, even an empty
// one. The notice is a row (table deactivation_notice, SQL only) written with the deactivation
// and marked sent in the transaction that sends it, so the job may run twice and the worker's
// sweep may queue a lost one again without a second email.
import { realmUrl } from '@parley/auth';
import { getPrisma, runAction, type ActionContext, type Realm, type User } from '@parley/db';
import { enqueueJob, sendMail, type MailMessage } from '@parley/jobs';

export async function doQueueDeactivationNotice(
  ctx: ActionContext,
  target: User,
  comment: string,
): Promise<void> {
  const [row] = await ctx.tx.$queryRaw<{ id: number }[]>`
    INSERT INTO deactivation_notice (realm_id, user_profile_id, comment)
    VALUES (${target.realmId}, ${target.id}, ${comment}) RETURNING id`;
  ctx.onCommit(() => queueNotice(row!.id));
}

function queueNotice(noticeId: number): Promise<void> {
  return enqueueJob('deactivation-email', { noticeId }, `deactivation-email-${noticeId}`);
}

/** The `deactivation-email` job. An account active again by then is not told it was
 * deactivated. */
export async function sendDeactivationEmail(job: { noticeId: number }): Promise<void> {
  await runAction(
    async ({ tx }) => {
      const [notice] = await tx.$queryRaw<
        {
          id: number;
          realm_id: number;
          comment: string;
          sent: boolean;
          email: string;
          active: boolean;
        }[]
      >`
        SELECT n.id, n.realm_id, n.comment, n.sent, u.delivery_email AS email, u.is_active AS active
        FROM deactivation_notice n JOIN user_profile u ON u.id = n.user_profile_id
        WHERE n.id = ${job.noticeId} FOR UPDATE OF n`;
      if (!notice || notice.sent || notice.active) return;
      const realm = await tx.realm.findUniqueOrThrow({ where: { id: notice.realm_id } });
      await sendMail(deactivationMail(realm, notice.email, notice.comment));
      await tx.$executeRaw`UPDATE deactivation_notice SET sent = true WHERE id = ${notice.id}`;
    },
    { timeout: 120_000 },
  );
}

function deactivationMail(realm: Realm, to: string, comment: string): MailMessage {
  const lines = [
    `Your Zulip account on ${realmUrl(realm)} has been deactivated, and you will no longer be able to log in.`,
  ];
  if (comment !== '')
    lines.push('', 'The administrators provided the following comment:', '', comment);
  return {
    to,
    fromName: realm.name,
    subject: `Notification of account deactivation on ${realm.name}`,
    text: lines.join('\n'),
  };
}

/** The worker's sweep: notices of the last day whose job was lost are queued again, a minute
 * after their deactivation (a job still known is left as it is). */
export async function requeueUnsentDeactivationEmails(limit = 1000): Promise<number> {
  const rows = await getPrisma().$queryRaw<{ id: number }[]>`
    SELECT id FROM deactivation_notice
    WHERE NOT sent AND created_at < now() - interval '1 minute'
      AND created_at > now() - interval '1 day'
    ORDER BY id LIMIT ${limit}`;
  for (const row of rows) await queueNotice(row.id);
  return rows.length;
}
