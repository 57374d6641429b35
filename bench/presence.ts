// Presence benchmark: every Zulip client posts its presence every minute, so an organization
// of 10,000 people online sends ~170 pings a second. Measures, in one run on one machine:
//   1. the database part alone (Parley's presence write, called in process, same concurrency)
//      — the ceiling the HTTP path can approach;
//   2. POST /users/me/presence through one API replica, as modern clients send it
//      (last_update_id: only changes come back) and as ping_only, beside the replica's floor
//      (GET /server_settings, unauthenticated) measured the same way;
// and prints pings/s, p50/p99 and the HTTP/database ratio. Every ping writes (the stored
// times are set a minute back before each pass), as at steady state. Not a test:
// `pnpm bench:presence` (BENCH_USERS, BENCH_CONNECTIONS, BENCH_PINGS change the sizes).
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { disconnectRedis } from '@parley/events';
import { disconnectPrisma, getPrisma, type Realm, type User } from '@parley/db';
import { requestJson } from '@parley/devservices';
import { doUpdatePresence } from '../apps/api/src/actions/presence';
import { createBenchOrganization, createMembers, prepareBench, startBenchStack } from './setup';
import { percentile } from './stats';

const USERS = Number(process.env.BENCH_USERS ?? 10_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const PINGS = Number(process.env.BENCH_PINGS ?? 5_000);

/** Runs `ping` PINGS times over CONNECTIONS concurrent workers, each on the next user. */
async function measure(users: User[], ping: (user: User, worker: number) => Promise<void>) {
  // Steady state: everyone pinged a minute ago (past Zulip's 55 s rewrite threshold, so each
  // ping writes, and well short of the 130 s after which a ping means "came back online").
  await getPrisma().$executeRaw`UPDATE user_presence SET
    last_active_time = now() - interval '61 seconds',
    last_connected_time = now() - interval '61 seconds'`;
  const latencies: number[] = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, worker) => {
      while (next < PINGS) {
        const user = users[next++ % users.length]!;
        const before = process.hrtime.bigint();
        await ping(user, worker);
        latencies.push(Number(process.hrtime.bigint() - before) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return { rate: PINGS / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

function report(label: string, result: { rate: number; p50: number; p99: number }, base?: number) {
  const ratio = base ? `   ${((100 * result.rate) / base).toFixed(0)}% of the database alone` : '';
  console.log(
    `  ${label.padEnd(34)} ${result.rate.toFixed(0).padStart(6)} pings/s   p50 ${result.p50.toFixed(2)} ms   p99 ${result.p99.toFixed(2)} ms${ratio}`,
  );
}

async function main(): Promise<void> {
  const services = await prepareBench();
  const { realm, subdomain } = await createBenchOrganization();
  const users = await createMembers(realm.id, subdomain, USERS);
  // Everyone has been online once: the steady state of an organization in use.
  await warmUp(realm, users);

  const stack = await startBenchStack(services);
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const host = `${subdomain}.localhost:9991`;
  const apiBase = `http://127.0.0.1:${stack.api[0]!.port}`;
  const post = async (user: User, form: Record<string, string>) => {
    const answer = await requestJson(apiBase, {
      host,
      user,
      method: 'POST',
      path: '/api/v1/users/me/presence',
      form,
      agent,
    });
    if (answer.body?.result !== 'success')
      throw new Error(`presence: ${answer.status} ${answer.raw.slice(0, 200)}`);
    return answer.body;
  };
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    console.log(
      `${PINGS} presence pings by ${USERS} users, ${CONNECTIONS} concurrent (${cpus().length} cores, load ${load})`,
    );
    const database = await measure(users, (user) => doUpdatePresence(realm, user, 'active'));
    report('database alone (in process)', database);
    // Like a real client, each connection sends the change id of its previous answer and gets
    // back what changed since (here: the pings of the other connections in between; in a real
    // organization, everyone who pinged in the last minute).
    const newest = await getPrisma().userPresence.aggregate({
      where: { realmId: realm.id },
      _max: { lastUpdateId: true },
    });
    const lastIds = Array.from({ length: CONNECTIONS }, () =>
      Number(newest._max.lastUpdateId ?? 0n),
    );
    report(
      'POST, last_update_id (modern)',
      await measure(users, async (user, worker) => {
        const body = await post(user, {
          status: 'active',
          last_update_id: String(lastIds[worker]),
        });
        lastIds[worker] = body.presence_last_update_id as number;
      }),
      database.rate,
    );
    // The floor of any request on this replica: no authentication, no SQL beyond the realm.
    report(
      'GET /server_settings (floor)',
      await measure(users, async (user) => {
        const answer = await requestJson(apiBase, {
          host,
          user,
          method: 'GET',
          path: '/api/v1/server_settings',
          agent,
        });
        if (answer.status !== 200) throw new Error(`server_settings: ${answer.status}`);
      }),
      database.rate,
    );
    report(
      'POST, ping_only',
      await measure(users, (user) =>
        post(user, { status: 'active', ping_only: 'true' }).then(() => {}),
      ),
      database.rate,
    );
  } finally {
    await stack.stop();
    agent.destroy();
    await Promise.all([disconnectPrisma(), disconnectRedis()]);
    await services.stop();
  }
}

async function warmUp(realm: Realm, users: User[]): Promise<void> {
  for (let i = 0; i < users.length; i += 50)
    await Promise.all(
      users.slice(i, i + 50).map((user) => doUpdatePresence(realm, user, 'active')),
    );
  await getPrisma().$executeRaw`ANALYZE user_presence`;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
