// PostgreSQL stopped (a fast shutdown: sessions cut, open transactions rolled back) under
// load — 20 long-polling clients, a writer sending all the while — and started again. No
// Parley process is restarted: the pools reconnect by themselves. While it is down, requests
// answer 503 quickly (polls too: they authenticate against it); every answer is JSON, none a
// 500, none late by more than 2 s; every committed message reaches every queue exactly once
// and in order (a send cut off after its commit still has its events, from the outbox).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetConfig } from '@parley/config';
import { disconnectPrisma } from '@parley/db';
import {
  ensureDatabase,
  freePort,
  runMigrations,
  startOwnPostgres,
  startOwnRedis,
  type OwnPostgres,
  type OwnRedis,
  type Stack,
} from '@parley/devservices';
import { createFaultOrg, Load, startFaultStack } from './load';

const CLIENTS = 20;
const saved = { ...process.env };

let postgres: OwnPostgres | undefined;
let redis: OwnRedis | undefined;
let stack: Stack | undefined;

afterAll(async () => {
  await stack?.stop();
  await disconnectPrisma();
  process.env = { ...saved };
  resetConfig();
  await postgres?.close();
  await redis?.stop();
});

describe('PostgreSQL restarted under load', () => {
  it('answers 503 while it is down, then reconnects and delivers every committed change', async () => {
    postgres = await startOwnPostgres({
      dataDir: mkdtempSync(join(tmpdir(), 'parley-fault-pg-')),
      port: await freePort(),
    });
    const databaseUrl = postgres.url('parley_faults');
    await ensureDatabase(databaseUrl);
    await runMigrations(databaseUrl);
    // A Redis of its own too: these replicas must be the only fan-out on it.
    redis = await startOwnRedis({
      port: await freePort(),
      dir: mkdtempSync(join(tmpdir(), 'parley-fault-pg-redis-')),
      appendOnly: false,
    });
    process.env.DATABASE_URL = databaseUrl;
    resetConfig();
    await disconnectPrisma();
    const org = await createFaultOrg(CLIENTS);
    await disconnectPrisma();

    stack = await startFaultStack({
      databaseUrl,
      redisUrl: redis.url,
      apiReplicas: 1,
      eventsReplicas: 1,
    });
    const load = new Load({ url: stack.url, org });
    const server = postgres;
    const { before, truth } = await load.through({
      down: () => server.stop(),
      up: () => server.start(),
    });

    expect(load.check(truth)).toEqual([]);
    expect(load.queues.filter((queue) => queue.lost)).toEqual([]);
    expect(load.answers('POST /api/v1/messages', 503)).toBeGreaterThan(0);
    expect(before).toBeGreaterThan(10);
    expect(load.acknowledged.length).toBeGreaterThan(before + 10);
    for (const replica of [...stack.api, ...stack.events])
      expect(replica.process.exitCode).toBeNull();
  }, 180_000);
});
