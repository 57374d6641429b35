// `pnpm bench`: the machine's raw limits and Parley's figures in one run, printed as one JSON
// line with each figure's ratio to its raw limit (issue "Speed"). Raw limits: a durable
// single-row INSERT (sequential latency, and transactions per second over 8 connections), a
// Redis round trip, an Express hello-world (measured by bench:reads itself, in its run), a bare
// node:http server answering as many parked polls as the fan-out (bench:fanout, in its run). The
// other figures come from the benchmarks run one after another in child processes, each
// printing its own JSON line last: bench:reads, bench:messages (51 subscribers at full speed
// and at 10 messages/s, 1,001 subscribers, then 8 concurrent senders), bench:fanout,
// bench:history, bench:idle. Not a test.
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { createRedis } from '@parley/events';
import { repoRoot } from '@parley/devservices';
import { prepareBench } from './setup';
import { percentile } from './stats';

const RAW_SAMPLES = 500;
const TPS_SECONDS = 3;
/** The event-latency target's pace: 10 messages/s. */
const PACED_RATE = 10;
const PACED_GAP_MS = 1000 / PACED_RATE;

async function rawInserts(databaseUrl: string): Promise<{ p50Ms: number; tps8: number }> {
  const setup = new pg.Client({ connectionString: databaseUrl });
  await setup.connect();
  await setup.query('CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, v text)');
  const latencies: number[] = [];
  for (let i = 0; i < RAW_SAMPLES; i++) {
    const started = process.hrtime.bigint();
    await setup.query({
      name: 'raw',
      text: 'INSERT INTO bench_raw (v) VALUES ($1)',
      values: ['x'],
    });
    latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  latencies.sort((a, b) => a - b);
  const clients = await Promise.all(
    Array.from({ length: 8 }, async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      return client;
    }),
  );
  let done = 0;
  const deadline = Date.now() + TPS_SECONDS * 1000;
  await Promise.all(
    clients.map(async (client) => {
      while (Date.now() < deadline) {
        await client.query({
          name: 'raw',
          text: 'INSERT INTO bench_raw (v) VALUES ($1)',
          values: ['x'],
        });
        done++;
      }
    }),
  );
  await Promise.all(clients.map((client) => client.end()));
  await setup.query('TRUNCATE bench_raw');
  await setup.end();
  return { p50Ms: percentile(latencies, 50), tps8: done / TPS_SECONDS };
}

/** Round trips after an idle gap, as many as fit in this many seconds. */
const IDLE_ROUND_TRIP_SECONDS = 10;

/** Redis round trips back to back, and each after `PACED_GAP_MS` of idling: the raw limit of
 * an event's path at 10 messages/s, where each process on it is woken from idle. A round trip
 * is two such wake-ups (Redis, then the client); a commit's event needs five before its first
 * receiver has it (API → Redis → the fan-out's read → Redis → the wake-up → the client). On a
 * virtual machine a round trip after idling can cost several times one back to back (seen:
 * 0.39 against 0.045 ms p50). */
async function redisRoundTrips(
  redisUrl: string,
): Promise<{ p50Ms: number; afterIdleP50Ms: number; afterIdleP99Ms: number }> {
  const redis = createRedis(redisUrl);
  const roundTrip = async () => {
    const started = process.hrtime.bigint();
    await redis.ping();
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const latencies: number[] = [];
  for (let i = 0; i < RAW_SAMPLES; i++) latencies.push(await roundTrip());
  const afterIdle: number[] = [];
  for (let i = 0; i < (IDLE_ROUND_TRIP_SECONDS * 1000) / PACED_GAP_MS; i++) {
    await new Promise((resolve) => setTimeout(resolve, PACED_GAP_MS));
    afterIdle.push(await roundTrip());
  }
  redis.disconnect();
  latencies.sort((a, b) => a - b);
  afterIdle.sort((a, b) => a - b);
  return {
    p50Ms: percentile(latencies, 50),
    afterIdleP50Ms: percentile(afterIdle, 50),
    afterIdleP99Ms: percentile(afterIdle, 99),
  };
}

/** Runs one benchmark script and returns the JSON of its last line. */
function runBench(script: string, env: Record<string, string> = {}): Record<string, unknown> {
  const result = spawnSync(process.execPath, ['--import', 'tsx', `bench/${script}`], {
    cwd: repoRoot(),
    env: { ...process.env, ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 10 * 60 * 1000,
  });
  const lines = (result.stdout ?? '').trim().split('\n');
  try {
    return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
  } catch {
    throw new Error(`bench/${script} printed no JSON line:\n${result.stdout}`);
  }
}

const ratio = (value: number, limit: number) => Number((value / limit).toFixed(3));

async function main(): Promise<void> {
  const services = await prepareBench();
  const inserts = await rawInserts(services.databaseUrl);
  const redisTrips = await redisRoundTrips(services.redisUrl);
  await services.stop();

  const reads = runBench('reads.ts');
  const send50 = runBench('messages.ts', { BENCH_SUBSCRIBERS: '50', BENCH_MESSAGES: '300' });
  // The event-latency target's load: 20 receivers, 10 messages/s.
  const paced = runBench('messages.ts', {
    BENCH_SUBSCRIBERS: '50',
    BENCH_MESSAGES: '200',
    BENCH_RATE: String(PACED_RATE),
  });
  const send1000 = runBench('messages.ts', { BENCH_SUBSCRIBERS: '1000' });
  // Seconds of sending, as for the raw tps it is compared with (TPS_SECONDS): 400 messages were
  // over in about a second, too short for a steady figure.
  const concurrent = runBench('messages.ts', {
    BENCH_SUBSCRIBERS: '50',
    BENCH_MESSAGES: '2000',
    BENCH_SENDERS: '8',
  });
  const fanout = runBench('fanout.ts');
  const history = runBench('history.ts');
  const idle = runBench('idle.ts');

  console.log(
    JSON.stringify({
      cores: cpus().length,
      load: loadavg()[0],
      raw: {
        pg_insert_p50_ms: Number(inserts.p50Ms.toFixed(3)),
        pg_insert_tps_8_connections: Math.round(inserts.tps8),
        redis_round_trip_p50_ms: Number(redisTrips.p50Ms.toFixed(3)),
        redis_round_trip_after_idle_p50_ms: Number(redisTrips.afterIdleP50Ms.toFixed(3)),
        redis_round_trip_after_idle_p99_ms: Number(redisTrips.afterIdleP99Ms.toFixed(3)),
        hello_world_rps: reads.hello_world_rps,
      },
      message_by_id_ratio: reads.message_by_id_ratio,
      message_by_id_cpu_ms: reads.message_by_id_cpu_ms,
      users_me_ratio: reads.users_me_ratio,
      users_me_cpu_ms: reads.users_me_cpu_ms,
      messages_20_ratio: reads.messages_20_ratio,
      events_poll_ratio: reads.events_poll_ratio,
      events_poll_cpu_ms: reads.events_poll_cpu_ms,
      send_50_subscribers_p50_ms: send50.send_p50_ms,
      send_50_subscribers_p99_ms: send50.send_p99_ms,
      send_50_subscribers_p50_in_raw_inserts: ratio(send50.send_p50_ms as number, inserts.p50Ms),
      // Per process (API, events, PostgreSQL, Redis, the benchmark's clients): on a machine
      // whose processes share its cores, what a send costs in all, beside how long it took.
      send_50_subscribers_cpu_ms_per_message: send50.cpu_ms_per_message,
      send_1000_subscribers_p50_ms: send1000.send_p50_ms,
      send_1000_subscribers_cpu_ms_per_message: send1000.cpu_ms_per_message,
      event_p50_ms: send50.event_p50_ms,
      event_p99_ms: send50.event_p99_ms,
      event_at_10_per_s_p50_ms: paced.event_p50_ms,
      event_at_10_per_s_p99_ms: paced.event_p99_ms,
      event_at_10_per_s_after_answer_p50_ms: paced.event_after_answer_p50_ms,
      event_at_10_per_s_after_answer_p99_ms: paced.event_after_answer_p99_ms,
      event_at_10_per_s_after_date_sent_p50_ms: paced.event_after_date_sent_p50_ms,
      event_at_10_per_s_after_date_sent_p99_ms: paced.event_after_date_sent_p99_ms,
      // Null unless PostgreSQL runs with track_commit_timestamp = on (README).
      event_at_10_per_s_after_commit_p50_ms: paced.event_after_commit_p50_ms,
      event_at_10_per_s_after_commit_p99_ms: paced.event_after_commit_p99_ms,
      // The same, split: per message, commit → its first receiver (the path through the
      // tiers: hops, each a wake-up from idle at this pace), then first → last receiver (the
      // events replica answering its parked polls in turn).
      event_at_10_per_s_first_receiver_after_commit_p50_ms:
        paced.event_first_receiver_after_commit_p50_ms,
      event_at_10_per_s_first_receiver_after_commit_p99_ms:
        paced.event_first_receiver_after_commit_p99_ms,
      event_at_10_per_s_first_to_last_receiver_p50_ms: paced.event_first_to_last_receiver_p50_ms,
      event_at_10_per_s_first_to_last_receiver_p99_ms: paced.event_first_to_last_receiver_p99_ms,
      concurrent_8_senders_messages_per_s: concurrent.messages_per_s,
      concurrent_8_senders_ratio_to_raw_tps: ratio(
        concurrent.messages_per_s as number,
        inserts.tps8,
      ),
      concurrent_8_senders_cpu_ms_per_message: concurrent.cpu_ms_per_message,
      fanout_10000_polls_p50_ms: fanout.answer_p50_ms,
      fanout_10000_polls_p99_ms: fanout.answer_p99_ms,
      fanout_10000_polls_raw_p99_ms: fanout.raw_answer_p99_ms,
      fanout_10000_polls_p99_in_raw: fanout.answer_p99_in_raw,
      fanout_unanswered_after_20s: fanout.unanswered_after_20s,
      rss_per_parked_poll_kb: fanout.rss_per_parked_poll_kb,
      history_messages: history.messages,
      history_slowest_anchor_ratio_to_newest: history.slowest_anchor_ratio_to_newest,
      history_slowest_channel_anchor_ratio_to_newest:
        history.slowest_channel_anchor_ratio_to_newest,
      idle_cpu_ms_per_s: idle.idle_cpu_ms_per_s,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
