// Resumable uploads (/api/v1/tus) spoken as raw tus requests against the API app: creation,
// chunks, resuming, completion (the same upload, event and answer as POST /user_uploads),
// authentication and the protocol's errors. test/tus-topology.test.ts runs tus-js-client
// through nginx across two replicas.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import request from 'supertest';
import { authCache } from '@parley/auth';
import { getConfig } from '@parley/config';
import { getPrisma, type User } from '@parley/db';
import { randomBytes } from 'node:crypto';
import { getRedis, tusKeys } from '@parley/events';
import { RedisLocker, stopTusLocker } from '../src/lib/tus-locker';
import {
  deleteExpiredTusUploads,
  MAX_OPEN_TUS_UPLOADS_PER_USER,
  stagedFilePath,
} from '../src/lib/tus-store';
import {
  app,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  type TestRealm,
} from './helpers';

const metadata = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
    .join(',');

describe('tus resumable uploads', () => {
  let org: TestRealm;
  let member: User;
  let other: User;
  beforeAll(async () => {
    org = await createTestRealm();
    member = await createTestUser(org.realm);
    other = await createTestUser(org.realm);
  });
  afterAll(async () => {
    await stopTusLocker();
  });

  type Method = 'post' | 'patch' | 'head' | 'delete' | 'options' | 'get';
  const tus = (method: Method, url: string, user: User | null = member) => {
    const test = request(app)[method](url).set('Host', org.host).set('Tus-Resumable', '1.0.0');
    return user ? test.auth(user.deliveryEmail, user.apiKey) : test;
  };
  const create = (
    length: number,
    fields: Record<string, string> = { filename: 'notes.txt' },
    user: User = member,
  ) =>
    tus('post', '/api/v1/tus', user)
      .set('Upload-Length', String(length))
      .set('Upload-Metadata', metadata(fields));
  const patch = (location: string, offset: number, data: Buffer, user: User = member) =>
    tus('patch', location, user)
      .set('Content-Type', 'application/offset+octet-stream')
      .set('Upload-Offset', String(offset))
      .send(data);
  const created = async (length: number, fields?: Record<string, string>, user?: User) => {
    const res = await create(length, fields, user);
    expect(res.status).toBe(201);
    return res.headers.location as string;
  };

  describe('POST /tus', () => {
    it('creates an upload at a relative URL with the tus headers', async () => {
      const res = await create(10);
      expect(res.status).toBe(201);
      expect(res.headers['tus-resumable']).toBe('1.0.0');
      expect(res.headers.location).toMatch(new RegExp(`^/api/v1/tus/${member.id}-[0-9a-f]{32}$`));
      expect(res.headers['upload-expires']).toBeDefined();
    });

    it('needs the API credentials: 401 in the Zulip error envelope', async () => {
      expectError(
        await tus('post', '/api/v1/tus', null).set('Upload-Length', '5'),
        'Missing authorization header for basic auth',
        401,
        'UNAUTHORIZED',
      );
      expectError(
        await tus('post', '/api/v1/tus', null)
          .auth(member.deliveryEmail, 'x'.repeat(32))
          .set('Upload-Length', '5'),
        'Invalid API key',
        401,
        'UNAUTHORIZED',
      );
    });

    it('refuses uploads of unknown length, as Zulip does (411)', async () => {
      expectError(
        await tus('post', '/api/v1/tus').set('Upload-Defer-Length', '1'),
        'Uploads of unknown length (Upload-Defer-Length) are not supported',
        411,
      );
    });

    it('answers protocol errors as Zulip error envelopes', async () => {
      const noVersion = await request(app)
        .post('/api/v1/tus')
        .set('Host', org.host)
        .auth(member.deliveryEmail, member.apiKey)
        .set('Upload-Length', '5');
      expectError(noVersion, 'Tus-Resumable Required', 412);
      const badLength = await tus('post', '/api/v1/tus').set('Upload-Length', 'lots');
      expectError(badLength, 'Invalid upload-length', 400);
      const both = await tus('post', '/api/v1/tus');
      expectError(both, 'Upload-Length or Upload-Defer-Length header required', 400);
      const concat = await tus('post', '/api/v1/tus')
        .set('Upload-Length', '5')
        .set('Upload-Concat', 'partial');
      expect(concat.status).toBe(400);
      expect(concat.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
    });

    it('refuses more than MAX_OPEN_TUS_UPLOADS_PER_USER unfinished uploads of one user', async () => {
      const busy = await createTestUser(org.realm);
      const locations: string[] = [];
      for (let i = 0; i < MAX_OPEN_TUS_UPLOADS_PER_USER; i++)
        locations.push(await created(10, undefined, busy));
      const tooMany = `You have too many unfinished uploads (at most ${MAX_OPEN_TUS_UPLOADS_PER_USER}); finish or cancel some first`;
      expectError(await create(10, undefined, busy), tooMany, 429);
      // Someone else's uploads are theirs to count.
      await created(10, undefined, other);
      // A deleted upload and a finished one no longer count; one tus refused never did.
      expect((await tus('delete', locations[0]!, busy)).status).toBe(204);
      expect((await patch(locations[1]!, 0, Buffer.alloc(10), busy)).status).toBe(200);
      const refused = await create(5, undefined, busy).set('Upload-Concat', 'partial');
      expect(refused.status).toBe(400);
      await created(10, undefined, busy);
      await created(10, undefined, busy);
      expectError(await create(10, undefined, busy), tooMany, 429);
    });

    it('other methods get a 405', async () => {
      expectError(await tus('get', '/api/v1/tus'), 'Method Not Allowed', 405);
    });
  });

  describe('OPTIONS /tus', () => {
    it("tells the protocol's version, extensions and the organization's size limit", async () => {
      const res = await tus('options', '/api/v1/tus', null);
      expect(res.status).toBe(204);
      expect(res.headers['tus-version']).toBe('1.0.0');
      expect(res.headers['tus-extension']).toBe(
        'creation,creation-with-upload,termination,expiration',
      );
      expect(res.headers['tus-max-size']).toBe(String(25 * 1024 * 1024));
    });

    it("answers on a host without an organization, with the server's size limit", async () => {
      // The root domain of a server without a root organization (another test file may have
      // made one in the shared database, so the lookup is told there is none).
      const lookup = jest
        .spyOn(authCache(), 'realmBySubdomain')
        .mockImplementation(async () => null);
      try {
        const res = await request(app)
          .options('/api/v1/tus')
          .set('Host', getConfig().EXTERNAL_HOST)
          .set('Tus-Resumable', '1.0.0');
        expect(res.status).toBe(204);
        expect(res.headers['tus-max-size']).toBe(
          String(getConfig().MAX_FILE_UPLOAD_SIZE_MIB * 1024 * 1024),
        );
        expect(lookup).toHaveBeenCalledWith('');
      } finally {
        lookup.mockRestore();
      }
    });
  });

  describe('PATCH and HEAD /tus/{upload_id}', () => {
    it('takes chunks, resumes where HEAD says, and finishes like POST /user_uploads', async () => {
      const data = Buffer.from('The quick brown fox jumps over the lazy dog');
      const location = await created(data.length, {
        filename: 'My Notes (final).txt',
        filetype: 'text/plain',
      });

      const first = await patch(location, 0, data.subarray(0, 10));
      expect(first.status).toBe(204);
      expect(first.headers['upload-offset']).toBe('10');

      // The client lost track (a broken connection): HEAD says where to go on.
      const head = await tus('head', location);
      expect(head.status).toBe(200);
      expect(head.headers['upload-offset']).toBe('10');
      expect(head.headers['upload-length']).toBe(String(data.length));
      expect(head.headers['cache-control']).toBe('no-store');

      // A chunk at the wrong offset changes nothing.
      expectError(await patch(location, 5, data.subarray(5, 10)), 'Upload-Offset conflict', 409);

      expect((await patch(location, 10, data.subarray(10, 20))).headers['upload-offset']).toBe(
        '20',
      );
      let last: request.Response | undefined;
      const published = await captureEvents(org.realm.id, async () => {
        last = await patch(location, 20, data.subarray(20));
      });
      expect(last!.status).toBe(200);
      expect(last!.body).toEqual({
        result: 'success',
        msg: '',
        url: expect.stringMatching(
          new RegExp(`^/user_uploads/${org.realm.id}/[0-9a-f]{2}/[\\w-]{24}/My-Notes-final\\.txt$`),
        ),
        uri: last!.body.url,
        filename: 'My Notes (final).txt',
      });
      expect(published).toEqual([
        {
          event: {
            type: 'attachment',
            op: 'add',
            attachment: expect.objectContaining({
              name: 'My Notes (final).txt',
              path_id: (last!.body.url as string).slice('/user_uploads/'.length),
              size: data.length,
              messages: [],
            }),
            upload_space_used: expect.any(Number),
          },
          users: [member.id],
        },
      ]);
      const file = await request(app)
        .get(last!.body.url as string)
        .set('Host', org.host)
        .auth(member.deliveryEmail, member.apiKey);
      expect(file.status).toBe(200);
      expect(file.text).toBe(data.toString());
      expect(file.headers['content-type']).toMatch(/^text\/plain/);

      // The staging copy is gone.
      const id = location.split('/').pop()!;
      expect(existsSync(stagedFilePath(id))).toBe(false);
      expect(existsSync(`${stagedFilePath(id)}.json`)).toBe(false);

      // The last PATCH again (its answer lost): the same answer, no second upload.
      const again = await patch(location, data.length, Buffer.alloc(0));
      expect(again.status).toBe(200);
      expect(again.body).toEqual(last!.body);
      expect(await getPrisma().attachment.count({ where: { ownerId: member.id } })).toBe(1);
      const headAfter = await tus('head', location);
      expect(headAfter.status).toBe(200);
      expect(headAfter.headers['upload-offset']).toBe(String(data.length));
    });

    it('never makes a second attachment when recording the answer fails after the commit', async () => {
      const uploader = await createTestUser(org.realm);
      const location = await created(5, { filename: 'blip.txt' }, uploader);
      // Redis fails to record the finished upload's answer (and keeps failing for a while).
      const redis = getRedis();
      const set = redis.set.bind(redis) as (...args: unknown[]) => Promise<unknown>;
      const blip = jest
        .spyOn(redis, 'set')
        .mockImplementation(((...args: unknown[]) =>
          String(args[0]).startsWith('tus:finished:') && String(args[1]).includes('"done"')
            ? Promise.reject(new Error('Redis blip'))
            : set(...args)) as never);
      let first: request.Response;
      let again: request.Response;
      try {
        // The upload is stored: its answer is the client's, recorded or not.
        first = await patch(location, 0, Buffer.from('hello'), uploader);
        expect(first.status).toBe(200);
        expect(first.body).toMatchObject({ result: 'success', filename: 'blip.txt' });
        expect(blip).toHaveBeenCalled();
        // The client retries (its answer lost): the same answer, from the attachment.
        again = await patch(location, 5, Buffer.alloc(0), uploader);
        const head = await tus('head', location, uploader);
        expect(head.status).toBe(200);
        expect(head.headers['upload-offset']).toBe('5');
      } finally {
        blip.mockRestore();
      }
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      // Once Redis is back, the next request records the answer.
      const id = location.split('/').pop()!;
      expect(JSON.parse((await redis.get(tusKeys.finished(id)))!)).toMatchObject({
        state: 'pending',
      });
      expect((await tus('head', location, uploader)).status).toBe(200);
      expect(JSON.parse((await redis.get(tusKeys.finished(id)))!)).toMatchObject({
        state: 'done',
        answer: first.body,
      });
      // Even with the claim lost altogether, a retry finds no staged upload to finish again.
      await redis.del(tusKeys.finished(id));
      expect((await patch(location, 0, Buffer.from('hello'), uploader)).status).toBe(404);
      expect(await getPrisma().attachment.count({ where: { ownerId: uploader.id } })).toBe(1);
    });

    it('finishes in the creation request when it carries the whole file', async () => {
      const res = await create(5, { filename: 'short.txt' })
        .set('Content-Type', 'application/offset+octet-stream')
        .send(Buffer.from('hello'));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ result: 'success', filename: 'short.txt' });
    });

    it("is its creator's only: another user's requests find nothing", async () => {
      const location = await created(4);
      expectError(
        await patch(location, 0, Buffer.from('evil'), other),
        'The file for this url was not found',
        404,
      );
      expect((await tus('head', location, other)).status).toBe(404);
      expectError(await tus('delete', location, other), 'The file for this url was not found', 404);
      expect((await tus('head', location)).headers['upload-offset']).toBe('0');
      expectError(
        await tus('patch', '/api/v1/tus/not-an-upload')
          .set('Content-Type', 'application/offset+octet-stream')
          .set('Upload-Offset', '0')
          .send(Buffer.from('x')),
        'The file for this url was not found',
        404,
      );
    });

    it('refuses more bytes than the upload declared', async () => {
      const location = await created(3);
      expectError(await patch(location, 0, Buffer.from('toolong')), "upload's size exceeded", 413);
      expect((await tus('head', location)).headers['upload-offset']).toBe('0');
    });

    it('refuses a PATCH without the tus content type', async () => {
      const location = await created(3);
      const res = await tus('patch', location)
        .set('Upload-Offset', '0')
        .set('Content-Type', 'text/plain')
        .send('abc');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
    });
  });

  describe('the OpenAPI description', () => {
    it('says that tus answers without a body except when an upload completes', async () => {
      const doc = (await request(app).get('/api/v1/openapi.json')).body as {
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      const codes = (path: string, method: string) =>
        Object.keys(doc.paths[path]![method]!.responses).sort();
      expect(codes('/api/v1/tus', 'post')).toEqual(['200', '201', '4XX', '5XX']);
      expect(codes('/api/v1/tus/{upload_id}', 'patch')).toEqual(['200', '204', '4XX', '5XX']);
      expect(codes('/api/v1/tus/{upload_id}', 'delete')).toEqual(['204', '4XX', '5XX']);
    });
  });

  describe('DELETE /tus/{upload_id}', () => {
    it('abandons an unfinished upload and its staged bytes', async () => {
      const location = await created(10);
      await patch(location, 0, Buffer.from('abc'));
      const id = location.split('/').pop()!;
      expect(existsSync(stagedFilePath(id))).toBe(true);
      expect((await tus('delete', location)).status).toBe(204);
      expect(existsSync(stagedFilePath(id))).toBe(false);
      expect((await tus('head', location)).status).toBe(404);
    });
  });

  describe('clean-up of abandoned uploads', () => {
    it('deletes staged uploads older than TUS_UPLOAD_EXPIRATION_HOURS', async () => {
      const fresh = (await created(10)).split('/').pop()!;
      const old = (await created(10)).split('/').pop()!;
      await patch(`/api/v1/tus/${old}`, 0, Buffer.from('abc'));
      // Begun two days ago.
      const info = JSON.parse(await readFile(`${stagedFilePath(old)}.json`, 'utf8')) as {
        creation_date: string;
      };
      info.creation_date = new Date(Date.now() - 48 * 3600_000).toISOString();
      await writeFile(`${stagedFilePath(old)}.json`, JSON.stringify(info));
      // Expired: gone for the client even before the clean-up runs.
      expect((await tus('head', `/api/v1/tus/${old}`)).status).toBe(410);

      expect(await deleteExpiredTusUploads()).toBeGreaterThanOrEqual(1);
      expect(existsSync(stagedFilePath(old))).toBe(false);
      expect(existsSync(`${stagedFilePath(old)}.json`)).toBe(false);
      expect(existsSync(stagedFilePath(fresh))).toBe(true);
    });
  });

  describe('the Redis locker', () => {
    it('asks a holder in another process to let go, then takes the lock', async () => {
      // Two lockers with their own subscriptions: two replicas, as far as locking goes.
      const replicaA = new RedisLocker();
      const replicaB = new RedisLocker();
      const id = `lock-${randomBytes(6).toString('hex')}`;
      const held = replicaA.newLock(id);
      let asked = false;
      await held.lock(new AbortController().signal, async () => {
        asked = true;
        await held.unlock();
      });
      expect(await getRedis().pttl(tusKeys.lock(id))).toBeGreaterThan(0);
      const waiting = replicaB.newLock(id);
      await waiting.lock(new AbortController().signal, () => undefined);
      expect(asked).toBe(true);
      await waiting.unlock();
      expect(await getRedis().exists(tusKeys.lock(id))).toBe(0);
      await Promise.all([replicaA.close(), replicaB.close()]);
    });

    it("unlocks only its own hold: an expired lock's unlock leaves the next holder's", async () => {
      const locker = new RedisLocker();
      const id = `lock-${randomBytes(6).toString('hex')}`;
      const first = locker.newLock(id);
      await first.lock(new AbortController().signal, () => undefined);
      // The first lock expires (its renewal lost), and another request of this process
      // takes it.
      await getRedis().del(tusKeys.lock(id));
      let askSecond: () => void = () => undefined;
      const secondAsked = new Promise<void>((resolve) => (askSecond = resolve));
      const second = locker.newLock(id);
      await second.lock(new AbortController().signal, askSecond);
      await first.unlock();
      // The second holder is still asked to let go when someone waits for it.
      expect(locker.held.has(id)).toBe(true);
      expect(await getRedis().exists(tusKeys.lock(id))).toBe(1);
      await getRedis().publish(tusKeys.releaseChannel, id);
      await secondAsked;
      await second.unlock();
      expect(locker.held.has(id)).toBe(false);
      await locker.close();
    });

    it('gives up waiting when its request is aborted', async () => {
      const locker = new RedisLocker();
      const id = `lock-${randomBytes(6).toString('hex')}`;
      const held = locker.newLock(id);
      // A holder that never lets go.
      await held.lock(new AbortController().signal, () => undefined);
      const abort = new AbortController();
      const waiting = locker.newLock(id).lock(abort.signal, () => undefined);
      abort.abort();
      await expect(waiting).rejects.toMatchObject({ status_code: 400 });
      await held.unlock();
      await locker.close();
    });
  });
});
