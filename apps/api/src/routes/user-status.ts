// Statuses: POST /users/me/status, and GET and POST (administrators, feature level 407)
// /users/{user_id}/status.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction, type Realm, type User } from '@parley/db';
import { InsufficientPermissionError, JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { checkStatusChange, doUpdateUserStatus, type StatusRequest } from '../actions/user-status';
import { checkCanAccessUser } from '../lib/user-access';
import { userStatusOf } from '../lib/user-status';
import { accessUserById, isAdmin } from '../lib/users';

export const userStatusRoutes = Router();

const statusParams = {
  status_text: p.string().optional(),
  emoji_name: p.string({ maxLength: 1000 }).optional(),
  emoji_code: p.string({ maxLength: 1000 }).optional(),
  // Any string: clearing the emoji sends "" for all three (zulip-flutter does), and a wrong
  // type for an emoji is "Invalid emoji type." (checkStatusChange), as in Zulip.
  reaction_type: p.string({ maxLength: 1000 }).optional(),
};

const statusSchema = z.object({
  away: z.literal(true).optional(),
  status_text: z.string().optional(),
  emoji_name: z.string().optional(),
  emoji_code: z.string().optional(),
  reaction_type: z.string().optional(),
});

async function updateStatus(
  realm: Realm,
  target: User,
  request: StatusRequest,
): Promise<Record<string, never>> {
  const change = await checkStatusChange(realm, request);
  await runAction((ctx) => doUpdateUserStatus(ctx, realm, target, change));
  return {};
}

/** Zulip's access_user_by_id for these endpoints, in its order: an active human of the
 * organization, then, to read, one the viewer may see; to change, the viewer must be an
 * administrator (Zulip's can_admin_user: owners' statuses too). */
async function accessHuman(
  realm: Realm,
  viewer: User,
  userId: number,
  forAdmin: boolean,
): Promise<User> {
  const target = await accessUserById(viewer, userId);
  if (target.isBot) throw new JsonableError('No such user');
  if (!target.isActive) throw new JsonableError('User is deactivated');
  if (!forAdmin) await checkCanAccessUser(realm, viewer, target);
  else if (!isAdmin(viewer)) throw new InsufficientPermissionError();
  return target;
}

defineRoute(userStatusRoutes, '/users/me/status', {
  POST: userEndpoint(
    {
      humansOnly: true,
      params: { ...statusParams, away: p.bool().optional() },
      response: schema.empty,
    },
    async ({ user, realm, params }) => updateStatus(realm, user, params),
  ),
});

const userPath = { user_id: p.int({ min: 0 }) };

defineRoute(userStatusRoutes, '/users/:user_id/status', {
  GET: userEndpoint(
    { path: userPath, response: z.object({ status: statusSchema }) },
    async ({ user, realm, path }) => {
      const target = await accessHuman(realm, user, path.user_id, false);
      return { status: await userStatusOf(target.id) };
    },
  ),
  POST: userEndpoint(
    // Zulip's update_user_status_admin takes bots' requests (an administrator's bot may set
    // statuses), unlike the user's own endpoint.
    { path: userPath, params: statusParams, response: z.object({}) },
    async ({ user, realm, path, params }) =>
      updateStatus(realm, await accessHuman(realm, user, path.user_id, true), params),
  ),
});
