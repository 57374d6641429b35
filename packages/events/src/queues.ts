// Event queues in Redis, shared by both tiers: the API tier creates them (POST /register),
// the events tier fills, serves, prunes and expires them. Each change that must be atomic is
// one Lua script over keys of a single shard.
import type { Redis } from 'ioredis';
import { allPublicStreamsKey, keys, shardOf } from './keys';
import { LuaScript } from './lua';
import { makeQueueId, parseQueueId } from './queue-id';

/** Options a queue was registered with; the events tier filters and formats by them. */
export interface QueueOptions {
  /** null: every type. */
  event_types: string[] | null;
  narrow: NarrowTerm[];
  all_public_streams: boolean;
  apply_markdown: boolean;
  client_gravatar: boolean;
  slim_presence: boolean;
  client_capabilities: Record<string, boolean>;
  lifespan_secs: number;
}

export interface NarrowTerm {
  operator: string;
  operand: string | number | (string | number)[];
  negated?: boolean;
}

export interface QueueMeta {
  queueId: string;
  shard: number;
  userId: number;
  realmId: number;
  options: QueueOptions;
}

export interface QueuedEvent {
  id: number;
  type: string;
  [field: string]: unknown;
}

/** A queued event as Redis holds it: JSON text that the scripts below always start with
 * `{"id":<id>,`. Long-polls answer with it as it is, never parsed (a fan-out answers thousands
 * at once). */
export type RawEvent = string;

/** The id of a raw event, read from its prefix. */
export function rawEventId(raw: RawEvent): number {
  return Number(raw.slice(6, raw.indexOf(',', 6)));
}

function parseEvent(raw: RawEvent): QueuedEvent {
  return JSON.parse(raw) as QueuedEvent;
}

/** Zulip's DEFAULT_EVENT_QUEUE_TIMEOUT_SECS and MAX_QUEUE_TIMEOUT_SECS. */
export const DEFAULT_QUEUE_LIFESPAN_SECS = 600;
export const MAX_QUEUE_LIFESPAN_SECS = 7 * 24 * 60 * 60;

/** The options of a queue registered without parameters (POST /register's defaults). */
export function defaultQueueOptions(): QueueOptions {
  return {
    event_types: null,
    narrow: [],
    all_public_streams: false,
    apply_markdown: false,
    client_gravatar: true,
    slim_presence: false,
    client_capabilities: {},
    lifespan_secs: DEFAULT_QUEUE_LIFESPAN_SECS,
  };
}

// Creates a queue and records the newest entry of its shard's log at that moment: the
// fan-out gives the queue only later entries. Earlier ones were published after commits that
// precede the registration, so the state /register reads already holds them; applying them
// again could undo a later change (a subscription added, then removed). The lifespan is also
// kept apart from the options (`lifespan_ms`), for POLL. The queue is announced on the shard's
// stream of created queues (`keys.created`), for the fan-out to know it before its first event.
const CREATE_QUEUE = new LuaScript(
  'createQueue',
  `
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local since = '0-0'
if newest[1] then since = newest[1][1] end
redis.call('HSET', KEYS[2], 'user_id', ARGV[1], 'realm_id', ARGV[2], 'options', ARGV[3],
  'next_id', 0, 'pruned', -1, 'poll_gen', 0, 'since', since, 'lifespan_ms', ARGV[6])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[4])
local now = redis.call('TIME')
local oldest = string.format('%.0f-0', now[1] * 1000 + math.floor(now[2] / 1000) - ARGV[7])
redis.call('XADD', KEYS[5], 'MINID', '~', oldest, '*', 'q', ARGV[4], 'o', ARGV[3], 's', since)
return since`,
);

/** How long a shard keeps its announcements of created queues (`keys.created`), in ms: the
 * lease holder reads them within milliseconds, and one taking the shard over learns the last
 * minute's. A queue it missed has its options read instead. Time rather than a count bounds
 * what Redis and every lease holder's cache keep by the rate of registrations, not by how many
 * ever happened on the shard. */
export const CREATED_RETAIN_MS = 60_000;

const APPEND_HEARTBEAT = new LuaScript(
  'appendHeartbeat',
  `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local id = redis.call('HINCRBY', KEYS[1], 'next_id', 1) - 1
redis.call('RPUSH', KEYS[2], '{"id":' .. id .. ',"type":"heartbeat"}')
return id`,
);

// One event for many queues of a shard, fenced by the shard's lease (the `restart` event; see
// announceRelease), to each queue still there whose event_types take its type, with each
// queue's next id. KEYS: lease, then (meta, events) per queue. ARGV: token, the event's type,
// the event's JSON without its opening brace, then the queue ids. Returns the queue ids and
// event ids appended, alternating, or false when the lease is no longer the caller's.
const APPEND_TO_QUEUES = new LuaScript(
  'appendToQueues',
  `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
local appended = {}
for i = 2, #KEYS, 2 do
  local options = redis.call('HGET', KEYS[i], 'options')
  if options then
    local types = cjson.decode(options).event_types
    local takes = type(types) ~= 'table'
    if not takes then
      for _, name in ipairs(types) do
        if name == ARGV[2] then takes = true end
      end
    end
    if takes then
      local id = redis.call('HINCRBY', KEYS[i], 'next_id', 1) - 1
      redis.call('RPUSH', KEYS[i + 1], '{"id":' .. id .. ',' .. ARGV[3])
      appended[#appended + 1] = ARGV[3 + i / 2]
      appended[#appended + 1] = id
    end
  end
end
return appended`,
);

// One long-poll's whole visit in one round trip (Zulip's event_queue.py fetch_events): the
// owner check, a new poll generation (older polls of the queue finish: the kick is published
// here), Zulip's prune and checks, the events left, and the queue's expiry: its lifespan from
// now, or past the longest wait if the poll is to park (nothing to answer yet).
// The kick goes out only when an older poll may still be parked: one parked (`parked_at`, the
// queue's next id then) and nothing was appended since, since an appended event answers every
// poll parked on the queue (and each kick is a message to every events replica). A poll to park
// records itself so.
// Every field it needs is read in one HMGET, the lifespan without decoding the options (they
// are decoded only for a queue made before `lifespan_ms` was stored): Redis's time per poll
// fell from 28.6 to 23.6 µs (means of 12 alternating rounds of 3,000 polls acknowledging one
// event each).
// KEYS: meta, events, expiry. ARGV: user id, last_event_id, now (ms), extra ms when parking,
// queue id, wake channel.
// Returns {-1} missing or not the user's, {1|2, pruned} refused ids, {0, generation, events...}.
const POLL = new LuaScript(
  'poll',
  `
local fields = redis.call('HMGET', KEYS[1], 'user_id', 'pruned', 'next_id', 'parked_at',
  'lifespan_ms')
if fields[1] ~= ARGV[1] then return {-1} end
local pruned = tonumber(fields[2])
local last = tonumber(ARGV[2])
if last < pruned then return {1, pruned} end
local generation = redis.call('HINCRBY', KEYS[1], 'poll_gen', 1)
if fields[4] and fields[4] == fields[3] then
  redis.call('PUBLISH', ARGV[6], 'k:' .. ARGV[5] .. ':' .. generation)
end
while true do
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head then break end
  local id = tonumber(string.match(head, '^{"id":(%-?%d+)'))
  if id > last then break end
  redis.call('LPOP', KEYS[2])
  pruned = id
end
redis.call('HSET', KEYS[1], 'pruned', pruned)
if last ~= pruned then return {2, pruned} end
local events = redis.call('LRANGE', KEYS[2], 0, -1)
local lifespan = tonumber(fields[5])
  or cjson.decode(redis.call('HGET', KEYS[1], 'options')).lifespan_secs * 1000
local deadline = tonumber(ARGV[3]) + lifespan
if #events == 0 and tonumber(ARGV[4]) > 0 then
  deadline = deadline + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'parked_at', fields[3])
end
redis.call('ZADD', KEYS[3], deadline, ARGV[5])
local reply = {0, generation}
for i = 1, #events do reply[#reply + 1] = events[i] end
return reply`,
);

// Parked polls' answers, for queues of one shard: each queue's events, and at least its
// lifespan from now. Only ever later (GT): another poll of the queue may still be parked, its
// deadline past its longest wait. A queue gone answers no events.
// KEYS: expiry, then (meta, events) per queue. ARGV: now (ms), then the queue ids.
const TAKE = new LuaScript(
  'take',
  `
local now = tonumber(ARGV[1])
local lifespans = {}
local replies = {}
for i = 1, #ARGV - 1 do
  local options = redis.call('HGET', KEYS[2 * i], 'options')
  if options then
    -- Queues registered alike share their options: decoded once per call.
    local lifespan = lifespans[options]
    if not lifespan then
      lifespan = cjson.decode(options).lifespan_secs * 1000
      lifespans[options] = lifespan
    end
    redis.call('ZADD', KEYS[1], 'XX', 'GT', now + lifespan, ARGV[i + 1])
    replies[i] = redis.call('LRANGE', KEYS[2 * i + 1], 0, -1)
  else
    replies[i] = {}
  end
end
return replies`,
);

/** Queues one TAKE reads at most: a fan-out wakes thousands, and Redis runs nothing else while
 * a script runs. */
const TAKE_BATCH = 500;

export type PollResult<E = QueuedEvent> =
  | { ok: true; generation: number; events: E[] }
  | { ok: false; error: 'missing' }
  | { ok: false; error: 'already_pruned' | 'not_in_queue'; lastEventId: number };

// After a queue's removal from its user's set (KEYS[3]), before its events (KEYS[2]) go: when
// it was the user's last queue, the ids of the unread messages whose events it still holds
// (never fetched, or fetched but not acknowledged) and whose email (KEYS[5]) or push (KEYS[6])
// was set aside because the user had a client open: Zulip's missedmessage_hook notifies of
// them now. A user with nothing set aside (most) costs two EXISTS; otherwise only the events
// that name the message type are decoded, and one that does not decode is skipped. Leaves
// `gone`: 1, then those ids.
const SET_ASIDE_IF_LAST = `
local gone = {1}
if redis.call('SCARD', KEYS[3]) == 0
    and (redis.call('EXISTS', KEYS[5]) == 1 or redis.call('EXISTS', KEYS[6]) == 1) then
  for _, raw in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
    if string.find(raw, '"type":"message"', 1, true) then
      local ok, event = pcall(cjson.decode, raw)
      if ok and type(event) == 'table' and event.type == 'message'
          and type(event.message) == 'table' and type(event.message.id) == 'number' then
        local read = false
        if type(event.flags) == 'table' then
          for _, flag in ipairs(event.flags) do
            if flag == 'read' then read = true end
          end
        end
        local id = event.message.id
        if not read and (redis.call('ZSCORE', KEYS[5], id) or redis.call('ZSCORE', KEYS[6], id)) then
          gone[#gone + 1] = id
        end
      end
    end
  end
end`;

// KEYS: meta, events, user's queues, expiry, email set aside, push set aside. Returns {} when
// the queue was gone already, else SET_ASIDE_IF_LAST's `gone`.
const DELETE_QUEUE = new LuaScript(
  'deleteQueue',
  `
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
redis.call('SREM', KEYS[3], ARGV[1])
${SET_ASIDE_IF_LAST}
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[4], ARGV[1])
return gone`,
);

// Deletes a queue only if it is still past its deadline (a poll may have just refreshed it; a
// queue without one was deleted already); keys and answer as DELETE_QUEUE's.
const EXPIRE_QUEUE = new LuaScript(
  'expireQueue',
  `
local deadline = redis.call('ZSCORE', KEYS[4], ARGV[1])
if not deadline or tonumber(deadline) > tonumber(ARGV[2]) then return {} end
redis.call('SREM', KEYS[3], ARGV[1])
${SET_ASIDE_IF_LAST}
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[4], ARGV[1])
return gone`,
);

/** A queue just deleted or expired: when it was its user's last, the unread messages it held
 * whose notifications were set aside (else none). */
export interface GoneQueue {
  queueId: string;
  userId: number;
  unreadMessageIds: number[];
}

/** DELETE_QUEUE's and EXPIRE_QUEUE's keys. */
function removalKeys(shard: number, queueId: string, userId: number): string[] {
  return [
    keys.queueMeta(shard, queueId),
    keys.queueEvents(shard, queueId),
    keys.userQueues(shard, userId),
    keys.queueExpiry(shard),
    keys.setAside(shard, 'email', userId),
    keys.setAside(shard, 'push', userId),
  ];
}

/** DELETE_QUEUE's or EXPIRE_QUEUE's answer, as a GoneQueue, or null if nothing was removed. */
function goneQueue(queueId: string, userId: number, reply: unknown): GoneQueue | null {
  const values = reply as number[];
  if (values.length === 0) return null;
  return { queueId, userId, unreadMessageIds: values.slice(1) };
}

export class QueueStore {
  constructor(
    readonly redis: Redis,
    readonly shards: number,
  ) {}

  /** Whether a queue on this shard can be the user's: one created under an earlier layout of
   * users on shards (another SHARD_USER_RANGE or EVENT_SHARDS) would get no events, since
   * notifications go to the user's shard, so it answers as unknown and its client registers
   * again, as after any lost queue. */
  private onOwnersShard(shard: number, userId: number): boolean {
    return shard === shardOf(userId, this.shards);
  }

  /** Creates an empty queue for the user (its shard is the user's). */
  async create(userId: number, realmId: number, options: QueueOptions): Promise<string> {
    const shard = shardOf(userId, this.shards);
    const queueId = makeQueueId(shard);
    const deadline = Date.now() + options.lifespan_secs * 1000;
    await CREATE_QUEUE.run(
      this.redis,
      5,
      keys.shardLog(shard),
      keys.queueMeta(shard, queueId),
      keys.userQueues(shard, userId),
      keys.queueExpiry(shard),
      keys.created(shard),
      userId,
      realmId,
      JSON.stringify(options),
      queueId,
      deadline,
      options.lifespan_secs * 1000,
      // Entry ids start with Redis's time (ms): the script trims by it.
      CREATED_RETAIN_MS,
    );
    if (options.all_public_streams) await this.redis.sadd(allPublicStreamsKey(realmId), userId);
    return queueId;
  }

  /** The queue's owner and options, or null for an unknown or malformed id (or one of an
   * earlier shard layout, see `onOwnersShard`). */
  async meta(queueId: string): Promise<QueueMeta | null> {
    const parsed = parseQueueId(queueId, this.shards);
    if (!parsed) return null;
    const fields = await this.redis.hmget(
      keys.queueMeta(parsed.shard, queueId),
      'user_id',
      'realm_id',
      'options',
    );
    if (fields[0] === null || fields[2] === null) return null;
    if (!this.onOwnersShard(parsed.shard, Number(fields[0]))) return null;
    return {
      queueId,
      shard: parsed.shard,
      userId: Number(fields[0]),
      realmId: Number(fields[1]),
      options: JSON.parse(fields[2]!) as QueueOptions,
    };
  }

  /** The users among `userIds` with a queue that takes message events: a client open
   * (Zulip's receiver_is_off_zulip, negated). With `sentAt` (ms), a queue whose starting point
   * in the shard log (the newest entry when it registered, named by Redis's time) is that
   * late or later does not count: it registered after the message, which it may never hold.
   * With clocks apart, Redis's ahead of the caller's errs towards idle (a notification sent to
   * someone present), behind towards present (as without the check). Two round trips whatever
   * their number. */
  async acceptingMessages(userIds: number[], sentAt?: number): Promise<Set<number>> {
    const accepting = new Set<number>();
    if (userIds.length === 0) return accepting;
    const sets = this.redis.pipeline();
    for (const userId of userIds)
      sets.smembers(keys.userQueues(shardOf(userId, this.shards), userId));
    const owned = ((await sets.exec()) ?? []).map(([error, ids], index) => {
      if (error) throw error;
      return (ids as string[]).map((queueId) => ({ userId: userIds[index]!, queueId }));
    });
    const queues = owned.flat().flatMap(({ userId, queueId }) => {
      const parsed = parseQueueId(queueId, this.shards);
      return parsed ? [{ userId, key: keys.queueMeta(parsed.shard, queueId) }] : [];
    });
    if (queues.length === 0) return accepting;
    const metas = this.redis.pipeline();
    for (const { key } of queues) metas.hmget(key, 'user_id', 'options', 'since');
    ((await metas.exec()) ?? []).forEach(([error, fields], index) => {
      if (error) throw error;
      const [owner, options, since] = fields as [string | null, string | null, string | null];
      const { userId } = queues[index]!;
      if (owner !== String(userId) || options === null) return;
      // `since` is the shard log's newest entry at registration, named by Redis's time (ms).
      if (sentAt !== undefined && Number((since ?? '0-0').split('-')[0]) >= sentAt) return;
      const types = (JSON.parse(options) as QueueOptions).event_types;
      if (types === null || types.includes('message')) accepting.add(userId);
    });
    return accepting;
  }

  async events(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<QueuedEvent[]> {
    const raw = await this.redis.lrange(keys.queueEvents(meta.shard, meta.queueId), 0, -1);
    return raw.map(parseEvent);
  }

  /** A long-poll by `userId` acknowledging `lastEventId`: a new poll generation, the pruning,
   * the events waiting and the queue's expiry (extended by `parkMs` when there are none), in
   * one round trip. "missing" also for another user's queue. */
  async poll(
    queueId: string,
    userId: number,
    lastEventId: number,
    parkMs: number,
  ): Promise<PollResult> {
    const result = await this.pollRaw(queueId, userId, lastEventId, parkMs);
    return result.ok ? { ...result, events: result.events.map(parseEvent) } : result;
  }

  /** poll() with the events as stored. */
  async pollRaw(
    queueId: string,
    userId: number,
    lastEventId: number,
    parkMs: number,
  ): Promise<PollResult<RawEvent>> {
    const parsed = parseQueueId(queueId, this.shards);
    if (!parsed || !this.onOwnersShard(parsed.shard, userId))
      return { ok: false, error: 'missing' };
    const reply = (await POLL.run(
      this.redis,
      3,
      keys.queueMeta(parsed.shard, queueId),
      keys.queueEvents(parsed.shard, queueId),
      keys.queueExpiry(parsed.shard),
      String(userId),
      String(lastEventId),
      String(Date.now()),
      String(parkMs),
      queueId,
      keys.wake(parsed.shard),
    )) as [number, number, ...string[]];
    const [code, value, ...events] = reply;
    if (code === -1) return { ok: false, error: 'missing' };
    if (code === 1) return { ok: false, error: 'already_pruned', lastEventId };
    if (code === 2) return { ok: false, error: 'not_in_queue', lastEventId };
    return { ok: true, generation: value, events };
  }

  /** A parked poll's answer, parsed: the queue's events; it lives at least its lifespan from
   * now (the events tier reads many at once, as stored: takeManyRaw). */
  async take(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<QueuedEvent[]> {
    const [answer] = await this.takeManyRaw([meta]);
    if (answer instanceof Error) throw answer;
    return answer!.map(parseEvent);
  }

  /** Parked polls' answers for many queues (the polls one fan-out wakes together): each
   * queue's events as stored, or the error its read met. One script per shard (and per
   * TAKE_BATCH queues) reads them all. The scripts go out as commands, not as one explicit
   * pipeline: on the events tier's auto-pipelined connection an explicit pipeline is written
   * at once, ahead of auto-pipelined commands still waiting for an earlier batch, and a TAKE
   * could then read a queue before the POLL that pruned it (a poll answered with the event it
   * had just acknowledged). Auto-pipelining still sends them in one round trip. */
  async takeManyRaw(
    metas: Pick<QueueMeta, 'shard' | 'queueId'>[],
  ): Promise<(RawEvent[] | Error)[]> {
    const now = String(Date.now());
    const byShard = new Map<number, number[]>();
    metas.forEach((meta, index) => {
      const indexes = byShard.get(meta.shard);
      if (indexes) indexes.push(index);
      else byShard.set(meta.shard, [index]);
    });
    const answers: (RawEvent[] | Error)[] = new Array(metas.length);
    const reads: Promise<void>[] = [];
    for (const [shard, indexes] of byShard) {
      for (let start = 0; start < indexes.length; start += TAKE_BATCH) {
        const batch = indexes.slice(start, start + TAKE_BATCH);
        const queueIds = batch.map((index) => metas[index]!.queueId);
        const read = TAKE.run(
          this.redis,
          1 + batch.length * 2,
          keys.queueExpiry(shard),
          ...queueIds.flatMap((queueId) => [
            keys.queueMeta(shard, queueId),
            keys.queueEvents(shard, queueId),
          ]),
          now,
          ...queueIds,
        ) as Promise<RawEvent[][]>;
        reads.push(
          read.then(
            (replies) => batch.forEach((index, i) => (answers[index] = replies[i] ?? [])),
            (error: unknown) => {
              const failure = error instanceof Error ? error : new Error(String(error));
              for (const index of batch) answers[index] = failure;
            },
          ),
        );
      }
    }
    await Promise.all(reads);
    return answers;
  }

  /** Appends `event` to each of the shard's `queueIds` that is still there and takes its type,
   * if `token` still holds the shard's lease; returns [queue id, event id] for each, or null
   * when the lease is lost. */
  async appendToQueues(
    shard: number,
    token: string,
    queueIds: string[],
    event: { type: string },
  ): Promise<[string, number][] | null> {
    const reply = (await APPEND_TO_QUEUES.run(
      this.redis,
      1 + 2 * queueIds.length,
      keys.lease(shard),
      ...queueIds.flatMap((queueId) => [
        keys.queueMeta(shard, queueId),
        keys.queueEvents(shard, queueId),
      ]),
      token,
      event.type,
      JSON.stringify(event).slice(1),
      ...queueIds,
    )) as (string | number)[] | null;
    if (reply === null) return null;
    const appended: [string, number][] = [];
    for (let i = 0; i + 1 < reply.length; i += 2)
      appended.push([String(reply[i]), Number(reply[i + 1])]);
    return appended;
  }

  /** Sets the queue's expiry deadline (ms), e.g. while a poll is parked on it. */
  async touch(meta: Pick<QueueMeta, 'shard' | 'queueId'>, deadline: number): Promise<void> {
    await this.redis.zadd(keys.queueExpiry(meta.shard), 'XX', deadline, meta.queueId);
  }

  /** Appends a heartbeat (a real event with its own id); returns its id, or -1 if gone. */
  async heartbeat(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<number> {
    return (await APPEND_HEARTBEAT.run(
      this.redis,
      2,
      keys.queueMeta(meta.shard, meta.queueId),
      keys.queueEvents(meta.shard, meta.queueId),
    )) as number;
  }

  /** Deletes the queue; null if it was gone already. */
  async delete(meta: Pick<QueueMeta, 'shard' | 'queueId' | 'userId'>): Promise<GoneQueue | null> {
    const reply = await DELETE_QUEUE.run(
      this.redis,
      6,
      ...removalKeys(meta.shard, meta.queueId, meta.userId),
      meta.queueId,
    );
    return goneQueue(meta.queueId, meta.userId, reply);
  }

  /** Deletes the shard's queues whose deadline passed, each reported to `removed` as soon as
   * it is gone (a failure halfway loses no report of those before it). */
  async expire(
    shard: number,
    now: number,
    removed: (gone: GoneQueue) => void = () => undefined,
  ): Promise<GoneQueue[]> {
    const due = await this.redis.zrangebyscore(
      keys.queueExpiry(shard),
      '-inf',
      now,
      'LIMIT',
      0,
      500,
    );
    const expired: GoneQueue[] = [];
    for (const queueId of due) {
      const userId = Number(
        (await this.redis.hget(keys.queueMeta(shard, queueId), 'user_id')) ?? -1,
      );
      const reply = await EXPIRE_QUEUE.run(
        this.redis,
        6,
        ...removalKeys(shard, queueId, userId),
        queueId,
        String(now),
      );
      const gone = goneQueue(queueId, userId, reply);
      if (gone) {
        expired.push(gone);
        removed(gone);
      }
    }
    return expired;
  }
}
