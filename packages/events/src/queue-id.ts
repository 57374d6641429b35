// Queue ids carry their shard, so any events replica finds a queue's keys without a lookup:
// `<shard>:<uuid>`. Clients treat them as opaque strings.
import { randomUUID } from 'node:crypto';

const QUEUE_ID = /^(\d{1,4}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function makeQueueId(shard: number): string {
  return `${shard}:${randomUUID()}`;
}

/** The shard of a well-formed queue id below `shards`, else null. */
export function parseQueueId(
  queueId: string,
  shards: number,
): { shard: number; queueId: string } | null {
  const match = QUEUE_ID.exec(queueId);
  if (!match) return null;
  const shard = Number(match[1]);
  return shard < shards ? { shard, queueId } : null;
}
