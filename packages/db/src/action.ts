// Every state change runs in one transaction and registers what must happen after it commits
// (publishing events) with `onCommit`, like Zulip's send_event_on_commit: nothing is published
// for data that was rolled back.
import type { Prisma } from '@prisma/client';
import { getLogger } from '@parley/logger';
import { getPrisma } from './client';

export type Tx = Prisma.TransactionClient;

export interface ActionContext {
  tx: Tx;
  /** Runs `callback` after the transaction commits; never if it rolls back. */
  onCommit(callback: () => Promise<void> | void): void;
  /** Runs `callback` inside the transaction once the action is done, just before COMMIT
   * (the event outbox writes what the action queued there). */
  beforeCommit(callback: () => Promise<void>): void;
}

export interface RunActionOptions {
  isolationLevel?: Prisma.TransactionIsolationLevel;
  /** Milliseconds the transaction may run (Prisma's default of 5 s is short for bulk work). */
  timeout?: number;
}

export async function runAction<T>(
  action: (ctx: ActionContext) => Promise<T>,
  options: RunActionOptions = {},
): Promise<T> {
  const callbacks: Array<() => Promise<void> | void> = [];
  const result = await getPrisma().$transaction(
    async (tx) => {
      const finishing: Array<() => Promise<void>> = [];
      const value = await action({
        tx,
        onCommit: (callback) => callbacks.push(callback),
        beforeCommit: (callback) => finishing.push(callback),
      });
      for (const callback of finishing) await callback();
      return value;
    },
    { timeout: options.timeout ?? 15_000, isolationLevel: options.isolationLevel },
  );
  crashHereIfAsked();
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
