import { getPrisma, type User } from '@parley/db';
import { as, createTestRealm, expectError, expectSuccess, type TestRealm } from './helpers';

describe('bot storage', () => {
  let org: TestRealm;
  let bot: User;
  beforeAll(async () => {
    org = await createTestRealm();
    const created = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Store bot', short_name: 'store' }),
    );
    bot = await getPrisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
  });
  const storage = () => as(bot, org.host);

  it('stores, reads by key or whole, and removes', async () => {
    expectSuccess(await storage().put('/bot_storage', { storage: { a: '1', b: 'two' } }));
    expect(expectSuccess(await storage().get('/bot_storage')).storage).toEqual({
      a: '1',
      b: 'two',
    });
    expect(expectSuccess(await storage().get('/bot_storage', { keys: ['b'] })).storage).toEqual({
      b: 'two',
    });
    expect(expectSuccess(await storage().get('/bot_storage', { keys: [] })).storage).toEqual({});
    expectSuccess(await storage().put('/bot_storage', { storage: { a: 'one' } }));
    expect(expectSuccess(await storage().get('/bot_storage', { keys: ['a'] })).storage).toEqual({
      a: 'one',
    });
    expectError(await storage().get('/bot_storage', { keys: ['a', 'zzz'] }), 'Key does not exist.');
    // A missing key removes nothing.
    expectError(
      await storage().delete('/bot_storage', { keys: ['a', 'zzz'] }),
      'Key does not exist.',
    );
    expect(expectSuccess(await storage().get('/bot_storage')).storage).toEqual({
      a: 'one',
      b: 'two',
    });
    expectSuccess(await storage().delete('/bot_storage', { keys: ['a'] }));
    expect(expectSuccess(await storage().get('/bot_storage')).storage).toEqual({ b: 'two' });
    expectSuccess(await storage().delete('/bot_storage'));
    expect(expectSuccess(await storage().get('/bot_storage')).storage).toEqual({});
  });

  it('keeps any key, "__proto__" included', async () => {
    expectSuccess(await storage().put('/bot_storage', { storage: '{"__proto__":"x"}' }));
    expect(
      expectSuccess(await storage().get('/bot_storage', { keys: ['__proto__'] })).storage,
    ).toEqual(JSON.parse('{"__proto__":"x"}'));
    expectSuccess(await storage().delete('/bot_storage', { keys: ['__proto__'] }));
  });

  it('refuses values that are not strings, and humans', async () => {
    const put = (storage: string) => as(bot, org.host).put('/bot_storage', { storage });
    expectError(await put(JSON.stringify({ a: 1 })), 'storage["a"] is not a string');
    expectError(await put('[1]'), 'storage is not a dict');
    expectError(await put('{'), 'storage is not valid JSON');
    expectError(await as(org.owner, org.host).get('/bot_storage'), 'Must be a bot user');
  });
});
