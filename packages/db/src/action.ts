// Every state change runs in one transaction and registers what must happen after it commits
// (publishing events) with `onCommit`, like Zulip's send_event_on_commit: nothing is published
// for data that was rolled back. A change written in a single statement may skip the explicit
// transaction (PostgreSQL commits the statement alone): `afterStatementCommitted`.
import type { Prisma } from '@prisma/client';
import { getLogger } from '@parley/logger';
import { getPool, getPrisma } from './client';
import { query, statement } from './sql';
import { withTransactionBinding } from './transaction-pool';

export type Tx = Prisma.TransactionClient;

export interface ActionContext {
  tx: Tx;
  /** Runs `callback` after the transaction commits; never if it rolls back. */
  onCommit(callback: () => Promise<void> | void): void;
  /** Runs `callback` inside the transaction once the action is done, just before COMMIT
   * (the event outbox writes what the action queued there). */
  beforeCommit(callback: () => Promise<void>): void;
  /** A beforeCommit callback that read `current_setting('parley.auth_changed', true)` in its
   * own statement (the outbox INSERT does) hands it over here, sparing runAction a statement. */
  authChangesRead(setting: string | null): void;
}

export interface RunActionOptions {
  isolationLevel?: Prisma.TransactionIsolationLevel;
  /** Milliseconds the transaction may run (Prisma's default of 5 s is short for bulk work);
   * with `prisma: false`, each statement and each wait between them. */
  timeout?: number;
  /** False for an action that writes only through typed SQL: its transaction is begun and
   * committed on a pooled connection directly, without Prisma's interactive-transaction
   * machinery (about a millisecond of CPU per transaction), and `ctx.tx` throws. */
  prisma?: boolean;
}

/** What `ctx.tx` is in an action run with `prisma: false`: any use is a bug to fix at once.
 * One per transaction, since the object also identifies its transaction (lib/events.ts keys
 * the events queued in it by `ctx.tx`). */
function withoutPrisma(): Tx {
  return new Proxy({} as Tx, {
    get(_target, property) {
      throw new Error(
        `ctx.tx.${String(property)} in an action run without Prisma (runAction prisma: false)`,
      );
    },
  });
}

/** Called after a commit with the user_profile and realm rows it changed ("table:id"): the
 * in-process caches of authentication drop them before the next request (other processes learn
 * it from the NOTIFY of the same trigger, migration 20261123040000_auth_change_marker). */
export type AuthChangeListener = (changes: string[]) => void;
const authChangeListeners = new Set<AuthChangeListener>();

export function onCommittedAuthChanges(listener: AuthChangeListener): () => void {
  authChangeListeners.add(listener);
  return () => authChangeListeners.delete(listener);
}

const authChangedSetting = statement<{ changed: string | null }>(
  `SELECT current_setting('parley.auth_changed', true) AS changed`,
);

/** Read in the action's transaction (typed SQL joins it). */
async function changedAuthRows(): Promise<string[]> {
  const [row] = await query(authChangedSetting, []);
  return parseAuthChanges(row?.changed ?? null);
}

function parseAuthChanges(setting: string | null): string[] {
  return (setting ?? '').split(',').filter(Boolean);
}

export async function runAction<T>(
  action: (ctx: ActionContext) => Promise<T>,
  options: RunActionOptions = {},
): Promise<T> {
  const callbacks: Array<() => Promise<void> | void> = [];
  let authChanges: string[] = [];
  let read: string[] | undefined;
  const body = async (tx: Tx) => {
    const finishing: Array<() => Promise<void>> = [];
    const value = await action({
      tx,
      onCommit: (callback) => callbacks.push(callback),
      beforeCommit: (callback) => finishing.push(callback),
      authChangesRead: (setting) => (read = parseAuthChanges(setting)),
    });
    // Only a reading taken by the last callback is final: earlier ones precede its writes.
    for (const callback of finishing) {
      read = undefined;
      await callback();
    }
    authChanges = read ?? (await changedAuthRows());
    return value;
  };
  const result = await withTransactionBinding(() =>
    options.prisma === false
      ? sqlTransaction(body, options.timeout ?? 15_000, options.isolationLevel)
      : getPrisma().$transaction(body, {
          timeout: options.timeout ?? 15_000,
          isolationLevel: options.isolationLevel,
        }),
  );
  crashHereIfAsked();
  if (authChanges.length > 0) for (const listener of authChangeListeners) listener(authChanges);
  await runCommitCallbacks(callbacks);
  return result;
}

/** Serializes one user's writers that must see each other's result (a size limit, a device
 * record): the user's row stays locked until the transaction ends. NO KEY UPDATE leaves rows
 * that merely reference the user (they take KEY SHARE) free to be written meanwhile. */
export async function lockUserRow(ctx: ActionContext, userId: number): Promise<void> {
  await ctx.tx.$executeRaw`SELECT 1 FROM user_profile WHERE id = ${userId} FOR NO KEY UPDATE`;
}

/** What runAction does after its commit, for a change written in one statement outside any
 * transaction (PostgreSQL commits such a statement alone: no BEGIN and COMMIT round trips).
 * Such a statement must change no authentication rows (user_profile, realm): their caches
 * learn of it only by NOTIFY then. */
export async function afterStatementCommitted(
  callbacks: Array<() => Promise<void> | void>,
): Promise<void> {
  crashHereIfAsked();
  await runCommitCallbacks(callbacks);
}

/** Work after a commit that the request need not wait for (queueing a message's push
 * notifications): it starts once the promise callbacks under way have run (see
 * `afterPromiseCallbacks`), so the answer does not wait for its round trips. Its failure is
 * logged as an after-commit callback's is; `afterAnswerSettled` waits for what was started
 * (stopping a process, tests). */
export function afterAnswer(work: () => Promise<void> | void): void {
  const started: Promise<void> = afterPromiseCallbacks()
    .then(() => runCommitCallbacks([work]))
    .finally(() => startedAfterAnswer.delete(started));
  startedAfterAnswer.add(started);
}

const startedAfterAnswer = new Set<Promise<void>>();

/** Resolves once the promise callbacks queued so far, and those they queue, have run: Node runs
 * the callbacks of process.nextTick after them. A request answers in those callbacks. */
export function afterPromiseCallbacks(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}

/** Resolves once the work started by `afterAnswer` so far is done. */
export async function afterAnswerSettled(): Promise<void> {
  while (startedAfterAnswer.size > 0) await Promise.all(startedAfterAnswer);
}

async function runCommitCallbacks(callbacks: Array<() => Promise<void> | void>): Promise<void> {
  for (const callback of callbacks) {
    try {
      await callback();
    } catch (error) {
      // The data is committed; failing the request now would invite a retry that repeats the
      // change. Events are safe in the outbox: its relay publishes what this did not.
      getLogger().error('after-commit callback failed', { error });
    }
  }
}

const ISOLATION_LEVELS: Record<Prisma.TransactionIsolationLevel, string> = {
  ReadUncommitted: 'READ UNCOMMITTED',
  ReadCommitted: 'READ COMMITTED',
  RepeatableRead: 'REPEATABLE READ',
  Serializable: 'SERIALIZABLE',
};

/** A transaction on a pooled connection, which the pool binds to this async context (see
 * transaction-pool.ts), so typed SQL in `body` runs in it. Unlike Prisma's timeout, which
 * bounds the whole transaction, `timeoutMs` bounds each statement and each wait between
 * statements (PostgreSQL cancels the one, ends the session for the other, and the pool drops
 * the connection): set in BEGIN's own round trip. */
async function sqlTransaction<T>(
  body: (tx: Tx) => Promise<T>,
  timeoutMs: number,
  isolationLevel?: Prisma.TransactionIsolationLevel,
): Promise<T> {
  const client = await getPool().connect();
  // pg-pool drops a connection that died; one whose ROLLBACK failed is dropped here, since
  // its transaction may still be open.
  let discard = false;
  try {
    const begin = isolationLevel
      ? `BEGIN ISOLATION LEVEL ${ISOLATION_LEVELS[isolationLevel]}`
      : 'BEGIN';
    const limit = Math.floor(timeoutMs);
    // Three statements in one simple query: one round trip.
    await client.query(
      `${begin}; SET LOCAL statement_timeout = ${limit}; ` +
        `SET LOCAL idle_in_transaction_session_timeout = ${limit}`,
    );
    let value: T;
    try {
      value = await body(withoutPrisma());
    } catch (error) {
      await client.query('ROLLBACK').catch(() => (discard = true));
      throw error;
    }
    // COMMIT of a transaction a failed statement aborted answers ROLLBACK, not an error: an
    // action that swallowed the failure must not have its events published.
    const committed = await client.query('COMMIT');
    if (committed.command !== 'COMMIT') throw new Error('the transaction was rolled back');
    return value;
  } finally {
    client.release(discard);
  }
}

/** Fault injection for the fault tests: with PARLEY_FAULT_KILL_AFTER_COMMIT=N the process
 * dies the moment its Nth transaction has committed, before anything is published, as an API
 * replica killed at the worst time would. Never set outside those tests. */
let commits = 0;
function crashHereIfAsked(): void {
  const after = Number(process.env.PARLEY_FAULT_KILL_AFTER_COMMIT ?? 0);
  if (after > 0 && ++commits >= after) process.kill(process.pid, 'SIGKILL');
}
