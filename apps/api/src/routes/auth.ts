// Obtaining API keys: POST /fetch_api_key (password), POST /jwt/fetch_api_key (JSON Web
// Token), POST /users/me/api_key/regenerate.
import { Router } from 'express';
import { z } from 'zod';
import jwt from 'jsonwebtoken';
import { runAction, type Realm, type User } from '@parley/db';
import {
  AuthenticationFailedError,
  JsonableError,
  PasswordAuthDisabledError,
  RealmDeactivatedError,
  UserDeactivatedError,
} from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doCompleteFirstLogin, doRegenerateApiKey } from '../actions/users';
import { verifyPassword } from '../lib/credentials';
import { checkEmail, getLoginUser, getUser } from '../lib/users';
import {
  checkLoginRateLimit,
  clearFailedLogins,
  realmEndpoint,
  recordFailedLogin,
  userEndpoint,
} from '@parley/auth';

import { presentUser } from '../presenters/users';

export const authRoutes = Router();

/** Zulip's checks after the credentials were proven: the account and organization must be
 * active. Then the login counts (an imported stub account becomes a regular one). */
async function completeLogin(realm: Realm, user: User): Promise<void> {
  if (realm.deactivated) throw new RealmDeactivatedError();
  if (!user.isActive) throw new UserDeactivatedError();
  await runAction((ctx) => doCompleteFirstLogin(ctx, user));
}

const apiKeyAnswer = z.object({ api_key: z.string(), email: z.string(), user_id: schema.id });

defineRoute(authRoutes, '/fetch_api_key', {
  POST: realmEndpoint(
    { params: { username: p.string(), password: p.string() }, response: apiKeyAnswer },
    async ({ realm, params }) => {
      let email: string;
      try {
        email = checkEmail(params.username);
      } catch {
        throw new JsonableError('Enter a valid email address.');
      }
      await checkLoginRateLimit(realm.id, email);
      // Zulip's EmailAuthBackend refuses inside the rate-limited authenticate(): a refusal
      // counts as a failed attempt like any other.
      if (!realm.passwordAuthEnabled) {
        await recordFailedLogin(realm.id, email);
        throw new PasswordAuthDisabledError();
      }
      const user = params.password === '' ? null : await getLoginUser(realm, email);
      // Zulip's EmailAuthBackend finds the active account before it checks the password
      // (common_get_active_user): a deactivated one is told so whatever the password.
      if (user && (realm.deactivated || !user.isActive)) {
        await recordFailedLogin(realm.id, email);
        throw realm.deactivated ? new RealmDeactivatedError() : new UserDeactivatedError();
      }
      // Hash even when the user does not exist, so timing does not reveal which addresses do.
      const valid = await verifyPassword(params.password, user?.passwordHash ?? DUMMY_HASH);
      if (!user || !valid) {
        await recordFailedLogin(realm.id, email);
        throw new AuthenticationFailedError();
      }
      // As in Zulip, a successful login forgets the failures before it.
      await clearFailedLogins(realm.id, email);
      await completeLogin(realm, user);
      return { api_key: user.apiKey, email: user.deliveryEmail, user_id: user.id };
    },
  ),
});

// scrypt of a random password: verifying against it costs what a real check costs.
const DUMMY_HASH =
  'scrypt$32768$8$1$nvGqjBJPBln5PKUCOTnTJA==$esEaPXdBCaClS4VVomwD2ZfsD2UeBLNEMl5eiJ2lDEM=';

defineRoute(authRoutes, '/jwt/fetch_api_key', {
  POST: realmEndpoint(
    {
      params: { token: p.string().default(''), include_profile: p.bool().default(false) },
      response: apiKeyAnswer.extend({ user: schema.user.optional() }),
    },
    async ({ realm, params }) => {
      if (!realm.jwtKey || realm.jwtAlgorithms.length === 0) {
        throw new JsonableError('JWT authentication is not enabled for this organization');
      }
      if (params.token === '') throw new JsonableError('No JSON web token passed in request');
      let claims: unknown;
      try {
        claims = jwt.verify(params.token, realm.jwtKey, {
          algorithms: realm.jwtAlgorithms.filter((alg) => alg !== 'none') as jwt.Algorithm[],
        });
      } catch {
        throw new JsonableError('Bad JSON web token');
      }
      const email =
        typeof claims === 'object' && claims !== null
          ? (claims as { email?: unknown }).email
          : undefined;
      if (typeof email !== 'string' || email === '')
        throw new JsonableError('No email specified in JSON web token claims');
      const user = await getLoginUser(realm, email);
      if (!user) throw new AuthenticationFailedError();
      await completeLogin(realm, user);
      const fresh = await getUser(user.id);
      const result: Record<string, unknown> = {
        api_key: fresh.apiKey,
        email: fresh.deliveryEmail,
        user_id: fresh.id,
      };
      if (params.include_profile)
        result.user = presentUser(fresh, fresh, realm, { clientGravatar: false });
      return result;
    },
  ),
});

defineRoute(authRoutes, '/users/me/api_key/regenerate', {
  POST: userEndpoint({ response: z.object({ api_key: z.string() }) }, async ({ user }) => {
    const apiKey = await runAction((ctx) => doRegenerateApiKey(ctx, user, user.id));
    return { api_key: apiKey };
  }),
});
