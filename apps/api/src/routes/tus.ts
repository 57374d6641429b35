// Resumable uploads: the tus protocol (https://tus.io/protocols/resumable-upload) at
// /api/v1/tus, Zulip's feature level 296, served by @tus/server inside the API tier instead of
// Zulip's separate tusd and its hook (zerver/views/tusd.py). POST creates an upload (the
// organization's file size limit and quota are checked against Upload-Length), PATCH appends
// bytes at Upload-Offset, HEAD says where an upload stands, DELETE abandons it. The request
// that completes an upload turns it into an ordinary upload (actions/uploads doUploadFile: the
// same row, `attachment` event and answer as POST /user_uploads). Every request authenticates
// like the rest of the API; only an upload's creator may touch it. Staged bytes live in the
// shared uploads directory and locks in Redis, so consecutive chunks may reach different
// replicas (lib/tus-store, lib/tus-locker). docs/uploads.md compares this with Zulip.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { Server, type ServerOptions } from '@tus/server';
import { ERRORS, type Upload } from '@tus/utils';
import { z } from 'zod';
import { authenticate, rateLimitUser } from '@parley/auth';
import type { Realm, User } from '@parley/db';
import { JsonableError, ResourceNotFoundError } from '@parley/errors';
import { attachDoc, defineRoute, p, type EndpointDoc } from '@parley/http';
import { getLogger } from '@parley/logger';
import { doUploadFile } from '../actions/uploads';
import {
  attachmentByPathId,
  newPathId,
  sanitizeFileName,
  type Attachment,
} from '../lib/attachments';
import {
  checkFileSize,
  checkUploadWithinQuota,
  maxFileUploadBytes,
  uploadQuotaRemaining,
} from '../lib/upload-limits';
import { tusLocker } from '../lib/tus-locker';
import {
  claimTusFinish,
  createTusStore,
  finishedTusResult,
  newTusUploadId,
  recordTusFinish,
  releaseTusFinish,
  releaseTusUpload,
  reserveTusUpload,
  stagedFilePath,
  tusFinishAnswer,
  tusUploadOwner,
} from '../lib/tus-store';

export const TUS_PATH = '/api/v1/tus';

/** Mounted under /api/v1 before the general body parsers: tus bodies are raw bytes, streamed
 * to the staging store. */
export const tusRoutes = Router();

/** Who a request handed to @tus/server is for (its hooks receive only the request). */
interface TusContext {
  /** null only for OPTIONS on the root domain of a server without a root organization. */
  realm: Realm | null;
  user: User | null;
  /** The id a creation's upload gets (reserved before tus creates it). */
  uploadId?: string;
  /** Set by the hook that finished the upload: its staged copy can go once tus is done with
   * the request (a creation that carried the whole file still reads it after the hook). */
  finished?: string;
}
const contexts = new WeakMap<globalThis.Request, TusContext>();

function contextOf(req: globalThis.Request): TusContext {
  const context = contexts.get(req);
  if (!context) throw new Error('tus request without its context');
  return context;
}

/** A tus error ({status_code, body}) rather than a thrown exception. */
function isTusError(error: unknown): error is { status_code: number; body: string } {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { status_code?: unknown }).status_code === 'number' &&
    typeof (error as { body?: unknown }).body === 'string'
  );
}

let server: Server | undefined;

function tusServer(): Server {
  if (server) return server;
  const options: ServerOptions & { datastore: ReturnType<typeof createTusStore> } = {
    path: TUS_PATH,
    datastore: createTusStore(),
    locker: tusLocker(),
    // Relative, so it is right behind any proxy (clients resolve it against the endpoint).
    relativeLocation: true,
    // No CORS, like the rest of the API.
    allowedOrigins: [],
    // A finished upload is an attachment; DELETE /attachments/{id} removes those.
    disableTerminationForFinishedUploads: true,
    maxSize: (req) => maxFileUploadBytes(contextOf(req).realm),
    namingFunction: (req) => {
      const context = contextOf(req);
      return context.uploadId ?? newTusUploadId(context.user!.id);
    },
    onUploadFinish: async (req, upload) => finishUpload(contextOf(req), upload),
    onResponseError: (_req, error) => {
      // Anything but tus's own errors (ours, the database's) goes to the API's error handler,
      // which answers and logs it like any other endpoint's.
      if (!isTusError(error)) throw error;
      // Waiting for a lock timed out: busy, not broken (clients retry a 423).
      if (error === ERRORS.ERR_LOCK_TIMEOUT)
        return { status_code: 423, body: 'The upload is busy; try again' };
      // Unsupported extensions (concatenation, deferred length): the request's choice.
      if (error.status_code === 501) return { status_code: 400, body: error.body };
      return error;
    },
  };
  server = new Server(options);
  return server;
}

/** Zulip's pre-finish hook: the staged bytes become an ordinary upload, once. The claim names
 * the attachment's path id before the row exists; once the row is committed the claim is never
 * given up, so no retry can make a second row: a retry finds the recorded answer, or the row
 * (finishedTusResult) if recording the answer failed. */
async function finishUpload(
  context: TusContext,
  upload: Upload,
): Promise<{ status_code: number; headers: Record<string, string>; body: string }> {
  const user = context.user!;
  const realm = context.realm!;
  const size = upload.size ?? upload.offset;
  const originalname = upload.metadata?.filename ?? '';
  const pathId = newPathId(realm.id, sanitizeFileName(originalname));
  if (!(await claimTusFinish(upload.id, pathId))) return repeatFinish(upload.id);
  let attachment: Attachment;
  try {
    // The limits again: the file size was checked at creation, but the quota may have filled
    // up meanwhile.
    checkFileSize(realm, size, 413);
    await checkUploadWithinQuota(realm, size, { httpStatus: 413 });
    const buffer = await readFile(stagedFilePath(upload.id));
    attachment = await doUploadFile(
      user,
      realm,
      { originalname, mimetype: upload.metadata?.filetype ?? '', buffer, size: buffer.length },
      { pathId },
    );
  } catch (error) {
    // A failure that may have come after the commit (the connection lost with its answer)
    // is a success if the row is there; only an upload surely not stored gives up its claim.
    const committed = await attachmentByPathId(pathId).catch(() => undefined);
    if (!committed) {
      if (committed === null) await releaseTusFinish(upload.id).catch(() => undefined);
      throw error;
    }
    attachment = committed;
  }
  // Committed: the staged copy goes, whatever happens next.
  context.finished = upload.id;
  const answer = tusFinishAnswer(attachment);
  const log = getLogger();
  await recordTusFinish(upload.id, size, answer).catch((error: unknown) =>
    log.warn('tus finish not recorded; repeats find the attachment', { error }),
  );
  await releaseTusUpload(realm.id, upload.id).catch((error: unknown) =>
    log.warn('finished tus upload still counted as unfinished until it expires', { error }),
  );
  return jsonAnswer(answer);
}

/** The last PATCH again (its answer was lost): what the first one answered. */
async function repeatFinish(uploadId: string) {
  const finished = await finishedTusResult(uploadId);
  if (finished) return jsonAnswer(finished.answer);
  throw new UploadBusyError();
}

function jsonAnswer(answer: Record<string, unknown>) {
  return {
    status_code: 200,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(answer),
  };
}

class UploadBusyError extends JsonableError {
  override readonly httpStatus = 423;
  constructor() {
    super('The upload is busy; try again');
  }
}

/** Hands the request to @tus/server as a fetch Request and sends its answer: errors as Zulip
 * error envelopes (tus answers them in plain text), JSON as JSON, the rest as it is. */
async function passToTus(req: Request, res: Response, context: TusContext): Promise<number> {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2)
    headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const withBody = req.method === 'POST' || req.method === 'PATCH';
  // tus reads only the path (the upload id is its last segment; Location is relative): no
  // query, and not the client's Host, which need not make a valid URL.
  const url = new URL(req.originalUrl.split('?')[0]!, 'http://parley.invalid');
  const request = new globalThis.Request(url, {
    method: req.method,
    headers,
    body: withBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : null,
    duplex: 'half',
  } as RequestInit);
  contexts.set(request, context);
  const response = await tusServer().handleWeb(request);
  // The staged copy of a finished upload is no longer needed; if removing it fails, it
  // expires like an abandoned one.
  if (context.finished)
    await tusServer()
      .datastore.remove(context.finished)
      .catch((error: unknown) => getLogger().warn('staged tus upload not removed', { error }));
  const body = await response.text();
  res.status(response.status);
  for (const [name, value] of response.headers)
    if (name !== 'content-length' && name !== 'content-type') res.setHeader(name, value);
  if (response.status >= 400) {
    if (response.status >= 500)
      (res.locals.log ?? getLogger()).warn('tus error', { status: response.status, body });
    res.json({
      result: 'error',
      msg: body.trim() || STATUS_CODES[response.status] || 'Error',
      code: 'BAD_REQUEST',
    });
    return response.status;
  }
  if (body !== '' && response.headers.get('content-type')?.startsWith('application/json')) {
    res.json(JSON.parse(body));
    return response.status;
  }
  if (body !== '')
    res.setHeader('Content-Type', response.headers.get('content-type') ?? 'text/plain');
  res.end(body);
  return response.status;
}

/** A request on one upload: authenticated, and its creator's. */
async function uploadRequest(req: Request, res: Response): Promise<TusContext> {
  const user = await authenticate(req, res);
  const id = String(req.params.upload_id);
  // Someone else's upload is one that does not exist, as tus says it.
  if (tusUploadOwner(id) !== user.id)
    throw new ResourceNotFoundError('The file for this url was not found');
  return { realm: res.locals.realm!, user };
}

/** A creation: its id is chosen here, so that its declared length counts against the quota
 * and the user's open uploads (reserveTusUpload) before tus stages anything. */
const create: RequestHandler = async (req, res) => {
  const user = await authenticate(req, res);
  await rateLimitUser(req, res, user.id, 'api');
  const realm = res.locals.realm!;
  // Zulip's pre-create hook: the length must be known, and fit the limits.
  const length = req.get('upload-length');
  if (length === undefined && req.get('upload-defer-length') !== undefined)
    throw new LengthRequiredError();
  // (Malformed lengths are tus's to refuse.)
  if (length === undefined || !/^\d+$/.test(length)) {
    await passToTus(req, res, { realm, user });
    return;
  }
  checkFileSize(realm, Number(length), 413);
  // Stored uploads and the declared lengths of unfinished ones must fit in the quota.
  const uploadId = newTusUploadId(user.id);
  await reserveTusUpload(realm.id, uploadId, Number(length), await uploadQuotaRemaining(realm));
  let status = 500;
  try {
    status = await passToTus(req, res, { realm, user, uploadId });
  } finally {
    // Refused by tus before it staged anything: nothing to count.
    if (status >= 400 && !existsSync(stagedFilePath(uploadId)))
      await releaseTusUpload(realm.id, uploadId).catch((error: unknown) =>
        getLogger().warn('refused tus upload still counted until it expires', { error }),
      );
  }
};

class LengthRequiredError extends JsonableError {
  override readonly httpStatus = 411;
  constructor() {
    super('Uploads of unknown length (Upload-Defer-Length) are not supported');
  }
}

const patch: RequestHandler = async (req, res) => {
  const context = await uploadRequest(req, res);
  // Finished already (this is a repeat of the last PATCH): the same answer.
  const finished = await finishedTusResult(String(req.params.upload_id));
  if (finished) {
    req.resume();
    res.setHeader('Tus-Resumable', '1.0.0');
    res.setHeader('Upload-Offset', String(finished.size));
    res.status(200).json(finished.answer);
    return;
  }
  await passToTus(req, res, context);
};

const head: RequestHandler = async (req, res) => {
  const context = await uploadRequest(req, res);
  const finished = await finishedTusResult(String(req.params.upload_id));
  if (finished) {
    // The staged files are gone; the upload is complete.
    res.set({
      'Tus-Resumable': '1.0.0',
      'Cache-Control': 'no-store',
      'Upload-Offset': String(finished.size),
      'Upload-Length': String(finished.size),
    });
    res.status(200).end();
    return;
  }
  await passToTus(req, res, context);
};

const remove: RequestHandler = async (req, res) => {
  const context = await uploadRequest(req, res);
  // After the 204 is sent: a failure can only be logged (the entry expires with the upload).
  if ((await passToTus(req, res, context)) === 204)
    await releaseTusUpload(context.realm!.id, String(req.params.upload_id)).catch(
      (error: unknown) => (res.locals.log ?? getLogger()).warn('tus release failed', { error }),
    );
};

/** Capabilities (Tus-Version, Tus-Extension, Tus-Max-Size: the organization's limit); no
 * authentication, as CORS preflights carry none. */
const options: RequestHandler = async (req, res) => {
  res.locals.routePattern = `${req.baseUrl}${String(req.route?.path ?? '/tus')}`;
  // (No organization on the root domain without a root one: the server's limit.)
  await passToTus(req, res, { realm: res.locals.realm, user: null });
};

const uploadPath = { upload_id: p.string({ maxLength: 100 }) };
const finishedAnswer = z.object({ uri: z.string(), url: z.string(), filename: z.string() });
/** The JSON answers (the request finishing an upload, and errors) are Zulip envelopes; the
 * others carry only tus headers: a creation answers 201 and a PATCH 204 unless it completes
 * the upload (then 200 and the finished upload's JSON). */
const doc = (
  path?: typeof uploadPath,
  response?: EndpointDoc['response'],
  alsoNoContent?: EndpointDoc['alsoNoContent'],
): EndpointDoc => ({
  auth: 'basic',
  ...(path ? { path } : {}),
  ...(response ? { response } : {}),
  ...(alsoNoContent ? { alsoNoContent } : {}),
});

tusRoutes.options(['/tus', '/tus/:upload_id'], options);
tusRoutes.head('/tus/:upload_id', async (req, res, next) => {
  res.locals.routePattern = `${req.baseUrl}/tus/:upload_id`;
  await head(req, res, next);
});
defineRoute(tusRoutes, '/tus', { POST: attachDoc(create, doc(undefined, finishedAnswer, 201)) });
defineRoute(tusRoutes, '/tus/:upload_id', {
  PATCH: attachDoc(patch, doc(uploadPath, finishedAnswer, 204)),
  DELETE: attachDoc(remove, doc(uploadPath, 'none')),
});
