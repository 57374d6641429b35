// Express plumbing shared by both tiers: request ids and the per-request log line, body
// parsing for every method (urlencoded, multipart, JSON), and the handlers that turn any
// failure — ours, the body parsers', multer's, or a bug — into a JSON envelope.
import { randomUUID } from 'node:crypto';
import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import multer from 'multer';
import {
  ApiParamValidationError,
  InvalidJSONError,
  JsonableError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
} from '@parley/errors';
import { getLogger, type Logger } from '@parley/logger';
import { isDependencyDown } from './dependency-errors';
import { sendError } from './envelope';
import { attachDoc, docOf, recordRoute } from './openapi';

declare module 'express-serve-static-core' {
  interface Locals {
    requestId: string;
    log: Logger;
    /** Filled in by authentication so the request log line can name them. */
    logContext: Record<string, unknown>;
    /** The matched route's full pattern (`/api/v1/messages/:message_id`), set by defineRoute
     * (and by a direct route). */
    routePattern?: string;
  }
}

const REQUEST_ID = /^[\w.-]{1,64}$/;

/** Every request's res.locals once requestContext has run: one shape for all (Express's own is
 * a null-prototype object, a hash table in V8), with a child logger naming the request made
 * only for a request that logs something of its own: most do not, and a long-poll would keep
 * it for its whole wait. The other fields are those the tiers set (declared in their Locals). */
class RequestLocals {
  logContext: Record<string, unknown> = {};
  routePattern: string | undefined = undefined;
  realm: unknown = undefined;
  user: unknown = undefined;
  private childLog: Logger | undefined = undefined;

  constructor(readonly requestId: string) {}

  get log(): Logger {
    return (this.childLog ??= getLogger().child({ request_id: this.requestId }));
  }

  set log(value: Logger) {
    this.childLog = value;
  }

  /** The request's own logger if one was made. */
  madeLog(): Logger | undefined {
    return this.childLog;
  }
}

/** Gives each request an id (the load balancer's X-Request-Id when sane) and logs one line
 * when it finishes. It replaces res.locals, so it runs first. The path is logged without its
 * query string: zulip-js puts message content there for PATCH requests. */
export function requestContext(): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const locals = new RequestLocals(requestId);
    res.locals = locals as unknown as Response['locals'];
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const log = locals.madeLog();
      const logger = log ?? getLogger();
      // winston formats a line before its level filter drops it: skip the work outright.
      if (!logger.isLevelEnabled('http')) return;
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      logger.http('request', {
        ...(log ? {} : { request_id: requestId }),
        method: req.method,
        path: loggablePath(req.originalUrl.split('?')[0]!),
        status: res.statusCode,
        duration_ms: Math.round(durationMs * 10) / 10,
        ...locals.logContext,
      });
    });
    next();
  };
}

/** Paths whose segments are secrets (a confirmation link's key, a data export's random
 * directory, which is all that guards its download), as the request log writes them. */
const SECRET_SEGMENTS: [RegExp, string][] = [
  // Case-insensitive: Express routes paths so.
  [/^(\/accounts\/confirm_new_email\/)[^/]+/i, '$1<key>'],
  [/^(\/user_avatars\/exports\/[^/]+\/)[^/]+\/[^/]+/i, '$1<secret>'],
];

export function loggablePath(path: string): string {
  for (const [pattern, replacement] of SECRET_SEGMENTS)
    if (pattern.test(path)) return path.replace(pattern, replacement);
  return path;
}

/** Parses urlencoded, multipart and JSON bodies for every method (zulip-js posts multipart;
 * PATCH and DELETE bodies count too, as in Zulip's process_as_post). */
export interface UploadLimits {
  /** Largest file part accepted; 0 refuses files. Only upload endpoints take files, and they
   * parse their bodies after authentication (see userEndpoint's `uploads`), so nobody can make
   * another endpoint hold files in memory. */
  maxFileBytes: number;
}

/** One file is what every upload endpoint takes; a second is parsed only so the endpoint can
 * say "one file at a time" (a third fails in the parser with the same message). */
const MAX_FILE_PARTS = 2;

export function bodyParsers(
  limitBytes: number,
  uploads: UploadLimits = { maxFileBytes: 0 },
): RequestHandler[] {
  const files = uploads.maxFileBytes > 0 ? MAX_FILE_PARTS : 0;
  // Files stay in memory: they are bounded by maxFileBytes and go straight to storage.
  const fields = multer({
    storage: multer.memoryStorage(),
    // File names are UTF-8 (busboy's default reads them as Latin-1).
    defParamCharset: 'utf8',
    limits: {
      fieldSize: limitBytes,
      fields: 1000,
      files,
      fileSize: Math.max(uploads.maxFileBytes, 1),
      parts: 1000 + files,
    },
  }).any();
  return [
    express.urlencoded({ extended: false, limit: limitBytes, parameterLimit: 1000 }),
    express.json({ limit: limitBytes, strict: false }),
    (req, res, next) => {
      if (!req.is('multipart/form-data')) return next();
      fields(req, res, (err?: unknown) => {
        if (err instanceof multer.MulterError && err.code === 'LIMIT_FILE_SIZE') {
          const mib = Math.round((uploads.maxFileBytes / 1024 / 1024) * 100) / 100;
          return next(
            new JsonableError(`Uploaded file is larger than the allowed limit of ${mib} MiB`),
          );
        }
        if (err instanceof multer.MulterError && err.code === 'LIMIT_FILE_COUNT')
          return next(
            files === 0
              ? new ApiParamValidationError('This endpoint takes no files')
              : new JsonableError('You may only upload one file at a time'),
          );
        if (err === undefined || err instanceof multer.MulterError) return next(err);
        // busboy's own failures (truncated body, missing boundary) are the client's.
        next(new ApiParamValidationError('Malformed multipart body'));
      });
    },
    (req, _res, next) => {
      const body: unknown = req.body;
      if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
        // No body, or a JSON body that is not an object (`[1]`, `"x"`): no named parameters.
        req.body = {};
      } else if (req.is('application/json')) {
        // A JSON object body is read like a form whose values are JSON text, so `"to": [1]`
        // and `to=[1]` mean the same.
        req.body = Object.fromEntries(
          Object.entries(body).map(([key, value]) => [
            key,
            typeof value === 'string' ? value : JSON.stringify(value),
          ]),
        );
      }
      next();
    },
  ];
}

/** Runs Express middleware in order outside the router (for parsing after authentication). */
export async function runMiddleware(
  handlers: RequestHandler[],
  req: Request,
  res: Response,
): Promise<void> {
  for (const handler of handlers)
    await new Promise<void>((resolve, reject) => {
      void handler(req, res, (err?: unknown) => (err ? reject(err) : resolve()));
    });
}

/** Declares a path's handlers by method; other methods get Zulip's 405. */
export function defineRoute(
  router: Router,
  path: string,
  handlers: Partial<Record<'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', RequestHandler>>,
  /** `pass`: other methods fall through to routers mounted later (a path whose methods two
   * routers share, e.g. an upload endpoint parsed before the general body parsers). */
  { otherMethods = 'refuse' }: { otherMethods?: 'refuse' | 'pass' } = {},
): void {
  const route = router.route(path);
  // The full pattern, noted while the router's mount path is known: an error leaving the
  // router resets req.baseUrl before the request finishes (metrics label by this).
  route.all((req, res, next) => {
    res.locals.routePattern = `${req.baseUrl}${path}`;
    next();
  });
  const allowed = Object.keys(handlers);
  for (const [method, handler] of Object.entries(handlers)) {
    route[method.toLowerCase() as 'get'](handler);
    const doc = docOf(handler);
    if (doc) recordRoute(path, method, doc);
  }
  if (otherMethods === 'refuse')
    route.all((_req, _res, next) => next(new MethodNotAllowedError(allowed)));
}

/** Express 5 hands a `*name` wildcard over as its segments; endpoints want the one string
 * the client sent ("narrow/is/alerted", or "narrow%2Fis%2Falerted" decoded to the same). */
export function joinWildcard(req: Request, name: string): void {
  const value = (req.params as Record<string, string | string[] | undefined>)[name];
  if (Array.isArray(value)) (req.params as Record<string, string>)[name] = value.join('/');
}

/** `handler` (an endpoint, whose documentation it keeps) behind joinWildcard. */
export function withJoinedWildcard(name: string, handler: RequestHandler): RequestHandler {
  const joined: RequestHandler = (req, res, next) => {
    joinWildcard(req, name);
    return handler(req, res, next);
  };
  const doc = docOf(handler);
  return doc ? attachDoc(joined, doc) : joined;
}

export const notFound: RequestHandler = (_req, _res, next) => next(new NotFoundError());

interface HttpErrorLike {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
  code?: string;
  message?: string;
}

/** Turns whatever was thrown into a Zulip error envelope; unexpected errors are logged with
 * the request id and answered with a generic 500, never a stack trace. */
export const errorHandler: ErrorRequestHandler = (err: unknown, _req, res, _next) => {
  const error = toJsonableError(err);
  if (error) {
    sendError(res, error);
    return;
  }
  if (isDependencyDown(err)) {
    (res.locals.log ?? getLogger()).warn('dependency unavailable', { error: err });
    if (!res.headersSent) sendError(res, new ServiceUnavailableError());
    return;
  }
  (res.locals.log ?? getLogger()).error('unhandled error', { error: err });
  if (res.headersSent) return;
  res.status(500).json({ result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' });
};

function toJsonableError(err: unknown): JsonableError | undefined {
  if (err instanceof JsonableError) return err;
  if (err instanceof multer.MulterError) {
    return err.code === 'LIMIT_FIELD_VALUE'
      ? new PayloadTooLargeError()
      : new ApiParamValidationError(`Malformed multipart body: ${err.message}`);
  }
  const httpError = err as HttpErrorLike | null;
  const status = httpError?.status ?? httpError?.statusCode;
  if (typeof status !== 'number' || status < 400 || status >= 500) return undefined;
  switch (httpError?.type) {
    case 'entity.too.large':
      return new PayloadTooLargeError((err as { limit: number }).limit);
    case 'entity.parse.failed':
      return new InvalidJSONError();
    case 'encoding.unsupported':
    case 'charset.unsupported':
    case 'request.size.invalid':
    case 'request.aborted':
      return new ApiParamValidationError('Malformed payload');
  }
  // Other client errors from Express or busboy (bad percent-encoding in a path, a truncated
  // multipart body): answer with their status in our envelope.
  const clientStatus = status;
  return new (class extends JsonableError {
    override readonly httpStatus: number = clientStatus;
  })(httpError?.expose && httpError.message ? httpError.message : 'Malformed payload');
}
