// The upload lifecycle on both storage backends (docs/storage.md): the same requests, the same
// answers, whether the bytes sit in LOCAL_UPLOADS_DIR or in an S3 bucket (s3rver, a fake S3 on
// a loopback port). On S3 a file URL answers with a redirect to a presigned URL; `fetchFile`
// follows it, so each test reads the same on both. Plus what only S3 has: the presigned URL's
// headers, the buckets objects land in, and an unreachable bucket.
import request from 'supertest';
import { ConfigError, parseConfig } from '@parley/config';
import { getPrisma, Role, type User } from '@parley/db';
import { closeQueues } from '@parley/jobs';
import { ensureThumbnails } from '../src/actions/thumbnails';
import { deleteOldUnclaimedUploads } from '../src/actions/upload-cleanup';
import { emojiStorePath } from '../src/lib/realm-emoji';
import { readUpload, removeUpload, storeUpload } from '../src/lib/upload-store';
import { createMessageOrg, png, send, type MessageOrg } from './message-helpers';
import { api, app, as, createTestUser, expectError, expectSuccess } from './helpers';
import { solid } from './images';
import { startS3, useS3Config, type TestS3 } from './s3-server';

interface Fetched {
  status: number;
  headers: Record<string, string | undefined>;
  body: Buffer;
  /** The redirect's own Cache-Control (S3 only). */
  redirectCacheControl?: string;
}

/** Local storage; S3 with files served by redirect to presigned URLs; S3 served through. */
const BACKENDS = [
  ['local storage', 'local'],
  ['S3, redirecting', 'redirect'],
  ['S3, proxying', 'proxy'],
] as const;

describe.each(BACKENDS)('uploads on %s', (_name, backend) => {
  let org: MessageOrg;
  let s3: TestS3 | undefined;
  let restoreConfig = () => {};

  beforeAll(async () => {
    if (backend !== 'local') {
      s3 = await startS3();
      restoreConfig = useS3Config(s3, { serveMode: backend });
    }
    org = await createMessageOrg();
  });
  afterAll(async () => {
    restoreConfig();
    await s3?.stop();
    // Image uploads queued their thumbnail jobs.
    await closeQueues();
  });

  const upload = (user: User, name: string, data: Buffer) =>
    api
      .post(org.host, '/user_uploads')
      .auth(user.deliveryEmail, user.apiKey)
      .attach('filename', data, name);
  const uploaded = async (user: User, name: string, data: Buffer) => {
    const { url } = expectSuccess(await upload(user, name, data)) as { url: string };
    return { url, pathId: url.slice('/user_uploads/'.length) };
  };

  /** GET `url` as `user` (HTTP Basic; none for null), following S3's redirect to the bucket.
   * An error answer (JSON) comes back as is. */
  async function fetchFile(
    user: User | null,
    url: string,
    headers: Record<string, string> = {},
  ): Promise<Fetched & { res: request.Response }> {
    let test = request(app).get(url).set('Host', org.host).set(headers);
    if (user) test = test.auth(user.deliveryEmail, user.apiKey);
    const res = await test.buffer(true).parse((stream, done) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const bytes = Buffer.concat(chunks);
        // Error answers stay JSON for expectError; files stay bytes, whatever their type.
        const json = /^application\/json/.test(String(stream.headers['content-type']));
        done(null, json ? JSON.parse(bytes.toString()) : bytes);
      });
    });
    if (res.status !== 302) {
      return { res, status: res.status, headers: res.headers, body: res.body as Buffer };
    }
    expect(backend).toBe('redirect');
    const location = res.headers.location!;
    // Straight to the bucket: the API replica is out of the data path.
    expect(location.startsWith(`${s3!.endpoint}/`)).toBe(true);
    const file = await fetch(location, { headers });
    return {
      res,
      status: file.status,
      headers: Object.fromEntries(file.headers),
      body: Buffer.from(await file.arrayBuffer()),
      redirectCacheControl: res.headers['cache-control'],
    };
  }

  describe('uploading and opening a file', () => {
    it('stores the bytes and serves them to the uploader with the type and name', async () => {
      const { url, pathId } = await uploaded(org.member, 'report (v2).txt', Buffer.from('report'));
      expect(await readUpload(pathId)).toEqual(Buffer.from('report'));
      const file = await fetchFile(org.member, url);
      expect(file.status).toBe(200);
      expect(file.body.toString()).toBe('report');
      expect(file.headers['content-type']).toMatch(/^text\/plain/);
      // The name as uploaded (Zulip serves attachment.file_name).
      expect(file.headers['content-disposition']).toBe(
        `inline; filename*=UTF-8''${encodeURIComponent('report (v2).txt')}`,
      );
      expect(file.headers['cache-control']).toBe('private, max-age=86400');
      if (backend === 'redirect') expect(file.redirectCacheControl).toBe('private, no-store');
      if (s3) expect(await s3.hasObject(s3.uploadsBucket, pathId)).toBe(true);
      // Sent by Parley itself, the file keeps every header the route chose.
      if (backend !== 'redirect')
        expect(file.headers['content-security-policy']).toMatch(/sandbox/);
    });

    it('serves images with their own type and files of other types for download', async () => {
      const { url: image } = await uploaded(org.member, 'cat.png', png(8, 8));
      const served = await fetchFile(org.member, image);
      expect(served.status).toBe(200);
      expect(served.headers['content-type']).toBe('image/png');
      expect(served.body).toEqual(png(8, 8));
      const { url: fake } = await uploaded(org.member, 'fake.png', Buffer.from('not an image'));
      const download = await fetchFile(org.member, fake);
      expect(download.headers['content-type']).toBe('application/octet-stream');
      expect(download.headers['content-disposition']).toMatch(/^attachment;/);
    });

    it('keeps UTF-8 file names', async () => {
      const { url } = await uploaded(org.member, 'résumé 日本.txt', Buffer.from('cv'));
      const file = await fetchFile(org.member, encodeURI(url));
      expect(file.status).toBe(200);
      expect(file.body.toString()).toBe('cv');
      expect(file.headers['content-disposition']).toBe(
        `inline; filename*=UTF-8''${encodeURIComponent('résumé 日本.txt')}`,
      );
    });

    it('answers byte ranges', async () => {
      const { url } = await uploaded(org.member, 'digits.txt', Buffer.from('0123456789'));
      const part = await fetchFile(org.member, url, { Range: 'bytes=2-5' });
      expect(part.status).toBe(206);
      expect(part.headers['content-range']).toBe('bytes 2-5/10');
      expect(part.body.toString()).toBe('2345');
    });

    it('answers a conditional GET for an unchanged file with 304', async () => {
      const { url } = await uploaded(org.member, 'same.txt', Buffer.from('unchanged'));
      const modified = (await fetchFile(org.member, url)).headers['last-modified']!;
      expect(modified).toBeTruthy();
      const since = (date: string) => fetchFile(org.member, url, { 'If-Modified-Since': date });
      expect((await since(modified)).status).toBe(304);
      expect((await since('Mon, 01 Jan 2001 00:00:00 GMT')).status).toBe(200);
    });

    it('is refused to another user and to a request without credentials', async () => {
      const { url } = await uploaded(org.member, 'private.txt', Buffer.from('private'));
      const denied = await fetchFile(org.other, url);
      expectError(denied.res, 'You are not authorized to view this file.', 403);
      expect(denied.res.headers.location).toBeUndefined();
      expectError(
        (await fetchFile(null, url)).res,
        'Missing authorization header for basic auth',
        401,
        'UNAUTHORIZED',
      );
    });

    it('reaches the readers of a message that links the file', async () => {
      const { url } = await uploaded(org.member, 'shared.txt', Buffer.from('shared'));
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'files',
          content: `[shared.txt](${url})`,
        }),
      );
      const file = await fetchFile(org.other, url);
      expect(file.status).toBe(200);
      expect(file.body.toString()).toBe('shared');
    });

    it('gives a temporary URL that works without credentials', async () => {
      const { url, pathId } = await uploaded(org.member, 'temp.txt', Buffer.from('temporary'));
      const link = expectSuccess(await as(org.member, org.host).get(`/user_uploads/${pathId}`))
        .url as string;
      expect(link).toMatch(/^\/user_uploads\/temporary\/[\w-]+\/temp\.txt$/);
      const file = await fetchFile(null, link);
      expect(file.status).toBe(200);
      expect(file.body.toString()).toBe('temporary');
      expect(file.headers['content-disposition']).toBe("inline; filename*=UTF-8''temp.txt");
      expectError(
        (await fetchFile(null, '/user_uploads/temporary/nope/temp.txt')).res,
        'File not found',
        404,
      );
      expect((await fetchFile(org.member, url)).status).toBe(200);
    });

    it('answers 404 when the stored object is gone', async () => {
      const { url, pathId } = await uploaded(org.member, 'vanishing.txt', Buffer.from('gone'));
      await removeUpload(pathId);
      expect(await readUpload(pathId)).toBeNull();
      expectError((await fetchFile(org.member, url)).res, 'File not found', 404);
      // Removing what is already gone is fine.
      await removeUpload(pathId);
    });

    it('never overwrites a stored object', async () => {
      const { pathId } = await uploaded(org.member, 'first.txt', Buffer.from('first'));
      await expect(storeUpload(pathId, Buffer.from('second'))).rejects.toThrow();
      expect(await readUpload(pathId)).toEqual(Buffer.from('first'));
    });
  });

  describe('deleting uploads', () => {
    /** An uploaded image with its thumbnail made; returns the thumbnail's path too. */
    const thumbnailed = async (user: User, name: string) => {
      const image = await uploaded(user, name, await solid(60, 40).png().toBuffer());
      const { id } = await getPrisma().attachment.findUniqueOrThrow({
        where: { pathId: image.pathId },
      });
      expect(await ensureThumbnails(id)).toMatchObject({ made: 1 });
      const thumbnail = `thumbnail/${image.pathId}/840x560.webp`;
      expect(await readUpload(thumbnail)).not.toBeNull();
      if (s3) expect(await s3.hasObject(s3.uploadsBucket, thumbnail)).toBe(true);
      return { ...image, id, thumbnail };
    };

    it('DELETE /attachments/{id} removes the stored object', async () => {
      const owner = await createTestUser(org.realm, Role.MEMBER);
      const { url, pathId } = await uploaded(owner, 'mine.txt', Buffer.from('mine'));
      const { id } = await getPrisma().attachment.findUniqueOrThrow({ where: { pathId } });
      expectSuccess(await as(owner, org.host).delete(`/attachments/${id}`));
      expect(await readUpload(pathId)).toBeNull();
      expectError((await fetchFile(owner, url)).res, 'File not found', 404);
    });

    it('DELETE /attachments/{id} removes an image’s thumbnails with it', async () => {
      const owner = await createTestUser(org.realm, Role.MEMBER);
      const image = await thumbnailed(owner, 'sensitive.png');
      expectSuccess(await as(owner, org.host).delete(`/attachments/${image.id}`));
      expect(await readUpload(image.pathId)).toBeNull();
      expect(await readUpload(image.thumbnail)).toBeNull();
      if (s3) expect(await s3.hasObject(s3.uploadsBucket, image.thumbnail)).toBe(false);
    });

    it('the clean-up job removes the objects of old unclaimed uploads and keeps linked ones', async () => {
      const old = await uploaded(org.member, 'old.txt', Buffer.from('old'));
      const oldImage = await thumbnailed(org.member, 'old.png');
      const linked = await uploaded(org.member, 'linked.txt', Buffer.from('linked'));
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'files',
          content: `[linked.txt](${linked.url})`,
        }),
      );
      // Aged far past anything another test file makes, so this run takes only these two.
      const longAgo = new Date('2001-01-01T00:00:00Z');
      await getPrisma().attachment.updateMany({
        where: { pathId: { in: [old.pathId, oldImage.pathId, linked.pathId] } },
        data: { createTime: longAgo },
      });
      await deleteOldUnclaimedUploads({ createdBefore: new Date('2001-01-02T00:00:00Z') });
      expect(await readUpload(old.pathId)).toBeNull();
      expect(await getPrisma().attachment.findUnique({ where: { pathId: old.pathId } })).toBeNull();
      expect(await readUpload(linked.pathId)).toEqual(Buffer.from('linked'));
      // An image goes with its thumbnails.
      expect(await readUpload(oldImage.pathId)).toBeNull();
      expect(await readUpload(oldImage.thumbnail)).toBeNull();
      if (s3) expect(await s3.hasObject(s3.uploadsBucket, oldImage.thumbnail)).toBe(false);
    });
  });

  describe('custom emoji images', () => {
    const addEmoji = (user: User, name: string) =>
      api
        .post(org.host, `/realm/emoji/${name}`)
        .auth(user.deliveryEmail, user.apiKey)
        .attach('file', png(16, 16), `${name}.png`);

    it('are stored, served to anyone, and kept once the emoji is removed', async () => {
      expectSuccess(await addEmoji(org.member, 'stored_parrot'));
      const emoji = await getPrisma().realmEmoji.findFirstOrThrow({
        where: { realmId: org.realm.id, name: 'stored_parrot' },
      });
      const url = `/user_avatars/${org.realm.id}/emoji/images/${emoji.fileName}`;
      const image = await fetchFile(null, url);
      expect(image.status).toBe(200);
      expect(image.headers['content-type']).toBe('image/png');
      expect(image.headers['cache-control']).toBe('public, max-age=86400');
      expect(image.body).toEqual(png(16, 16));
      if (backend === 'redirect') {
        // Public: the same redirect for everyone, kept no longer than its URL is good.
        const maxAge = /^public, max-age=(\d+)$/.exec(image.redirectCacheControl ?? '');
        expect(maxAge).not.toBeNull();
        expect(Number(maxAge![1])).toBeLessThanOrEqual(60);
      }
      if (s3) {
        // The public images go to their own bucket, as Zulip's S3_AVATAR_BUCKET.
        const key = emojiStorePath(org.realm.id, emoji.fileName!);
        expect(await s3.hasObject(s3.avatarBucket, key)).toBe(true);
        expect(await s3.hasObject(s3.uploadsBucket, key)).toBe(false);
      }
      // Deactivated, the image stays: messages that used it still show it (as Zulip).
      expectSuccess(await as(org.member, org.host).delete('/realm/emoji/stored_parrot'));
      expect((await fetchFile(null, url)).status).toBe(200);
      const missing = await fetchFile(
        null,
        `/user_avatars/${org.realm.id}/emoji/images/999999.png`,
      );
      if (backend === 'redirect') {
        // Not looked up before the redirect (no HeadObject per anonymous GET): the bucket
        // answers 404 itself.
        expect(missing.res.status).toBe(302);
        expect(missing.status).toBe(404);
      } else {
        expectError(missing.res, 'File not found', 404);
      }
    });
  });

  if (backend !== 'local') {
    describe('an unreachable bucket', () => {
      it('answers 503 to uploads and downloads, and a deletion still succeeds', async () => {
        const { url, pathId } = await uploaded(org.member, 'kept.txt', Buffer.from('kept'));
        const { id } = await getPrisma().attachment.findUniqueOrThrow({ where: { pathId } });
        // Nothing listens on port 9 (discard) of the loopback here: an outage.
        const restore = useS3Config(s3!, { serveMode: backend, endpoint: 'http://127.0.0.1:9' });
        try {
          expectError(
            await upload(org.member, 'new.txt', Buffer.from('new')),
            'The server is temporarily unavailable; try again in a moment.',
            503,
            'SERVER_NOT_READY',
          );
          expectError(
            (await fetchFile(org.member, url)).res,
            'The server is temporarily unavailable; try again in a moment.',
            503,
            'SERVER_NOT_READY',
          );
          // The row goes; the object left behind is logged (and is only storage space).
          expectSuccess(await as(org.member, org.host).delete(`/attachments/${id}`));
        } finally {
          restore();
        }
        expect(await readUpload(pathId)).toEqual(Buffer.from('kept'));
      });
    });
  }
});

describe('the storage configuration', () => {
  const minimal = {
    DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/parley',
    REDIS_URL: 'redis://127.0.0.1:6379',
  };
  const problems = (env: Record<string, string>) => {
    try {
      parseConfig({ ...minimal, ...env });
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };

  it('is local storage unless told otherwise', () => {
    expect(parseConfig(minimal)).toMatchObject({
      UPLOAD_BACKEND: 'local',
      S3_REGION: 'us-east-1',
      S3_ADDRESSING_STYLE: 'auto',
    });
  });

  it('needs a bucket for S3, and the key with its secret', () => {
    expect(problems({ UPLOAD_BACKEND: 's3' })).toEqual([
      'S3_AUTH_UPLOADS_BUCKET: is required when UPLOAD_BACKEND is s3',
    ]);
    expect(
      problems({ UPLOAD_BACKEND: 's3', S3_AUTH_UPLOADS_BUCKET: 'uploads', S3_KEY: 'key' }),
    ).toEqual(['S3_SECRET_KEY: S3_KEY and S3_SECRET_KEY go together']);
    expect(problems({ UPLOAD_BACKEND: 'gcs', S3_ENDPOINT_URL: 'ftp://x' })).toHaveLength(2);
    expect(
      problems({
        UPLOAD_BACKEND: 's3',
        S3_AUTH_UPLOADS_BUCKET: 'uploads',
        S3_ENDPOINT_URL: 'http://127.0.0.1:9000',
      }),
    ).toEqual([]);
  });
});
