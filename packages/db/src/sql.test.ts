// Typed SQL against the real database: inside runAction a prepared statement runs on the
// transaction's own connection (it sees the transaction's writes and rolls back with it);
// outside, on a pooled connection; and a statement is prepared once per connection.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { runAction } from './action';
import { getPrisma } from './client';
import { columnsOf, intArrayLiteral, query, statement } from './sql';

const subdomain = () => `sql${randomBytes(5).toString('hex')}`;
const realmByStringId = statement<{ id: number; name: string }, [string]>(
  'SELECT id, name FROM realm WHERE string_id = $1',
);
const renameRealm = statement<never, [number, string]>('UPDATE realm SET name = $2 WHERE id = $1');

describe('typed SQL', () => {
  it("sees the transaction's uncommitted writes, and Prisma sees its writes", async () => {
    const stringId = subdomain();
    const seen = await runAction(async ({ tx }) => {
      const realm = await tx.realm.create({ data: { stringId, name: 'Before' } });
      const [inside] = await query(realmByStringId, [stringId]);
      await query(renameRealm, [realm.id, 'After']);
      const renamed = await tx.realm.findUniqueOrThrow({ where: { id: realm.id } });
      // Outside the transaction nothing exists yet.
      const outside = await getPrisma().realm.findUnique({ where: { stringId } });
      return { inside, renamed: renamed.name, outside };
    });
    expect(seen.inside?.name).toBe('Before');
    expect(seen.renamed).toBe('After');
    expect(seen.outside).toBeNull();
    expect((await query(realmByStringId, [stringId]))[0]?.name).toBe('After');
  });

  it('rolls back with the transaction', async () => {
    const stringId = subdomain();
    const realm = await getPrisma().realm.create({ data: { stringId, name: 'Kept' } });
    await expect(
      runAction(async () => {
        await query(renameRealm, [realm.id, 'Lost']);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect((await query(realmByStringId, [stringId]))[0]?.name).toBe('Kept');
  });

  it('runs concurrent transactions each on its own connection', async () => {
    const ids = await Promise.all(
      [0, 1, 2, 3].map(async (n) => {
        const stringId = subdomain();
        return runAction(async ({ tx }) => {
          await tx.realm.create({ data: { stringId, name: `Parallel ${n}` } });
          await new Promise((resolve) => setTimeout(resolve, 10));
          return (await query(realmByStringId, [stringId]))[0]?.name;
        });
      }),
    );
    expect(ids).toEqual(['Parallel 0', 'Parallel 1', 'Parallel 2', 'Parallel 3']);
  });

  it('refuses to run once its transaction timed out, instead of on the released connection', async () => {
    const stringId = subdomain();
    const realm = await getPrisma().realm.create({ data: { stringId, name: 'Kept' } });
    await expect(
      runAction(
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 300));
          await query(renameRealm, [realm.id, 'Lost']);
        },
        { timeout: 100 },
      ),
    ).rejects.toThrow();
    expect((await query(realmByStringId, [stringId]))[0]?.name).toBe('Kept');
  });

  it('is not reachable from a callback that outlives its transaction', async () => {
    let late: Promise<unknown> | undefined;
    await runAction(async () => {
      late = new Promise((resolve) => setTimeout(resolve, 20)).then(() =>
        query(realmByStringId, ['no-such-realm']),
      );
    });
    // It runs on a pooled connection instead of the released one.
    await expect(late).resolves.toEqual([]);
  });

  it('sends a named statement, which PostgreSQL prepares once per connection', async () => {
    const spy = jest.spyOn(pg.Client.prototype, 'query');
    try {
      await query(realmByStringId, ['x']);
      const config = spy.mock.calls[0]![0] as unknown as pg.QueryConfig;
      expect(config.name).toMatch(/^parley_[0-9a-f]{20}$/);
      expect(config.text).toBe(realmByStringId.text);
    } finally {
      spy.mockRestore();
    }
  });

  it('plans named statements once per connection (generic plans), without JIT', async () => {
    const settings = statement<{ mode: string; jit: string }>(
      `SELECT current_setting('plan_cache_mode') AS mode, current_setting('jit') AS jit`,
    );
    // No JIT either: compiling costs tens of milliseconds, more than any request's query.
    expect(await query(settings, [])).toEqual([{ mode: 'force_generic_plan', jit: 'off' }]);
    const plansOf = statement<{ generic: string; custom: string }, [string]>(
      `SELECT generic_plans::text AS generic, custom_plans::text AS custom
       FROM pg_prepared_statements WHERE statement = $1`,
    );
    // In a transaction, so every statement runs on one connection (prepared statements and
    // their plan counts are per connection). Executed more often than the five custom plans
    // PostgreSQL would otherwise try first, the statement keeps its one generic plan.
    const [plans] = await runAction(
      async () => {
        for (let i = 0; i < 7; i++) await query(realmByStringId, ['x']);
        return query(plansOf, [realmByStringId.text]);
      },
      { prisma: false },
    );
    expect(plans).toBeDefined();
    expect(plans!.custom).toBe('0');
    expect(Number(plans!.generic)).toBeGreaterThan(0);
  });
});

describe('runAction without Prisma (prisma: false)', () => {
  it('commits typed SQL written in it, and holds it back from others until then', async () => {
    const stringId = subdomain();
    const realm = await getPrisma().realm.create({ data: { stringId, name: 'Before' } });
    const outside = await runAction(
      async () => {
        await query(renameRealm, [realm.id, 'After']);
        expect((await query(realmByStringId, [stringId]))[0]?.name).toBe('After');
        return getPrisma().realm.findUniqueOrThrow({ where: { id: realm.id } });
      },
      { prisma: false },
    );
    expect(outside.name).toBe('Before');
    expect((await query(realmByStringId, [stringId]))[0]?.name).toBe('After');
  });

  it('rolls back on failure, and its connection serves the next transaction', async () => {
    const stringId = subdomain();
    const realm = await getPrisma().realm.create({ data: { stringId, name: 'Kept' } });
    await expect(
      runAction(
        async () => {
          await query(renameRealm, [realm.id, 'Lost']);
          throw new Error('abort');
        },
        { prisma: false },
      ),
    ).rejects.toThrow('abort');
    expect((await query(realmByStringId, [stringId]))[0]?.name).toBe('Kept');
    // A failed statement aborts the transaction; ROLLBACK ends it and the connection is reusable.
    await expect(
      runAction(() => query(statement('SELECT 1 / 0'), []), { prisma: false }),
    ).rejects.toThrow(/division by zero/);
    const names = await Promise.all(
      Array.from({ length: 12 }, () =>
        runAction(async () => (await query(realmByStringId, [stringId]))[0]?.name, {
          prisma: false,
        }),
      ),
    );
    expect(new Set(names)).toEqual(new Set(['Kept']));
  });

  // runAction's own last statement meets the aborted transaction; were there none, COMMIT
  // would answer ROLLBACK, which sqlTransaction refuses as well.
  it('fails, and publishes nothing, when the action swallowed a failed statement', async () => {
    const stringId = subdomain();
    const realm = await getPrisma().realm.create({ data: { stringId, name: 'Kept' } });
    let committed = false;
    await expect(
      runAction(
        async ({ onCommit }) => {
          onCommit(() => {
            committed = true;
          });
          await query(renameRealm, [realm.id, 'Lost']);
          await query(statement('SELECT 1 / 0'), []).catch(() => undefined);
        },
        { prisma: false },
      ),
    ).rejects.toThrow(/aborted|rolled back/);
    expect(committed).toBe(false);
    expect((await query(realmByStringId, [stringId]))[0]?.name).toBe('Kept');
  });

  it('refuses Prisma in it, and gives each transaction its own ctx.tx', async () => {
    await expect(runAction(({ tx }) => tx.realm.findFirst(), { prisma: false })).rejects.toThrow(
      /without Prisma/,
    );
    const seen: object[] = [];
    await Promise.all(
      [0, 1].map(() =>
        runAction(
          async ({ tx }) => {
            seen.push(tx);
          },
          { prisma: false },
        ),
      ),
    );
    expect(seen[0]).not.toBe(seen[1]);
  });

  it('cancels a statement that runs past its timeout, and the connection serves on', async () => {
    await expect(
      runAction(() => query(statement('SELECT pg_sleep(2)'), []), {
        prisma: false,
        timeout: 100,
      }),
    ).rejects.toThrow(/statement timeout/);
    const [row] = await runAction(() => query(statement<{ ok: number }>('SELECT 1 AS ok'), []), {
      prisma: false,
    });
    expect(row?.ok).toBe(1);
  });

  it('takes the isolation level asked for', async () => {
    const level = await runAction(
      async () =>
        (
          await query(
            statement<{ level: string }>(
              "SELECT current_setting('transaction_isolation') AS level",
            ),
            [],
          )
        )[0]?.level,
      { prisma: false, isolationLevel: 'Serializable' },
    );
    expect(level).toBe('serializable');
  });
});

describe('columnsOf', () => {
  it("returns rows shaped as Prisma's model type", async () => {
    const stringId = subdomain();
    const created = await getPrisma().realm.create({ data: { stringId, name: 'Shaped' } });
    const byId = statement<typeof created, [number]>(
      `SELECT ${columnsOf('Realm', 'r')} FROM realm r WHERE r.id = $1`,
    );
    expect((await query(byId, [created.id]))[0]).toEqual(created);
  });

  it('refuses models whose BigInt columns node-postgres would give as strings', () => {
    expect(() => columnsOf('UserMessage', 'um')).toThrow(/UserMessage.flags/);
  });
});

describe('intArrayLiteral', () => {
  const echo = statement<{ ints: number[]; bigs: string[] }, [string, string]>(
    'SELECT $1::int[] AS ints, $2::bigint[] AS bigs',
  );

  it('gives PostgreSQL the integers it was given, empty lists too', async () => {
    const [row] = await query(echo, [
      intArrayLiteral([3, -1, 2 ** 31 - 1]),
      intArrayLiteral([0n, 2n ** 62n]),
    ]);
    expect(row).toEqual({ ints: [3, -1, 2 ** 31 - 1], bigs: ['0', String(2n ** 62n)] });
    expect((await query(echo, [intArrayLiteral([]), intArrayLiteral([])]))[0]).toEqual({
      ints: [],
      bigs: [],
    });
  });

  it('refuses what is not an integer', () => {
    expect(() => intArrayLiteral([1, 1.5])).toThrow('not an integer: 1.5');
    expect(() => intArrayLiteral([Number.NaN])).toThrow('not an integer');
  });
});
