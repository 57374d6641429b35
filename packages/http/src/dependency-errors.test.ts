import { isDependencyDown } from './dependency-errors';

describe('isDependencyDown', () => {
  it('recognizes unreachable Redis and PostgreSQL, through causes', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), {
      code: 'ECONNREFUSED',
    });
    expect(isDependencyDown(refused)).toBe(true);
    expect(isDependencyDown(new Error('Connection is closed.'))).toBe(true);
    expect(isDependencyDown(new Error('Command timed out'))).toBe(true);
    expect(
      isDependencyDown(Object.assign(new Error('x'), { name: 'MaxRetriesPerRequestError' })),
    ).toBe(true);
    expect(isDependencyDown(Object.assign(new Error("Can't reach"), { code: 'P1001' }))).toBe(true);
    expect(isDependencyDown(new Error('wrapped', { cause: refused }))).toBe(true);
    expect(isDependencyDown(new AggregateError([refused], 'all attempts failed'))).toBe(true);
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
