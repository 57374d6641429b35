// Send-and-receive benchmark: messages sent through the API to a channel with 1,000
// subscribers while N of them long-poll. Prints messages/s, POST /messages p50/p99 and
// send → event p50/p99 over every (message, polling client) pair, after BENCH_WARMUP messages
// that are not measured. Not a test: run with
// `pnpm bench:messages` (needs PostgreSQL, Redis and nginx, found or started as for tests).
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import type { User } from '@parley/db';
import { requestJson } from '@parley/devservices';
import { cpuMeter } from './cpu';
import {
  createBenchChannel,
  createBenchOrganization,
  createMembers,
  prepareBench,
  stopBench,
  startBenchStack,
} from './setup';
import { percentile } from './stats';

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const POLLERS = Number(process.env.BENCH_POLLERS ?? 20);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 200);
/** Concurrent sending clients (each sends MESSAGES / SENDERS, one after another). */
const SENDERS = Number(process.env.BENCH_SENDERS ?? 1);
/** Messages per second, all senders together (0: each sends as soon as its last was
 * answered). The issue's event-latency target is at 10 messages/s: at full speed the figure
 * measures the events tier's backlog more than its latency. */
const RATE = Number(process.env.BENCH_RATE ?? 0);
/** Messages sent first, by the same senders at full speed and received by the same pollers,
 * and not measured: what is measured is a running server, not its first requests (code not
 * yet optimized by V8, statements not yet prepared on each connection). V8 optimizes by how
 * often code ran, not by time: the API's and the events tier's CPU per message, measured per
 * 500 warm-up messages to 51 subscribers with 20 receivers, fell from 5.4 and 7.0 ms (first
 * 500) to 3.0 and 4.1 ms from the 2,500th on, and stayed there up to 6,000. With 200, every
 * figure measured the warm-up as much as the server. */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2500);
/** Appended to every message's content: `BENCH_CONTENT='@**Member 3** see #**bench**'` measures
 * sends that mention and link (the bench's users are `Member <i>`, its channel `bench`). */
const CONTENT = process.env.BENCH_CONTENT ?? '';
const agent = new Agent({ keepAlive: true, maxSockets: POLLERS + 10 });

async function main(): Promise<void> {
  const services = await prepareBench();
  const { realm, owner, subdomain } = await createBenchOrganization();
  const members = await createMembers(realm.id, subdomain, SUBSCRIBERS);
  await createBenchChannel(realm, owner, 'bench', [owner, ...members]);

  const stack = await startBenchStack(services);
  const host = `${subdomain}.localhost:9991`;
  const apiBase = `http://127.0.0.1:${stack.api[0]!.port}`;
  const eventsBase = `http://127.0.0.1:${stack.events[0]!.port}`;
  const call = async (
    base: string,
    user: User,
    method: string,
    path: string,
    form?: Record<string, string>,
  ) => {
    const answer = await requestJson(base, { host, user, method, path, form, agent });
    if (!answer.body)
      throw new Error(`${method} ${path}: ${answer.status} ${answer.raw.slice(0, 200)}`);
    return answer.body;
  };
  try {
    await new Promise((r) => setTimeout(r, 1500));
    const sentAt = new Map<number, bigint>();
    const answeredAt = new Map<number, bigint>();
    // Each message event as received; measured once every send has its times (an event may
    // arrive before its sender has read the answer that names the message).
    // With the wall-clock time (ms, fractional) beside the monotonic one, to compare with the
    // message's date_sent.
    const receptions: [number, bigint, number][] = [];
    let stopping = false;
    let polls = 0;
    let warmedUp = WARMUP === 0 ? POLLERS : 0;
    const pollers = members.slice(0, POLLERS).map(async (user) => {
      const registered = await call(apiBase, user, 'POST', '/api/v1/register', {
        event_types: '["message"]',
      });
      let last = registered.last_event_id as number;
      const queueId = encodeURIComponent(registered.queue_id as string);
      let seen = 0;
      while (!stopping && seen < WARMUP + MESSAGES) {
        polls++;
        const answer = await call(
          eventsBase,
          user,
          'GET',
          `/api/v1/events?queue_id=${queueId}&last_event_id=${last}`,
        );
        const received = process.hrtime.bigint();
        const receivedWall = performance.timeOrigin + performance.now();
        for (const event of answer.events as {
          id: number;
          type: string;
          message?: { id: number };
        }[]) {
          last = event.id;
          if (event.type !== 'message') continue;
          seen += 1;
          warmedUp += seen === WARMUP ? 1 : 0;
          receptions.push([event.message!.id, received, receivedWall]);
        }
        // The next poll goes out once every answer that arrived with this one has its time:
        // sent at once, each poll's request (~0.1 ms of this one thread) delayed the reading of
        // the answers behind it, which 20 separate clients would not have waited for.
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
    await new Promise((r) => setTimeout(r, 500));
    const send = (i: number, topic: string) =>
      call(apiBase, owner, 'POST', '/api/v1/messages', {
        type: 'stream',
        to: 'bench',
        topic,
        content: `message ${i} with some **Markdown** and a link https://example.com/${i}${CONTENT && ` ${CONTENT}`}`,
      });
    let next = 0;
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (next < WARMUP) await send(next++, 'warm-up');
      }),
    );
    // Every poller has its warm-up messages: none is still being delivered when measuring starts.
    const warmedBy = Date.now() + 30_000;
    while (warmedUp < POLLERS && Date.now() < warmedBy) await new Promise((r) => setTimeout(r, 20));
    const cpu = cpuMeter({
      api: [stack.api[0]!.process.pid!],
      events: [stack.events[0]!.process.pid!],
      postgres: /^postgres/,
      redis: /redis-server/,
      client: [process.pid],
    });
    const posts: number[] = [];
    polls = 0;
    const started = process.hrtime.bigint();
    next = 0;
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (next < MESSAGES) {
          const i = next++;
          if (RATE > 0) {
            const due = Number(started) / 1e6 + (i * 1000) / RATE;
            const wait = due - Number(process.hrtime.bigint()) / 1e6;
            if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          }
          const before = process.hrtime.bigint();
          const answer = await send(i, 'load');
          const after = process.hrtime.bigint();
          // The send time is the request's start: the event cannot precede it.
          sentAt.set(answer.id as number, before);
          answeredAt.set(answer.id as number, after);
          posts.push(Number(after - before) / 1e6);
        }
      }),
    );
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
    const cpuPerMessage = cpu.perUnit(MESSAGES);
    await Promise.race([Promise.all(pollers), new Promise((r) => setTimeout(r, 30_000))]);
    stopping = true;
    // From the send's start, and from its answer: the commit lies between the two, so together
    // they bracket commit → event. Closer above it: from the message's date_sent, the start of
    // the statement that read its recipients, after which the send only builds its rows and
    // inserts them (PostgreSQL's clock is this machine's). Exactly, when PostgreSQL records
    // commit timestamps: from the commit itself.
    const times = await messageTimes(services.databaseUrl, [...sentAt.keys()]);
    const delays: number[] = [];
    const afterAnswer: number[] = [];
    const afterDateSent: number[] = [];
    const afterCommit: number[] = [];
    // Per message: its first receiver's commit → event (the path through the tiers), and how
    // long after it its last receiver had it (one replica answering its parked polls in turn).
    const firstByMessage = new Map<number, number>();
    const lastByMessage = new Map<number, number>();
    for (const [id, received, receivedWall] of receptions) {
      const sent = sentAt.get(id);
      const answered = answeredAt.get(id);
      if (sent === undefined || answered === undefined) continue;
      delays.push(Number(received - sent) / 1e6);
      afterAnswer.push(Math.max(0, Number(received - answered) / 1e6));
      const { dateSent, committed } = times.get(id)!;
      afterDateSent.push(receivedWall - dateSent);
      if (committed === null) continue;
      const delay = receivedWall - committed;
      afterCommit.push(delay);
      firstByMessage.set(id, Math.min(firstByMessage.get(id) ?? Infinity, delay));
      lastByMessage.set(id, Math.max(lastByMessage.get(id) ?? -Infinity, delay));
    }
    const firstAfterCommit = [...firstByMessage.values()];
    const spread = [...firstByMessage].map(([id, first]) => lastByMessage.get(id)! - first);
    for (const list of [
      posts,
      delays,
      afterAnswer,
      afterDateSent,
      afterCommit,
      firstAfterCommit,
      spread,
    ])
      list.sort((a, b) => a - b);
    const ms = (list: number[], p: number) =>
      list.length > 0 ? Number(percentile(list, p).toFixed(2)) : null;
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    console.log(
      `${MESSAGES} messages (after ${WARMUP} not measured) from ${SENDERS} sender(s)${RATE > 0 ? ` at ${RATE}/s` : ''} to a channel with ${SUBSCRIBERS + 1} subscribers, ${POLLERS} long-polling (${cpus().length} cores, load ${load})`,
    );
    console.log(`  throughput      ${(MESSAGES / elapsed).toFixed(1)} messages/s`);
    console.log(`  POST /messages  p50 ${ms(posts, 50)} ms   p99 ${ms(posts, 99)} ms`);
    console.log(
      `  send → event    p50 ${ms(delays, 50)} ms   p99 ${ms(delays, 99)} ms   (${delays.length} deliveries)`,
    );
    console.log(
      `  answer → event  p50 ${ms(afterAnswer, 50)} ms   p99 ${ms(afterAnswer, 99)} ms   (commit → event lies between these two)`,
    );
    console.log(
      `  date_sent → event  p50 ${ms(afterDateSent, 50)} ms   p99 ${ms(afterDateSent, 99)} ms   (from date_sent: commit → event lies below)`,
    );
    console.log(
      afterCommit.length > 0
        ? `  commit → event  p50 ${ms(afterCommit, 50)} ms   p99 ${ms(afterCommit, 99)} ms   (from PostgreSQL's commit timestamp)`
        : afterAnswer.length === 0
          ? `  commit → event  not measured: no event was received (BENCH_POLLERS=0)`
          : `  commit → event  not measured: PostgreSQL runs without track_commit_timestamp`,
    );
    if (firstAfterCommit.length > 0)
      console.log(
        `  per message: commit → first receiver p50 ${ms(firstAfterCommit, 50)} ms   p99 ${ms(firstAfterCommit, 99)} ms; first → last receiver p50 ${ms(spread, 50)} ms   p99 ${ms(spread, 99)} ms`,
      );
    console.log(`  CPU ms/message  ${JSON.stringify(cpuPerMessage)}`);
    console.log(`  polls/message   ${(polls / MESSAGES).toFixed(1)}`);
    // The last line, for `pnpm bench`.
    console.log(
      JSON.stringify({
        subscribers: SUBSCRIBERS + 1,
        senders: SENDERS,
        rate: RATE,
        messages_per_s: Number((MESSAGES / elapsed).toFixed(1)),
        send_p50_ms: ms(posts, 50),
        send_p99_ms: ms(posts, 99),
        event_p50_ms: ms(delays, 50),
        event_p99_ms: ms(delays, 99),
        event_after_answer_p50_ms: ms(afterAnswer, 50),
        event_after_answer_p99_ms: ms(afterAnswer, 99),
        event_after_date_sent_p50_ms: ms(afterDateSent, 50),
        event_after_date_sent_p99_ms: ms(afterDateSent, 99),
        event_after_commit_p50_ms: ms(afterCommit, 50),
        event_after_commit_p99_ms: ms(afterCommit, 99),
        event_first_receiver_after_commit_p50_ms: ms(firstAfterCommit, 50),
        event_first_receiver_after_commit_p99_ms: ms(firstAfterCommit, 99),
        event_first_to_last_receiver_p50_ms: ms(spread, 50),
        event_first_to_last_receiver_p99_ms: ms(spread, 99),
        cpu_ms_per_message: cpuPerMessage,
      }),
    );
  } finally {
    agent.destroy();
    await stopBench(stack, services);
  }
}

/** Each message's date_sent in ms since the epoch, fractional: when the statement that read its
 * recipients started (prepareMessage in actions/messages.ts); its commit comes after. And, when
 * PostgreSQL keeps commit timestamps (track_commit_timestamp), the commit's own time: the one
 * PostgreSQL records for the transaction that inserted the row (its xmin), taken as it writes
 * the commit record, before the WAL is flushed, so commit → event measured from it is, if
 * anything, a little long. */
async function messageTimes(
  databaseUrl: string,
  ids: number[],
): Promise<Map<number, { dateSent: number; committed: number | null }>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const tracked = await client.query<{ on: boolean }>(
      "SELECT current_setting('track_commit_timestamp') = 'on' AS on",
    );
    const committed = tracked.rows[0]!.on
      ? '(extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::text'
      : 'NULL';
    const { rows } = await client.query<{ id: number; ms: string; committed: string | null }>(
      `SELECT id, (extract(epoch FROM date_sent) * 1000)::text AS ms, ${committed} AS committed
       FROM message WHERE id = ANY($1)`,
      [ids],
    );
    return new Map(
      rows.map((row) => [
        row.id,
        {
          dateSent: Number(row.ms),
          committed: row.committed === null ? null : Number(row.committed),
        },
      ]),
    );
  } finally {
    await client.end();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
