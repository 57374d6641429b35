// Invitations: POST and GET /invites (spec 4.6), DELETE /invites/{id}, POST
// /invites/{id}/resend, POST /invites/multiuse, DELETE /invites/multiuse/{id}; and Parley's
// own unauthenticated sign-up API (docs/invitations.md): POST /invites/confirm (key),
// POST /register_from_invite, POST /join_from_link.
import { Router } from 'express';
import { z } from 'zod';
import { realmEndpoint, realmUrl, userEndpoint } from '@parley/auth';
import { getConfig } from '@parley/config';
import { runAction } from '@parley/db';
import { InvitationError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkCreateMultiuseInvite,
  checkInviteUsers,
  doCreateMultiuseInvite,
  doInviteUsers,
  doResendInvite,
  doRevokeInvite,
  doRevokeMultiuseInvite,
  doStartSignupFromLink,
  registerFromInvite,
  type InviteRequest,
} from '../actions/invites';
import {
  accessConfirmationKey,
  accessInviteById,
  accessMultiuseInviteById,
  INVITE_AS,
  invitesControlledBy,
} from '../lib/invites';
import { requireMemberOrAdmin } from '../lib/users';
import { id, MAX_LIST } from '../lib/channel-params';
import { presentInvite, presentMultiuseInvite } from '../presenters/invites';

export const inviteRoutes = Router();

const keyParam = p.string({ maxLength: 40 });

// Sign-up, step one: what a key grants. Declared before /invites/{invite_id}, which would take
// 'confirm' for an id. The key travels in the body, never the URL: access logs (Parley's and
// nginx's) record URLs, and a key there would let anyone reading them take the account.
defineRoute(inviteRoutes, '/invites/confirm', {
  POST: realmEndpoint(
    {
      params: { key: keyParam },
      response: z.object({
        realm_name: z.string(),
        realm_url: z.string(),
        password_required: z.boolean(),
        is_multiuse: z.boolean(),
        email: z.string().nullable(),
        full_name: z.string().nullable(),
        invited_as: z.int(),
      }),
    },
    async ({ realm, params }) => {
      const confirmed = await accessConfirmationKey(realm, params.key);
      const base = {
        realm_name: realm.name,
        realm_url: realmUrl(realm),
        password_required: realm.passwordAuthEnabled,
      };
      if (confirmed.kind === 'multiuse')
        return {
          ...base,
          is_multiuse: true,
          email: null,
          full_name: null,
          invited_as: confirmed.invite.invitedAs,
        };
      return {
        ...base,
        is_multiuse: false,
        email: confirmed.prereg.email,
        // Invitations do not carry a name: the new user chooses it.
        full_name: null,
        invited_as: confirmed.prereg.invitedAs,
      };
    },
  ),
});

// Channel ids are checked one by one against the organization (Zulip's "Invalid channel ID"
// for any that is not one); group ids reach the database as int4, so they are bounded here.
const ids = z.array(z.number().int()).max(MAX_LIST);
const groupIds = z.array(id).max(MAX_LIST);

/** The parameters both kinds of invitation take. */
const grantParams = {
  invite_expires_in_minutes: p
    .json(
      z
        .number()
        .int()
        .min(1)
        .max(2 ** 31 - 1)
        .nullable(),
    )
    .optional(),
  invite_as: p.json(z.literal(INVITE_AS)).default(400),
  group_ids: p.json(groupIds.nullable()).optional(),
  include_realm_default_subscriptions: p.bool().default(false),
  welcome_message_custom_text: p.string().optional(),
};

interface GrantParams {
  invite_expires_in_minutes?: number | null;
  invite_as: number;
  group_ids?: number[] | null;
  include_realm_default_subscriptions: boolean;
  welcome_message_custom_text?: string;
}

const toRequest = (params: GrantParams, streamIds: number[]): InviteRequest => ({
  expiresInMinutes:
    params.invite_expires_in_minutes === undefined
      ? getConfig().INVITATION_LINK_VALIDITY_MINUTES
      : params.invite_expires_in_minutes,
  inviteAs: params.invite_as,
  streamIds,
  groupIds: params.group_ids ?? null,
  includeRealmDefaultSubscriptions: params.include_realm_default_subscriptions,
  welcomeMessageCustomText: params.welcome_message_custom_text ?? null,
});

const SOME_SKIPPED =
  "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!";

defineRoute(inviteRoutes, '/invites', {
  GET: userEndpoint(
    { response: z.object({ invites: z.array(schema.invite) }) },
    async ({ realm, user }) => {
      requireMemberOrAdmin(user);
      const { invites, multiuse } = await invitesControlledBy(realm, user);
      return {
        invites: [
          ...invites.map(presentInvite),
          ...multiuse.map((invite) => presentMultiuseInvite(realm, invite)),
        ],
      };
    },
  ),
  POST: userEndpoint(
    {
      params: {
        invitee_emails: p.string(),
        stream_ids: p.json(ids),
        notify_referrer_on_join: p.bool().default(true),
        ...grantParams,
      },
      response: schema.empty,
    },
    async ({ realm, user, params }) => {
      const { emails, invite } = await checkInviteUsers(
        realm,
        user,
        params.invitee_emails,
        toRequest(params, params.stream_ids),
      );
      const skipped = await runAction((ctx) =>
        doInviteUsers(ctx, realm, user, emails, invite, params.notify_referrer_on_join),
      );
      if (skipped.length > 0)
        throw new InvitationError(SOME_SKIPPED, { errors: skipped, sentInvitations: true });
      return {};
    },
  ),
});

defineRoute(inviteRoutes, '/invites/multiuse', {
  POST: userEndpoint(
    {
      params: { stream_ids: p.json(ids.nullable()).optional(), ...grantParams },
      response: z.object({ invite_link: z.string() }),
    },
    async ({ realm, user, params }) => {
      const invite = await checkCreateMultiuseInvite(
        realm,
        user,
        toRequest(params, params.stream_ids ?? []),
      );
      return {
        invite_link: await runAction((ctx) => doCreateMultiuseInvite(ctx, realm, user, invite)),
      };
    },
  ),
});

const invitePath = { invite_id: p.int() };

defineRoute(inviteRoutes, '/invites/multiuse/:invite_id', {
  DELETE: userEndpoint(
    { path: invitePath, response: schema.empty },
    async ({ realm, user, path }) => {
      requireMemberOrAdmin(user);
      await runAction(async (ctx) => {
        const invite = await accessMultiuseInviteById(realm, user, path.invite_id, ctx.tx);
        await doRevokeMultiuseInvite(ctx, realm, invite.id, invite.referredById);
      });
      return {};
    },
  ),
});

defineRoute(inviteRoutes, '/invites/:invite_id', {
  DELETE: userEndpoint(
    { path: invitePath, response: schema.empty },
    async ({ realm, user, path }) => {
      requireMemberOrAdmin(user);
      await runAction(async (ctx) => {
        const invite = await accessInviteById(realm, user, path.invite_id, ctx.tx);
        await doRevokeInvite(ctx, realm, invite);
      });
      return {};
    },
  ),
});

defineRoute(inviteRoutes, '/invites/:invite_id/resend', {
  POST: userEndpoint(
    { path: invitePath, response: schema.empty },
    async ({ realm, user, path }) => {
      requireMemberOrAdmin(user);
      await runAction(async (ctx) => {
        const invite = await accessInviteById(realm, user, path.invite_id, ctx.tx);
        await doResendInvite(ctx, realm, invite);
      });
      return {};
    },
  ),
});

// ---- Sign-up (no authentication; the Host header names the organization) -----------------

defineRoute(inviteRoutes, '/register_from_invite', {
  POST: realmEndpoint(
    {
      params: {
        key: keyParam,
        full_name: p.string({ maxLength: 1000 }),
        password: p.string({ maxLength: 1000 }).optional(),
      },
      response: z.object({ api_key: z.string(), email: z.string(), user_id: schema.id }),
    },
    async ({ realm, params }) => {
      const user = await registerFromInvite(realm, params.key, params.full_name, params.password);
      return { api_key: user.apiKey, email: user.email, user_id: user.id };
    },
  ),
});

defineRoute(inviteRoutes, '/join_from_link', {
  POST: realmEndpoint(
    { params: { key: keyParam, email: p.string({ maxLength: 254 }) }, response: schema.empty },
    async ({ realm, params }) => {
      await runAction((ctx) => doStartSignupFromLink(ctx, realm, params.key, params.email));
      return {};
    },
  ),
});
