// Event queues in Redis, shared by both tiers: the API tier creates them (POST /register),
// the events tier fills, serves, prunes and expires them. Each change that must be atomic is
// one Lua script over keys of a single shard.
import type { Redis } from 'ioredis';
import { allPublicStreamsKey, keys } from './keys';
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
// again could undo a later change (a subscription added, then removed).
const CREATE_QUEUE = `
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local since = '0-0'
if newest[1] then since = newest[1][1] end
redis.call('HSET', KEYS[2], 'user_id', ARGV[1], 'realm_id', ARGV[2], 'options', ARGV[3],
  'next_id', 0, 'pruned', -1, 'poll_gen', 0, 'since', since)
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[4])
return since`;

const APPEND_HEARTBEAT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local id = redis.call('HINCRBY', KEYS[1], 'next_id', 1) - 1
redis.call('RPUSH', KEYS[2], '{"id":' .. id .. ',"type":"heartbeat"}')
return id`;

// Zulip's prune + checks (event_queue.py fetch_events): drop events up to last_event_id,
// then refuse ids the queue never had or already dropped. Also refreshes the expiry.
const PRUNE = `
local pruned = tonumber(redis.call('HGET', KEYS[1], 'pruned'))
if pruned == nil then return {-1} end
local last = tonumber(ARGV[1])
if last < pruned then return {1, pruned} end
while true do
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head then break end
  local id = tonumber(string.match(head, '^{"id":(%-?%d+)'))
  if id > last then break end
  redis.call('LPOP', KEYS[2])
  pruned = id
end
redis.call('HSET', KEYS[1], 'pruned', pruned)
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
if last ~= pruned then return {2, pruned} end
return {0, pruned}`;

const DELETE_QUEUE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1`;

// Deletes a queue only if it is still past its deadline (a poll may have just refreshed it).
const EXPIRE_QUEUE = `
local deadline = redis.call('ZSCORE', KEYS[4], ARGV[1])
if deadline and tonumber(deadline) > tonumber(ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1`;

export type PruneResult =
  | { ok: true }
  | { ok: false; error: 'missing' }
  | { ok: false; error: 'already_pruned' | 'not_in_queue'; lastEventId: number };

export class QueueStore {
  constructor(
    readonly redis: Redis,
    readonly shards: number,
  ) {}

  /** Creates an empty queue for the user (its shard is the user's). */
  async create(userId: number, realmId: number, options: QueueOptions): Promise<string> {
    const shard = userId % this.shards;
    const queueId = makeQueueId(shard);
    const deadline = Date.now() + options.lifespan_secs * 1000;
    await this.redis.eval(
      CREATE_QUEUE,
      4,
      keys.shardLog(shard),
      keys.queueMeta(shard, queueId),
      keys.userQueues(shard, userId),
      keys.queueExpiry(shard),
      userId,
      realmId,
      JSON.stringify(options),
      queueId,
      deadline,
    );
    if (options.all_public_streams) await this.redis.sadd(allPublicStreamsKey(realmId), userId);
    return queueId;
  }

  /** The queue's owner and options, or null for an unknown or malformed id. */
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
    return {
      queueId,
      shard: parsed.shard,
      userId: Number(fields[0]),
      realmId: Number(fields[1]),
      options: JSON.parse(fields[2]!) as QueueOptions,
    };
  }

  async events(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<QueuedEvent[]> {
    const raw = await this.redis.lrange(keys.queueEvents(meta.shard, meta.queueId), 0, -1);
    return raw.map((entry) => JSON.parse(entry) as QueuedEvent);
  }

  /** Drops acknowledged events and refreshes the queue's expiry to `deadline` (ms). */
  async prune(meta: QueueMeta, lastEventId: number, deadline: number): Promise<PruneResult> {
    const [code] = (await this.redis.eval(
      PRUNE,
      3,
      keys.queueMeta(meta.shard, meta.queueId),
      keys.queueEvents(meta.shard, meta.queueId),
      keys.queueExpiry(meta.shard),
      String(lastEventId),
      String(deadline),
      meta.queueId,
    )) as [number, number];
    if (code === -1) return { ok: false, error: 'missing' };
    if (code === 1) return { ok: false, error: 'already_pruned', lastEventId };
    if (code === 2) return { ok: false, error: 'not_in_queue', lastEventId };
    return { ok: true };
  }

  /** Sets the queue's expiry deadline (ms), e.g. while a poll is parked on it. */
  async touch(meta: Pick<QueueMeta, 'shard' | 'queueId'>, deadline: number): Promise<void> {
    await this.redis.zadd(keys.queueExpiry(meta.shard), 'XX', deadline, meta.queueId);
  }

  /** Appends a heartbeat (a real event with its own id); returns its id, or -1 if gone. */
  async heartbeat(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<number> {
    return (await this.redis.eval(
      APPEND_HEARTBEAT,
      2,
      keys.queueMeta(meta.shard, meta.queueId),
      keys.queueEvents(meta.shard, meta.queueId),
    )) as number;
  }

  /** Counts a new poll on the queue; older polls with a smaller number must finish. */
  async nextPollGeneration(meta: Pick<QueueMeta, 'shard' | 'queueId'>): Promise<number> {
    return this.redis.hincrby(keys.queueMeta(meta.shard, meta.queueId), 'poll_gen', 1);
  }

  async delete(meta: Pick<QueueMeta, 'shard' | 'queueId' | 'userId'>): Promise<boolean> {
    const deleted = (await this.redis.eval(
      DELETE_QUEUE,
      4,
      keys.queueMeta(meta.shard, meta.queueId),
      keys.queueEvents(meta.shard, meta.queueId),
      keys.userQueues(meta.shard, meta.userId),
      keys.queueExpiry(meta.shard),
      meta.queueId,
    )) as number;
    return deleted === 1;
  }

  /** Deletes the shard's queues whose deadline passed; returns their ids. */
  async expire(shard: number, now: number): Promise<string[]> {
    const due = await this.redis.zrangebyscore(
      keys.queueExpiry(shard),
      '-inf',
      now,
      'LIMIT',
      0,
      500,
    );
    const expired: string[] = [];
    for (const queueId of due) {
      const owner = await this.redis.hget(keys.queueMeta(shard, queueId), 'user_id');
      const removed = (await this.redis.eval(
        EXPIRE_QUEUE,
        4,
        keys.queueMeta(shard, queueId),
        keys.queueEvents(shard, queueId),
        keys.userQueues(shard, Number(owner ?? -1)),
        keys.queueExpiry(shard),
        queueId,
        String(now),
      )) as number;
      if (removed === 1) expired.push(queueId);
    }
    return expired;
  }
}
