// Uploads: POST /user_uploads (spec 4.22), GET /user_uploads/{realm_id}/{path} (a temporary
// URL), GET /attachments and DELETE /attachments/{id} under /api/v1; and the file URLs
// themselves: /user_uploads/{path} with HTTP Basic authentication (as Zulip serves them to API
// clients) and /user_uploads/temporary/{token}/{name} for the temporary URLs.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { getConfig } from '@parley/config';
import { authenticate, resolveRealm, userEndpoint } from '@parley/auth';
import { runAction, type User } from '@parley/db';
import { JsonableError, ResourceNotFoundError } from '@parley/errors';
import { defineRoute, joinWildcard, p, withJoinedWildcard } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  doCreateTemporaryUploadToken,
  doRemoveAttachment,
  doUploadFile,
  type UploadedFile,
} from '../actions/uploads';
import {
  accessAttachmentByPath,
  attachmentByTemporaryToken,
  attachmentsOf,
  uploadSpaceUsed,
  type Attachment,
} from '../lib/attachments';
import { presentAttachment } from '../presenters/attachments';
import { sendStoredUpload } from '../lib/upload-store';
import {
  chooseThumbnail,
  formatName,
  splitThumbnailPath,
  storedThumbnailFormat,
  thumbnailPath,
} from '../lib/thumbnails';
import { maxFileUploadBytes } from '../lib/upload-limits';

export const uploadRoutes = Router();

/** The upload itself: mounted before the general body parsers, so its body (with the file) is
 * parsed only after authentication. */
export const uploadPostRoutes = Router();

export function uploadLimits(maxFileBytes = getConfig().MAX_FILE_UPLOAD_SIZE_MIB * 1024 * 1024) {
  return { maxBodyBytes: getConfig().MAX_REQUEST_BODY_MIB * 1024 * 1024, maxFileBytes };
}

/** The uploaded files of a request parsed with `uploads`. */
export function uploadedFiles(req: Request): UploadedFile[] {
  return (req.files as UploadedFile[] | undefined) ?? [];
}

defineRoute(uploadPostRoutes, '/user_uploads', {
  POST: userEndpoint(
    // The organization's file size limit, enforced while the body is parsed.
    {
      uploads: (realm) => uploadLimits(maxFileUploadBytes(realm)),
      response: z.object({ uri: z.string(), url: z.string(), filename: z.string() }),
    },
    async ({ user, realm, req }) => {
      const files = uploadedFiles(req);
      if (files.length === 0) throw new JsonableError('You must specify a file to upload');
      if (files.length > 1) throw new JsonableError('You may only upload one file at a time');
      const attachment = await doUploadFile(user, realm, files[0]!);
      const url = `/user_uploads/${attachment.pathId}`;
      return { uri: url, url, filename: attachment.fileName };
    },
  ),
});

defineRoute(uploadRoutes, '/attachments', {
  GET: userEndpoint(
    {
      response: z.object({
        attachments: z.array(schema.attachment),
        upload_space_used: z.int(),
      }),
    },
    async ({ user, realm }) => {
      const attachments = await attachmentsOf(user.id);
      return {
        attachments: attachments.map(({ messages, ...attachment }) =>
          presentAttachment(
            attachment,
            messages.map((link) => link.message),
          ),
        ),
        upload_space_used: await uploadSpaceUsed(realm.id),
      };
    },
  ),
});

defineRoute(uploadRoutes, '/attachments/:attachment_id', {
  DELETE: userEndpoint(
    { path: { attachment_id: p.int({ min: 0 }) }, response: schema.empty },
    async ({ user, path }) => {
      await runAction((ctx) => doRemoveAttachment(ctx, user, path.attachment_id));
      return {};
    },
  ),
});

const uploadPath = { realm_id: p.int({ min: 0 }), path: p.string({ maxLength: 1000 }) };

/** Zulip's get-file-temporary-url: a link anyone may open for a minute. */
const temporaryUrl = userEndpoint(
  { path: uploadPath, response: z.object({ url: z.string() }) },
  async ({ user, path }) => {
    const attachment = await accessAttachmentByPath(user, `${path.realm_id}/${path.path}`);
    const token = await doCreateTemporaryUploadToken(attachment);
    // The path's own last segment, as Zulip's generate_unauthed_file_access_url.
    const name = attachment.pathId.split('/').pop()!;
    return { url: `/user_uploads/temporary/${token}/${encodeURIComponent(name)}` };
  },
);

defineRoute(uploadRoutes, '/user_uploads/:realm_id/*path', {
  GET: withJoinedWildcard('path', temporaryUrl),
});

// Served in the page only when the browser cannot be made to run it.
const INLINE_TYPES =
  /^(?:image\/(?:png|jpeg|gif|webp|bmp)|audio\/|video\/|application\/pdf$|text\/plain$)/;

async function sendUpload(res: Response, attachment: Attachment): Promise<void> {
  const type = attachment.contentType ?? 'application/octet-stream';
  const disposition = INLINE_TYPES.test(type) ? 'inline' : 'attachment';
  await sendStoredUpload(res, attachment.pathId, {
    'Content-Type': type,
    'Content-Disposition': `${disposition}; filename*=UTF-8''${encodeURIComponent(attachment.fileName)}`,
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    'Cache-Control': 'private, max-age=86400',
  });
}

/** Zulip's thumbnail URLs, /user_uploads/thumbnail/{path id}/{format}: whoever may open the
 * original may open its thumbnails (the same check, the same answers); a format not made is
 * answered with the closest one made, and nothing made yet is a 404. */
async function sendThumbnail(res: Response, user: User, path: string): Promise<void> {
  const requested = splitThumbnailPath(path);
  if (!requested) throw new ResourceNotFoundError('File not found');
  const attachment = await accessAttachmentByPath(user, requested.pathId);
  const thumbnail = chooseThumbnail(attachment, requested.format);
  if (!thumbnail) throw new ResourceNotFoundError('File not found');
  const format = storedThumbnailFormat(thumbnail);
  await sendStoredUpload(res, thumbnailPath(attachment.pathId, format), {
    'Content-Type': thumbnail.content_type,
    'Content-Disposition': `inline; filename="${formatName(format)}"`,
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    'Cache-Control': 'private, max-age=86400',
  });
}

/** The file URLs, outside /api/v1. */
export function servedUploadRoutes(): Router {
  const router = Router();
  router.use('/user_uploads', resolveRealm);
  router.get('/user_uploads/temporary/:token/:filename', async (req, res) => {
    const attachment = await attachmentByTemporaryToken(req.params.token);
    if (!attachment) throw new ResourceNotFoundError('File not found');
    await sendUpload(res, attachment);
  });
  // Before the originals' route, whose :realm_id would take "thumbnail".
  router.get('/user_uploads/thumbnail/*path', async (req, res) => {
    joinWildcard(req, 'path');
    const user = await authenticate(req, res);
    await sendThumbnail(res, user, String(req.params.path));
  });
  router.get('/user_uploads/:realm_id/*path', async (req, res) => {
    joinWildcard(req, 'path');
    const user = await authenticate(req, res);
    const pathId = `${req.params.realm_id}/${String(req.params.path)}`;
    await sendUpload(res, await accessAttachmentByPath(user, pathId));
  });
  return router;
}
