// /ready on an events replica is false while it delivers nothing although a shard has no
// owner: the load balancer must not count on a replica that lost its shards (or never got
// them) while their events wait.
import request from 'supertest';
import { getConfig, resetConfig } from '@parley/config';
import { createRedis, disconnectRedis, keys } from '@parley/events';
import { getLogger } from '@parley/logger';
import type { Redis } from 'ioredis';
import { createApp, startEventsService, type EventsService } from '../src/app';
import { Fanout } from '../src/fanout';

const SHARDS = 2;
const saved = { ...process.env };
let redis: Redis;
let fanout: Fanout | undefined;
let service: EventsService | undefined;

beforeAll(async () => {
  // A Redis database of this test's own: no other fan-out may hold these shards.
  const url = new URL(getConfig().REDIS_URL);
  url.pathname = '/10';
  process.env.REDIS_URL = url.toString();
  process.env.EVENT_SHARDS = String(SHARDS);
  resetConfig();
  await disconnectRedis();
  redis = createRedis(url.toString());
  await redis.flushdb();
});

afterAll(async () => {
  await fanout?.stop();
  await service?.stop();
  await redis.flushdb();
  redis.disconnect();
  await disconnectRedis();
  process.env = { ...saved };
  resetConfig();
});

describe('an events replica’s readiness', () => {
  it('holds shards: ready', async () => {
    service = await startEventsService({ leaseMs: 1000, gcIntervalMs: 60_000 });
    const app = createApp(service);
    let res = await request(app).get('/ready');
    for (let i = 0; i < 50 && res.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await request(app).get('/ready');
    }
    expect(res.status).toBe(200);
    expect(res.body.checks).toEqual({ postgres: true, redis: true, shards: true });
    await service.stop();
    service = undefined;
  });

  it('holds none while a shard has no owner: not ready; when others hold them all: ready', async () => {
    fanout = new Fanout({
      redis,
      connect: () => createRedis(process.env.REDIS_URL!),
      shards: SHARDS,
      leaseMs: 1000,
      retainMs: 0,
      gcIntervalMs: 60_000,
      log: getLogger(),
    });
    // Not started: it holds nothing, and shard 1 has no owner.
    await redis.set(keys.lease(0), 'another replica', 'PX', 10_000);
    await redis.del(keys.lease(1));
    expect(await fanout.isServing()).toBe(false);
    await redis.set(keys.lease(1), 'another replica', 'PX', 10_000);
    expect(await fanout.isServing()).toBe(true);
  });
});
