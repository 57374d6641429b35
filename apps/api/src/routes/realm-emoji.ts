// Custom emoji: GET /realm/emoji, POST and DELETE /realm/emoji/{emoji_name}, and the images at
// /user_avatars/{realm_id}/emoji/images/{file} (public, as Zulip serves them).
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { ResourceNotFoundError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doAddRealmEmoji, doRemoveRealmEmoji, MAX_EMOJI_FILE_BYTES } from '../actions/realm-emoji';
import { emojiStorePath, realmEmojiDict } from '../lib/realm-emoji';
import { sendStoredUpload } from '../lib/upload-store';
import { uploadedFiles, uploadLimits } from './uploads';

export const realmEmojiRoutes = Router();

defineRoute(realmEmojiRoutes, '/realm/emoji', {
  GET: userEndpoint(
    { response: z.object({ emoji: z.record(z.string(), schema.realmEmoji) }) },
    async ({ realm }) => ({ emoji: await realmEmojiDict(realm.id) }),
  ),
});

const emojiPath = { emoji_name: p.string({ maxLength: 100 }) };

/** Adding one: mounted before the general body parsers (see routes/uploads). */
export const emojiUploadRoutes = Router();

defineRoute(
  emojiUploadRoutes,
  '/realm/emoji/:emoji_name',
  {
    POST: userEndpoint(
      {
        path: emojiPath,
        uploads: () => uploadLimits(MAX_EMOJI_FILE_BYTES),
        response: schema.empty,
      },
      async ({ user, realm, path, req }) => {
        await doAddRealmEmoji(user, realm, path.emoji_name, uploadedFiles(req));
        return {};
      },
    ),
  },
  // DELETE of the same path is realmEmojiRoutes', mounted after the body parsers.
  { otherMethods: 'pass' },
);

defineRoute(realmEmojiRoutes, '/realm/emoji/:emoji_name', {
  DELETE: userEndpoint({ path: emojiPath, response: schema.empty }, async ({ user, path }) => {
    await runAction((ctx) => doRemoveRealmEmoji(ctx, user, path.emoji_name));
    return {};
  }),
});

/** The emoji images, outside /api/v1. */
export function emojiImageRoutes(): Router {
  const router = Router();
  router.get('/user_avatars/:realm_id/emoji/images/:file_name', async (req, res) => {
    const { realm_id: realmId, file_name: fileName } = req.params;
    if (!/^\d+$/.test(realmId) || !/^\d+\.(?:png|gif|jpg|webp)$/.test(fileName))
      throw new ResourceNotFoundError('File not found');
    // Named here, not guessed from the extension: an S3 redirect carries only what it is given.
    const type = fileName.endsWith('.jpg') ? 'jpeg' : fileName.slice(fileName.lastIndexOf('.') + 1);
    await sendStoredUpload(res, emojiStorePath(Number(realmId), fileName), {
      'Content-Type': `image/${type}`,
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'public, max-age=86400',
    });
  });
  return router;
}
