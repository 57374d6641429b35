// A Redis of this test's own is killed (SIGKILL) and started again empty, as after a restart
// without persistence, under a running events replica. The replica must take its shards back
// and deliver again without being restarted; queues Redis lost answer BAD_EVENT_QUEUE_ID (so
// clients register again); while Redis is down, polls get a quick JSON error, never a hang.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getConfig } from '@parley/config';
import { getPrisma, Role, type User } from '@parley/db';
import {
  freePort,
  requestJson,
  spawnReplica,
  waitUntil,
  startOwnRedis,
  type OwnRedis,
} from '@parley/devservices';
import {
  createRedis,
  defaultQueueOptions,
  keys,
  publishNotification,
  QueueStore,
} from '@parley/events';
import type { Redis } from 'ioredis';

const SHARDS = 4;
const LEASE_MS = 1000;

const children: ChildProcess[] = [];
let redis: OwnRedis;
let redisPort: number;

function startReplica(port: number): ChildProcess {
  const child = spawnReplica('events', port, {
    LOG_LEVEL: 'error',
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    EVENT_SHARDS: String(SHARDS),
    EVENTS_LEASE_MS: String(LEASE_MS),
    EVENTS_HEARTBEAT_SECONDS: '1',
    EVENTS_HEARTBEAT_JITTER_SECONDS: '0',
  });
  children.push(child);
  return child;
}

afterAll(async () => {
  await redis?.stop();
  await Promise.all(
    children
      .filter((child) => child.exitCode === null && child.signalCode === null)
      .map(
        (child) =>
          new Promise((resolve) => {
            child.once('exit', resolve);
            child.kill('SIGKILL');
          }),
      ),
  );
});

describe('an events replica across a Redis restart', () => {
  it('takes its shards back and delivers again; lost queues answer BAD_EVENT_QUEUE_ID', async () => {
    redisPort = await freePort();
    redis = await startOwnRedis({
      port: redisPort,
      dir: mkdtempSync(join(tmpdir(), 'parley-redis-restart-')),
      appendOnly: false,
    });
    const subdomain = `rr${randomBytes(5).toString('hex')}`;
    const realm = await getPrisma().realm.create({
      data: { name: 'Restart', stringId: subdomain },
    });
    const user: User = await getPrisma().user.create({
      data: {
        realmId: realm.id,
        email: `u@${subdomain}.test`,
        deliveryEmail: `u@${subdomain}.test`,
        fullName: 'Restart User',
        role: Role.MEMBER,
        apiKey: randomBytes(16).toString('hex'),
      },
    });
    const port = await freePort();
    const replica = startReplica(port);
    await waitUntil(
      async () => {
        if (replica.exitCode !== null) throw new Error(`replica exited with ${replica.exitCode}`);
        return (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => null))?.ok === true;
      },
      60_000,
      'the replica to be ready',
    );
    const events = (queueId: string, last: number, dontBlock = false) =>
      requestJson(`http://127.0.0.1:${port}`, {
        host: `${subdomain}.${getConfig().EXTERNAL_HOST}`,
        user,
        method: 'GET',
        path: `/api/v1/events?queue_id=${encodeURIComponent(queueId)}&last_event_id=${last}${dontBlock ? '&dont_block=true' : ''}`,
      });
    const connect = () => {
      const client: Redis = createRedis(`redis://127.0.0.1:${redisPort}`);
      client.on('error', () => undefined);
      return client;
    };
    const deliveredTo = async (client: Redis, queueId: string, seq: number) => {
      await publishNotification(client, SHARDS, {
        event: { type: 'sequence', seq },
        users: [user.id],
      });
      let last = -1;
      await waitUntil(
        async () => {
          const answer = await events(queueId, last, true);
          const found = (answer.body?.events as { id: number; type: string; seq?: number }[]) ?? [];
          if (found.length > 0) last = found[found.length - 1]!.id;
          return found.some((event) => event.type === 'sequence' && event.seq === seq);
        },
        10_000,
        `event ${seq} in queue ${queueId}`,
      );
    };

    let client = connect();
    const before = await new QueueStore(client, SHARDS).create(
      user.id,
      realm.id,
      defaultQueueOptions(),
    );
    await deliveredTo(client, before, 1);
    client.disconnect();

    await redis.kill();
    // Down: a poll answers quickly with a JSON error, never hangs and never crashes the replica.
    const started = Date.now();
    const down = await events(before, -1, true);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ result: 'error' });
    expect(down.headers['retry-after']).toBeDefined();
    expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(503);

    await redis.start();
    client = connect();
    // The queue died with Redis's data: the client is told to register again.
    await waitUntil(
      async () => (await events(before, -1, true)).body?.code === 'BAD_EVENT_QUEUE_ID',
      10_000,
      'BAD_EVENT_QUEUE_ID for the lost queue',
    );
    // Shards are taken again within a lease period, and a new queue gets its events.
    const recovered = await waitUntil(
      async () =>
        (await client.mget(Array.from({ length: SHARDS }, (_, s) => keys.lease(s)))).every(Boolean),
      10_000,
      'every shard to be held again',
    );
    expect(recovered).toBeLessThan(3 * LEASE_MS + 1000);
    const after = await new QueueStore(client, SHARDS).create(
      user.id,
      realm.id,
      defaultQueueOptions(),
    );
    await deliveredTo(client, after, 2);
    expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(200);
    expect(replica.exitCode).toBeNull();
    client.disconnect();
  }, 120_000);
});
