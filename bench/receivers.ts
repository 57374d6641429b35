// The receiving clients of bench:messages, in a worker thread of their own: each long-polls its
// queue and records when each message event arrived. In the sender's thread, every answer to
// the sender waited behind the poll answers read before it (about 0.1 ms of this client's work
// each, 20 per message): the send's latency measured the benchmark's own event loop as much as
// the server. Real senders and receivers are separate clients.
import { Agent } from 'node:http';
import { join } from 'node:path';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { repoRoot, requestJson, type Credentials } from '@parley/devservices';

/** What the receivers share with the sender's thread, as counters in shared memory. */
const POLLS = 0;
const WARMED_UP = 1;
const STOPPING = 2;

/** When a message event arrived: message id, monotonic time (ns), wall-clock time (ms,
 * fractional, to compare with the message's date_sent). */
export type Reception = [number, bigint, number];

interface Setup {
  users: Credentials[];
  host: string;
  apiBase: string;
  eventsBase: string;
  /** Message events each receiver waits for before it stops (warm-up included). */
  expected: number;
  warmup: number;
  counters: Int32Array;
}

/** Starts the receivers; resolves once every one has registered its queue. */
export async function startReceivers(setup: Omit<Setup, 'counters'>): Promise<{
  /** Polls sent since the start or the last `resetPolls`. */
  polls(): number;
  resetPolls(): void;
  /** Receivers that have their warm-up messages. */
  warmedUp(): number;
  /** Resolves once every receiver has every message it waits for. */
  done: Promise<void>;
  /** Stops polling and returns every reception so far. */
  stop(): Promise<Reception[]>;
}> {
  const counters = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
  const file = join(repoRoot(), 'bench', 'receivers.ts');
  // The worker compiles TypeScript as the benchmark does (tsx), whichever way it was started.
  const worker = new Worker(
    `require('tsx/cjs/api').register(); require(${JSON.stringify(file)});`,
    {
      eval: true,
      workerData: { ...setup, counters } satisfies Setup,
    },
  );
  const failed = new Promise<never>((_, reject) => worker.once('error', reject));
  const message = (type: string) =>
    Promise.race([
      failed,
      new Promise<{ type: string; receptions?: Reception[] }>((resolve) => {
        const listener = (received: { type: string; receptions?: Reception[] }) => {
          if (received.type !== type) return;
          worker.off('message', listener);
          resolve(received);
        };
        worker.on('message', listener);
      }),
    ]);
  await message('registered');
  const done = message('done').then(() => undefined);
  done.catch(() => undefined);
  return {
    polls: () => Atomics.load(counters, POLLS),
    resetPolls: () => Atomics.store(counters, POLLS, 0),
    warmedUp: () => Atomics.load(counters, WARMED_UP),
    done,
    async stop() {
      Atomics.store(counters, STOPPING, 1);
      const answer = message('receptions');
      worker.postMessage('collect');
      const { receptions } = await answer;
      await worker.terminate();
      return receptions!;
    },
  };
}

async function receive(setup: Setup, port: NonNullable<typeof parentPort>): Promise<void> {
  const { users, host, apiBase, eventsBase, expected, warmup, counters } = setup;
  const agent = new Agent({ keepAlive: true, maxSockets: users.length + 10 });
  const receptions: Reception[] = [];
  port.on('message', () => port.postMessage({ type: 'receptions', receptions }));
  const call = async (base: string, user: Credentials, method: string, path: string) => {
    const answer = await requestJson(base, {
      host,
      user,
      method,
      path,
      agent,
      form: method === 'POST' ? { event_types: '["message"]' } : undefined,
    });
    if (!answer.body)
      throw new Error(`${method} ${path}: ${answer.status} ${answer.raw.slice(0, 200)}`);
    return answer.body;
  };
  const queues = await Promise.all(
    users.map(async (user) => {
      const registered = await call(apiBase, user, 'POST', '/api/v1/register');
      return {
        user,
        queueId: encodeURIComponent(registered.queue_id as string),
        last: registered.last_event_id as number,
      };
    }),
  );
  port.postMessage({ type: 'registered' });
  if (warmup === 0) Atomics.store(counters, WARMED_UP, users.length);
  await Promise.all(
    queues.map(async (queue) => {
      let seen = 0;
      while (Atomics.load(counters, STOPPING) === 0 && seen < expected) {
        Atomics.add(counters, POLLS, 1);
        const answer = await call(
          eventsBase,
          queue.user,
          'GET',
          `/api/v1/events?queue_id=${queue.queueId}&last_event_id=${queue.last}`,
        );
        const received = process.hrtime.bigint();
        const receivedWall = performance.timeOrigin + performance.now();
        for (const event of answer.events as {
          id: number;
          type: string;
          message?: { id: number };
        }[]) {
          queue.last = event.id;
          if (event.type !== 'message') continue;
          seen += 1;
          if (seen === warmup) Atomics.add(counters, WARMED_UP, 1);
          receptions.push([event.message!.id, received, receivedWall]);
        }
        // The next poll goes out once every answer that arrived with this one has its time:
        // sent at once, each poll's request (~0.1 ms of this thread) delayed the reading of
        // the answers behind it, which 20 separate clients would not have waited for.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }),
  );
  port.postMessage({ type: 'done' });
}

if (parentPort && (workerData as Partial<Setup> | null)?.counters) {
  const port = parentPort;
  receive(workerData as Setup, port).catch((error: unknown) => {
    // Rethrown outside the promise: the worker's 'error' event reaches the sender's thread.
    setImmediate(() => {
      throw error;
    });
  });
}
