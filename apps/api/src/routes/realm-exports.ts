// Data exports (administrators): GET and POST /export/realm, DELETE /export/realm/{export_id},
// GET /export/realm/consents; and the finished tarballs at /user_avatars/exports/…, which,
// as Zulip serves them, need no credentials: their URL holds a random part only the
// administrators were given.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { ResourceNotFoundError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doDeleteRealmExport, doRequestRealmExport } from '../actions/realm-exports';
import {
  exportConsentsOf,
  EXPORT_TYPE_NAMES,
  EXPORT_TYPE_VALUES,
  exportStorePath,
  isDownloadable,
  realmExportsOf,
  type ExportTypeName,
  type ExportTypeValue,
} from '../lib/realm-exports';
import { sendStoredUpload } from '../lib/upload-store';

export const realmExportRoutes = Router();

const realmExport = z.object({
  id: schema.id,
  acting_user_id: schema.id,
  export_time: z.number(),
  deleted_timestamp: z.number().nullable(),
  failed_timestamp: z.number().nullable(),
  export_url: z.string().nullable(),
  pending: z.boolean(),
  export_type: z.enum(EXPORT_TYPE_NAMES),
});

/** Feature level 449 names the types; the integers clients sent before still work. (A full
 * export without member consent needs owner_full_content_access, which no Parley organization
 * has: it is not a valid choice.) */
const exportTypeOf = (given: ExportTypeName | ExportTypeValue): ExportTypeValue =>
  typeof given === 'number' ? given : EXPORT_TYPE_VALUES[given];

defineRoute(realmExportRoutes, '/export/realm', {
  GET: userEndpoint(
    { adminOnly: true, response: z.object({ exports: z.array(realmExport) }) },
    async ({ realm }) => ({ exports: await realmExportsOf(realm) }),
  ),
  POST: userEndpoint(
    {
      adminOnly: true,
      params: {
        export_type: p
          .jsonOrText(
            z.union([z.enum(EXPORT_TYPE_NAMES), z.literal(Object.values(EXPORT_TYPE_VALUES))]),
          )
          .default('public'),
      },
      response: z.object({ id: schema.id }),
    },
    async ({ user, realm, params }) => ({
      id: await runAction((ctx) =>
        doRequestRealmExport(ctx, user, realm, exportTypeOf(params.export_type)),
      ),
    }),
  ),
});

defineRoute(realmExportRoutes, '/export/realm/consents', {
  GET: userEndpoint(
    {
      adminOnly: true,
      response: z.object({
        export_consents: z.array(
          z.object({
            user_id: schema.id,
            consented: z.boolean(),
            email_address_visibility: z.number().int(),
          }),
        ),
      }),
    },
    // Zulip's get_users_export_consents: active humans; each one's address visibility since
    // feature level 430.
    async ({ realm }) => ({ export_consents: await exportConsentsOf(realm.id) }),
  ),
});

defineRoute(realmExportRoutes, '/export/realm/:export_id', {
  DELETE: userEndpoint(
    { adminOnly: true, path: { export_id: p.int({ min: 0 }) }, response: schema.empty },
    async ({ user, realm, path }) => {
      await runAction((ctx) => doDeleteRealmExport(ctx, user, realm, path.export_id));
      return {};
    },
  ),
});

/** The finished tarballs, outside /api/v1 (Zulip's /user_avatars/exports/{realm}/{random}/…),
 * on any host as Zulip serves them from its avatars bucket; a deleted export is not found. */
export function exportTarballRoutes(): Router {
  const router = Router();
  router.get('/user_avatars/exports/:realm_id/:random/:file_name', async (req, res) => {
    const { realm_id: realmId, random, file_name: fileName } = req.params;
    if (!/^\d+$/.test(realmId) || !/^[\w-]+$/.test(random) || !/^[\w-]+\.tar\.gz$/.test(fileName))
      throw new ResourceNotFoundError('File not found');
    const exportPath = `/user_avatars/exports/${realmId}/${random}/${fileName}`;
    if (!(await isDownloadable(exportPath))) throw new ResourceNotFoundError('File not found');
    await sendStoredUpload(res, exportStorePath(exportPath), {
      'Content-Type': 'application/gzip',
      'Content-Disposition': `attachment; filename="${fileName}"`,
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'private, no-store',
    });
  });
  return router;
}
