// Code playgrounds: POST /realm/playgrounds and DELETE /realm/playgrounds/{playground_id}
// (administrators).
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { checkPlayground, doAddPlayground, doRemovePlayground } from '../actions/playgrounds';

export const playgroundRoutes = Router();

defineRoute(playgroundRoutes, '/realm/playgrounds', {
  POST: userEndpoint(
    {
      adminOnly: true,
      params: {
        name: p.string({ maxLength: 1000 }),
        pygments_language: p.string(),
        url_template: p.string({ maxLength: 2000 }),
      },
      response: z.object({ id: schema.id }),
    },
    async ({ user, params }) => {
      const input = checkPlayground({
        name: params.name,
        pygmentsLanguage: params.pygments_language,
        urlTemplate: params.url_template,
      });
      return { id: await runAction((ctx) => doAddPlayground(ctx, user, input)) };
    },
  ),
});

defineRoute(playgroundRoutes, '/realm/playgrounds/:playground_id', {
  DELETE: userEndpoint(
    { adminOnly: true, path: { playground_id: p.int({ min: 0 }) }, response: schema.empty },
    async ({ user, path }) => {
      await runAction((ctx) => doRemovePlayground(ctx, user, path.playground_id));
      return {};
    },
  ),
});
