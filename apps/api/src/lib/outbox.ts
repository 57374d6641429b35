// The event outbox (docs/events.md): an action's notifications are written in its own
// transaction, so a committed change always has them; after commit they are published and
// their rows deleted. Rows a crash left behind (the process died between commit and publish)
// are published by the relay. Publishing deduplicates by row id, so each row reaches each
// shard's log exactly once, whoever publishes it.
import { getConfig } from '@parley/config';
import {
  afterAnswerSettled,
  afterPromiseCallbacks,
  outsideTransaction,
  query,
  statement,
  type ActionContext,
} from '@parley/db';
import { getRedis, publishOutboxRows, type Notification } from '@parley/events';
import { isDependencyDown } from '@parley/http';
import { getLogger } from '@parley/logger';

export interface OutboxRow {
  id: string;
  /** When the row was written, in microseconds since the epoch (its `created_at`): with the
   * id, what tells it from a row of an earlier incarnation of the database (see
   * keys.published). */
  written: string;
  notification: Notification;
}

export interface OutboxWrite {
  rows: OutboxRow[];
  /** Committed rows older than these that were still waiting to be published when they were
   * written (their request is publishing them, a publish failed, or its process died): they
   * must go out first. Null when there were more than WAITING_READ. */
  olderWaiting: string[] | null;
  /** Single-statement writes of this process numbered below this one (`outboxWriteInFlight`)
   * began before it: rows it found waiting may be theirs. */
  after: number;
}

/** How many waiting rows an outbox write reads (see `publishOlder`). */
const WAITING_READ = 100;

/** A timestamp as whole microseconds since the epoch (int8: a string from node-postgres). */
const WRITTEN_US = (timestamp: string) => `floor(extract(epoch FROM ${timestamp}) * 1000000)::int8`;

/** The outbox rows of a write: a CTE named `outbox` that inserts them in order, and the
 * columns that report them (`OutboxColumns`). `notifications` and `published` name the
 * statement's parameters that `outboxParams` fills. A change written in a single statement
 * (PostgreSQL runs it as its own transaction, see actions/messages.ts) puts its outbox rows in
 * that statement this way, and so does `writeOutbox`. The subquery runs on the statement's
 * snapshot: it sees committed rows still waiting, not the ones inserted here. Ids are int8:
 * node-postgres gives them as strings. */
export function outboxSql(
  notifications: string,
  published: string,
): { cte: string; columns: string } {
  return {
    cte: `outbox AS (
      INSERT INTO event_outbox (notification)
      SELECT n FROM json_array_elements(${notifications}::json) WITH ORDINALITY AS t(n, i)
      ORDER BY i
      RETURNING id)`,
    // Ids follow the insertion order, which ORDER BY i fixes. The rows' created_at is the
    // transaction's now(), the same for all of them.
    columns: `ARRAY(SELECT id FROM outbox ORDER BY id) AS outbox_ids,
      ${WRITTEN_US('now()')} AS outbox_written,
      ARRAY(SELECT id FROM event_outbox WHERE id <> ALL(${published}::bigint[])
        ORDER BY id LIMIT ${WAITING_READ + 1}) AS outbox_waiting`,
  };
}

export interface OutboxColumns {
  outbox_ids: string[];
  outbox_written: string;
  outbox_waiting: string[];
}

/** The parameters of `outboxSql`: the notifications as one JSON array (node-postgres would
 * escape every quote of each one given as an array element), and the rows this process has
 * published and not yet deleted (see `forgetPublished`), which are not waiting for anyone. */
export function outboxParams(notifications: Notification[]): [string, string[]] {
  return [JSON.stringify(notifications), [...publishedRows()]];
}

/** The write a statement made (`after`: see OutboxWrite). */
export function outboxWriteOf(
  row: OutboxColumns,
  notifications: Notification[],
  after: number,
): OutboxWrite {
  const ids = row.outbox_ids;
  const first = ids.length > 0 ? BigInt(ids[0]!) : null;
  return {
    rows: ids.map((id, index) => ({
      id,
      written: row.outbox_written,
      notification: notifications[index]!,
    })),
    olderWaiting:
      row.outbox_waiting.length > WAITING_READ
        ? null
        : row.outbox_waiting.filter((id) => first !== null && BigInt(id) < first),
    after,
  };
}

const OUTBOX = outboxSql('$1', '$2');
const insertOutboxRows = statement<
  OutboxColumns & { auth_changed: string | null },
  [string, string[]]
>(`
  WITH ${OUTBOX.cte}
  SELECT ${OUTBOX.columns}, current_setting('parley.auth_changed', true) AS auth_changed`);

const deleteOutboxRows = statement<never, [string[]]>(
  'DELETE FROM event_outbox WHERE id = ANY($1::bigint[])',
);

/** deleteOutboxRows committing without waiting for its WAL to reach the disk
 * (`synchronous_commit` off for its own transaction only: `set_config(…, true)` holds until
 * the statement's implicit transaction commits). A deletion lost in a crash only makes the
 * relay publish the rows again, which publishing deduplicates. Its flush was one per
 * sequential send, and the next send's commit waited behind it (docs/events.md). Never inside
 * a caller's transaction: that transaction's own writes would commit the same way. */
const deletePublishedRows = statement<never, [string[]]>(`
  WITH unhurried AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true))
  DELETE FROM event_outbox WHERE id = ANY($1::bigint[]) AND EXISTS (SELECT FROM unhurried)`);

/** Writes notifications in the caller's transaction (typed SQL joins it), in order; returns
 * their rows. */
export async function writeOutbox(
  ctx: Pick<ActionContext, 'tx' | 'authChangesRead'>,
  notifications: Notification[],
): Promise<OutboxWrite> {
  if (notifications.length === 0) return { rows: [], olderWaiting: [], after: 0 };
  const after = writesStarted + 1;
  // Reading which authentication rows the transaction changed (see runAction) here costs no
  // statement of its own.
  const [row] = await query(insertOutboxRows, outboxParams(notifications));
  ctx.authChangesRead(row!.auth_changed);
  return outboxWriteOf(row!, notifications, after);
}

/** Rows this process committed and is publishing now, with the publish. */
const publishing = new Map<string, Promise<void>>();

/** After commit: publishes the rows; their deletion follows off the request's path (see
 * `forgetPublished`). A failure leaves them to the relay. Rows still waiting from before go
 * first, in order, so that clients see changes in the order they were committed even after a
 * failed publish. */
export async function publishCommitted(write: OutboxWrite): Promise<void> {
  if (write.rows.length === 0) return;
  await publishRows(write);
}

/** publishCommitted for a request that answers without waiting for Redis's reply: the answer
 * need not wait for it, since the change is committed with its notifications stored beside it,
 * and events reach clients through the fan-out, before or after the answer, as in Zulip. The
 * publish starts once the promise callbacks now under way have run, which is when the request
 * writes its answer: its own work (a script's keys for every recipient: about half a
 * millisecond for a channel of 1,001) came before the answer otherwise. A later write of this
 * process still publishes after these rows (they count as publishing from now on, see
 * `olderFirst`). A failure is logged and leaves the rows to the relay. `outboxSettled` waits
 * for these publishes. */
export function publishWithoutWaiting(write: OutboxWrite): void {
  if (write.rows.length === 0) return;
  const publish: Promise<void> = publishRows(write, afterPromiseCallbacks)
    .catch((error: unknown) => {
      // Redis away is an outage the relay recovers from, not a bug.
      const level = isDependencyDown(error) ? 'warn' : 'error';
      getLogger()[level]('publishing committed events failed; the relay will take them', {
        error,
        rows: write.rows.length,
      });
    })
    .finally(() => unawaited.delete(publish));
  unawaited.add(publish);
}

/** Publishes started by publishWithoutWaiting and not yet done. */
const unawaited = new Set<Promise<void>>();

/** Resolves once the publishes started without waiting so far are done (tests that read the
 * shard logs right after a request). */
export async function publishesSettled(): Promise<void> {
  while (unawaited.size > 0) await Promise.all(unawaited);
}

/** Publishes the rows (after `start`, when given), older waiting rows first; they count as
 * publishing from the call on. */
async function publishRows(write: OutboxWrite, start?: () => Promise<void>): Promise<void> {
  const published = (async () => {
    await start?.();
    await olderFirst(write);
    await publishOutboxRows(getRedis(), getConfig().EVENT_SHARDS, write.rows);
  })();
  for (const row of write.rows) publishing.set(row.id, published);
  try {
    await published;
    forgetPublished(write.rows.map((row) => row.id));
  } finally {
    for (const row of write.rows) publishing.delete(row.id);
  }
}

/** Under concurrent changes nearly every write finds rows that requests of this same process
 * committed a moment before and are publishing: it waits for those publishes rather than read
 * and publish the rows again (each republished row cost a statement, a Redis script per shard
 * and a deletion). A row committed by a send of this process whose answer has not been read
 * yet is waited for too (`outboxWriteInFlight`). Rows of other processes, or of publishes that
 * failed, are published from the table. */
async function olderFirst(write: OutboxWrite): Promise<void> {
  if (write.olderWaiting === null) return publishOlder(write.rows[0]!.id);
  let older = unsettled(write.olderWaiting);
  if (older.length === 0) return;
  if (older.some((id) => !publishing.has(id))) {
    const earlier = [...writesInFlight].filter(([started]) => started < write.after);
    if (earlier.length > 0) {
      await Promise.all(earlier.map(([, settled]) => settled));
      older = unsettled(older);
    }
  }
  const ours = older.map((id) => publishing.get(id));
  if (ours.every((publish) => publish !== undefined)) {
    const settled = await Promise.allSettled(ours);
    if (settled.every((outcome) => outcome.status === 'fulfilled')) return;
  }
  await publishOlder(write.rows[0]!.id);
}

/** Rows not yet known to be published: not published since the write read them (their
 * deletion on its way, or done). */
function unsettled(ids: string[]): string[] {
  return ids.filter((id) => !toDelete.has(id) && !deleting.has(id) && !deleted.has(id));
}

/** Single-statement writes of this process (actions/messages.ts sendAlone) under way, by the
 * order they began in: their rows are visible to other statements from their commit, before
 * their request has read the answer that names them and begun publishing them. A write waits
 * only for those that began before its own statement, so that another replica's rows are not
 * held behind this process's later sends (a later send that did commit a row it saw, having
 * overtaken it, only has that row published twice, harmlessly). */
const writesInFlight = new Map<number, Promise<void>>();
let writesStarted = 0;

/** Marks a single-statement outbox write as under way until `done()`, which its caller calls
 * once it has handed the rows to `publishWithoutWaiting`, or failed (in a `finally`: a write
 * never done would hold every later write that found a row of this process waiting).
 * `started` is the write's `after` (see OutboxWrite). */
export function outboxWriteInFlight(): { started: number; done(): void } {
  const started = ++writesStarted;
  let done!: () => void;
  writesInFlight.set(started, new Promise<void>((resolve) => (done = resolve)));
  return {
    started,
    done: () => {
      writesInFlight.delete(started);
      done();
    },
  };
}

// Deleting published rows is bookkeeping no request waits for: the deletions of every request
// published in the same turn of the event loop go out as one statement. Until a row's deletion
// has committed, this process's own outbox writes leave it out of `olderWaiting` (outboxSql's
// `published`), so a published row never makes a later change republish it. Should a deletion fail, the relay republishes the rows
// (deduplicated) and deletes them.
const toDelete = new Set<string>();
const deleting = new Set<string>();
/** Rows this process published and then deleted, the latest DELETED_KEPT of them: a write's
 * statement that began before such a deletion committed still saw the row waiting, and under
 * concurrent sends most of them did (their own commit waits for the disk, the deletion does
 * not). Without this each such write read the table and published those rows again (8
 * concurrent senders: a quarter of the sends). Forgetting one only costs that. */
const deleted = new Set<string>();
const DELETED_KEPT = 10_000;
const batches = new Set<Promise<void>>();
let batchScheduled = false;

function forgetPublished(ids: string[]): void {
  for (const id of ids) toDelete.add(id);
  if (batchScheduled) return;
  batchScheduled = true;
  // Outside the caller's context: the batch is every request's, not part of any transaction.
  const batch: Promise<void> = outsideTransaction(() =>
    new Promise<void>((resolve) => setImmediate(resolve)).then(deletePublished),
  ).finally(() => batches.delete(batch));
  batches.add(batch);
}

async function deletePublished(): Promise<void> {
  // Rows published from here on wait for the next batch.
  batchScheduled = false;
  const ids = [...toDelete];
  toDelete.clear();
  for (const id of ids) deleting.add(id);
  try {
    await query(deletePublishedRows, [ids]);
    for (const id of ids) deleted.add(id);
    for (const id of deleted) {
      if (deleted.size <= DELETED_KEPT) break;
      deleted.delete(id);
    }
  } catch (error) {
    getLogger().warn('outbox rows published but not deleted; the relay will take them', {
      error,
      rows: ids.length,
    });
  } finally {
    for (const id of ids) deleting.delete(id);
  }
}

function* publishedRows(): Iterable<string> {
  yield* toDelete;
  yield* deleting;
}

/** Resolves once the publishes started without waiting, the deletions of rows published so
 * far and the work requests started after their answers (`afterAnswer`: push notification
 * jobs) are done (tests; shutdown), or after `limitMs` (a stopping process must not hang on a
 * Redis or a database that does not answer: the relay takes what is left). */
export async function outboxSettled(limitMs = Infinity): Promise<void> {
  const settled = (async () => {
    await afterAnswerSettled();
    while (unawaited.size > 0 || batches.size > 0) {
      await Promise.all(unawaited);
      await Promise.all(batches);
    }
  })();
  if (limitMs === Infinity) return settled;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([settled, new Promise((resolve) => (timer = setTimeout(resolve, limitMs)))]);
  clearTimeout(timer);
}

/** How long a stopping process waits for its outbox deletions. */
export const SETTLE_ON_STOP_MS = 2_000;

/** Rows below this many are published by the request that found them, at once: under
 * concurrent sends on several replicas many requests find the rows of another replica's
 * requests committed a moment before and not yet published, and making each wait for one
 * drain at a time serialized them all (8 concurrent senders: POST p50 133 ms, send → event p50
 * 2.7 s). Publishing is idempotent per row (PUBLISH_ONCE), so two requests publishing the same
 * row is harmless. */
const SMALL_BACKLOG = 100;

/** A larger backlog (after an outage) is drained one drain at a time per process: every
 * request would otherwise publish the same backlog at once. A request that waited finds it
 * (mostly) gone. */
let draining: Promise<void> | null = null;

async function publishOlder(below: string): Promise<void> {
  if ((await relayOutbox({ below, limit: SMALL_BACKLOG })) < SMALL_BACKLOG) return;
  while (draining) await draining;
  draining = (async () => {
    while ((await relayOutbox({ below })) > 0);
  })().finally(() => (draining = null));
  await draining;
}

/** Publishes rows, then deletes them, waiting for both (the relay's next pass must not find
 * them again). */
async function publishAndForget(rows: OutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await publishOutboxRows(getRedis(), getConfig().EVENT_SHARDS, rows);
  await query(deleteOutboxRows, [rows.map((row) => row.id)]);
}

/** How long a row may wait for its fast path before the relay takes it. */
export const RELAY_AFTER_MS = 5_000;

const rowsBelow = statement<OutboxRow, [string, string[], number]>(`
  SELECT id, ${WRITTEN_US('created_at')} AS written, notification FROM event_outbox
  WHERE id < $1::bigint AND id <> ALL($2::bigint[])
  ORDER BY id LIMIT $3`);

// A prepared statement, not Prisma's $queryRaw: every API replica runs it every second, idle
// or not, and Prisma compiled it anew each time (most of an idle replica's own work).
const rowsOlderThan = statement<OutboxRow, [number, number]>(`
  SELECT id, ${WRITTEN_US('created_at')} AS written, notification FROM event_outbox
  WHERE created_at <= now() - $1::int * interval '1 millisecond'
  ORDER BY id LIMIT $2`);

/** One relay pass: publishes (and deletes) rows old enough that their own request must have
 * died. Returns how many rows it handled. */
export async function relayOutbox({
  olderThanMs = RELAY_AFTER_MS,
  below,
  limit = 500,
}: {
  olderThanMs?: number;
  /** Only rows with smaller ids, of any age (olderThanMs does not apply). */
  below?: string;
  limit?: number;
} = {}): Promise<number> {
  // Rows below a given id are taken whatever their age (no clock to compare), except those
  // this process published already (their deletion is on its way); otherwise rows old enough
  // by the database's own clock.
  const rows =
    below === undefined
      ? await query(rowsOlderThan, [olderThanMs, limit])
      : await query(rowsBelow, [below, [...publishedRows()], limit]);
  await publishAndForget(rows);
  return rows.length;
}

const backlog = statement<{ rows: string; oldestSeconds: number | null }, []>(`
  SELECT count(*) AS rows, extract(epoch FROM now() - min(created_at))::float8 AS "oldestSeconds"
  FROM event_outbox`);

/** Rows waiting to be published and the age of the oldest (metrics: a growing backlog means
 * publishing fails, e.g. Redis is down, or no relay runs). */
export async function outboxBacklog(): Promise<{ rows: number; oldestSeconds: number }> {
  const [row] = await query(backlog, []);
  return { rows: Number(row?.rows ?? 0), oldestSeconds: row?.oldestSeconds ?? 0 };
}
