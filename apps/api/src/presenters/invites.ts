// Invitations as GET /invites lists them (Zulip's PreregistrationInviteData and
// MultiuseInviteData).
import type { Realm } from '@parley/db';
import {
  multiuseInviteUrl,
  type Confirmation,
  type MultiuseInvite,
  type PreregistrationUser,
} from '../lib/invites';

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const expiry = (confirmation: Confirmation | undefined) =>
  confirmation?.expiryDate ? seconds(confirmation.expiryDate) : null;

export function presentInvite(
  invite: PreregistrationUser & { confirmations: Confirmation[] },
): Record<string, unknown> {
  return {
    email: invite.email,
    invited_by_user_id: invite.referredById,
    invited: seconds(invite.invitedAt),
    expiry_date: expiry(invite.confirmations[0]),
    id: invite.id,
    invited_as: invite.invitedAs,
    is_multiuse: false,
    notify_referrer_on_join: invite.notifyReferrerOnJoin,
  };
}

export function presentMultiuseInvite(
  realm: Pick<Realm, 'stringId'>,
  invite: MultiuseInvite & { confirmations: Confirmation[] },
): Record<string, unknown> {
  const confirmation = invite.confirmations[0]!;
  return {
    invited_by_user_id: invite.referredById,
    invited: seconds(confirmation.dateSent),
    expiry_date: expiry(confirmation),
    id: invite.id,
    link_url: multiuseInviteUrl(realm, confirmation.key),
    invited_as: invite.invitedAs,
    is_multiuse: true,
  };
}
