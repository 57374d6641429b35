// The load-balanced topology under churn: 2 API and 2 events replicas behind nginx; 20 clients
// long-poll through nginx while 1,000 numbered changes go through both API replicas; one events
// replica is killed (SIGKILL) and one API replica restarted (SIGTERM) mid-run. Every client
// must receive every change exactly once, in order, and every answer must be JSON.
import { Agent } from 'node:http';
import { getConfig } from '@parley/config';
import type { User } from '@parley/db';
import {
  findNginx,
  NGINX_HELP,
  rawHttp,
  requestJson,
  startStack,
  type Stack,
} from '@parley/devservices';
import { createRedis } from '@parley/events';
import { createFaultOrg } from './faults/load';

const CLIENTS = 20;
const CHANGES = 1000;
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

const nonJson: string[] = [];

/** One HTTP request through nginx; records any answer that is not JSON. */
async function call(
  stack: Stack,
  host: string,
  user: User,
  method: string,
  path: string,
  form?: Record<string, string>,
): Promise<Answer> {
  const answer = await requestJson(stack.url, { host, user, method, path, form, agent });
  if (!answer.body)
    nonJson.push(`${method} ${path} → ${answer.status}: ${answer.raw.slice(0, 200)}`);
  return { status: answer.status, body: answer.body ?? {}, headers: answer.headers };
}

let stack: Stack | undefined;

afterAll(async () => {
  await stack?.stop();
  agent.destroy();
});

describe('load-balanced topology', () => {
  it('delivers every change to every client exactly once, in order, through failures', async () => {
    if (!findNginx()) throw new Error(NGINX_HELP);
    // A Redis database of its own: these replicas must be the only fan-out on it.
    const redisUrl = new URL(getConfig().REDIS_URL);
    redisUrl.pathname = '/12';
    const redis = createRedis(redisUrl.toString());
    await redis.flushdb();
    redis.disconnect();

    const { host, owner, clients } = await createFaultOrg(CLIENTS);

    stack = await startStack({
      databaseUrl: getConfig().DATABASE_URL,
      redisUrl: redisUrl.toString(),
      apiReplicas: 2,
      eventsReplicas: 2,
      env: {
        EVENTS_LEASE_MS: '1500',
        EVENTS_HEARTBEAT_SECONDS: '5',
        EVENTS_HEARTBEAT_JITTER_SECONDS: '2',
      },
    });
    const live = stack;

    // Every client registers through nginx, then long-polls until it has seen every change.
    const received = new Map<number, number[]>();
    // What a failure needs to be understood: each change's event ids and the poll that brought
    // it, per client, and every PATCH that had to be retried.
    const arrivals = new Map<number, Map<number, string[]>>();
    const retried: string[] = [];
    const pollLogs = new Map<number, string[]>();
    let changesDone = false;
    // Everyone registers before the first change: a change that races a registration is folded
    // into that client's initial state instead of arriving as an event (as in Zulip).
    const registrations = await Promise.all(
      clients.map((client) =>
        call(live, host, client, 'POST', '/api/v1/register', { event_types: '["realm_user"]' }),
      ),
    );
    const pollers = clients.map(async (client, index) => {
      const registered = registrations[index]!;
      expect(registered.body.result).toBe('success');
      const queueId = registered.body.queue_id as string;
      let last = registered.body.last_event_id as number;
      const seqs: number[] = [];
      received.set(client.id, seqs);
      const seen = new Map<number, string[]>();
      arrivals.set(client.id, seen);
      const log: string[] = [];
      pollLogs.set(client.id, log);
      let polls = 0;
      const deadline = Date.now() + 240_000;
      while (seqs.length < CHANGES && Date.now() < deadline) {
        const answer = await call(
          live,
          host,
          client,
          'GET',
          `/api/v1/events?queue_id=${encodeURIComponent(queueId)}&last_event_id=${last}`,
        ).catch(() => null);
        if (!answer || answer.status !== 200) {
          log.push(`last=${last} → ${answer ? answer.status : 'no answer'}`);
          continue; // e.g. a 503 while no replica answers; poll again
        }
        polls++;
        log.push(
          `poll ${polls}: last=${last} → [${(answer.body.events as { id: number }[]).map((e) => e.id).join(',')}] via ${String(answer.headers['x-served-by'])}`,
        );
        for (const event of answer.body.events as {
          id: number;
          type: string;
          person?: { full_name?: string };
        }[]) {
          last = event.id;
          const match = /^Seq (\d+)$/.exec(event.person?.full_name ?? '');
          if (event.type === 'realm_user' && match) {
            const seq = Number(match[1]);
            seqs.push(seq);
            seen.set(seq, [...(seen.get(seq) ?? []), `event ${event.id} in poll ${polls}`]);
          }
        }
        if (changesDone && seqs.length >= CHANGES) break;
      }
    });

    // 1,000 numbered renames, one after another (so their order is defined), through nginx to
    // both API replicas; an events replica dies at 300, an API replica restarts at 600.
    let restart: Promise<void> = Promise.resolve();
    for (let seq = 0; seq < CHANGES; seq++) {
      if (seq === 300) live.events[0]!.process.kill('SIGKILL');
      if (seq === 600) {
        const api = live.api[0]!;
        restart = live.stopGracefully(api).then((code) => {
          expect(code).toBe(0);
          return live.restart(api);
        });
      }
      const target = clients[seq % CLIENTS]!;
      for (let attempt = 0; ; attempt++) {
        const answer = await call(live, host, owner, 'PATCH', `/api/v1/users/${target.id}`, {
          full_name: `Seq ${seq}`,
        });
        if (answer.status === 200) break;
        retried.push(`Seq ${seq} attempt ${attempt}: ${answer.status} ${String(answer.body.msg)}`);
        // Only nginx's own "no replica answered" may happen (never a half-applied change:
        // nginx does not retry a PATCH it already sent, and our retry is of one not applied).
        expect([answer.status, answer.body.code]).toEqual([503, 'SERVER_NOT_READY']);
        expect(attempt).toBeLessThan(50);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    changesDone = true;
    await restart;
    await Promise.all(pollers);

    expect(nonJson).toEqual([]);
    const expected = Array.from({ length: CHANGES }, (_, i) => i);
    const wrong = clients.flatMap((client) => {
      const seqs = received.get(client.id)!;
      if (seqs.join() === expected.join()) return [];
      const seen = arrivals.get(client.id)!;
      const log = pollLogs.get(client.id)!;
      const firstRepeat = log.findIndex((line) =>
        [...seen.values()].some(
          (how) => how.length > 1 && line.startsWith(how[1]!.split(' in ')[1]! + ':'),
        ),
      );
      return [
        {
          client: client.id,
          missing: expected.filter((seq) => !seen.has(seq)),
          repeated: [...seen].filter(([, how]) => how.length > 1),
          outOfOrder: seqs.filter((seq, i) => i > 0 && seq < seqs[i - 1]!),
          polls: firstRepeat < 0 ? [] : log.slice(Math.max(0, firstRepeat - 4), firstRepeat + 3),
        },
      ];
    });
    expect({ wrong, retried: wrong.length ? retried : [] }).toEqual({ wrong: [], retried: [] });
  }, 300_000);

  // Requests refused before any route sees them: by nginx (infra/nginx.conf) and, past
  // nginx, by a replica's HTTP parser (packages/http/src/client-errors.ts). On the stack the
  // test above leaves: its first events replica was killed, the others answer.
  it('answers malformed and oversized requests with the Zulip envelope', async () => {
    if (!stack) throw new Error('the stack of the test above did not start');
    const error = (msg: string) => ({ result: 'error', msg, code: 'BAD_REQUEST' });
    const longLine = `GET /api/v1/users?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const longHeader = `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    const malformed = 'GET /api/v1/users HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n';
    const nginx = new URL(stack.url);
    const cases: [port: number, request: string, status: number, msg: string][] = [
      [Number(nginx.port), longLine, 414, 'Request URI too long'],
      [Number(nginx.port), longHeader, 431, 'Request header fields too large'],
      [Number(nginx.port), malformed, 400, 'Malformed HTTP request'],
      [stack.api[0]!.port, longLine, 431, 'Request header fields too large'],
      [stack.events[1]!.port, longHeader, 431, 'Request header fields too large'],
      [stack.api[0]!.port, malformed, 400, 'Malformed HTTP request'],
      // Written in full before the answer is read: the replica reads and drops the rest of
      // the request rather than reset the connection under the client.
      [
        stack.api[0]!.port,
        `GET /?q=${'a'.repeat(1_000_000)} HTTP/1.1\r\n\r\n`,
        431,
        'Request header fields too large',
      ],
    ];
    for (const [port, request, status, msg] of cases) {
      const answer = await rawHttp('127.0.0.1', port, request);
      expect({ status: answer.status, body: JSON.parse(answer.body) as unknown }).toEqual({
        status,
        body: error(msg),
      });
      expect(answer.head).toMatch(/\r\nContent-Type: application\/json/i);
    }
  });
});
