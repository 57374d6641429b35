// The S3 backend (Zulip's S3UploadBackend): objects in an S3-compatible bucket under the same
// keys the local backend uses as paths. Attachments go to S3_AUTH_UPLOADS_BUCKET; custom emoji
// images (keys under user_avatars/) to S3_AVATAR_BUCKET when one is set, as Zulip keeps
// public images apart. A GET is answered (S3_SERVE_MODE) with a redirect to a short-lived
// presigned URL, as Zulip did before its nginx proxy, so the bytes go from the bucket to the
// client and never through an API replica; or, where clients cannot reach the bucket or the
// file must come from Parley's origin with its headers, streamed through. See docs/storage.md.
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type GetObjectCommandOutput,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Response } from 'express';
import type { Config } from '@parley/config';
import { ResourceNotFoundError, ServiceUnavailableError } from '@parley/errors';
import { getLogger } from '@parley/logger';
import type { UploadBackend } from './backend';

/** Presigned URLs are signed as of the start of the current minute and last two: each is good
 * for one to two minutes after the redirect (Zulip's SIGNED_UPLOAD_URL_DURATION is 60 s), and
 * within a minute one object has one URL, so the browser's cache of the bytes (the caller's
 * Cache-Control, which the URL carries) is used instead of fetching again. */
const SIGNING_WINDOW_MS = 60_000;
const SIGNED_URL_SECONDS = 120;

/** Keys the local backend would refuse (or resolve elsewhere) are refused here too, so a path
 * id means the same object on both: no empty, `.` or `..` segment, no leading slash, no NUL. */
function validKey(pathId: string): boolean {
  return (
    pathId.length > 0 &&
    pathId.length <= 1024 &&
    !pathId.includes('\0') &&
    pathId.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..')
  );
}

/** Public images (custom emoji): served to anyone, from S3_AVATAR_BUCKET when one is set.
 * Data exports share their URL prefix, as in Zulip, but not their bucket: a tarball with
 * private messages stays with the uploads, its redirect kept by no cache. */
function isPublicImage(pathId: string): boolean {
  return pathId.startsWith('user_avatars/') && !pathId.startsWith('user_avatars/exports/');
}

function isNotFound(error: unknown): boolean {
  return (
    error instanceof S3ServiceException &&
    (error.name === 'NotFound' ||
      error.name === 'NoSuchKey' ||
      error.$metadata.httpStatusCode === 404)
  );
}

/** Header lookup without regard to case (callers write `Content-Type`, Express would too). */
function header(headers: Record<string, string>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers))
    if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/** The caller's headers as given, as express's sendFile sets them for the local backend
 * (res.set would add a charset to a text type). */
function setHeaders(res: Response, headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

export class S3UploadBackend implements UploadBackend {
  private readonly client: S3Client;
  private readonly uploadsBucket: string;
  private readonly avatarBucket: string;
  private readonly serveMode: Config['S3_SERVE_MODE'];

  constructor(config: Config) {
    if (!config.S3_AUTH_UPLOADS_BUCKET) throw new Error('S3_AUTH_UPLOADS_BUCKET is not set');
    this.uploadsBucket = config.S3_AUTH_UPLOADS_BUCKET;
    this.avatarBucket = config.S3_AVATAR_BUCKET ?? config.S3_AUTH_UPLOADS_BUCKET;
    this.serveMode = config.S3_SERVE_MODE;
    this.client = new S3Client({
      region: config.S3_REGION,
      ...(config.S3_ENDPOINT_URL ? { endpoint: config.S3_ENDPOINT_URL } : {}),
      // Zulip's (boto's) "auto": path-style for a custom endpoint (MinIO, Ceph and most
      // others serve that), virtual-hosted on AWS itself.
      forcePathStyle:
        config.S3_ADDRESSING_STYLE === 'path' ||
        (config.S3_ADDRESSING_STYLE === 'auto' && config.S3_ENDPOINT_URL !== undefined),
      // Without a key pair the SDK's own chain applies (AWS_* variables, an instance or pod
      // role), as Zulip falls back to the EC2 instance's role.
      ...(config.S3_KEY && config.S3_SECRET_KEY
        ? { credentials: { accessKeyId: config.S3_KEY, secretAccessKey: config.S3_SECRET_KEY } }
        : {}),
      // Checksums only where S3 requires them: the newer default headers are refused by a
      // number of S3-compatible servers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A storage outage must fail a request in seconds, not hold it (the SDK has no timeout
      // of its own); requestTimeout is the idle time allowed on a connection.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
      maxAttempts: 3,
    });
  }

  private location(pathId: string): { Bucket: string; Key: string } | null {
    if (!validKey(pathId)) return null;
    const bucket = isPublicImage(pathId) ? this.avatarBucket : this.uploadsBucket;
    return { Bucket: bucket, Key: pathId };
  }

  /** An S3 failure other than "no such object": logged (the operator must see an outage or a
   * wrong bucket, credential or endpoint), and answered as a 503 the client may retry. */
  private unavailable(operation: string, pathId: string, error: unknown): ServiceUnavailableError {
    getLogger().error('upload storage failed', {
      operation,
      path_id: pathId,
      error: error instanceof Error ? { name: error.name, message: error.message } : String(error),
    });
    return new ServiceUnavailableError();
  }

  private async exists(where: { Bucket: string; Key: string }, pathId: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand(where));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw this.unavailable('head', pathId, error);
    }
  }

  async store(pathId: string, data: Buffer, contentType?: string): Promise<void> {
    const where = this.location(pathId);
    if (!where) throw new Error(`bad upload path id ${pathId}`);
    // Never overwrite: If-None-Match makes it atomic where the server supports conditional
    // writes (AWS, MinIO, R2); the check before covers the others (path ids are random, so
    // a race there is not a practical concern).
    if (await this.exists(where, pathId)) throw new Error(`upload ${pathId} already exists`);
    const put = (conditional: boolean) =>
      this.client.send(
        new PutObjectCommand({
          ...where,
          Body: data,
          ContentLength: data.length,
          ContentType: contentType ?? 'application/octet-stream',
          ...(conditional ? { IfNoneMatch: '*' } : {}),
        }),
      );
    try {
      try {
        await put(true);
      } catch (error) {
        // A server that knows no conditional writes may refuse the header (501 Not
        // Implemented) rather than ignore it: the check above is all there is then.
        if (!(error instanceof S3ServiceException && error.$metadata.httpStatusCode === 501))
          throw error;
        await put(false);
      }
    } catch (error) {
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 412)
        throw new Error(`upload ${pathId} already exists`, { cause: error });
      throw this.unavailable('put', pathId, error);
    }
  }

  async read(pathId: string): Promise<Buffer | null> {
    const where = this.location(pathId);
    if (!where) return null;
    try {
      const object = await this.client.send(new GetObjectCommand(where));
      if (!object.Body) return Buffer.alloc(0);
      return Buffer.from(await object.Body.transformToByteArray());
    } catch (error) {
      if (isNotFound(error)) return null;
      throw this.unavailable('get', pathId, error);
    }
  }

  async remove(pathId: string): Promise<void> {
    const where = this.location(pathId);
    if (!where) return;
    try {
      // S3 answers 204 for a key that is not there: one already gone is fine.
      await this.client.send(new DeleteObjectCommand(where));
    } catch (error) {
      if (isNotFound(error)) return;
      throw this.unavailable('delete', pathId, error);
    }
  }

  async send(res: Response, pathId: string, headers: Record<string, string>): Promise<void> {
    const where = this.location(pathId);
    if (!where) throw new ResourceNotFoundError('File not found');
    if (this.serveMode === 'proxy') await this.proxy(res, where, pathId, headers);
    else await this.redirect(res, where, pathId, headers);
  }

  /** A redirect to a presigned GET. A private upload's object is looked up first, so a
   * missing one is the same 404 as on local storage and an unreachable bucket a 503, not a
   * broken link. A public image (custom emoji, under user_avatars/) is not: anyone may ask for
   * it, often, so it costs no HeadObject (a missing one is the bucket's 404), and its redirect
   * may be cached while its URL is good. The bucket answers ranges and conditional GETs itself;
   * the presigned URL carries the caller's Content-Type, Content-Disposition and Cache-Control
   * (S3 cannot send the other headers, such as the Content-Security-Policy; the bucket's own
   * origin isolates the file instead). */
  private async redirect(
    res: Response,
    where: { Bucket: string; Key: string },
    pathId: string,
    headers: Record<string, string>,
  ): Promise<void> {
    const isPublic = isPublicImage(pathId);
    if (!isPublic && !(await this.exists(where, pathId)))
      throw new ResourceNotFoundError('File not found');
    const now = Date.now();
    const signingDate = new Date(Math.floor(now / SIGNING_WINDOW_MS) * SIGNING_WINDOW_MS);
    let url: string;
    try {
      url = await getSignedUrl(
        this.client,
        new GetObjectCommand({
          ...where,
          ResponseContentType: header(headers, 'Content-Type'),
          ResponseContentDisposition: header(headers, 'Content-Disposition'),
          ResponseCacheControl: header(headers, 'Cache-Control'),
        }),
        { expiresIn: SIGNED_URL_SECONDS, signingDate },
      );
    } catch (error) {
      // Signing is local; it fails only when credentials cannot be found or fetched.
      throw this.unavailable('presign', pathId, error);
    }
    if (isPublic) {
      // Anyone gets the same URL until the signing window ends, and it stays good a minute
      // longer (room for clock skew): the redirect may be kept until then, by any cache.
      const windowLeft = signingDate.getTime() + SIGNING_WINDOW_MS - now;
      res.set('Cache-Control', `public, max-age=${Math.floor(windowLeft / 1000)}`);
    } else {
      // The redirect is not to be kept: its URL expires, and it answers one user's request.
      res.set('Cache-Control', 'private, no-store');
    }
    const nosniff = header(headers, 'X-Content-Type-Options');
    if (nosniff) res.set('X-Content-Type-Options', nosniff);
    res.redirect(302, url);
  }

  /** The object streamed through this process with the caller's headers, as the local backend
   * sends a file: the client's Range and conditional headers are passed on to S3, and its
   * answer (206 with Content-Range, 304, 416) passed back. */
  private async proxy(
    res: Response,
    where: { Bucket: string; Key: string },
    pathId: string,
    headers: Record<string, string>,
  ): Promise<void> {
    const req = res.req;
    const since = req.headers['if-modified-since'];
    let object: GetObjectCommandOutput;
    try {
      object = await this.client.send(
        new GetObjectCommand({
          ...where,
          Range: req.headers.range,
          IfNoneMatch: req.headers['if-none-match'],
          IfModifiedSince: since && !Number.isNaN(Date.parse(since)) ? new Date(since) : undefined,
        }),
      );
    } catch (error) {
      if (isNotFound(error)) throw new ResourceNotFoundError('File not found');
      const status = error instanceof S3ServiceException ? error.$metadata.httpStatusCode : 0;
      if (status === 304 || status === 416) {
        setHeaders(res, headers);
        res.status(status).end();
        return;
      }
      throw this.unavailable('get', pathId, error);
    }
    res.status(object.ContentRange ? 206 : 200);
    setHeaders(res, headers);
    res.set('Accept-Ranges', 'bytes');
    if (object.ContentLength !== undefined) res.set('Content-Length', String(object.ContentLength));
    if (object.ContentRange) res.set('Content-Range', object.ContentRange);
    if (object.ETag) res.set('ETag', object.ETag);
    if (object.LastModified) res.set('Last-Modified', object.LastModified.toUTCString());
    const body = object.Body as Readable | undefined;
    if (!body || req.method === 'HEAD') {
      body?.destroy();
      res.end();
      return;
    }
    try {
      await pipeline(body, res);
    } catch (error) {
      // Headers are sent: a transfer cut short (the client left, S3 broke off) can only end
      // the connection, which pipeline has done. Logged unless the client simply went away.
      if ((error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE')
        getLogger().warn('upload transfer failed', {
          path_id: pathId,
          error: error instanceof Error ? error.message : String(error),
        });
    }
  }

  /** Frees the client's connections (the store replaces a backend when the config changes). */
  destroy(): void {
    this.client.destroy();
  }
}
