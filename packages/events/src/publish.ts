// Publishing after commit: one entry per affected shard's log, carrying the event, the shard's
// share of the recipients and, read in the same script, their queues. Redis Streams keep
// notifications while no events replica reads them (plain PUBLISH would drop them during a
// restart).
import type { Redis } from 'ioredis';
import { keys, shardOf } from './keys';
import { LuaScript } from './lua';
import type { Notification } from './types';

/** The most queue ids a log entry carries; an entry whose recipients hold more carries none,
 * and the fan-out reads them itself (see APPEND_ENTRY). The ids stay in the log as long as the
 * entry (EVENTS_LOG_RETAIN_MS): 256 of them (10 KB) are about what the notification of a
 * message to 1,000 users weighs, while the round trip they save matters less the more queues
 * an event goes to. */
export const CARRIED_QUEUES_MAX = 256;

// Appends the entry with the ids of its recipients' queues at this moment (field `q`, separated
// by spaces), so the fan-out needs no read of its own before appending: a round trip less
// between a commit and its event. They are the queues the fan-out must consider: one created
// later starts after this entry (its `since`, queues.ts), and a deleted one takes nothing, as
// the append checks. Recipients with many queues (beyond CARRIED_QUEUES_MAX), or a set Redis
// cannot read, carry nothing: the entry must still be published, and the fan-out reads their
// queues then, as it reads those of entries published without them.
// KEYS from `first` on: the recipients' queue sets. ARGV[1]: the notification.
// One SUNION per 128 sets, not a command per set (Redis's time for 1,001 recipients holding 20
// queues: 0.16 ms against 0.9 ms), and not one for all: when the recipients hold too many
// queues to carry, the work past the first chunks is saved (1,000 users holding 10,000
// queues: 0.7 ms wasted, against 4.5 ms for one SUNION of them all, which the fan-out then runs).
const APPEND_ENTRY = (first: number) => `
local found = {}
for i = ${first}, #KEYS, 128 do
  local members = redis.pcall('SUNION', unpack(KEYS, i, math.min(i + 127, #KEYS)))
  if members.err then found = nil break end
  for _, queue in ipairs(members) do found[#found + 1] = queue end
  if #found > ${CARRIED_QUEUES_MAX} then found = nil break end
end
if found then
  redis.call('XADD', KEYS[1], '*', 'n', ARGV[1], 'q', table.concat(found, ' '))
else
  redis.call('XADD', KEYS[1], '*', 'n', ARGV[1])
end`;

// KEYS: log, then the recipients' queue sets. ARGV: notification JSON.
const PUBLISH = new LuaScript('publish', APPEND_ENTRY(2));

/** A notification's recipients grouped by shard. */
function usersByShard(users: number[], shards: number): Map<number, number[]> {
  const byShard = new Map<number, number[]>();
  for (const userId of users) {
    const shard = shardOf(userId, shards);
    const group = byShard.get(shard);
    if (group) group.push(userId);
    else byShard.set(shard, [userId]);
  }
  return byShard;
}

/** A shard's share of a notification as its log holds it: `JSON.stringify({ event, users })`,
 * with the event serialized once for every shard. */
function shardEntry(event: string, users: number[]): string {
  return `{"event":${event},"users":${JSON.stringify(users)}}`;
}

/** The keys of the users' queue sets (a user named twice is read once: a queue has one owner,
 * so the entry carries each queue once). */
function queueSets(shard: number, users: number[]): string[] {
  return [...new Set(users)].map((userId) => keys.userQueues(shard, userId));
}

export async function publishNotification(
  redis: Redis,
  shards: number,
  notification: Notification,
): Promise<void> {
  const byShard = usersByShard(notification.users, shards);
  if (byShard.size === 0) return;
  const event = JSON.stringify(notification.event);
  const pipeline = redis.pipeline();
  for (const [shard, users] of byShard) {
    const sets = queueSets(shard, users);
    PUBLISH.queue(
      pipeline,
      1 + sets.length,
      keys.shardLog(shard),
      ...sets,
      shardEntry(event, users),
    );
  }
  const results = await pipeline.exec();
  const failed = results?.find(([error]) => error);
  if (failed?.[0]) throw failed[0];
}

// Appends an outbox row's share of a notification to a shard's log unless it already was:
// the after-commit fast path and the relay may both try the same row.
// KEYS: log, published marker, then the recipients' queue sets. ARGV: notification JSON,
// marker lifetime (s).
const PUBLISH_ONCE = new LuaScript(
  'publishOnce',
  `
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then return 0 end
${APPEND_ENTRY(3)}
return 1`,
);

/** Long enough for any relay to have seen the row (it deletes rows once published). */
const PUBLISHED_MARKER_SECONDS = 24 * 60 * 60;

/** Publishes outbox rows, each exactly once per shard whoever calls (see PUBLISH_ONCE). */
export async function publishOutboxRows(
  redis: Redis,
  shards: number,
  rows: { id: string; written: string; notification: Notification }[],
): Promise<void> {
  if (rows.length === 0) return;
  const pipeline = redis.pipeline();
  for (const { id, written, notification } of rows) {
    const event = JSON.stringify(notification.event);
    for (const [shard, users] of usersByShard(notification.users, shards)) {
      const sets = queueSets(shard, users);
      PUBLISH_ONCE.queue(
        pipeline,
        2 + sets.length,
        keys.shardLog(shard),
        keys.published(shard, id, written),
        ...sets,
        shardEntry(event, users),
        PUBLISHED_MARKER_SECONDS,
      );
    }
  }
  const results = await pipeline.exec();
  const failed = results?.find(([error]) => error);
  if (failed?.[0]) throw failed[0];
}
