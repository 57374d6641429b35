// Default channel groups (Zulip's create_default_stream_group and its three siblings):
// POST /default_stream_groups/create, PATCH and DELETE /default_stream_groups/{group_id},
// PATCH /default_stream_groups/{group_id}/streams. Administrators only, as in Zulip; channels
// are named, and must be ones the administrator can read. The list itself comes with
// /register (realm_default_stream_groups).
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  doAddStreamsToDefaultStreamGroup,
  doCreateDefaultStreamGroup,
  doRemoveDefaultStreamGroup,
  doRemoveStreamsFromDefaultStreamGroup,
  doUpdateDefaultStreamGroupInfo,
  lockDefaultStreamGroups,
} from '../actions/default-stream-groups';
import {
  lockDefaultStreamGroup,
  MAX_DEFAULT_STREAM_GROUP_DESCRIPTION_LENGTH,
} from '../lib/default-stream-groups';
import { accessStreamsByName, loadPermissions } from '../lib/streams';

export const defaultStreamGroupRoutes = Router();

// Names are checked in the action, in Zulip's order and with its message for a long one;
// this bound only keeps absurd values out.
const nameParam = p.string({ maxLength: 1000 });
const descriptionParam = p.string({ maxLength: MAX_DEFAULT_STREAM_GROUP_DESCRIPTION_LENGTH });
const streamNamesParam = p.json(z.array(z.string().max(1000)).max(10_000));
const groupPath = { group_id: p.int() };

defineRoute(defaultStreamGroupRoutes, '/default_stream_groups/create', {
  POST: userEndpoint(
    {
      adminOnly: true,
      params: {
        group_name: nameParam,
        description: descriptionParam,
        stream_names: streamNamesParam,
      },
      response: schema.empty,
    },
    async ({ user, params }) => {
      await runAction(async (ctx) => {
        await lockDefaultStreamGroups(ctx, user.realmId);
        const streams = await accessStreamsByName(
          await loadPermissions(user),
          params.stream_names,
          ctx.tx,
        );
        await doCreateDefaultStreamGroup(
          ctx,
          user.realmId,
          params.group_name,
          params.description,
          streams,
        );
      });
      return {};
    },
  ),
});

defineRoute(defaultStreamGroupRoutes, '/default_stream_groups/:group_id', {
  PATCH: userEndpoint(
    {
      adminOnly: true,
      path: groupPath,
      params: {
        new_group_name: nameParam.optional(),
        new_description: descriptionParam.optional(),
      },
      response: schema.empty,
    },
    async ({ user, path, params }) => {
      // Zulip's test: an empty string counts as not given.
      if (!params.new_group_name && !params.new_description)
        throw new JsonableError('You must pass "new_description" or "new_group_name".');
      await runAction(async (ctx) => {
        await lockDefaultStreamGroups(ctx, user.realmId);
        const group = await lockDefaultStreamGroup(ctx.tx, user.realmId, path.group_id);
        await doUpdateDefaultStreamGroupInfo(ctx, user.realmId, group, {
          name: params.new_group_name,
          description: params.new_description,
        });
      });
      return {};
    },
  ),
  DELETE: userEndpoint(
    { adminOnly: true, path: groupPath, response: schema.empty },
    async ({ user, path }) => {
      await runAction(async (ctx) => {
        await lockDefaultStreamGroups(ctx, user.realmId);
        const group = await lockDefaultStreamGroup(ctx.tx, user.realmId, path.group_id);
        await doRemoveDefaultStreamGroup(ctx, user.realmId, group);
      });
      return {};
    },
  ),
});

defineRoute(defaultStreamGroupRoutes, '/default_stream_groups/:group_id/streams', {
  PATCH: userEndpoint(
    {
      adminOnly: true,
      path: groupPath,
      // Any string: Zulip answers an unknown op with its own message, after reading the names.
      params: { op: p.string({ maxLength: 100 }), stream_names: streamNamesParam },
      response: schema.empty,
    },
    async ({ user, path, params }) => {
      await runAction(async (ctx) => {
        await lockDefaultStreamGroups(ctx, user.realmId);
        const group = await lockDefaultStreamGroup(ctx.tx, user.realmId, path.group_id);
        const streams = await accessStreamsByName(
          await loadPermissions(user),
          params.stream_names,
          ctx.tx,
        );
        if (params.op === 'add')
          await doAddStreamsToDefaultStreamGroup(ctx, user.realmId, group, streams);
        else if (params.op === 'remove')
          await doRemoveStreamsFromDefaultStreamGroup(ctx, user.realmId, group, streams);
        else throw new JsonableError('Invalid value for "op". Specify one of "add" or "remove".');
      });
      return {};
    },
  ),
});
