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
    (tx) => action({ tx, onCommit: (callback) => callbacks.push(callback) }),
    { timeout: options.timeout ?? 15_000, isolationLevel: options.isolationLevel },
  );
  for (const callback of callbacks) {
    try {
      await callback();
    } catch (error) {
      // The data is committed; failing the request now would invite a retry that repeats the
      // change. This is the gap the architecture file documents until an outbox closes it.
      getLogger().error('after-commit callback failed', { error });
    }
  }
  return result;
}
