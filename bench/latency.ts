// Commit → event latency: how long after a change is sent does a parked long-poll return its
// event? Measured directly against the replicas and through nginx. Not a test: run with
// `pnpm bench:latency` (needs PostgreSQL, Redis and nginx, found or started as for the tests).
import { Agent } from 'node:http';
import { loadavg, cpus } from 'node:os';
import { disconnectRedis } from '@parley/events';
import { disconnectPrisma, runAction, type User } from '@parley/db';
import { requestJson } from '@parley/devservices';
import { createBenchOrganization, prepareBench, startBenchStack } from './setup';
import { checkCreateUser, doCreateUser } from '../apps/api/src/actions/users';
import { percentile } from './stats';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const agent = new Agent({ keepAlive: true });

async function call(
  base: string,
  host: string,
  user: User,
  method: string,
  path: string,
  form?: Record<string, string>,
) {
  const answer = await requestJson(base, { host, user, method, path, form, agent });
  if (!answer.body)
    throw new Error(`${method} ${path}: not JSON (${answer.status}): ${answer.raw.slice(0, 200)}`);
  return answer.body;
}

async function measure(
  label: string,
  apiBase: string,
  eventsBase: string,
  host: string,
  owner: User,
  watcher: User,
) {
  const registered = await call(apiBase, host, watcher, 'POST', '/api/v1/register', {
    event_types: '["realm_user"]',
  });
  const queueId = registered.queue_id as string;
  let last = registered.last_event_id as number;
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const poll = call(
      eventsBase,
      host,
      watcher,
      'GET',
      `/api/v1/events?queue_id=${encodeURIComponent(queueId)}&last_event_id=${last}`,
    );
    // Let the poll park before the change is made.
    await new Promise((r) => setTimeout(r, 5));
    const sent = process.hrtime.bigint();
    const change = call(apiBase, host, owner, 'PATCH', `/api/v1/users/${watcher.id}`, {
      full_name: `Bench ${label} ${i}`,
    });
    const answer = await poll;
    const received = process.hrtime.bigint();
    await change;
    const events = answer.events as { id: number; type: string }[];
    if (events.length === 0 || events.some((e) => e.type === 'heartbeat')) continue;
    last = events[events.length - 1]!.id;
    latencies.push(Number(received - sent) / 1e6);
  }
  latencies.sort((a, b) => a - b);
  return {
    label,
    samples: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

async function main(): Promise<void> {
  const services = await prepareBench();
  const { realm, owner, subdomain } = await createBenchOrganization();
  const watcher = await runAction(async (ctx) =>
    doCreateUser(
      ctx,
      realm,
      await checkCreateUser(ctx.tx, realm, {
        email: `w@${subdomain}.test`,
        fullName: 'Watcher',
        password: null,
        role: 400,
      }),
      null,
    ),
  );
  const stack = await startBenchStack(services);
  const host = `${subdomain}.localhost:9991`;
  try {
    // Give the events replica time to take every shard.
    await new Promise((r) => setTimeout(r, 1500));
    const direct = await measure(
      'direct',
      `http://127.0.0.1:${stack.api[0]!.port}`,
      `http://127.0.0.1:${stack.events[0]!.port}`,
      host,
      owner,
      watcher,
    );
    const proxied = await measure('nginx', stack.url, stack.url, host, owner, watcher);
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    console.log(
      `commit → event latency in a parked long-poll (${SAMPLES} changes each; ${cpus().length} cores, load ${load})`,
    );
    for (const row of [direct, proxied]) {
      console.log(
        `  ${row.label.padEnd(7)} p50 ${row.p50.toFixed(2)} ms   p99 ${row.p99.toFixed(2)} ms   (${row.samples} samples)`,
      );
    }
  } finally {
    await stack.stop();
    agent.destroy();
    await Promise.all([disconnectPrisma(), disconnectRedis()]);
    await services.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
