// Publishing after commit: one XADD per affected shard, carrying the event and the shard's
// share of the recipients. Redis Streams keep notifications while no events replica reads them
// (plain PUBLISH would drop them during a restart).
import type { Redis } from 'ioredis';
import { keys, shardOf } from './keys';
import type { Notification } from './types';

export async function publishNotification(
  redis: Redis,
  shards: number,
  notification: Notification,
): Promise<void> {
  const byShard = new Map<number, number[]>();
  for (const userId of notification.users) {
    const shard = shardOf(userId, shards);
    const users = byShard.get(shard) ?? [];
    users.push(userId);
    byShard.set(shard, users);
  }
  if (byShard.size === 0) return;
  const pipeline = redis.pipeline();
  for (const [shard, users] of byShard) {
    pipeline.xadd(
      keys.shardLog(shard),
      '*',
      'n',
      JSON.stringify({ event: notification.event, users }),
    );
  }
  const results = await pipeline.exec();
  const failed = results?.find(([error]) => error);
  if (failed?.[0]) throw failed[0];
}
