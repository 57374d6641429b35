// What a deactivated user's invitations become (Zulip's revoke_invites_generated_by_user): the
// email invitations still pending and the reusable links they made expire now, so nobody joins
// through an account that is gone, and the administrators' lists drop them.
import type { ActionContext, User } from '@parley/db';
import { sendEventOnCommit } from '../lib/events';
import { invitesAudience, InviteStatus } from '../lib/invites';

export async function doExpireInvitesBy(ctx: ActionContext, referrer: User): Promise<void> {
  const expired = await ctx.tx.$executeRaw`
    UPDATE confirmation c SET expiry_date = now()
    WHERE c.realm_id = ${referrer.realmId}
      AND (c.expiry_date IS NULL OR c.expiry_date > now())
      AND (
        c.preregistration_user_id IN (
          SELECT id FROM preregistration_user
          WHERE referred_by_id = ${referrer.id} AND status = ${InviteStatus.PENDING})
        OR c.multiuse_invite_id IN (
          SELECT id FROM multiuse_invite
          WHERE referred_by_id = ${referrer.id} AND status <> ${InviteStatus.REVOKED}))`;
  if (expired > 0)
    sendEventOnCommit(
      ctx,
      { type: 'invites_changed' },
      await invitesAudience(referrer.realmId, null, ctx.tx),
    );
}
