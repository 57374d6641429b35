// Users: GET /users, /users/me, /users/{id|email}; POST /users; PATCH /users/{id|email};
// DELETE /users/{id}, /users/me; POST /users/{id}/reactivate.
import { Router } from 'express';
import { z } from 'zod';
import { Role, runAction, type Realm, type User } from '@parley/db';
import { InsufficientPermissionError, JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doQueueDeactivationNotice } from '../actions/deactivation-notice';
import {
  checkChangeEmail,
  checkChangeRole,
  checkCreateUser,
  checkDeactivateSelf,
  checkDeactivateUser,
  checkFullName,
  checkRole,
  doChangeEmail,
  doChangeFullName,
  doChangeRole,
  doCreateUser,
  doDeactivateUser,
  doDeleteMessagesOf,
  checkReactivateUser,
  doReactivateUser,
  passwordHashFor,
} from '../actions/users';
import { doAdoptReactivatedBot } from '../actions/bots';
import { sendNewUserMessages } from '../actions/onboarding';
import { checkProfileData, doUpdateProfileData } from '../actions/profile-fields';
import { userEndpoint } from '@parley/auth';
import { loadProfileData, profileDataSchema } from '../lib/profile-fields';
import {
  accessUserByEmail,
  accessUserById,
  checkEmail,
  getRealmUsers,
  isAdmin,
  isOwner,
  ownProfileStateOf,
  requireAdmin,
} from '../lib/users';
import { checkEmailAllowedForRealm } from '../lib/realm-domains';
import { accessibleUserIds, canAccessUser, checkCanAccessUser } from '../lib/user-access';
import { presentUser } from '../presenters/users';

export const userRoutes = Router();

const MAX_ID = 2 ** 31 - 1;
const userIdList = z.array(z.number().int().min(1).max(MAX_ID));

const profileDataParam = p.json(profileDataSchema(true));

const deactivationActions = p.json(
  z.strictObject({
    delete_profile: z.boolean().optional(),
    delete_public_channel_messages: z.boolean().optional(),
    delete_private_channel_messages: z.boolean().optional(),
    delete_direct_messages: z.boolean().optional(),
  }),
);

/** The user named by a path segment: a numeric id or an email address (real or dummy). */
function accessUserByPath(
  actor: User,
  realm: Realm,
  key: string,
  forAdmin: boolean,
): Promise<User> {
  if (/^\d+$/.test(key)) {
    const id = Number(key);
    if (id > MAX_ID) throw new JsonableError('No such user');
    return accessUserById(actor, id, { forAdmin });
  }
  if (!key.includes('@')) throw new JsonableError('No such user');
  return accessUserByEmail(actor, realm, key, { forAdmin });
}

async function presentOne(
  viewer: User,
  realm: Realm,
  target: User,
  clientGravatar: boolean,
  withProfile: boolean,
) {
  const profileData = withProfile ? await loadProfileData(realm.id, [target.id]) : undefined;
  return presentUser(target, viewer, realm, { clientGravatar, profileData });
}

defineRoute(userRoutes, '/users', {
  GET: userEndpoint(
    {
      params: {
        client_gravatar: p.bool().default(true),
        include_custom_profile_fields: p.bool().default(false),
        user_ids: p.json(userIdList).optional(),
      },
      response: z.object({ members: z.array(schema.user) }),
    },
    async ({ user, realm, params }) => {
      const users = await getRealmUsers(realm.id, params.user_ids);
      // Users the requester may not see are left out (Zulip's get_users_for_api with
      // user_list_incomplete), also when asked for by id.
      const accessible = await accessibleUserIds(realm, user);
      const visible = users.filter((target) => canAccessUser(accessible, user, target));
      const profileData = params.include_custom_profile_fields
        ? await loadProfileData(realm.id, params.user_ids)
        : undefined;
      return {
        members: visible.map((target) =>
          presentUser(target, user, realm, { clientGravatar: params.client_gravatar, profileData }),
        ),
      };
    },
  ),
  POST: userEndpoint(
    {
      params: { email: p.string(), password: p.string(), full_name: p.string() },
      response: z.object({ user_id: schema.id }),
    },
    async ({ user, realm, params }) => {
      // Owners always; administrators only with the server-granted permission (pnpm manage
      // grant-permission --permission can_create_users).
      if (!(isOwner(user) || (isAdmin(user) && user.canCreateUsers)))
        throw new InsufficientPermissionError();
      const hash = await passwordHashFor(params.password);
      const created = await runAction(async (ctx) => {
        // Zulip checks the organization's domains before whether the address is taken.
        await checkEmailAllowedForRealm(ctx.tx, realm, checkEmail(params.email), 'create_user');
        const fields = await checkCreateUser(ctx.tx, realm, {
          email: params.email,
          fullName: params.full_name,
          password: params.password,
          role: Role.MEMBER,
          dateJoinedAtFirstLogin: true,
        });
        return doCreateUser(ctx, realm, fields, hash, user.id);
      });
      await sendNewUserMessages(realm, created);
      return { user_id: created.id };
    },
  ),
});

/** GET /users/me: bot_type only for bots, and the newest message id (Zulip's
 * get_profile_backend). */
const ownUser = schema.user.extend({
  bot_type: z.int().nullable().optional(),
  max_message_id: z.int(),
});

defineRoute(userRoutes, '/users/me', {
  GET: userEndpoint({ response: ownUser }, async ({ user, realm }) => {
    const { maxMessageId, profileData } = await ownProfileStateOf(user);
    // Zulip's get_profile_backend (format_user_row): bot_type and bot_owner_id only for bots,
    // profile_data only for people.
    const { bot_type: botType, ...own } = presentUser(user, user, realm, {
      clientGravatar: false,
    });
    return {
      ...own,
      ...(user.isBot ? { bot_type: botType } : { profile_data: profileData }),
      max_message_id: maxMessageId,
    };
  }),
  DELETE: userEndpoint({ humansOnly: true, response: schema.empty }, async ({ user }) => {
    await runAction(async (ctx) => {
      await checkDeactivateSelf(ctx.tx, user);
      await doDeactivateUser(ctx, user, user.id);
    });
    return {};
  }),
});

const targetPath = { user: p.string({ maxLength: 254 }) };

defineRoute(userRoutes, '/users/:user', {
  GET: userEndpoint(
    {
      path: targetPath,
      params: {
        client_gravatar: p.bool().default(true),
        include_custom_profile_fields: p.bool().default(false),
      },
      response: z.object({ user: schema.user }),
    },
    async ({ user, realm, path, params }) => {
      const target = await accessUserByPath(user, realm, path.user, false);
      await checkCanAccessUser(realm, user, target);
      return {
        user: await presentOne(
          user,
          realm,
          target,
          params.client_gravatar,
          params.include_custom_profile_fields,
        ),
      };
    },
  ),
  PATCH: userEndpoint(
    {
      path: targetPath,
      params: {
        full_name: p.string().optional(),
        role: p.int().optional(),
        profile_data: profileDataParam.optional(),
        new_email: p.string({ maxLength: 254 }).optional(),
      },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      const target = await accessUserByPath(user, realm, path.user, true);
      // Bot owners may rename their bots; everything else is for administrators.
      if (params.role !== undefined || params.profile_data !== undefined || !target.isBot)
        requireAdmin(user);
      // Zulip's update_user_backend passes over a blank name and the name the user has.
      const fullName =
        params.full_name === undefined ||
        params.full_name.trim() === '' ||
        params.full_name === target.fullName
          ? undefined
          : checkFullName(params.full_name);
      const role = params.role === undefined ? undefined : checkRole(params.role);
      await runAction(async (ctx) => {
        if (role !== undefined) await checkChangeRole(ctx.tx, user, target, role);
        const newEmail =
          params.new_email === undefined
            ? undefined
            : await checkChangeEmail(ctx.tx, user, target, params.new_email);
        // Null, '' and [] clear a value here (Zulip's update_user_backend).
        const profile = params.profile_data
          ? await checkProfileData(ctx, user, target, params.profile_data, { emptyClears: true })
          : [];
        if (fullName !== undefined) await doChangeFullName(ctx, target, fullName, user.id);
        if (role !== undefined) await doChangeRole(ctx, target, role, user.id);
        if (newEmail !== undefined) await doChangeEmail(ctx, realm, target, newEmail, user.id);
        await doUpdateProfileData(ctx, target, profile);
      });
      return {};
    },
  ),
  DELETE: userEndpoint(
    {
      path: targetPath,
      params: {
        actions: deactivationActions.optional(),
        deactivation_notification_comment: p.string({ maxLength: 2000 }).optional(),
      },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      requireAdmin(user);
      const target = await accessUserByPath(user, realm, path.user, true);
      if (target.isBot) throw new JsonableError('No such user');
      const actions = params.actions ?? {};
      // Given, even empty, it sends the user an email (Zulip's _deactivate_user_profile_backend).
      const comment = params.deactivation_notification_comment?.trim();
      const deactivated = await runAction(async (ctx) => {
        await checkDeactivateUser(ctx.tx, user, target);
        const done = await doDeactivateUser(ctx, target, user.id, actions);
        if (comment !== undefined) await doQueueDeactivationNotice(ctx, target, comment);
        return done;
      });
      await doDeleteMessagesOf(deactivated, actions);
      return {};
    },
  ),
});

defineRoute(userRoutes, '/users/:user/reactivate', {
  POST: userEndpoint(
    { path: targetPath, response: schema.empty },
    async ({ user, realm, path }) => {
      requireAdmin(user);
      const target = await accessUserByPath(user, realm, path.user, true);
      await runAction(async (ctx) => {
        await checkReactivateUser(ctx.tx, target);
        await doReactivateUser(ctx, target, user.id);
        await doAdoptReactivatedBot(ctx, realm, target, user);
      });
      return {};
    },
  ),
});
