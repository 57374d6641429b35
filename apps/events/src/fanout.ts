// Fan-out: events replicas compete for shard leases; the holder of a shard reads its
// notification log in order from the checkpoint, decides per queue what to deliver, and in one
// Lua script — fenced by the lease token — appends the events with each queue's next id and
// advances the checkpoint. A replica that dies loses its leases when they lapse; another one
// resumes from the checkpoint, so nothing is lost or delivered twice.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  keys,
  LuaScript,
  QueueStore,
  type GoneQueue,
  RELEASE_IF_HELD,
  RENEW_IF_HELD,
  replicasKey,
  type Notification,
  type QueueOptions,
} from '@parley/events';
import type { Logger } from '@parley/logger';
import { isDependencyDown } from '@parley/http';
import { histogram } from '@parley/metrics';
import { eventForQueue } from './deliver';
import { announceRelease } from './release';

/** From a notification's arrival in its shard's log (the entry id's time) to its events being
 * in the queues: what a parked client waits beyond the send itself. */
const fanoutLag = histogram(
  'parley_events_fanout_lag_seconds',
  'Time from a notification entering its shard log to its events being queued, by shard',
  ['shard'],
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
);

const ACQUIRE = new LuaScript(
  'acquireLease',
  `return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`,
);
// KEYS: lease, checkpoint, then (meta, events) per target queue.
// ARGV: token, log entry id, wake channel, the entry before it in the log, the number d of
// distinct event forms, those d event JSONs, then per target queue the index (1-based) of its
// form and its id. Queues with the same options take the same form: 10,000 queues of one
// message need a few forms, not 10,000.
// One wake-up carries every event appended (`E:<queue> <event id> <form> …` then each form on
// a line of its own, without its opening brace; JSON text never holds a raw newline): a message
// to 10,000 queues is one PUBLISH for Redis to send and for each replica to read, not 10,000,
// and a parked poll answers from it without reading its queue (Poller).
// The checkpoint must still be the entry before: a run of entries is sent in one pipeline, and
// if one of them fails, the ones after it must not be appended past it (-2).
const APPEND = new LuaScript(
  'appendEvents',
  `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if (redis.call('GET', KEYS[2]) or '0-0') ~= ARGV[4] then return -2 end
local n = (#KEYS - 2) / 2
local d = tonumber(ARGV[5])
local forms = {}
for f = 1, d do forms[f] = string.sub(ARGV[5 + f], 2) end
local appended = {}
for i = 1, n do
  local meta = KEYS[1 + 2 * i]
  if redis.call('EXISTS', meta) == 1 then
    local id = redis.call('HINCRBY', meta, 'next_id', 1) - 1
    local f = ARGV[4 + d + 2 * i]
    redis.call('RPUSH', KEYS[2 + 2 * i], '{"id":' .. id .. ',' .. forms[tonumber(f)])
    appended[#appended + 1] = ARGV[5 + d + 2 * i] .. ' ' .. id .. ' ' .. f
  end
end
if #appended > 0 then
  redis.call('PUBLISH', ARGV[3], 'E:' .. table.concat(appended, ' ') .. '\\n' .. table.concat(forms, '\\n'))
end
redis.call('SET', KEYS[2], ARGV[2])
return n`,
);

// Moves a poison entry to the dead letters and past the checkpoint, if the lease still holds;
// returns how many dead letters the shard now keeps.
// KEYS: lease, checkpoint, dead letters. ARGV: token, entry id, notification, error.
const DEAD_LETTER = new LuaScript(
  'deadLetter',
  `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'entry', ARGV[2], 'n', ARGV[3], 'error', ARGV[4])
redis.call('SET', KEYS[2], ARGV[2])
return redis.call('XLEN', KEYS[3])`,
);

// The options and starting point of each queue (KEYS: their meta hashes): the distinct options
// texts, then per queue the (1-based) index of its text among them and its starting point (0
// and nil for a queue gone). Queues of the same kind of client store the same text: 10,000 new
// queues of one fan-out are a few texts to send and decode, not 10,000 (`pnpm bench:fanout`'s
// replica went through the replies in 22 ms when each queue had its text and in 11 ms since,
// one instrumented run each).
const QUEUE_INFOS = new LuaScript(
  'queueInfos',
  `
local texts, indexes, infos = {}, {}, {}
for i, key in ipairs(KEYS) do
  local fields = redis.call('HMGET', key, 'options', 'since')
  local text = fields[1]
  if text then
    local at = indexes[text]
    if not at then
      texts[#texts + 1] = text
      at = #texts
      indexes[text] = at
    end
    infos[2 * i - 1] = at
    infos[2 * i] = fields[2]
  else
    infos[2 * i - 1] = 0
    infos[2 * i] = false
  end
end
return {texts, infos}`,
);

const QUEUE_INFOS_BATCH = 500;

/** How long a shard's read waits for new log entries. Every shard worker of a replica (all 16
 * of one replica alone) reads on, so each return is a round trip for nothing while idle: with
 * 1 s they were 16 a second, most of an idle events replica's CPU. Nothing waits for an idle
 * read to return: stopping a worker closes its connection, and a closed connection (Redis
 * restarting) ends the read at once; ioredis sends it again once reconnected. */
export const SHARD_READ_BLOCK_MS = 10_000;

/** ioredis's bound on a shard's blocking read that waits in its offline queue (Redis away);
 * a read already sent gives up after its own BLOCK (SHARD_READ_BLOCK_MS) plus ioredis's
 * grace. */
export const SHARD_READ_TIMEOUT_MS = 2000;

/** Attempts at one log entry before it is set aside (failures of Redis itself never count). */
export const MAX_DELIVERY_ATTEMPTS = 3;

export interface FanoutOptions {
  /** Command connection (shared). */
  redis: Redis;
  /** Makes a dedicated connection for a shard's blocking reads. */
  connect: () => Redis;
  shards: number;
  leaseMs: number;
  /** How long fanned-out log entries are kept before trimming (debugging, replay). */
  retainMs: number;
  gcIntervalMs: number;
  log: Logger;
  /** Called with each queue the garbage collector removed, as it goes. */
  onExpired?: (gone: GoneQueue) => void;
}

export class Fanout {
  readonly replicaId = randomUUID();
  private readonly store: QueueStore;
  private readonly held = new Map<number, ShardWorker>();
  private timer: NodeJS.Timeout | undefined;
  private lastGc = 0;
  private stopped = false;
  /** The tick running, if any: stopping waits for it (its garbage collection reports queues). */
  private ticking: Promise<void> | null = null;

  constructor(private readonly options: FanoutOptions) {
    this.store = new QueueStore(options.redis, options.shards);
  }

  start(): void {
    void this.tick();
    this.timer = setInterval(
      () => void this.tick(),
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );
  }

  /** Shards this replica currently holds (tests and /ready use it). */
  heldShards(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /** Whether this replica does its share: it holds a shard, or other replicas hold them all
   * (with more replicas than shards some hold none). A replica holding nothing while a shard
   * has no owner is not ready: nobody delivers that shard's events. */
  async isServing(): Promise<boolean> {
    if (this.stopped) return false;
    if ([...this.held.values()].some((worker) => !worker.failed)) return true;
    const { redis, shards } = this.options;
    const leases = await redis.mget(Array.from({ length: shards }, (_, s) => keys.lease(s)));
    return leases.every((lease) => lease !== null);
  }

  /** Stops reading and releases every lease so another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    const workers = [...this.held.values()];
    this.held.clear();
    await Promise.all(workers.map((worker) => worker.stop()));
    await Promise.all(workers.map((worker) => this.releaseLease(worker)));
    await this.options.redis.zrem(replicasKey, this.replicaId).catch(() => 0);
  }

  /** One tick at a time: a slow Redis must not stack ticks that renew, drop and acquire the
   * same shards concurrently. */
  private tick(): Promise<void> {
    if (this.stopped || this.ticking) return this.ticking ?? Promise.resolve();
    this.ticking = this.balance().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  private async balance(): Promise<void> {
    const { redis, shards, leaseMs } = this.options;
    try {
      const now = Date.now();
      // Share the shards evenly among live replicas: take free ones up to a fair share, hand
      // back the surplus when more replicas appear.
      // Sent together: one connection runs them in this order.
      const [, , live] = await Promise.all([
        redis.zadd(replicasKey, now + leaseMs, this.replicaId),
        redis.zremrangebyscore(replicasKey, '-inf', now),
        redis.zcard(replicasKey),
      ]);
      const replicas = Math.max(1, live);
      const fairShare = Math.ceil(shards / replicas);

      // Renew every lease first, then stop the workers that lost theirs (or failed), all at
      // once: a slow stop must not delay the renewal of the leases after it. The renewals go
      // together (one round trip on the auto-pipelined connection, not one per shard).
      const workers = [...this.held.values()];
      const renewed = await Promise.all(
        workers.map((worker) =>
          RENEW_IF_HELD.run(redis, 1, keys.lease(worker.shard), worker.token, leaseMs),
        ),
      );
      const lost = workers.filter((worker, index) => renewed[index] !== 1 || worker.failed);
      await Promise.all(lost.map((worker) => this.drop(worker, false)));
      while (this.held.size > fairShare) {
        const surplus = [...this.held.values()].pop()!;
        await this.drop(surplus, true);
      }
      for (let shard = 0; shard < shards && this.held.size < fairShare; shard++) {
        if (this.held.has(shard) || this.stopped) continue;
        const token = `${this.replicaId}:${randomUUID()}`;
        const acquired = await ACQUIRE.run(redis, 1, keys.lease(shard), token, leaseMs);
        if (acquired !== 'OK') continue;
        const worker = new ShardWorker(shard, token, this.options);
        this.held.set(shard, worker);
        this.options.log.info('shard acquired', { shard, replica: this.replicaId });
        worker.start();
      }
      if (now - this.lastGc >= this.options.gcIntervalMs) {
        this.lastGc = now;
        for (const shard of this.held.keys()) {
          // Each queue removed is reported at once, so a failure later in the batch (logged
          // with the tick) loses no report; its parked polls are woken.
          const wakeUps: Promise<unknown>[] = [];
          let woken: PromiseSettledResult<unknown>[] = [];
          try {
            await this.store.expire(shard, now, (gone) => {
              this.options.onExpired?.(gone);
              wakeUps.push(redis.publish(keys.wake(shard), `d:${gone.queueId}`));
            });
          } finally {
            woken = await Promise.allSettled(wakeUps);
          }
          const failed = woken.find((result) => result.status === 'rejected');
          if (failed) throw failed.reason;
        }
      }
    } catch (error) {
      this.options.log.warn('fan-out tick failed', { error });
    }
  }

  private async drop(worker: ShardWorker, release: boolean): Promise<void> {
    this.held.delete(worker.shard);
    await worker.stop();
    if (release) await this.releaseLease(worker);
    this.options.log.info('shard released', { shard: worker.shard, replica: this.replicaId });
  }

  /** Frees a worker's lease for another replica now, if it still holds it (else it lapses). */
  private releaseLease(worker: ShardWorker): Promise<unknown> {
    return RELEASE_IF_HELD.run(this.options.redis, 1, keys.lease(worker.shard), worker.token).catch(
      () => 0,
    );
  }
}

/** Reads one shard's log and fans it out while the lease holds. */
class ShardWorker {
  failed = false;
  private running = false;
  private done: Promise<void> = Promise.resolve();
  private readonly connection: Redis;
  private readonly optionsCache = new Map<string, QueueInfo | null>();
  /** Options parsed, by their stored text, with that text: queues of the same kind of client
   * store the same text, so the cached queues share one parsed object and one string (up to
   * 50,000 of each otherwise), and 10,000 new queues of one fan-out parse a few texts. The
   * shared string also keeps its hash, for `targets`' lookups by it. */
  private readonly parsedOptions = new Map<string, Pick<QueueInfo, 'options' | 'raw'>>();

  constructor(
    readonly shard: number,
    readonly token: string,
    private readonly options: FanoutOptions,
  ) {
    this.connection = options.connect();
  }

  start(): void {
    this.running = true;
    this.done = this.run().catch((error: unknown) => {
      this.failed = true;
      // Redis going away (or coming back without its latest writes) is an outage the balancer
      // recovers from, not a bug.
      const level = stopsTheShard(error) ? 'warn' : 'error';
      this.options.log[level]('shard worker failed', { shard: this.shard, error });
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    // Interrupts a blocking XREAD at once.
    this.connection.disconnect();
    // Whatever the worker is waiting on, the tick that stops it must go on (within the tick
    // period, so the other leases are renewed in time): a worker that has not finished by then
    // is left to finish or fail on its own; fenced by its lease token, it can no longer write.
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      this.done.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), Math.floor(this.options.leaseMs / 3));
      }),
    ]);
    clearTimeout(timer);
    if (!finished)
      this.options.log.warn('shard worker did not stop in time; left to finish alone', {
        shard: this.shard,
      });
  }

  private async run(): Promise<void> {
    const { redis } = this.options;
    if (
      !(await announceRelease(
        new QueueStore(redis, this.options.shards),
        this.shard,
        this.token,
        this.options.log,
      ))
    ) {
      // Fenced: another replica holds the lease now, and announces in its turn.
      this.failed = true;
      this.running = false;
      return;
    }
    let last = (await redis.get(keys.checkpoint(this.shard))) ?? '0-0';
    // From the oldest announcement kept: the queues registered shortly before this worker took
    // the shard are known before their first event too.
    let lastCreated = '0-0';
    let lastTrim = 0;
    const log = keys.shardLog(this.shard);
    const created = keys.created(this.shard);
    while (this.running) {
      let batch: [string, LogEntry[]][] | null;
      try {
        batch = (await this.connection.xread(
          'COUNT',
          200,
          'BLOCK',
          SHARD_READ_BLOCK_MS,
          'STREAMS',
          log,
          created,
          last,
          lastCreated,
        )) as typeof batch;
      } catch (error) {
        if (!this.running) return;
        throw error;
      }
      // Queues announced first: an entry read with them may be for them.
      for (const [stream, entries] of batch ?? []) {
        if (stream !== created) continue;
        this.learnCreated(entries);
        lastCreated = entries[entries.length - 1]?.[0] ?? lastCreated;
      }
      for (const [stream, entries] of batch ?? []) {
        if (stream !== log) continue;
        const delivered = await this.deliverAll(entries, last);
        if (delivered === null) {
          // Fenced: another replica holds the lease now. Stop without touching anything.
          this.failed = true;
          this.running = false;
          return;
        }
        last = delivered;
      }
      const now = Date.now();
      if (now - lastTrim > 1000 && last !== '0-0') {
        lastTrim = now;
        const retained = `${Math.max(0, now - this.options.retainMs)}-0`;
        await redis.xtrim(
          keys.shardLog(this.shard),
          'MINID',
          compareIds(retained, last) < 0 ? retained : last,
        );
      }
    }
  }

  /** Fans out entries in log order: runs of them at a time (see deliverRun), and an entry that
   * fails at the head of a run alone, retried and if need be set aside. Returns the id of the
   * last entry delivered (`previous` if none), or null when the lease was lost. */
  private async deliverAll(entries: LogEntry[], previous: string): Promise<string | null> {
    let last = previous;
    let next = 0;
    while (next < entries.length && this.running) {
      let delivered: number;
      let failure: { error: unknown } | null = null;
      try {
        delivered = await this.deliverRun(entries.slice(next), last);
      } catch (error) {
        if (!this.running || stopsTheShard(error)) throw error;
        delivered = 0;
        failure = { error };
      }
      if (delivered === -1) return null;
      next += delivered;
      if (delivered > 0) last = entries[next - 1]![0];
      if (failure !== null) {
        if (!(await this.deliverOrSetAside(entries[next]!, last, failure.error))) return null;
        last = entries[next]![0];
        next += 1;
      }
    }
    return last;
  }

  /** Retries an entry that failed (`failure`, its first attempt) a few times; an entry that
   * keeps failing for a reason of its own (not an unreachable Redis) goes to the dead letters,
   * so one bad notification cannot stop the shard for good. False when the lease was lost. */
  private async deliverOrSetAside(
    entry: LogEntry,
    previous: string,
    failure: unknown,
  ): Promise<boolean> {
    const [entryId, fields] = entry;
    let error = failure;
    for (let attempt = 1; attempt < MAX_DELIVERY_ATTEMPTS; attempt++) {
      this.options.log.warn('fan-out of a log entry failed, retrying', {
        shard: this.shard,
        entry: entryId,
        attempt,
        error,
      });
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      try {
        return (await this.deliverRun([entry], previous)) === 1;
      } catch (retryError) {
        if (!this.running || stopsTheShard(retryError)) throw retryError;
        error = retryError;
      }
    }
    const kept = (await DEAD_LETTER.run(
      this.options.redis,
      3,
      keys.lease(this.shard),
      keys.checkpoint(this.shard),
      keys.deadLetters(this.shard),
      this.token,
      entryId,
      fields[1] ?? '',
      error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    )) as number;
    if (kept === -1) return false;
    this.options.log.error('log entry set aside after repeated fan-out failures', {
      shard: this.shard,
      entry: entryId,
      dead_letters: keys.deadLetters(this.shard),
      dead_letter_count: kept,
      error,
    });
    return true;
  }

  /** Fans out a run of log entries in one round trip whatever their number: every entry's
   * APPEND in one pipeline (a busy shard, whose entries queue up behind each other's round
   * trips, catches up at once). One more when entries do not carry their recipients' queues
   * (read for all of them in one pipeline), and one when queues not seen before need their
   * options read (queueInfos). Returns how many entries from the first were appended, or -1
   * when the lease was lost. An entry that cannot be prepared or appended ends the run before
   * it; if it is the first, its error is thrown. */
  private async deliverRun(entries: LogEntry[], previous: string): Promise<number> {
    const { redis } = this.options;
    const notifications: {
      entryId: string;
      notification: Notification;
      carried: string[] | null;
    }[] = [];
    for (const [entryId, fields] of entries) {
      try {
        const notification = parseNotification(fields[1]);
        notifications.push({ entryId, notification, carried: carriedQueues(fields) });
      } catch (error) {
        if (notifications.length === 0) throw error;
        break;
      }
    }
    // An entry normally carries its recipients' queues (publish.ts). For one that does not,
    // one command per entry for all its recipients' queues, however many (a queue has one
    // owner, so the union loses nothing; a user named twice is served once).
    const queueIds: string[][] = notifications.map(({ carried }) => carried ?? []);
    const addressed = notifications.flatMap(({ notification, carried }, index) =>
      notification.users.length > 0 && carried === null ? [index] : [],
    );
    if (addressed.length > 0) {
      const unions = redis.pipeline();
      for (const index of addressed)
        unions.sunion(
          notifications[index]!.notification.users.map((userId) =>
            keys.userQueues(this.shard, userId),
          ),
        );
      const replies = (await unions.exec()) ?? [];
      for (const [reply, index] of addressed.entries()) {
        const [error, found] = replies[reply] ?? [new Error('no reply to SUNION')];
        if (error) {
          if (index === 0 || isDependencyDown(error)) throw error;
          notifications.length = index;
          break;
        }
        queueIds[index] = found as string[];
      }
    }
    const infos = await this.queueInfos([
      ...new Set(queueIds.slice(0, notifications.length).flat()),
    ]);

    const appends = redis.pipeline();
    let appending = 0;
    for (const [index, { entryId, notification }] of notifications.entries()) {
      let targets: Targets;
      try {
        targets = this.targets(entryId, notification, queueIds[index]!, infos);
      } catch (error) {
        if (index === 0) throw error;
        break;
      }
      APPEND.queue(
        appends,
        2 + targets.queues.length * 2,
        keys.lease(this.shard),
        keys.checkpoint(this.shard),
        ...targets.queues.flatMap((t) => [
          keys.queueMeta(this.shard, t.queueId),
          keys.queueEvents(this.shard, t.queueId),
        ]),
        this.token,
        entryId,
        keys.wake(this.shard),
        index === 0 ? previous : notifications[index - 1]!.entryId,
        targets.forms.length,
        ...targets.forms,
        ...targets.queues.flatMap((t) => [t.form, t.queueId]),
      );
      appending += 1;
    }
    const replies = (await appends.exec()) ?? [];
    for (let index = 0; index < appending; index++) {
      const [error, result] = replies[index] ?? [new Error('no reply to APPEND')];
      if (error) {
        // An unreachable Redis stops the shard; it resumes from the checkpoint.
        if (index === 0 || isDependencyDown(error)) throw error;
        return index;
      }
      if (result === -1) return -1;
      // The one before failed, so this one was not appended; or, at the head of the run, the
      // checkpoint is not where this worker left it: stop, and resume from the checkpoint.
      if (result === -2) {
        if (index === 0) throw new CheckpointMovedError(this.shard);
        return index;
      }
      const entryId = notifications[index]!.entryId;
      fanoutLag.observe({ shard: String(this.shard) }, (Date.now() - entryTime(entryId)) / 1000);
    }
    return appending;
  }

  /** Which queues take a notification's event, and in which forms. */
  private targets(
    entryId: string,
    notification: Notification,
    queueIds: string[],
    infos: Map<string, QueueInfo>,
  ): Targets {
    const forms: string[] = [];
    const formIndex = new Map<string, number>();
    const queues: Targets['queues'] = [];
    const echoQueue = (notification.event as { internal_data?: { sender_queue_id?: string } })
      .internal_data?.sender_queue_id;
    const entry = parseStreamId(entryId);
    for (const queueId of queueIds) {
      const queue = infos.get(queueId);
      // Entries from before the queue existed are already in its registration's state.
      if (!queue || compareStreamIds(entry, queue.since) <= 0) continue;
      // Formatting depends on the options, and on the queue itself only for local echo.
      const key = queueId === echoQueue ? `queue:${queueId}` : queue.raw;
      let indexes = formIndex.has(key) ? [formIndex.get(key)!] : undefined;
      if (!indexes) {
        const events = eventForQueue(notification.event, queue.options, queueId) ?? [];
        indexes = (Array.isArray(events) ? events : [events]).map((event) =>
          forms.push(JSON.stringify(event)),
        );
        // A bulk deletion split per message has several forms per queue: not shared.
        if (indexes.length === 1) formIndex.set(key, indexes[0]!);
      }
      for (const form of indexes) queues.push({ queueId, form });
    }
    return { forms, queues };
  }

  /** Caches the options and starting points of queues as their registration announced them
   * (`keys.created`, fields `q`, `o` and `s`): what queueInfos would read from their meta
   * hashes, which hold the same and never change. */
  private learnCreated(entries: LogEntry[]): void {
    this.makeRoom(entries.length);
    for (const [, fields] of entries) {
      const queueId = entryField(fields, 'q');
      const text = entryField(fields, 'o');
      const since = entryField(fields, 's');
      if (queueId === undefined || text === undefined || since === undefined) continue;
      try {
        const { options, raw } = this.parsed(text);
        this.optionsCache.set(queueId, { options, raw, since: parseStreamId(since) });
      } catch {
        // Not JSON: the queue's options are read from its meta hash when it has an event.
      }
    }
  }

  /** Bounds the caches before `adding` queues go in: emptied when full (they refill from
   * what the fan-out meets). */
  private makeRoom(adding: number): void {
    if (this.optionsCache.size + adding > 50_000) this.optionsCache.clear();
    if (this.parsedOptions.size > 1_000) this.parsedOptions.clear();
  }

  /** Options parsed once per distinct text (see parsedOptions). */
  private parsed(text: string): Pick<QueueInfo, 'options' | 'raw'> {
    let known = this.parsedOptions.get(text);
    if (!known) {
      known = { options: JSON.parse(text) as QueueOptions, raw: text };
      this.parsedOptions.set(text, known);
    }
    return known;
  }

  /** Queues' options and starting points never change after registration, so they are read
   * once, all of an entry's unknown ones in one script (a message to a big channel that many
   * new queues follow would otherwise be a command per queue). */
  private async queueInfos(queueIds: string[]): Promise<Map<string, QueueInfo>> {
    const found = new Map<string, QueueInfo>();
    const missing = queueIds.filter((queueId) => {
      const known = this.optionsCache.get(queueId);
      if (known) found.set(queueId, known);
      return !known;
    });
    if (missing.length === 0) return found;
    // In chunks, since Redis runs nothing else while a script runs; in one pipeline, since a
    // chunk after another was a round trip per 500 queues for a message to many new ones.
    const reads = this.options.redis.pipeline();
    let chunks = 0;
    for (let start = 0; start < missing.length; start += QUEUE_INFOS_BATCH) {
      const chunk = missing.slice(start, start + QUEUE_INFOS_BATCH);
      QUEUE_INFOS.queue(
        reads,
        chunk.length,
        ...chunk.map((queueId) => keys.queueMeta(this.shard, queueId)),
      );
      chunks += 1;
    }
    const replies = (await reads.exec()) ?? [];
    this.makeRoom(missing.length);
    for (let chunk = 0; chunk < chunks; chunk++) {
      const [error, reply] = replies[chunk] ?? [new Error('no reply to QUEUE_INFOS')];
      if (error) throw error;
      const [texts, infos] = reply as [string[], (number | string | null)[]];
      const parsed = texts.map((text) => this.parsed(text));
      const first = chunk * QUEUE_INFOS_BATCH;
      const end = Math.min(missing.length, first + QUEUE_INFOS_BATCH);
      for (let index = first; index < end; index++) {
        const at = infos[2 * (index - first)] as number;
        if (at === 0) continue;
        const { options, raw } = parsed[at - 1]!;
        const since = parseStreamId((infos[2 * (index - first) + 1] as string | null) ?? '0-0');
        const info: QueueInfo = { options, raw, since };
        this.optionsCache.set(missing[index]!, info);
        found.set(missing[index]!, info);
      }
    }
    return found;
  }
}

/** The shard's checkpoint is not where its lease holder left it: Redis came back from its
 * append-only file without its latest writes (the checkpoint and the appends of one script are
 * restored together). Not the entry's fault: the worker stops, and the shard resumes from the
 * checkpoint, so the entries after it are delivered, once. */
class CheckpointMovedError extends Error {
  constructor(shard: number) {
    super(`shard ${shard}: the checkpoint moved under its lease holder; resuming from it`);
    this.name = 'CheckpointMovedError';
  }
}

/** Errors after which a shard worker stops (the balancer takes the shard again, from its
 * checkpoint), rather than retry or set the entry aside. */
function stopsTheShard(error: unknown): boolean {
  return isDependencyDown(error) || error instanceof CheckpointMovedError;
}

/** A log entry's notification; throws if it is not one (a poison entry). */
function parseNotification(text: string | undefined): Notification {
  const notification = JSON.parse(text ?? '{}') as Partial<Notification> | null;
  if (typeof notification !== 'object' || notification === null)
    throw new Error('the log entry holds no notification');
  return { ...notification, users: notification.users ?? [] } as Notification;
}

/** A shard log entry as XREAD gives it: its id and its fields (`n`, the notification, then
 * `q`, its recipients' queues, when it carries them). */
type LogEntry = [string, string[]];

/** The recipients' queues an entry carries (publish.ts), or null if it carries none: its
 * recipients had too many, or a publisher older than this field wrote it. */
function carriedQueues(fields: string[]): string[] | null {
  const carried = entryField(fields, 'q');
  if (carried === undefined) return null;
  return carried === '' ? [] : carried.split(' ');
}

/** A stream entry's field by name (XREAD gives the fields as name, value, name, value …). */
function entryField(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

interface Targets {
  /** The distinct forms of the event, as JSON. */
  forms: string[];
  /** The queues that take it, each with the index (1-based) of its form. */
  queues: { queueId: string; form: number }[];
}

interface QueueInfo {
  options: QueueOptions;
  /** The options as stored: queues with equal ones format events alike. */
  raw: string;
  /** The newest log entry when the queue was created (see QueueStore.create). */
  since: StreamId;
}

/** The time (ms) Redis gave a stream entry, from its id (`<ms>-<seq>`). */
function entryTime(entryId: string): number {
  return Number(entryId.slice(0, entryId.indexOf('-')));
}

/** A stream entry id, `<ms>-<seq>`, as numbers: both stay far below 2^53 (milliseconds since
 * 1970, and entries added within one millisecond). Parsed once per entry and per queue, not
 * per comparison: BigInts for each of 10,000 queues were half of a big fan-out's targeting. */
type StreamId = readonly [ms: number, seq: number];

function parseStreamId(id: string): StreamId {
  const dash = id.indexOf('-');
  return dash < 0 ? [Number(id), 0] : [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
}

function compareStreamIds([am, as_]: StreamId, [bm, bs]: StreamId): number {
  if (am !== bm) return am < bm ? -1 : 1;
  return as_ === bs ? 0 : as_ < bs ? -1 : 1;
}

function compareIds(a: string, b: string): number {
  return compareStreamIds(parseStreamId(a), parseStreamId(b));
}
