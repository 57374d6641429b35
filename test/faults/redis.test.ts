// Redis killed (SIGKILL) under load — 20 long-polling clients, a writer sending all the while —
// and started again, once empty (a restart without persistence) and once from its append-only
// file. No Parley process is restarted. Every answer must be JSON, none a 500, none late by
// more than 2 s; every committed message reaches every queue that survived exactly once and in
// order; queues Redis lost answer BAD_EVENT_QUEUE_ID and their clients' new queues get
// everything after their registration.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getConfig } from '@parley/config';
import { freePort, startOwnRedis, type OwnRedis, type Stack } from '@parley/devservices';
import { createFaultOrg, Load, startFaultStack } from './load';

const CLIENTS = 20;

let stack: Stack | undefined;
let redis: OwnRedis | undefined;

afterEach(async () => {
  await stack?.stop();
  await redis?.stop();
  stack = undefined;
  redis = undefined;
});

async function runThroughRestart(appendOnly: boolean): Promise<Load> {
  redis = await startOwnRedis({
    port: await freePort(),
    dir: mkdtempSync(join(tmpdir(), 'parley-fault-redis-')),
    appendOnly,
  });
  const org = await createFaultOrg(CLIENTS);
  stack = await startFaultStack({
    databaseUrl: getConfig().DATABASE_URL,
    redisUrl: redis.url,
    apiReplicas: 1,
    eventsReplicas: 1,
  });
  const load = new Load({ url: stack.url, org });
  const own = redis;
  const { before, truth } = await load.through({ down: () => own.kill(), up: () => own.start() });

  expect(load.check(truth)).toEqual([]);
  // The load met the outage, had traffic on both sides of it, and nothing was restarted.
  expect(
    load.answers('POST /api/v1/messages', 503) + load.answers('GET /api/v1/events', 503),
  ).toBeGreaterThan(0);
  expect(before).toBeGreaterThan(10);
  expect(load.acknowledged.length).toBeGreaterThan(before + 10);
  for (const replica of [...stack.api, ...stack.events])
    expect(replica.process.exitCode).toBeNull();
  return load;
}

describe('Redis killed under load', () => {
  it('restarted empty: lost queues are re-registered and miss nothing after', async () => {
    const load = await runThroughRestart(false);
    expect(load.queues.filter((queue) => queue.lost)).toHaveLength(CLIENTS);
  }, 120_000);

  it('restarted from its append-only file: every queue survives and misses nothing', async () => {
    const load = await runThroughRestart(true);
    expect(load.queues.filter((queue) => queue.lost)).toEqual([]);
    expect(load.queues).toHaveLength(CLIENTS);
  }, 120_000);
});
