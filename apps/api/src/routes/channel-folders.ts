// Channel folders: POST /channel_folders/create, GET and PATCH /channel_folders (list, reorder)
// and PATCH /channel_folders/{channel_folder_id} (rename, describe, archive). Everyone may list
// them; only administrators change them, as in Zulip.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, int32, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkChannelFolderChanges,
  checkChannelFolderName,
  doCreateChannelFolder,
  doReorderChannelFolders,
  doUpdateChannelFolder,
} from '../actions/channel-folders';
import {
  channelFolderById,
  channelFoldersOf,
  MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH,
  MAX_CHANNEL_FOLDER_NAME_LENGTH,
} from '../lib/channel-folders';

export const channelFolderRoutes = Router();

const nameParam = p.string({ maxLength: MAX_CHANNEL_FOLDER_NAME_LENGTH });
const descriptionParam = p.string({ maxLength: MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH });

defineRoute(channelFolderRoutes, '/channel_folders/create', {
  POST: userEndpoint(
    {
      adminOnly: true,
      params: { name: nameParam, description: descriptionParam },
      response: z.object({ channel_folder_id: schema.id }),
    },
    async ({ user, params }) => ({
      channel_folder_id: await runAction(async (ctx) => {
        await checkChannelFolderName(ctx.tx, user.realmId, params.name);
        return doCreateChannelFolder(ctx, user, params.name, params.description);
      }),
    }),
  ),
});

defineRoute(channelFolderRoutes, '/channel_folders', {
  GET: userEndpoint(
    {
      params: { include_archived: p.bool().default(false) },
      response: z.object({ channel_folders: z.array(schema.channelFolder) }),
    },
    async ({ realm, params }) => ({
      channel_folders: await channelFoldersOf(realm.id, params.include_archived),
    }),
  ),
  PATCH: userEndpoint(
    {
      adminOnly: true,
      params: { order: p.json(z.array(int32)) },
      response: schema.empty,
    },
    async ({ user, params }) => {
      await runAction((ctx) => doReorderChannelFolders(ctx, user, params.order));
      return {};
    },
  ),
});

defineRoute(channelFolderRoutes, '/channel_folders/:channel_folder_id', {
  PATCH: userEndpoint(
    {
      adminOnly: true,
      path: { channel_folder_id: p.int() },
      params: {
        name: nameParam.optional(),
        description: descriptionParam.optional(),
        is_archived: p.bool().optional(),
      },
      response: schema.empty,
    },
    async ({ user, path, params }) => {
      await runAction(async (ctx) => {
        const folder = await channelFolderById(ctx.tx, user.realmId, path.channel_folder_id, {
          forUpdate: true,
        });
        const changes = await checkChannelFolderChanges(ctx.tx, folder, {
          name: params.name,
          description: params.description,
          isArchived: params.is_archived,
        });
        await doUpdateChannelFolder(ctx, user, folder, changes);
      });
      return {};
    },
  ),
});
