// The link PATCH /settings mails to a new address (Zulip's confirm_email_change), outside
// /api/v1 as in Zulip. Opening it (GET) changes nothing: mail scanners open links too. It
// answers a page whose button POSTs to the same address, which makes the change and answers
// the usual envelope with both addresses.
import { Router } from 'express';
import { z } from 'zod';
import { realmEndpoint, resolveRealm } from '@parley/auth';
import { bodyParsers, p } from '@parley/http';
import { confirmEmailChange } from '../actions/email-change';

const CONFIRM_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Confirm your new email address</title></head>
<body><h1>Confirm your new email address</h1>
<form method="post"><button type="submit">Confirm</button></form></body></html>
`;

export function emailChangePageRoutes(): Router {
  const router = Router();
  // The parsers give the endpoint a body to look at (the form's is empty).
  router.use('/accounts', resolveRealm, bodyParsers(1024 * 1024));
  // Not through defineRoute, which documents a path as under /api/v1.
  router.get('/accounts/confirm_new_email/:key', (_req, res) => {
    res.status(200).type('html').set('Cache-Control', 'no-store').send(CONFIRM_PAGE);
  });
  router.post(
    '/accounts/confirm_new_email/:key',
    realmEndpoint(
      {
        // Any length: a key that is not one is "Invalid confirmation link.", as in Zulip.
        path: { key: p.string() },
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
