// Default channel groups (Zulip's create_default_stream_group and its three siblings):
// POST /default_stream_groups/create, PATCH and DELETE /default_stream_groups/{group_id},
// PATCH /default_stream_groups/{group_id}/streams. Administrators only, as in Zulip; channels
// are named, and must be ones the administrator can read. The list itself comes with
// /register (realm_default_stream_groups).
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction, type Stream, type Tx, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  doAddStreamsToDefaultStreamGroup,
  doCreateDefaultStreamGroup,
  doRemoveDefaultStreamGroup,
  doRemoveStreamsFromDefaultStreamGroup,
  doUpdateDefaultStreamGroupInfo,
} from '../actions/default-stream-groups';
import {
  lockDefaultStreamGroup,
  MAX_DEFAULT_STREAM_GROUP_DESCRIPTION_LENGTH,
  MAX_DEFAULT_STREAM_GROUP_NAME_LENGTH,
} from '../lib/default-stream-groups';
import { accessStreamByName, loadPermissions } from '../lib/streams';
import { codePoints } from '../lib/text';

export const defaultStreamGroupRoutes = Router();

// Names are checked in the action, with Zulip's message for a long one; this bound only keeps
// absurd values out.
const nameParam = p.string({ maxLength: 1000 });
const descriptionParam = p.string({ maxLength: MAX_DEFAULT_STREAM_GROUP_DESCRIPTION_LENGTH });
const streamNamesParam = p.json(z.array(z.string().max(1000)).max(10_000));
const groupPath = { group_id: p.int() };

function checkNameLength(name: string): void {
  if (codePoints(name) > MAX_DEFAULT_STREAM_GROUP_NAME_LENGTH)
    throw new JsonableError(
      `Default channel group name too long (limit: ${MAX_DEFAULT_STREAM_GROUP_NAME_LENGTH} characters)`,
    );
}

/** Zulip's access_stream_by_name for each name, in order: the first one the administrator
 * cannot read (or that does not exist) is refused. */
async function accessStreamsByName(tx: Tx, user: User, names: string[]): Promise<Stream[]> {
  const perms = await loadPermissions(user);
  const streams: Stream[] = [];
  for (const name of names) streams.push((await accessStreamByName(perms, name, tx)).stream);
  return streams;
}

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
        const streams = await accessStreamsByName(ctx.tx, user, params.stream_names);
        checkNameLength(params.group_name);
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
      if (params.new_group_name !== undefined) checkNameLength(params.new_group_name);
      await runAction(async (ctx) => {
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
        const group = await lockDefaultStreamGroup(ctx.tx, user.realmId, path.group_id);
        const streams = await accessStreamsByName(ctx.tx, user, params.stream_names);
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
