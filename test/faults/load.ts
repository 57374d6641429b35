// The load the fault tests run faults under, and what they check afterwards: 20 clients
// long-poll their event queues while a writer sends numbered messages to a channel they are all
// in. Every answer is checked as it comes (JSON, no 500, no hang); at the end every queue must
// have received every committed message exactly once and in order — from its registration
// onwards, or until Redis lost it (then the client registers again, as Zulip clients do).
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { getConfig } from '@parley/config';
import { runAction, type User } from '@parley/db';
import {
  findNginx,
  NGINX_HELP,
  requestJson,
  startStack,
  type JsonAnswer,
  type Stack,
  type StackOptions,
} from '@parley/devservices';
import { doCreateOrganization } from '../../apps/api/src/actions/realms';
import { checkCreateUser, doCreateUser } from '../../apps/api/src/actions/users';

/** A request may take this much longer than its own reason to wait (a long-poll's heartbeat)
 * before it counts as a hang. */
export const HANG_MS = 2000;

/** The replicas' heartbeat for parked polls (no jitter), so a hang shows within seconds. */
export const HEARTBEAT_MS = 1000;

/** Replicas behind nginx with short leases and heartbeats, as every fault test runs them. */
export function startFaultStack(options: Omit<StackOptions, 'env'>): Promise<Stack> {
  if (!findNginx()) throw new Error(NGINX_HELP);
  return startStack({
    ...options,
    env: {
      EVENTS_LEASE_MS: '1000',
      EVENTS_HEARTBEAT_SECONDS: String(HEARTBEAT_MS / 1000),
      EVENTS_HEARTBEAT_JITTER_SECONDS: '0',
    },
  });
}

export interface FaultOrg {
  host: string;
  owner: User;
  clients: User[];
}

/** An organization with an owner and `clients` members, made through the actions (in the
 * database the current configuration names). The topology test uses it too. */
export async function createFaultOrg(clients: number): Promise<FaultOrg> {
  const subdomain = `fault${randomBytes(4).toString('hex')}`;
  const { realm, owner } = await runAction((ctx) =>
    doCreateOrganization(
      ctx,
      {
        name: 'Faults',
        subdomain,
        ownerEmail: `owner@${subdomain}.test`,
        ownerFullName: 'Owner',
        ownerPassword: null,
      },
      null,
    ),
  );
  const members: User[] = [];
  for (let i = 0; i < clients; i++) {
    members.push(
      await runAction(async (ctx) =>
        doCreateUser(
          ctx,
          realm,
          await checkCreateUser(ctx.tx, realm, {
            email: `c${i}@${subdomain}.test`,
            fullName: `Client ${i}`,
            password: null,
            role: 400,
          }),
          null,
        ),
      ),
    );
  }
  return { host: `${subdomain}.${getConfig().EXTERNAL_HOST}`, owner, clients: members };
}

interface QueueRecord {
  user: User;
  queueId: string;
  /** Messages up to this id were in the registration's state. */
  maxMessageId: number;
  received: number[];
  /** Redis lost it: it answered BAD_EVENT_QUEUE_ID. */
  lost: boolean;
}

export interface LoadOptions {
  /** Where requests go (nginx in front of the replicas). */
  url: string;
  org: FaultOrg;
}

export class Load {
  /** Every answer that broke a rule: a 500, a non-JSON body, a hang, a 503 without
   * Retry-After. */
  readonly violations: string[] = [];
  readonly queues: QueueRecord[] = [];
  /** Ids of the messages whose send was answered with success. */
  readonly acknowledged: number[] = [];
  /** When each acknowledged message was answered. */
  private readonly acknowledgedAt = new Map<number, number>();
  /** When the test injected its fault (markFault). */
  private faultAt = Infinity;
  /** Answers by status, for the report. */
  readonly statuses = new Map<string, number>();
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  private channel = '';
  private writing = true;
  private polling = true;
  private tasks: Promise<void>[] = [];

  constructor(private readonly options: LoadOptions) {}

  /** Creates the channel, registers every client, then starts the pollers and the writer. */
  async start(): Promise<void> {
    const { org } = this.options;
    this.channel = `faults-${randomBytes(3).toString('hex')}`;
    const created = await this.call(org.owner, 'POST', '/api/v1/users/me/subscriptions', 10_000, {
      subscriptions: JSON.stringify([{ name: this.channel }]),
      principals: JSON.stringify(org.clients.map((client) => client.id)),
    });
    if (created.status !== 200) throw new Error(`could not create the channel: ${created.raw}`);
    const queues = await Promise.all(org.clients.map((client) => this.register(client)));
    this.tasks = queues.map((queue) => this.poll(queue));
    this.tasks.push(this.write());
  }

  /** The timeline every outage test follows: 3 s of load, the dependency down for 2 s, 5 s
   * of load after it comes back; then stops. Returns the messages acknowledged before the
   * outage and the committed ones (see stop). */
  async through(outage: {
    down: () => Promise<void>;
    up: () => Promise<void>;
  }): Promise<{ before: number; truth: number[] }> {
    await this.start();
    await sleep(3000);
    const before = this.acknowledged.length;
    this.markFault();
    await outage.down();
    await sleep(2000);
    await outage.up();
    await sleep(5000);
    return { before, truth: await this.stop() };
  }

  /** Stops the writer, waits until every live queue has everything committed (or `catchUpMs`
   * passed), then stops the pollers. */
  async stop(catchUpMs = 20_000): Promise<number[]> {
    this.writing = false;
    await this.tasks[this.tasks.length - 1];
    const truth = await this.committed();
    const newest = truth[truth.length - 1] ?? -1;
    const deadline = Date.now() + catchUpMs;
    while (Date.now() < deadline) {
      const live = this.liveQueues();
      if (live.every((queue) => queue.maxMessageId >= newest || queue.received.at(-1) === newest))
        break;
      await sleep(100);
    }
    this.polling = false;
    await Promise.all(this.tasks);
    this.agent.destroy();
    return truth;
  }

  /** Tells the checks when the fault began: a queue Redis lost must still have received every
   * message acknowledged a second before that. */
  markFault(): void {
    this.faultAt = Date.now();
  }

  /** How many answers `what` ("GET /api/v1/events") got with `status`. */
  answers(what: string, status: number): number {
    return this.statuses.get(`${what} ${status}`) ?? 0;
  }

  /** The queue each client uses now. */
  liveQueues(): QueueRecord[] {
    const latest = new Map<number, QueueRecord>();
    for (const queue of this.queues) latest.set(queue.user.id, queue);
    return [...latest.values()].filter((queue) => !queue.lost);
  }

  /** What went wrong against the committed messages `truth` (ascending ids): one line per
   * broken rule, so a failing test says everything at once. */
  check(truth: number[]): string[] {
    const problems = [...this.violations];
    const committed = new Set(truth);
    for (const id of this.acknowledged)
      if (!committed.has(id)) problems.push(`message ${id} was acknowledged but is not stored`);
    for (const queue of this.queues) {
      const name = `queue ${queue.queueId} of user ${queue.user.id}`;
      const { received } = queue;
      for (let i = 1; i < received.length; i++)
        if (received[i]! <= received[i - 1]!) {
          problems.push(`${name}: ${received[i]} arrived after ${received[i - 1]}`);
          break;
        }
      const strays = received.filter((id) => !committed.has(id));
      if (strays.length > 0) problems.push(`${name}: got uncommitted messages ${strays}`);
      const got = new Set(received);
      const due = queue.lost
        ? (id: number) => (this.acknowledgedAt.get(id) ?? Infinity) < this.faultAt - 1000
        : () => true;
      const missing = truth.filter((id) => id > queue.maxMessageId && due(id) && !got.has(id));
      if (missing.length > 0)
        problems.push(`${name}: missing ${missing.length} messages, first ${missing.slice(0, 5)}`);
    }
    return problems;
  }

  /** The ids of the load's messages (ascending), as the owner reads them. */
  async committed(): Promise<number[]> {
    // The load's own topic: the channel also holds the Notification Bot's first message.
    const narrow = JSON.stringify([
      { operator: 'channel', operand: this.channel },
      { operator: 'topic', operand: 'faults' },
    ]);
    const answer = await this.call(
      this.options.org.owner,
      'GET',
      `/api/v1/messages?anchor=newest&num_before=5000&num_after=0&narrow=${encodeURIComponent(narrow)}`,
      10_000,
    );
    if (answer.status !== 200 || !answer.body)
      throw new Error(`could not read the messages: ${answer.raw}`);
    return (answer.body.messages as { id: number }[]).map((message) => message.id);
  }

  private async register(user: User): Promise<QueueRecord> {
    for (let attempt = 0; ; attempt++) {
      if (attempt === 100) {
        this.violations.push(`user ${user.id} could not register within 100 attempts`);
        throw new Error(this.violations.join('\n'));
      }
      const answer = await this.call(user, 'POST', '/api/v1/register', 10_000, {
        event_types: '["message"]',
      });
      if (answer.status === 200 && answer.body) {
        const queue: QueueRecord = {
          user,
          queueId: answer.body.queue_id as string,
          maxMessageId: answer.body.max_message_id as number,
          received: [],
          lost: false,
        };
        this.queues.push(queue);
        return queue;
      }
      await sleep(200);
    }
  }

  private async poll(first: QueueRecord): Promise<void> {
    let queue = first;
    let last = -1;
    while (this.polling) {
      const answer = await this.call(
        queue.user,
        'GET',
        `/api/v1/events?queue_id=${encodeURIComponent(queue.queueId)}&last_event_id=${last}`,
        HEARTBEAT_MS + HANG_MS,
      );
      if (answer.status === 200 && answer.body) {
        for (const event of answer.body.events as {
          id: number;
          type: string;
          message?: { id: number };
        }[]) {
          last = event.id;
          if (event.type === 'message') queue.received.push(event.message!.id);
        }
      } else if (answer.body?.code === 'BAD_EVENT_QUEUE_ID') {
        queue.lost = true;
        if (!this.polling) return;
        queue = await this.register(queue.user);
        last = -1;
      } else {
        await sleep(200);
      }
    }
  }

  private async write(): Promise<void> {
    for (let n = 0; this.writing; n++) {
      const answer = await this.call(this.options.org.owner, 'POST', '/api/v1/messages', HANG_MS, {
        type: 'stream',
        to: this.channel,
        topic: 'faults',
        content: `message ${n}`,
      });
      if (answer.status === 200 && answer.body) {
        this.acknowledged.push(answer.body.id as number);
        this.acknowledgedAt.set(answer.body.id as number, Date.now());
      } else await sleep(100);
      await sleep(30);
    }
  }

  /** One request, checked against the rules; a request that got no answer in time is a hang
   * (recorded, and returned as status 0). */
  private async call(
    user: User,
    method: string,
    path: string,
    timeoutMs: number,
    form?: Record<string, string>,
  ): Promise<JsonAnswer> {
    const what = `${method} ${path.split('?')[0]}`;
    let answer: JsonAnswer;
    const began = Date.now();
    try {
      answer = await requestJson(this.options.url, {
        host: this.options.org.host,
        user,
        method,
        path,
        form,
        agent: this.agent,
        timeoutMs,
      });
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      // When, against the fault: a hang's cause depends on what the dependency was doing.
      const at = Number.isFinite(this.faultAt)
        ? ` (sent ${began - this.faultAt} ms after the fault, abandoned ${Date.now() - this.faultAt} ms after)`
        : '';
      this.violations.push(`${what}: ${message}${at}`);
      return { status: 0, body: null, raw: '', headers: {} };
    }
    const key = `${what} ${answer.status}`;
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
    if (!answer.body) this.violations.push(`${what} → ${answer.status}, not JSON: ${answer.raw}`);
    else if (answer.status >= 500 && answer.status !== 503)
      this.violations.push(`${what} → ${answer.status}: ${answer.raw}`);
    else if (answer.status === 503 && !answer.headers['retry-after'])
      this.violations.push(`${what} → 503 without Retry-After`);
    // The only client error a fault may cause: a queue Redis lost.
    else if (
      answer.status >= 400 &&
      answer.status < 500 &&
      answer.body.code !== 'BAD_EVENT_QUEUE_ID'
    )
      this.violations.push(`${what} → ${answer.status}: ${answer.raw}`);
    return answer;
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
