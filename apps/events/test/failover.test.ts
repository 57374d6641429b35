// Two events processes share the shards; one is killed with SIGKILL in the middle of a stream
// of notifications. The other takes its shards over within the lease time, and every queue
// receives every notification exactly once, in order.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { getConfig } from '@parley/config';
import { getPrisma, Role, runAction, type User } from '@parley/db';
import { freePort, requestJson, spawnReplica, waitUntil } from '@parley/devservices';
import {
  createRedis,
  defaultQueueOptions,
  keys,
  publishNotification,
  QueueStore,
  SHARD_USER_RANGE,
  shardOf,
} from '@parley/events';
import type { Redis } from 'ioredis';

const SHARDS = 16;
const LEASE_MS = 1000;
const TOTAL = 200;

const options = defaultQueueOptions();

let redis: Redis;
let redisUrl: string;
const children: ChildProcess[] = [];

function startReplica(port: number): ChildProcess {
  const child = spawnReplica('events', port, {
    REDIS_URL: redisUrl,
    EVENT_SHARDS: String(SHARDS),
    EVENTS_LEASE_MS: String(LEASE_MS),
    EVENTS_HEARTBEAT_SECONDS: '2',
    EVENTS_HEARTBEAT_JITTER_SECONDS: '0',
  });
  children.push(child);
  return child;
}

/** A long-poll of `user`'s queue on one replica; null if the replica went away under it. */
async function poll(port: number, subdomain: string, user: User, queueId: string, last: number) {
  const answer = await requestJson(`http://127.0.0.1:${port}`, {
    host: `${subdomain}.${getConfig().EXTERNAL_HOST}`,
    user,
    method: 'GET',
    path: `/api/v1/events?queue_id=${encodeURIComponent(queueId)}&last_event_id=${last}`,
  }).catch(() => null);
  return answer?.body as {
    result: string;
    msg: string;
    events: { id: number; type: string; seq?: number }[];
  } | null;
}

async function leaseHolders(): Promise<(string | null)[]> {
  const tokens = await redis.mget(Array.from({ length: SHARDS }, (_, shard) => keys.lease(shard)));
  return tokens.map((token) => token?.split(':')[0] ?? null);
}

/** Two replicas on neighbouring ports, both ready and both holding shards. */
async function startTwoReplicas() {
  const portA = await freePort();
  const portB = await freePort();
  const replicaA = startReplica(portA);
  const replicaB = startReplica(portB);
  // A replica that died at start says so at once instead of timing out.
  const ready = (port: number, child: ChildProcess) => async () => {
    if (child.exitCode !== null)
      throw new Error(`replica on port ${port} exited with ${child.exitCode}`);
    return (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => null))?.ok === true;
  };
  await waitUntil(ready(portA, replicaA), 60_000, 'replica A');
  await waitUntil(ready(portB, replicaB), 60_000, 'replica B');
  await waitUntil(
    async () => {
      const holders = await leaseHolders();
      return holders.every(Boolean) && new Set(holders).size === 2;
    },
    10_000,
    'both replicas to hold shards',
  );
  return { portA, portB, replicaA };
}

beforeAll(async () => {
  // A Redis database of this test's own: the two replicas must be the only ones holding shards.
  const url = new URL(getConfig().REDIS_URL);
  url.pathname = '/13';
  redisUrl = url.toString();
  redis = createRedis(redisUrl);
  await redis.flushdb();
});

// Each test starts its own replicas; none may outlive it.
afterEach(async () => {
  const running = children
    .splice(0)
    .filter((child) => child.exitCode === null && child.signalCode === null);
  await Promise.all(
    running.map(
      (child) =>
        new Promise((resolve) => {
          child.once('exit', resolve);
          child.kill('SIGKILL');
        }),
    ),
  );
});

afterAll(async () => {
  await redis.flushdb();
  redis.disconnect();
});

describe('events replicas sharing shards', () => {
  it('hand a killed replica’s shards to the survivor without losing or repeating an event', async () => {
    // Users on every shard, each with a queue.
    const subdomain = `fo${randomBytes(5).toString('hex')}`;
    const realm = await getPrisma().realm.create({
      data: { name: 'Failover', stringId: subdomain },
    });
    const users: User[] = [];
    while (new Set(users.map((u) => shardOf(u.id, SHARDS))).size < SHARDS && users.length < 64) {
      // Each user's id in the next range of ids, so the next shard (see SHARD_USER_RANGE).
      await getPrisma().$executeRaw`SELECT setval('user_profile_id_seq',
        (nextval('user_profile_id_seq') / ${SHARD_USER_RANGE} + 1) * ${SHARD_USER_RANGE})`;
      users.push(
        await runAction(({ tx }) =>
          tx.user.create({
            data: {
              realmId: realm.id,
              email: `u${users.length}@${subdomain}.test`,
              deliveryEmail: `u${users.length}@${subdomain}.test`,
              fullName: 'Failover User',
              role: Role.MEMBER,
              apiKey: randomBytes(16).toString('hex'),
            },
          }),
        ),
      );
    }
    const store = new QueueStore(redis, SHARDS);
    const queues = new Map<number, string>();
    for (const user of users) queues.set(user.id, await store.create(user.id, realm.id, options));

    const { portA, portB, replicaA } = await startTwoReplicas();

    // Clients long-poll through either replica until replica A dies, then through B.
    const received = new Map<number, { id: number; seq: number }[]>();
    let aliveA = true;
    const pollers = users.map(async (user, index) => {
      const queueId = queues.get(user.id)!;
      const seen: { id: number; seq: number }[] = [];
      received.set(user.id, seen);
      let last = -1;
      const deadline = Date.now() + 60_000;
      while (seen.length < TOTAL && Date.now() < deadline) {
        const port = aliveA && index % 2 === 0 ? portA : portB;
        const body = await poll(port, subdomain, user, queueId, last);
        if (!body) continue; // the replica died under this poll: poll again
        expect([body.result, body.msg]).toEqual(['success', '']);
        for (const event of body.events) {
          last = event.id;
          if (event.type === 'sequence') seen.push({ id: event.id, seq: event.seq! });
        }
      }
    });

    const publish = async (from: number, to: number) => {
      for (let seq = from; seq < to; seq++) {
        await publishNotification(redis, SHARDS, {
          event: { type: 'sequence', seq },
          users: users.map((u) => u.id),
        });
      }
    };
    await publish(0, TOTAL / 2);
    replicaA.kill('SIGKILL');
    aliveA = false;
    const killedAt = Date.now();
    await publish(TOTAL / 2, TOTAL);
    await waitUntil(
      async () => {
        const holders = await leaseHolders();
        return holders.every(Boolean) && new Set(holders).size === 1;
      },
      10_000,
      'the survivor to hold every shard',
    );
    // The lease lapses LEASE_MS after the last renewal and the survivor checks every LEASE_MS/3:
    // about 2 × LEASE_MS on an idle machine. The bound leaves room for a loaded CI machine (seen:
    // 3.8 s with the suite running beside other work) while still telling a lease handover from
    // the 10 s of waitUntil.
    expect(Date.now() - killedAt).toBeLessThan(5 * LEASE_MS);

    await Promise.all(pollers);
    for (const user of users) {
      const seen = received.get(user.id)!;
      expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: TOTAL }, (_, i) => i));
      const ids = seen.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
  }, 120_000);

  it('on SIGTERM answers parked polls, hands its shards over at once and exits cleanly', async () => {
    await redis.flushdb();
    const subdomain = `gs${randomBytes(5).toString('hex')}`;
    const realm = await getPrisma().realm.create({
      data: { name: 'Graceful', stringId: subdomain },
    });
    const user = await getPrisma().user.create({
      data: {
        realmId: realm.id,
        email: `u@${subdomain}.test`,
        deliveryEmail: `u@${subdomain}.test`,
        fullName: 'Graceful User',
        role: Role.MEMBER,
        apiKey: randomBytes(16).toString('hex'),
      },
    });
    const queueId = await new QueueStore(redis, SHARDS).create(user.id, realm.id, options);
    const { portA, replicaA } = await startTwoReplicas();

    const parked = poll(portA, subdomain, user, queueId, -1);
    await new Promise((r) => setTimeout(r, 300));
    const exited = new Promise<number | null>((resolve) =>
      replicaA.once('exit', (code) => resolve(code)),
    );
    const stoppedAt = Date.now();
    replicaA.kill('SIGTERM');
    // The parked poll is answered (empty) rather than cut off, well before its heartbeat.
    expect(await parked).toMatchObject({ result: 'success', events: [], queue_id: queueId });
    expect(await exited).toBe(0);
    // Released, not left to lapse: the survivor takes every shard sooner than the lease time.
    await waitUntil(
      async () => {
        const holders = await leaseHolders();
        return holders.every(Boolean) && new Set(holders).size === 1;
      },
      10_000,
      'the survivor to hold every shard',
    );
    expect(Date.now() - stoppedAt).toBeLessThan(LEASE_MS + 500);
  }, 60_000);
});
