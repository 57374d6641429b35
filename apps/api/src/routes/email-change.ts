// GET /accounts/confirm_new_email/{key}/: the link PATCH /settings mails to a new address
// (Zulip's confirm_email_change), outside /api/v1 as in Zulip. Opening it changes the address;
// the answer is the usual envelope, with both addresses.
import { Router } from 'express';
import { z } from 'zod';
import { realmEndpoint, resolveRealm } from '@parley/auth';
import { bodyParsers, p } from '@parley/http';
import { confirmEmailChange } from '../actions/email-change';

export function emailChangePageRoutes(): Router {
  const router = Router();
  // The parsers give the endpoint a body to look at (a GET has none: it is empty).
  router.use('/accounts', resolveRealm, bodyParsers(1024 * 1024));
  // Not through defineRoute, which documents a path as under /api/v1.
  router.get(
    '/accounts/confirm_new_email/:key',
    realmEndpoint(
      {
        path: { key: p.string({ maxLength: 40 }) },
        response: z.object({ old_email: z.string(), new_email: z.string() }),
      },
      async ({ realm, path }) => {
        const { oldEmail, newEmail } = await confirmEmailChange(realm, path.key);
        return { old_email: oldEmail, new_email: newEmail };
      },
    ),
  );
  return router;
}
