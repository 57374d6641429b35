// POST and DELETE /users/me/muted_users/{muted_user_id}.
import { Router } from 'express';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doMuteUser, doUnmuteUser } from '../actions/muted-users';
import { accessUserById } from '../lib/users';
import { checkCanAccessUser } from '../lib/user-access';

export const mutedUserRoutes = Router();

const path = { muted_user_id: p.int({ min: 1 }) };

defineRoute(mutedUserRoutes, '/users/me/muted_users/:muted_user_id', {
  POST: userEndpoint({ path, response: schema.empty }, async ({ user, realm, path }) => {
    // Checked first, as in Zulip, before whether the user exists.
    if (path.muted_user_id === user.id) throw new JsonableError('Cannot mute self');
    // Bots and deactivated users can be muted; a guest only those they may see.
    const muted = await accessUserById(user, path.muted_user_id);
    await checkCanAccessUser(realm, user, muted);
    await runAction((ctx) => doMuteUser(ctx, realm, user, muted));
    return {};
  }),
  DELETE: userEndpoint({ path, response: schema.empty }, async ({ user, realm, path }) => {
    const muted = await accessUserById(user, path.muted_user_id);
    await checkCanAccessUser(realm, user, muted);
    await runAction((ctx) => doUnmuteUser(ctx, user, muted));
    return {};
  }),
});
