// Navigation views: GET and POST /navigation_views, PATCH and DELETE
// /navigation_views/{fragment}. A fragment holds slashes ("narrow/is/alerted"); clients send it
// as it is or percent-encoded, and both reach the same view.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p, withJoinedWildcard } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkNavigationViewChanges,
  checkNewNavigationView,
  doAddNavigationView,
  doRemoveNavigationView,
  doUpdateNavigationView,
} from '../actions/navigation-views';
import {
  accessNavigationView,
  MAX_NAVIGATION_VIEW_TEXT_LENGTH,
  navigationViewsOf,
} from '../lib/navigation-views';

export const navigationViewRoutes = Router();

// Zulip's StringConstraints(strip_whitespace=True, min_length=1).
const text = () =>
  p.string({ trim: true, nonEmpty: true, maxLength: MAX_NAVIGATION_VIEW_TEXT_LENGTH });

defineRoute(navigationViewRoutes, '/navigation_views', {
  GET: userEndpoint(
    { response: z.object({ navigation_views: z.array(schema.navigationView) }) },
    async ({ user }) => ({ navigation_views: await navigationViewsOf(user.id) }),
  ),
  POST: userEndpoint(
    {
      params: { fragment: text(), is_pinned: p.bool(), name: text().optional() },
      response: schema.empty,
    },
    async ({ user, params }) => {
      const view = { fragment: params.fragment, isPinned: params.is_pinned, name: params.name };
      await runAction(async (ctx) => {
        await checkNewNavigationView(ctx.tx, user, view);
        await doAddNavigationView(ctx, user, view);
      });
      return {};
    },
  ),
});

const fragmentPath = { fragment: text() };

defineRoute(navigationViewRoutes, '/navigation_views/*fragment', {
  PATCH: withJoinedWildcard(
    'fragment',
    userEndpoint(
      {
        path: fragmentPath,
        params: { is_pinned: p.bool().optional(), name: text().optional() },
        response: schema.empty,
      },
      async ({ user, path, params }) => {
        const changes = { isPinned: params.is_pinned, name: params.name };
        await runAction(async (ctx) => {
          const view = await accessNavigationView(ctx.tx, user.id, path.fragment);
          await checkNavigationViewChanges(ctx.tx, user, view, changes);
          await doUpdateNavigationView(ctx, user, view, changes);
        });
        return {};
      },
    ),
  ),
  DELETE: withJoinedWildcard(
    'fragment',
    userEndpoint({ path: fragmentPath, response: schema.empty }, async ({ user, path }) => {
      await runAction(async (ctx) =>
        doRemoveNavigationView(
          ctx,
          user,
          await accessNavigationView(ctx.tx, user.id, path.fragment),
        ),
      );
      return {};
    }),
  ),
});
