// An API replica killed (SIGKILL, by its own fault-injection point) right after a commit and
// before publishing, under load: 20 long-polling clients, a writer sending through nginx to two
// API replicas. The killed request gets nginx's JSON 503; the change it committed still reaches
// every queue exactly once and in order (the other replica publishes its outbox row before its
// own next change), and nothing is restarted.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getConfig } from '@parley/config';
import { freePort, startOwnRedis, type OwnRedis, type Stack } from '@parley/devservices';
import { createFaultOrg, Load, sleep, startFaultStack } from './load';

const CLIENTS = 20;

let stack: Stack | undefined;
let redis: OwnRedis | undefined;

afterAll(async () => {
  await stack?.stop();
  await redis?.stop();
});

describe('an API replica killed between commit and publish', () => {
  it('loses none of the events of the change it committed', async () => {
    redis = await startOwnRedis({
      port: await freePort(),
      dir: mkdtempSync(join(tmpdir(), 'parley-fault-api-')),
      appendOnly: false,
    });
    const org = await createFaultOrg(CLIENTS);
    stack = await startFaultStack({
      databaseUrl: getConfig().DATABASE_URL,
      redisUrl: redis.url,
      apiReplicas: 2,
      eventsReplicas: 1,
      // Its 20th commit: well into the stream of messages.
      replicaEnv: { api1: { PARLEY_FAULT_KILL_AFTER_COMMIT: '20' } },
    });
    const victim = stack.api[0]!;
    const died = new Promise<NodeJS.Signals | null>((resolve) =>
      victim.process.once('exit', (_code, signal) => resolve(signal)),
    );
    const load = new Load({ url: stack.url, org });
    await load.start();
    expect(await died).toBe('SIGKILL');
    const atDeath = load.acknowledged.length;
    await sleep(3000);
    const truth = await load.stop();

    expect(load.check(truth)).toEqual([]);
    expect(load.queues.filter((queue) => queue.lost)).toEqual([]);
    // The killed send was answered by nginx, and its message was stored all the same.
    expect(load.answers('POST /api/v1/messages', 503)).toBe(1);
    expect(truth.length).toBe(load.acknowledged.length + 1);
    expect(load.acknowledged.length).toBeGreaterThan(atDeath + 10);
    for (const replica of [stack.api[1]!, ...stack.events])
      expect(replica.process.exitCode).toBeNull();
  }, 120_000);
});
