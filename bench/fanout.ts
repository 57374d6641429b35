// Fan-out benchmark: one message to a channel whose members hold many parked long-polls on one
// events replica. Prints one JSON line: how long after the send the polls were answered (p50,
// p99, max, unanswered after 20 s), the replica's memory per parked poll, and the raw limit
// measured in the same run: as many polls parked on a bare node:http server and answered at
// once with the same bytes (bench/raw-longpoll.ts). Not a test: run with `pnpm bench:fanout`
// (needs PostgreSQL, Redis and nginx, found or started as for tests).
//
// Queues are created in Redis directly, as POST /register does after reading its state: what
// is measured is the fan-out and the parked polls, not registration.
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { getConfig } from '@parley/config';
import { defaultQueueOptions, getRedis, parseQueueId, QueueStore } from '@parley/events';
import { repoRoot, requestJson } from '@parley/devservices';
import { cpuMeter, cpuTimeMs } from './cpu';
import {
  createBenchChannel,
  createBenchOrganization,
  createMembers,
  prepareBench,
  stopBench,
  startBenchStack,
} from './setup';
import { percentile } from './stats';

const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 1000);
const POLLS = Number(process.env.BENCH_POLLS ?? 10_000);
const GIVE_UP_MS = 20_000;
/** Rounds of polls answered before the measurement, and polls per round (see below). */
const WARMUP_ROUNDS = 3;
const WARMUP_POLLS = 1000;

function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}

/** Where a benchmark's polls go: the events replica, or the raw server. */
interface PollTarget {
  port: number;
  path: (index: number) => string;
  headers: (index: number) => Record<string, string>;
}

/** Parks `count` polls, in batches as clients arrive (a burst of 10,000 connections overflows
 * backlogs); each promise settles when its poll is answered. */
async function parkPolls(
  count: number,
  target: PollTarget,
  agent: Agent,
  answered: (ok: boolean) => void,
): Promise<Promise<void>[]> {
  const poll = (index: number) =>
    new Promise<void>((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: target.port,
          path: target.path(index),
          agent,
          headers: target.headers(index),
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            answered(res.statusCode === 200);
            resolve();
          });
        },
      );
      req.on('error', () => {
        answered(false);
        resolve();
      });
      req.end();
    });
  const answers: Promise<void>[] = [];
  for (let i = 0; i < count; i += 500) {
    for (let j = i; j < Math.min(count, i + 500); j++) answers.push(poll(j));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return answers;
}

/** The same number of parked polls answered by bench/raw-longpoll.ts, with `body` (a real
 * answer of the replica), by the same client code, after the same warm-up: the machine's
 * limit for answering them from one Node process. */
async function rawFanout(
  polls: number,
  body: string,
): Promise<{
  answered: number;
  p50: number;
  p99: number;
  serverCpuMs: number;
  clientCpuMs: number;
}> {
  const server = spawn(process.execPath, ['--import', 'tsx', 'bench/raw-longpoll.ts'], {
    cwd: repoRoot(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const agent = new Agent({ keepAlive: true, maxSockets: polls + 10, maxFreeSockets: polls + 10 });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      server.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
      server.once('exit', (code) => reject(new Error(`raw long-poll server exited (${code})`)));
    });
    const control = (method: string, path: string, text = '') =>
      new Promise<void>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end(text);
      });
    await control('PUT', '/body', body);
    const target: PollTarget = { port, path: () => '/poll', headers: () => ({}) };
    for (let round = 0; round < WARMUP_ROUNDS; round++) {
      await control('POST', '/park');
      const parked = await parkPolls(WARMUP_POLLS, target, agent, () => undefined);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await control('POST', '/answer');
      await Promise.all(parked);
    }
    await control('POST', '/park');
    let sentAt = 0n;
    const answeredAfter: number[] = [];
    const answers = await parkPolls(polls, target, agent, (ok) => {
      if (ok && sentAt > 0n) answeredAfter.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
    });
    for (let busy = Infinity; busy > 25;) {
      const before = cpuTimeMs(server.pid!);
      await new Promise((resolve) => setTimeout(resolve, 500));
      busy = cpuTimeMs(server.pid!) - before;
    }
    const cpu = cpuMeter({ server: [server.pid!], client: [process.pid] });
    sentAt = process.hrtime.bigint();
    await control('POST', '/answer');
    await Promise.race([
      Promise.all(answers),
      new Promise((resolve) => setTimeout(resolve, GIVE_UP_MS)),
    ]);
    const cpuMs = cpu.perUnit(1);
    answeredAfter.sort((a, b) => a - b);
    return {
      answered: answeredAfter.length,
      p50: percentile(answeredAfter, 50),
      p99: percentile(answeredAfter, 99),
      serverCpuMs: cpuMs.server!,
      clientCpuMs: cpuMs.client!,
    };
  } finally {
    agent.destroy();
    server.kill();
  }
}

async function main(): Promise<void> {
  const services = await prepareBench();
  const { realm, owner, subdomain } = await createBenchOrganization();
  const members = await createMembers(realm.id, subdomain, MEMBERS);
  await createBenchChannel(realm, owner, 'fanout', [owner, ...members]);
  // Heartbeats long enough that none answers a poll during the measurement.
  const stack = await startBenchStack(services, { EVENTS_HEARTBEAT_SECONDS: '120' });
  const host = `${subdomain}.localhost:9991`;
  const apiBase = `http://127.0.0.1:${stack.api[0]!.port}`;
  const eventsPort = stack.events[0]!.port;
  const eventsPid = stack.events[0]!.process.pid!;
  // Every connection kept once answered, as a client polling again would keep it (the
  // default keeps 256 idle ones: the other answered polls' connections were closed, and the
  // replica spent time closing them while answering the rest).
  const agent = new Agent({ keepAlive: true, maxSockets: POLLS + 10, maxFreeSockets: POLLS + 10 });
  const send = async (topic: string) => {
    const sent = await requestJson(apiBase, {
      host,
      user: owner,
      method: 'POST',
      path: '/api/v1/messages',
      form: { type: 'stream', to: 'fanout', topic, content: 'to everyone' },
    });
    if (sent.status !== 200) throw new Error(`send failed: ${sent.raw.slice(0, 200)}`);
  };
  try {
    // One send before any queue exists: what is measured is the fan-out on a running server,
    // not the API replica's first send (its statements prepared, its code compiled: ~65 ms
    // more). No queue gets this message: each is created after it entered its shard's log.
    await send('warm-up');
    // Its fan-out done before the queues exist, so it caches none of them.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
    const options = { ...defaultQueueOptions(), event_types: ['message'], apply_markdown: true };

    let sentAt = 0n;
    const answeredAfter: number[] = [];
    let failed = 0;
    const parleyPolls = (queueIds: string[], users: typeof members): PollTarget => ({
      port: eventsPort,
      path: (index) =>
        `/api/v1/events?queue_id=${encodeURIComponent(queueIds[index]!)}&last_event_id=-1`,
      headers: (index) => ({
        Host: host,
        Authorization: `Basic ${Buffer.from(`${users[index]!.deliveryEmail}:${users[index]!.apiKey}`).toString('base64')}`,
      }),
    });
    const park = (queueIds: string[], users: typeof members, answered: (ok: boolean) => void) =>
      parkPolls(queueIds.length, parleyPolls(queueIds, users), agent, answered);
    // The replica's answering warmed up as on a running server (its code optimized by V8), as
    // the API's send above: a few rounds of polls on queues of their own, answered by one
    // message each, then deleted.
    for (let round = 0; round < WARMUP_ROUNDS; round++) {
      const users = members.slice(0, WARMUP_POLLS);
      const warmQueues = await Promise.all(
        users.map((user) => store.create(user.id, realm.id, options)),
      );
      const parked = await park(warmQueues, users, () => undefined);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await send(`warm-up ${round}`);
      await Promise.all(parked);
      await Promise.all(
        warmQueues.map((queueId, i) =>
          store.delete({ ...parseQueueId(queueId, store.shards)!, queueId, userId: users[i]!.id }),
        ),
      );
    }
    // Created after the warm-up's messages, which none of them gets.
    const polls = Array.from({ length: POLLS }, (_, i) => members[i % members.length]!);
    const queues = await Promise.all(polls.map((user) => store.create(user.id, realm.id, options)));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const rssBefore = rssKb(eventsPid);
    const answers = await park(queues, polls, (ok) => {
      if (ok && sentAt > 0n) answeredAfter.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
      else failed++;
    });
    // Every poll parked: the replica has gone quiet.
    for (let busy = Infinity; busy > 25;) {
      const before = cpuTimeMs(eventsPid);
      await new Promise((resolve) => setTimeout(resolve, 500));
      busy = cpuTimeMs(eventsPid) - before;
    }
    const rssParked = rssKb(eventsPid);
    // The clients share the machine's cores here (on a real deployment they would not): their
    // CPU and Redis's are printed beside the replica's, from the send to the last answer.
    const cpu = cpuMeter({
      events: [eventsPid],
      api: [stack.api[0]!.process.pid!],
      redis: /redis-server/,
      client: [process.pid],
    });

    sentAt = process.hrtime.bigint();
    await send('all');
    await Promise.race([
      Promise.all(answers),
      new Promise((resolve) => setTimeout(resolve, GIVE_UP_MS)),
    ]);
    const cpuMs = cpu.perUnit(1);
    answeredAfter.sort((a, b) => a - b);
    // One of the answers as the replica wrote it (the queue still holds the event), for the raw
    // server to write the same bytes.
    const { raw: body } = await requestJson(`http://127.0.0.1:${eventsPort}`, {
      host,
      user: polls[0]!,
      method: 'GET',
      path: `/api/v1/events?queue_id=${encodeURIComponent(queues[0]!)}&last_event_id=-1&dont_block=true`,
    });
    // The replica's connections closed first: the raw run opens as many again.
    agent.destroy();
    const raw = await rawFanout(POLLS, body);
    const p99 = percentile(answeredAfter, 99);
    console.log(
      JSON.stringify({
        cores: cpus().length,
        load: loadavg()[0],
        members: MEMBERS,
        parked_polls: POLLS,
        answered: answeredAfter.length,
        failed,
        unanswered_after_20s: POLLS - answeredAfter.length - failed,
        answer_first_ms: Math.round(answeredAfter[0] ?? NaN),
        answer_p50_ms: Math.round(percentile(answeredAfter, 50)),
        answer_p99_ms: Math.round(p99),
        answer_max_ms: Math.round(answeredAfter[answeredAfter.length - 1] ?? NaN),
        events_cpu_ms: cpuMs.events,
        api_cpu_ms: cpuMs.api,
        redis_cpu_ms: cpuMs.redis,
        client_cpu_ms: cpuMs.client,
        rss_per_parked_poll_kb: Number(((rssParked - rssBefore) / POLLS).toFixed(1)),
        raw_answered: raw.answered,
        raw_answer_p50_ms: Math.round(raw.p50),
        raw_answer_p99_ms: Math.round(raw.p99),
        raw_server_cpu_ms: raw.serverCpuMs,
        raw_client_cpu_ms: raw.clientCpuMs,
        answer_p99_in_raw: Number((p99 / raw.p99).toFixed(2)),
      }),
    );
  } finally {
    agent.destroy();
    await stopBench(stack, services);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
