// Read throughput of an API replica against the raw limit measured in the same run: an
// Express hello-world in a process of its own, driven by the same client. Prints one JSON line.
// Not a test: run with `pnpm bench:reads` (needs PostgreSQL, Redis and nginx, found or started
// as for the tests).
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { freePort, repoRoot, requestJson, waitForReady } from '@parley/devservices';
import { cpuMeter } from './cpu';
import { CONNECTIONS, SECONDS, throughput } from './http-load';
import { createBenchOrganization, prepareBench, stopBench, startBenchStack } from './setup';

/** The raw limit: Express answering a constant JSON body, in its own process. */
async function helloWorld(): Promise<{ url: string; stop: () => void }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const app = require('express')(); app.get('/ready', (q, r) => r.json({})); app.get('/', (q, r) => r.json({ result: 'success', msg: '' })); app.listen(${port}, '127.0.0.1');`,
    ],
    { cwd: `${repoRoot()}/apps/api`, stdio: 'inherit' },
  );
  await waitForReady(port);
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill('SIGKILL') };
}

async function main(): Promise<void> {
  const services = await prepareBench();
  const { owner, subdomain } = await createBenchOrganization();
  const stack = await startBenchStack(services);
  const hello = await helloWorld();
  try {
    const api = `http://127.0.0.1:${stack.api[0]!.port}/api/v1`;
    const host = { Host: `${subdomain}.localhost:9991` };
    const auth = {
      ...host,
      Authorization: `Basic ${Buffer.from(`${owner.deliveryEmail}:${owner.apiKey}`).toString('base64')}`,
    };
    // Twenty messages to read back (to oneself: a new organization has no channel).
    let messageId = 0;
    for (let i = 0; i < 20; i++) {
      const sent = await requestJson(`http://127.0.0.1:${stack.api[0]!.port}`, {
        host: host.Host,
        user: owner,
        method: 'POST',
        path: '/api/v1/messages',
        form: { type: 'private', to: JSON.stringify([owner.id]), content: `message **${i}**` },
      });
      messageId = sent.body!.id as number;
    }
    // A queue to poll without waiting: each poll is the events tier's whole per-request path
    // (authentication, the queue read in Redis, the answer) without the wait.
    const registered = await requestJson(`http://127.0.0.1:${stack.api[0]!.port}`, {
      host: host.Host,
      user: owner,
      method: 'POST',
      path: '/api/v1/register',
      form: { event_types: JSON.stringify(['message']), fetch_event_types: '[]' },
    });
    const queueId = encodeURIComponent(registered.body!.queue_id as string);
    const events = `http://127.0.0.1:${stack.events[0]!.port}/api/v1`;
    const raw = await throughput(hello.url, {});
    // Each endpoint's rate, and the CPU milliseconds per request meanwhile of the API replica
    // and of everything it waits on (PostgreSQL's backends, Redis): on a small machine they
    // share the cores with the client, so their sum bounds the rate.
    const apiPid = stack.api[0]!.process.pid!;
    const measure = async (url: string, headers: Record<string, string>) => {
      const meter = cpuMeter({
        api: [apiPid],
        postgres: /^postgres/,
        redis: /redis-server/,
      });
      const rps = await throughput(url, headers);
      return [rps, meter.perUnit(rps * SECONDS)] as const;
    };
    const [usersMe, usersMeCpu] = await measure(`${api}/users/me`, auth);
    const [serverSettings] = await measure(`${api}/server_settings`, host);
    const [messageById, messageByIdCpu] = await measure(`${api}/messages/${messageId}`, auth);
    const [messages, messagesCpu] = await measure(
      `${api}/messages?anchor=newest&num_before=20&num_after=0`,
      auth,
    );
    const pollCpu = cpuMeter({
      events: [stack.events[0]!.process.pid!],
      redis: /redis-server/,
    });
    const poll = await throughput(
      `${events}/events?queue_id=${queueId}&last_event_id=-1&dont_block=true`,
      auth,
    );
    const pollCpuMs = pollCpu.perUnit(poll * SECONDS);
    const figures = {
      seconds: SECONDS,
      connections: CONNECTIONS,
      cores: cpus().length,
      load: loadavg()[0],
      hello_world_rps: Math.round(raw),
      users_me_rps: Math.round(usersMe),
      users_me_ratio: Number((usersMe / raw).toFixed(3)),
      users_me_cpu_ms: usersMeCpu,
      server_settings_rps: Math.round(serverSettings),
      server_settings_ratio: Number((serverSettings / raw).toFixed(3)),
      message_by_id_rps: Math.round(messageById),
      message_by_id_ratio: Number((messageById / raw).toFixed(3)),
      message_by_id_cpu_ms: messageByIdCpu,
      messages_20_rps: Math.round(messages),
      messages_20_ratio: Number((messages / raw).toFixed(3)),
      messages_20_cpu_ms: messagesCpu,
      events_poll_rps: Math.round(poll),
      events_poll_ratio: Number((poll / raw).toFixed(3)),
      events_poll_cpu_ms: pollCpuMs.events,
      events_poll_redis_cpu_ms: pollCpuMs.redis,
    };
    console.log(JSON.stringify(figures));
  } finally {
    hello.stop();
    await stopBench(stack, services);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
