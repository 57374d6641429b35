// Publishing after commit: one XADD per affected shard, carrying the event and the shard's
// share of the recipients. Redis Streams keep notifications while no events replica reads them
// (plain PUBLISH would drop them during a restart).
import type { Redis } from 'ioredis';
import { keys, shardOf } from './keys';
import type { Notification } from './types';

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

export async function publishNotification(
  redis: Redis,
  shards: number,
  notification: Notification,
): Promise<void> {
  const byShard = usersByShard(notification.users, shards);
  if (byShard.size === 0) return;
  const event = JSON.stringify(notification.event);
  const pipeline = redis.pipeline();
  for (const [shard, users] of byShard)
    pipeline.xadd(keys.shardLog(shard), '*', 'n', shardEntry(event, users));
  const results = await pipeline.exec();
  const failed = results?.find(([error]) => error);
  if (failed?.[0]) throw failed[0];
}

// Appends an outbox row's share of a notification to a shard's log unless it already was:
// the after-commit fast path and the relay may both try the same row.
// KEYS: log, published marker. ARGV: notification JSON, marker lifetime (s).
const PUBLISH_ONCE = `
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('XADD', KEYS[1], '*', 'n', ARGV[1])
  return 1
end
return 0`;

/** Long enough for any relay to have seen the row (it deletes rows once published). */
const PUBLISHED_MARKER_SECONDS = 24 * 60 * 60;

/** Publishes outbox rows, each exactly once per shard whoever calls (see PUBLISH_ONCE). */
export async function publishOutboxRows(
  redis: Redis,
  shards: number,
  rows: { id: string; notification: Notification }[],
): Promise<void> {
  if (rows.length === 0) return;
  const pipeline = redis.pipeline();
  for (const { id, notification } of rows) {
    const event = JSON.stringify(notification.event);
    for (const [shard, users] of usersByShard(notification.users, shards))
      pipeline.eval(
        PUBLISH_ONCE,
        2,
        keys.shardLog(shard),
        keys.published(shard, id),
        shardEntry(event, users),
        PUBLISHED_MARKER_SECONDS,
      );
  }
  const results = await pipeline.exec();
  const failed = results?.find(([error]) => error);
  if (failed?.[0]) throw failed[0];
}
