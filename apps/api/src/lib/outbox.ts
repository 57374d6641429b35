// The event outbox (docs/events.md): an action's notifications are written in its own
// transaction, so a committed change always has them; after commit they are published and
// their rows deleted. Rows a crash left behind (the process died between commit and publish)
// are published by the relay. Publishing deduplicates by row id, so each row reaches each
// shard's log exactly once, whoever publishes it.
import { getConfig } from '@parley/config';
import { getPrisma, type Tx } from '@parley/db';
import { getRedis, publishOutboxRows, type Notification } from '@parley/events';

export interface OutboxRow {
  id: string;
  notification: Notification;
}

/** Writes notifications in the caller's transaction, in order; returns their rows. */
export async function writeOutbox(tx: Tx, notifications: Notification[]): Promise<OutboxRow[]> {
  if (notifications.length === 0) return [];
  const rows = await tx.$queryRaw<{ id: bigint }[]>`
    INSERT INTO event_outbox (notification)
    SELECT n FROM unnest(${notifications.map((n) => JSON.stringify(n))}::jsonb[])
      WITH ORDINALITY AS t(n, i)
    ORDER BY i
    RETURNING id`;
  // RETURNING follows the insertion order, which ORDER BY i fixes.
  return rows.map((row, index) => ({ id: row.id.toString(), notification: notifications[index]! }));
}

/** Publishes rows, then deletes them; a failure leaves them to the relay. */
export async function publishAndForget(rows: OutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await publishOutboxRows(getRedis(), getConfig().EVENT_SHARDS, rows);
  await getPrisma().$executeRaw`
    DELETE FROM event_outbox WHERE id = ANY(${rows.map((row) => row.id)}::bigint[])`;
}

/** How long a row may wait for its fast path before the relay takes it. */
export const RELAY_AFTER_MS = 5_000;

/** One relay pass: publishes (and deletes) rows old enough that their own request must have
 * died. Returns how many rows it handled. */
export async function relayOutbox({
  olderThanMs = RELAY_AFTER_MS,
  limit = 500,
}: { olderThanMs?: number; limit?: number } = {}): Promise<number> {
  const cutoff = new Date(Date.now() - olderThanMs);
  const rows = await getPrisma().$queryRaw<{ id: bigint; notification: Notification }[]>`
    SELECT id, notification FROM event_outbox WHERE created_at < ${cutoff}
    ORDER BY id LIMIT ${limit}`;
  await publishAndForget(
    rows.map((row) => ({ id: row.id.toString(), notification: row.notification })),
  );
  return rows.length;
}
