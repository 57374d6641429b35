// Authentication from memory: after a first request, the organization and the user are not
// read again. Every change that affects them (a new API key, deactivation, a new role, a new
// address, the organization's settings) takes effect on the next request: at once when an
// endpoint made it in this process, and as soon as the NOTIFY arrives when anything else did
// (another replica, plain SQL; the tests wait for it with sync()).
import pg from 'pg';
import { authCache, stopAuthCache } from '@parley/auth';
import { getPrisma, Role } from '@parley/db';
import { outboxSettled } from '../src/lib/outbox';
import {
  api,
  as,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

/** Statements sent to PostgreSQL while `run` runs (this process, every connection). */
async function countStatements(run: () => Promise<unknown>): Promise<number> {
  // Earlier requests' outbox deletions follow their answers: not this request's statements.
  await outboxSettled();
  const spy = jest.spyOn(pg.Client.prototype, 'query');
  try {
    await run();
    // Leaving out the test app's wait for this cache before each request (helpers.ts).
    return spy.mock.calls.filter(
      (call) => !String((call[0] as { text?: string }).text ?? call[0]).includes('pg_notify'),
    ).length;
  } finally {
    spy.mockRestore();
  }
}

let org: TestRealm;

beforeAll(async () => {
  org = await createTestRealm();
  expect(await authCache().listening()).toBe(true);
});

describe('authentication from memory', () => {
  it('reads neither the organization nor the user again once they are known', async () => {
    const user = await createTestUser(org.realm);
    const cold = await countStatements(async () =>
      expectSuccess(await as(user, org.host).get('/users/me')),
    );
    const warm = await countStatements(async () =>
      expectSuccess(await as(user, org.host).get('/users/me')),
    );
    // The organization by host, and the user by address. What remains is the endpoint's own
    // work.
    expect(cold - warm).toBe(2);
    // An unauthenticated endpoint reads nothing to find the organization.
    const settings = await countStatements(async () =>
      expectSuccess(await api.get(org.host, '/server_settings')),
    );
    expect(settings).toBe(0);
  });

  it('reads a user once for requests that miss the cache together', async () => {
    const user = await createTestUser(org.realm);
    const spy = jest.spyOn(pg.Client.prototype, 'query');
    try {
      await Promise.all(
        Array.from({ length: 10 }, async () =>
          expectSuccess(await as(user, org.host).get('/users/me')),
        ),
      );
      const lookups = spy.mock.calls.filter((call) =>
        String((call[0] as { text?: string }).text ?? call[0]).includes('lower(u.delivery_email)'),
      );
      expect(lookups).toHaveLength(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('shares one frozen object per user and organization between requests', async () => {
    const user = await createTestUser(org.realm);
    const realm = (await authCache().realmBySubdomain(org.realm.stringId))!;
    const first = (await authCache().userByEmail(realm, user.deliveryEmail))!;
    const again = (await authCache().userByEmail(realm, user.deliveryEmail))!;
    expect(again).toBe(first);
    expect(await authCache().realmBySubdomain(org.realm.stringId)).toBe(realm);
    // A handler that changed a field would change it for every later request: it fails
    // instead, and the cached values stay as read.
    for (const shared of [first, realm])
      expect(() => Object.assign(shared, { fullName: 'changed', name: 'changed' })).toThrow(
        TypeError,
      );
    expect(first.fullName).toBe(user.fullName);
    expect(realm.name).toBe(org.realm.name);
  });

  it('forgets a regenerated API key at once', async () => {
    const user = await createTestUser(org.realm);
    expectSuccess(await as(user, org.host).get('/users/me'));
    const { api_key: fresh } = expectSuccess(
      await as(user, org.host).post('/users/me/api_key/regenerate'),
    );
    // At once: without waiting for the notification (which would evict it too).
    const atOnce = { atOnce: true };
    expectError(
      await as(user, org.host, atOnce).get('/users/me'),
      'Invalid API key',
      401,
      'UNAUTHORIZED',
    );
    expectSuccess(
      await as({ ...user, apiKey: fresh as string }, org.host, atOnce).get('/users/me'),
    );
  });

  it('refuses a deactivated user at once', async () => {
    const user = await createTestUser(org.realm);
    expectSuccess(await as(user, org.host).get('/users/me'));
    expectSuccess(await as(org.owner, org.host).delete(`/users/${user.id}`));
    expectError(
      await as(user, org.host, { atOnce: true }).get('/users/me'),
      'Account is deactivated',
      401,
      'UNAUTHORIZED',
    );
  });

  it('sees a role changed by plain SQL once its notification arrives', async () => {
    const user = await createTestUser(org.realm);
    expectSuccess(await as(user, org.host).get('/users/me'));
    await getPrisma().$executeRaw`
      UPDATE user_profile SET role = ${Role.ADMINISTRATOR} WHERE id = ${user.id}`;
    await authCache().sync();
    const me = expectSuccess(await as(user, org.host).get('/users/me'));
    expect(me.role).toBe(Role.ADMINISTRATOR);
  });

  // What the send path uses for a direct message's recipients: memory only, never a read.
  it('gives a held user by id or address without a statement, and nobody it does not hold', async () => {
    const user = await createTestUser(org.realm);
    const cache = authCache();
    const peek = () => [
      cache.peekUserById(org.realm.id, user.id)?.id ?? null,
      cache.peekUserByEmail(org.realm, ` ${user.deliveryEmail.toUpperCase()} `)?.id ?? null,
    ];
    expect(await countStatements(async () => expect(peek()).toEqual([null, null]))).toBe(0);
    expectSuccess(await as(user, org.host).get('/users/me'));
    expect(await countStatements(async () => expect(peek()).toEqual([user.id, user.id]))).toBe(0);
    // Only in its own organization.
    expect(cache.peekUserById(org.realm.id + 1, user.id)).toBeNull();
    await getPrisma()
      .$executeRaw`UPDATE user_profile SET full_name = 'Renamed' WHERE id = ${user.id}`;
    await authCache().sync();
    expect(peek()).toEqual([null, null]);
  });

  it('follows an address change', async () => {
    const user = await createTestUser(org.realm);
    expectSuccess(await as(user, org.host).get('/users/me'));
    const moved = `moved-${user.deliveryEmail}`;
    await getPrisma().user.update({ where: { id: user.id }, data: { deliveryEmail: moved } });
    await authCache().sync();
    expectError(await as(user, org.host).get('/users/me'), 'Invalid API key', 401, 'UNAUTHORIZED');
    expectSuccess(await as({ ...user, deliveryEmail: moved }, org.host).get('/users/me'));
  });

  it('sees the organization’s changes and its deactivation on the next request', async () => {
    const own = await createTestRealm('Before');
    expect(expectSuccess(await api.get(own.host, '/server_settings')).realm_name).toBe('Before');
    expectSuccess(await as(own.owner, own.host).get('/users/me'));
    await getPrisma().realm.update({ where: { id: own.realm.id }, data: { name: 'After' } });
    await authCache().sync();
    expect(expectSuccess(await api.get(own.host, '/server_settings')).realm_name).toBe('After');
    await getPrisma().realm.update({ where: { id: own.realm.id }, data: { deactivated: true } });
    await authCache().sync();
    expectError(
      await as(own.owner, own.host).get('/users/me'),
      'This organization has been deactivated',
      401,
      'UNAUTHORIZED',
    );
  });

  it('keeps working when its notification connection is replaced', async () => {
    const user = await createTestUser(org.realm);
    expectSuccess(await as(user, org.host).get('/users/me'));
    await stopAuthCache();
    // Answered from the database while the new cache is not listening yet.
    expectSuccess(await as(user, org.host, { atOnce: true }).get('/users/me'));
    expect(await authCache().listening()).toBe(true);
  });
});
