// A user's own avatar: POST and DELETE /users/me/avatar (Zulip's set_avatar_backend and
// delete_avatar_backend), and the uploaded images at /user_avatars/{realm_id}/{hash}.png and
// {hash}-medium.png (public, as Zulip serves them).
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { JsonableError, ResourceNotFoundError } from '@parley/errors';
import { defineRoute } from '@parley/http';
import {
  checkChangeAvatar,
  doDeleteAvatar,
  doUploadAvatar,
  MAX_AVATAR_FILE_BYTES,
} from '../actions/avatars';
import { avatarStorePath } from '../lib/avatars';
import { sendStoredUpload } from '../lib/upload-store';
import { uploadedFiles, uploadLimits } from './uploads';

const avatarAnswer = z.object({ avatar_url: z.string() });

/** Uploading one: mounted before the general body parsers (see routes/uploads). */
export const avatarUploadRoutes = Router();

defineRoute(
  avatarUploadRoutes,
  '/users/me/avatar',
  {
    POST: userEndpoint(
      { uploads: () => uploadLimits(MAX_AVATAR_FILE_BYTES), response: avatarAnswer },
      async ({ user, realm, req }) => {
        const files = uploadedFiles(req);
        if (files.length !== 1) throw new JsonableError('You must upload exactly one avatar.');
        checkChangeAvatar(user, realm);
        return { avatar_url: await doUploadAvatar(user, realm, files[0]!) };
      },
    ),
  },
  // DELETE of the same path is avatarRoutes', mounted after the body parsers.
  { otherMethods: 'pass' },
);

export const avatarRoutes = Router();

defineRoute(avatarRoutes, '/users/me/avatar', {
  DELETE: userEndpoint({ response: avatarAnswer }, async ({ user, realm }) => {
    checkChangeAvatar(user, realm);
    return { avatar_url: await doDeleteAvatar(user, realm) };
  }),
});

/** The uploaded avatars, outside /api/v1: their names are random, so anyone may load them
 * (email clients, notifications), as in Zulip. */
export function avatarImageRoutes(): Router {
  const router = Router();
  router.get('/user_avatars/:realm_id/:file_name', async (req, res) => {
    const { realm_id: realmId, file_name: fileName } = req.params;
    const name = /^([0-9a-f]{40})(-medium)?\.png$/.exec(fileName);
    if (!/^\d{1,10}$/.test(realmId) || !name) throw new ResourceNotFoundError('File not found');
    await sendStoredUpload(
      res,
      avatarStorePath(Number(realmId), name[1]!, name[2] === undefined ? 'small' : 'medium'),
      {
        'Content-Type': 'image/png',
        'X-Content-Type-Options': 'nosniff',
        // The URL carries the avatar's version and each upload has its own name.
        'Cache-Control': 'public, max-age=86400',
      },
    );
  });
  return router;
}
