// Which pooled connection a runAction transaction runs on, so typed SQL (sql.ts) can join it.
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

export interface TransactionBinding {
  client: pg.PoolClient | undefined;
  /** False once the transaction has ended: a callback that outlived it must not reach its
   * connection, which is back in the pool and perhaps someone else's. */
  open: boolean;
  /** The connection went back to the pool while the action still runs (Prisma ended the
   * transaction at its timeout): nothing may run on it any more. */
  released: boolean;
}

const transactions = new AsyncLocalStorage<TransactionBinding>();

/** A pool that tells runAction which connection its Prisma transaction checked out: Prisma's
 * driver adapter begins a transaction with a promise-style `connect()` (its plain queries use
 * the callback style), called within the action's async context. */
export class TransactionAwarePool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(
    callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: () => void) => void,
  ): void;
  override connect(
    callback?: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: () => void,
    ) => void,
  ): Promise<pg.PoolClient> | void {
    if (callback) return super.connect(callback);
    const connecting = super.connect();
    const binding = transactions.getStore();
    if (binding?.open && !binding.client && !binding.released)
      return connecting.then((client) => {
        binding.client = client;
        // pg-pool gives each checkout its own release(): the binding lets go with it.
        const release = client.release;
        client.release = (error?: Error | boolean) => {
          binding.client = undefined;
          binding.released = true;
          client.release = release;
          release.call(client, error);
        };
        return client;
      });
    return connecting;
  }
}

/** Runs `body` (which begins one transaction: Prisma's, or runAction's own on a pooled
 * connection) so that `query` inside it uses that transaction's connection. */
export async function withTransactionBinding<T>(body: () => Promise<T>): Promise<T> {
  const binding: TransactionBinding = { client: undefined, open: true, released: false };
  try {
    return await transactions.run(binding, body);
  } finally {
    binding.open = false;
    binding.client = undefined;
  }
}

/** Runs `body` outside any transaction of the current async context: for work that outlives
 * the request that started it (it must not join a transaction that request may still hold). */
export function outsideTransaction<T>(body: () => T): T {
  return transactions.exit(body);
}

/** The open transaction of the current async context, if any. */
export function currentTransaction(): TransactionBinding | undefined {
  const binding = transactions.getStore();
  return binding?.open ? binding : undefined;
}
