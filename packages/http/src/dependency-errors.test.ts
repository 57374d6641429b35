import { isDependencyDown } from './dependency-errors';

describe('isDependencyDown', () => {
  it('recognizes unreachable Redis and PostgreSQL, through causes', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), {
      code: 'ECONNREFUSED',
    });
    expect(isDependencyDown(refused)).toBe(true);
    expect(isDependencyDown(new Error('Connection is closed.'))).toBe(true);
    expect(isDependencyDown(new Error('Command timed out'))).toBe(true);
    // Met by GET /events when Redis was killed under load (test/faults/redis.test.ts).
    const aborted = Object.assign(new Error('Command aborted due to connection close'), {
      name: 'AbortError',
    });
    expect(isDependencyDown(aborted)).toBe(true);
    expect(
      isDependencyDown(Object.assign(new Error('x'), { name: 'MaxRetriesPerRequestError' })),
    ).toBe(true);
    expect(isDependencyDown(Object.assign(new Error("Can't reach"), { code: 'P1001' }))).toBe(true);
    expect(isDependencyDown(new Error('wrapped', { cause: refused }))).toBe(true);
    expect(isDependencyDown(new AggregateError([refused], 'all attempts failed'))).toBe(true);
  });

  it('recognizes PostgreSQL shutting down or restarting, however Prisma wraps it', () => {
    // What a raw query met during a fast shutdown and the restart after it.
    const rawQuery = (sqlstate: string, text: string) =>
      Object.assign(
        new Error(
          `Invalid \`prisma.$queryRaw()\` invocation: Raw query failed. Code: \`${sqlstate}\`. Message: \`${text}\``,
        ),
        { name: 'PrismaClientKnownRequestError', code: 'P2010' },
      );
    expect(
      isDependencyDown(rawQuery('57P01', 'terminating connection due to administrator command')),
    ).toBe(true);
    expect(isDependencyDown(rawQuery('57P03', 'the database system is shutting down'))).toBe(true);
    expect(
      isDependencyDown(Object.assign(new Error('x'), { code: 'P2010', meta: { code: '08006' } })),
    ).toBe(true);
    expect(isDependencyDown(Object.assign(new Error('terminating'), { code: '57P01' }))).toBe(true);
    // A raw query that failed for its own reasons is a bug.
    expect(isDependencyDown(rawQuery('42703', 'column "x" does not exist'))).toBe(false);
  });

  it('leaves real bugs alone', () => {
    expect(isDependencyDown(new TypeError('x is not a function'))).toBe(false);
    expect(isDependencyDown(Object.assign(new Error('duplicate key'), { code: 'P2002' }))).toBe(
      false,
    );
    expect(isDependencyDown(null)).toBe(false);
    expect(isDependencyDown('text')).toBe(false);
  });
});
