// Every state change runs in one transaction and registers what must happen after it commits
// (publishing events) with `onCommit`, like Zulip's send_event_on_commit: nothing is published
// for data that was rolled back.
import type { Prisma } from '@prisma/client';
import { getLogger } from '@parley/logger';
import { getPrisma } from './client';
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
  /** Milliseconds the transaction may run (Prisma's default of 5 s is short for bulk work). */
  timeout?: number;
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

async function changedAuthRows(tx: Tx): Promise<string[]> {
  const [row] = await tx.$queryRaw<{ changed: string | null }[]>`
    SELECT current_setting('parley.auth_changed', true) AS changed`;
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
  const result = await withTransactionBinding(() =>
    getPrisma().$transaction(
      async (tx) => {
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
        authChanges = read ?? (await changedAuthRows(tx));
        return value;
      },
      { timeout: options.timeout ?? 15_000, isolationLevel: options.isolationLevel },
    ),
  );
  crashHereIfAsked();
  if (authChanges.length > 0) for (const listener of authChangeListeners) listener(authChanges);
  for (const callback of callbacks) {
    try {
      await callback();
    } catch (error) {
      // The data is committed; failing the request now would invite a retry that repeats the
      // change. Events are safe in the outbox: its relay publishes what this did not.
      getLogger().error('after-commit callback failed', { error });
    }
  }
  return result;
}

/** Fault injection for the fault tests: with PARLEY_FAULT_KILL_AFTER_COMMIT=N the process
 * dies the moment its Nth transaction has committed, before anything is published, as an API
 * replica killed at the worst time would. Never set outside those tests. */
let commits = 0;
function crashHereIfAsked(): void {
  const after = Number(process.env.PARLEY_FAULT_KILL_AFTER_COMMIT ?? 0);
  if (after > 0 && ++commits >= after) process.kill(process.pid, 'SIGKILL');
}
