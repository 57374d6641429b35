// Presence: POST /users/me/presence (every client, every minute), GET /realm/presence and
// GET /users/{user_id|email}/presence.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import { doUpdatePresence } from '../actions/presence';
import {
  checkCanSeePresenceOf,
  lastUpdateIdOf,
  legacyPresence,
  MAX_HISTORY_LIMIT_DAYS,
  OFFLINE_THRESHOLD_SECS,
  presenceRowsFor,
  presentPresences,
  serverTimestamp,
  storedPresence,
} from '../lib/presence';
import { accessUserByEmail, accessUserById } from '../lib/users';

export const presenceRoutes = Router();

const legacyEntry = z.object({ status: z.string(), timestamp: z.number() });
/** By user id (modern: active and idle timestamps) or by email (legacy: per client and
 * aggregated). */
const presences = z.record(z.string(), z.record(z.string(), z.unknown()));

defineRoute(presenceRoutes, '/users/me/presence', {
  POST: userEndpoint(
    {
      humansOnly: true,
      params: {
        status: p.string({ maxLength: 20 }),
        ping_only: p.json(z.boolean()).default(false),
        new_user_input: p.json(z.boolean()).default(false),
        slim_presence: p.json(z.boolean()).default(false),
        last_update_id: p.json(z.number().int().min(-1).max(Number.MAX_SAFE_INTEGER)).optional(),
        history_limit_days: p.json(z.number().int().min(0).max(MAX_HISTORY_LIMIT_DAYS)).optional(),
      },
      response: z.object({
        presences: presences.optional(),
        server_timestamp: z.number().optional(),
        presence_last_update_id: z.int().optional(),
      }),
    },
    async ({ user, realm, params }) => {
      if (params.status !== 'active' && params.status !== 'idle')
        throw new JsonableError(`Invalid status: ${params.status}`);
      await doUpdatePresence(realm, user, params.status);
      if (params.ping_only) return {};
      // Asking by change id is the modern protocol, whatever slim_presence says.
      const slim = params.slim_presence || params.last_update_id !== undefined;
      const rows = await presenceRowsFor(realm, user, {
        lastUpdateId: params.last_update_id,
        historyLimitDays: params.history_limit_days,
      });
      return {
        presences: presentPresences(rows, user, realm, slim),
        server_timestamp: serverTimestamp(),
        presence_last_update_id: lastUpdateIdOf(rows, params.last_update_id),
      };
    },
  ),
});

defineRoute(presenceRoutes, '/realm/presence', {
  GET: userEndpoint(
    { response: z.object({ presences, server_timestamp: z.number() }) },
    async ({ user, realm }) => {
      const rows = await presenceRowsFor(realm, user, {});
      return {
        presences: presentPresences(rows, user, realm, false),
        server_timestamp: serverTimestamp(),
      };
    },
  ),
});

defineRoute(presenceRoutes, '/users/:user/presence', {
  GET: userEndpoint(
    {
      path: { user: p.string({ maxLength: 254 }) },
      response: z.object({
        presence: z.object({ website: legacyEntry, aggregated: legacyEntry }),
      }),
    },
    async ({ user, realm, path }) => {
      // Only "not found" becomes "No such user": an outage must stay an outage.
      const notFound = (error: unknown) => {
        if (error instanceof JsonableError) return null;
        throw error;
      };
      const target = /^\d+$/.test(path.user)
        ? await accessUserById(user, Number(path.user)).catch(notFound)
        : await accessUserByEmail(user, realm, path.user).catch(notFound);
      if (!target || !target.isActive) throw new JsonableError('No such user');
      if (target.isBot) throw new JsonableError('Presence is not supported for bot users.');
      await checkCanSeePresenceOf(realm, user, target);
      const modern = await storedPresence(target);
      if (!modern) throw new JsonableError(`No presence data for ${path.user}`);
      const { status, timestamp } = legacyPresence(modern);
      const offline = Date.now() / 1000 - timestamp > OFFLINE_THRESHOLD_SECS;
      return {
        presence: {
          website: { status, timestamp },
          aggregated: { status: offline ? 'offline' : status, timestamp },
        },
      };
    },
  ),
});
