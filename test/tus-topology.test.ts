// Resumable uploads through the load-balanced topology: tus-js-client (the reference client)
// uploads in chunks through nginx to two API replicas, which share the staging directory and
// lock uploads in Redis. Chunks land on both replicas; the client is interrupted and resumes
// from where HEAD says; one replica is killed mid-upload and the other finishes it. The file
// that comes back is the one sent, recorded once.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tus from 'tus-js-client';
import { getConfig } from '@parley/config';
import { getPrisma, runAction, type User } from '@parley/db';
import { findNginx, NGINX_HELP, startStack, waitUntil, type Stack } from '@parley/devservices';
import { createRedis } from '@parley/events';
import { doCreateOrganization } from '../apps/api/src/actions/realms';

let stack: Stack | undefined;
const uploadsDir = mkdtempSync(join(tmpdir(), 'parley-tus-'));

afterAll(async () => {
  await stack?.stop();
  rmSync(uploadsDir, { recursive: true, force: true });
});

/** GET through nginx, the answer's bytes. */
function download(url: string, host: string, user: User, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, url),
      {
        headers: {
          Host: host,
          Authorization: `Basic ${Buffer.from(`${user.deliveryEmail}:${user.apiKey}`).toString('base64')}`,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks))
            : reject(new Error(`GET ${path}: ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** PATCHes a replica has answered with 204 (a chunk taken), from its own /metrics. */
async function chunksServed(port: number): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
  const line = text
    .split('\n')
    .find(
      (row) =>
        row.startsWith('parley_http_request_duration_seconds_count{') &&
        row.includes('method="PATCH"') &&
        row.includes('route="/api/v1/tus/:upload_id"') &&
        row.includes('status="204"'),
    );
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('tus uploads behind nginx and two API replicas', () => {
  it('spreads chunks over both replicas, resumes after an interruption and a dead replica', async () => {
    if (!findNginx()) throw new Error(NGINX_HELP);
    // A Redis database of its own: these replicas' locks and caches only.
    const redisUrl = new URL(getConfig().REDIS_URL);
    redisUrl.pathname = '/5';
    const redis = createRedis(redisUrl.toString());
    await redis.flushdb();
    redis.disconnect();

    const subdomain = `tus${randomBytes(5).toString('hex')}`;
    const { realm, owner } = await runAction((ctx) =>
      doCreateOrganization(
        ctx,
        {
          name: 'Resumable',
          subdomain,
          ownerEmail: `owner@${subdomain}.test`,
          ownerFullName: 'Olivia Owner',
          ownerPassword: null,
        },
        null,
      ),
    );
    const host = `${subdomain}.${getConfig().EXTERNAL_HOST}`;

    stack = await startStack({
      databaseUrl: getConfig().DATABASE_URL,
      redisUrl: redisUrl.toString(),
      apiReplicas: 2,
      eventsReplicas: 1,
      // The shared uploads volume of a real deployment.
      env: { LOCAL_UPLOADS_DIR: uploadsDir },
    });
    const live = stack;

    const data = randomBytes(320 * 1024);
    const CHUNK = 16 * 1024;
    const options = {
      endpoint: `${live.url}/api/v1/tus`,
      chunkSize: CHUNK,
      retryDelays: [0, 200, 500, 1000, 2000, 3000, 5000, 5000, 5000],
      metadata: { filename: 'big data.bin', filetype: 'application/octet-stream' },
      headers: {
        Host: host,
        Authorization: `Basic ${Buffer.from(`${owner.deliveryEmail}:${owner.apiKey}`).toString('base64')}`,
      },
    };

    // 1. Both replicas up: the first chunks, then the client stops (a lost connection).
    const first = new tus.Upload(data, {
      ...options,
      onChunkComplete: (_size, sent) => {
        if (sent >= 6 * CHUNK) void first.abort();
      },
      onError: () => undefined,
    });
    first.start();
    await waitUntil(
      async () => first.url !== null && (await headOffset()) >= 6 * CHUNK,
      20_000,
      'the first chunks',
    );
    /** Where the upload stands, as HEAD through nginx says. */
    function headOffset(): Promise<number> {
      const url = first.url;
      if (!url) return Promise.resolve(0);
      return new Promise((resolve) => {
        request(
          url,
          { method: 'HEAD', headers: { ...options.headers, 'Tus-Resumable': '1.0.0' } },
          (res) => {
            res.resume();
            resolve(res.statusCode === 200 ? Number(res.headers['upload-offset']) : 0);
          },
        )
          .on('error', () => resolve(0))
          .end();
      });
    }
    // nginx alternates between the replicas: both took chunks.
    const servedBy1 = await chunksServed(live.api[0]!.port);
    const servedBy2 = await chunksServed(live.api[1]!.port);
    expect(servedBy1).toBeGreaterThan(0);
    expect(servedBy2).toBeGreaterThan(0);
    const interruptedAt = await headOffset();
    expect(interruptedAt).toBeLessThan(data.length);

    // 2. Resume from where HEAD says (tus-js-client asks first); api1 dies mid-way and api2
    // takes the rest, waiting out the lock the dead replica may hold.
    let killed = false;
    type Finished = Parameters<NonNullable<tus.UploadOptions['onSuccess']>>[0];
    const finished = await new Promise<Finished>((resolve, reject) => {
      const resumed = new tus.Upload(data, {
        ...options,
        uploadUrl: first.url,
        onChunkComplete: (_size, sent) => {
          if (!killed && sent >= interruptedAt + 4 * CHUNK) {
            killed = true;
            live.api[0]!.process.kill('SIGKILL');
          }
        },
        onSuccess: resolve,
        onError: reject,
      });
      resumed.start();
    });
    expect(killed).toBe(true);
    expect(await chunksServed(live.api[1]!.port)).toBeGreaterThan(servedBy2);

    // The last PATCH's answer: POST /user_uploads's.
    const answer = JSON.parse(finished.lastResponse.getBody()) as Record<string, string>;
    expect(answer).toMatchObject({
      result: 'success',
      filename: 'big data.bin',
      url: expect.stringMatching(new RegExp(`^/user_uploads/${realm.id}/.+/big-data\\.bin$`)),
    });
    expect(answer.uri).toBe(answer.url);
    expect((await download(live.url, host, owner, answer.url!)).equals(data)).toBe(true);
    const rows = await getPrisma().attachment.findMany({ where: { realmId: realm.id } });
    expect(rows.map((row) => row.size)).toEqual([data.length]);
  }, 120_000);
});
