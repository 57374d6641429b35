import jwt from 'jsonwebtoken';
import { getPrisma, Role } from '@parley/db';
import { clearFailedLogins } from '@parley/auth';
import { hashPassword } from '../src/lib/credentials';
import {
  api,
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;

describe('HTTP Basic authentication', () => {
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
  });

  function expectUnauthorized(res: import('supertest').Response, msg: string) {
    expectError(res, msg, 401, 'UNAUTHORIZED');
    expect(res.headers['www-authenticate']).toBe('Basic realm="zulip"');
  }

  it('accepts email:api_key, the email compared case-insensitively', async () => {
    const res = await api
      .get(org.host, '/users/me')
      .set('Authorization', basic(`${org.owner.deliveryEmail.toUpperCase()}:${org.owner.apiKey}`));
    expect(expectSuccess(res).user_id).toBe(org.owner.id);
  });

  it('tolerates whitespace around the key, as Zulip strips it', async () => {
    const res = await api
      .get(org.host, '/users/me')
      .set('Authorization', basic(`${org.owner.deliveryEmail}: ${org.owner.apiKey} `));
    expectSuccess(res);
  });

  it('answers a missing header with 401 and the Basic challenge', async () => {
    expectUnauthorized(
      await api.get(org.host, '/users/me'),
      'Missing authorization header for basic auth',
    );
  });

  it.each([
    ['a single token', 'Basic'],
    ['three tokens', 'Basic abc def'],
    ['broken base64', 'Basic !!!!'],
    ['no colon', `Basic ${Buffer.from('nocolon').toString('base64')}`],
  ])('answers %s with 401 Invalid authorization header', async (_label, header) => {
    expectUnauthorized(
      await api.get(org.host, '/users/me').set('Authorization', header),
      'Invalid authorization header for basic auth',
    );
  });

  it('answers another scheme with 400', async () => {
    const res = await api.get(org.host, '/users/me').set('Authorization', 'Bearer abc');
    expectError(res, 'This endpoint requires HTTP basic authentication.', 400);
  });

  it('answers a malformed key', async () => {
    expectUnauthorized(
      await api
        .get(org.host, '/users/me')
        .set('Authorization', basic(`${org.owner.deliveryEmail}:short`)),
      'Malformed API key',
    );
  });

  it('answers an unknown key, and a key of someone else', async () => {
    const other = await createTestUser(org.realm);
    expectUnauthorized(
      await api
        .get(org.host, '/users/me')
        .set('Authorization', basic(`${org.owner.deliveryEmail}:${'x'.repeat(32)}`)),
      'Invalid API key',
    );
    expectUnauthorized(
      await api
        .get(org.host, '/users/me')
        .set('Authorization', basic(`${org.owner.deliveryEmail}:${other.apiKey}`)),
      'Invalid API key',
    );
  });

  it('answers a deactivated user and a deactivated organization', async () => {
    const gone = await createTestUser(org.realm);
    await getPrisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    expectUnauthorized(await as(gone, org.host).get('/users/me'), 'Account is deactivated');

    const closed = await createTestRealm();
    await getPrisma().realm.update({ where: { id: closed.realm.id }, data: { deactivated: true } });
    expectUnauthorized(
      await as(closed.owner, closed.host).get('/users/me'),
      'This organization has been deactivated',
    );
  });

  it('answers credentials of another organization', async () => {
    const elsewhere = await createTestRealm();
    expectUnauthorized(
      await as(elsewhere.owner, org.host).get('/users/me'),
      'Account is not associated with this subdomain',
    );
  });

  it('refuses incoming-webhook bots on the API', async () => {
    const bot = await getPrisma().user.update({
      where: { id: (await createTestUser(org.realm)).id },
      data: { isBot: true, botType: 2, botOwnerId: org.owner.id },
    });
    expectUnauthorized(
      await as(bot, org.host).get('/users/me'),
      'This API is not available to incoming webhook bots.',
    );
  });

  it('finds unknown endpoints before authenticating', async () => {
    expectError(await api.get(org.host, '/no/such/thing'), 'Endpoint does not exist', 404);
  });
});

describe('POST /fetch_api_key', () => {
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
    await getPrisma().user.update({
      where: { id: org.owner.id },
      data: { passwordHash: await hashPassword('hunter2') },
    });
  });

  it('returns the API key, email and user id for the right password (multipart, as zulip-js posts)', async () => {
    const res = await api
      .post(org.host, '/fetch_api_key')
      .field('username', org.owner.deliveryEmail)
      .field('password', 'hunter2');
    expect(expectSuccess(res)).toMatchObject({
      api_key: org.owner.apiKey,
      email: org.owner.deliveryEmail,
      user_id: org.owner.id,
    });
  });

  it('answers a wrong password or unknown user with 401 AUTHENTICATION_FAILED', async () => {
    const wrong = await api
      .post(org.host, '/fetch_api_key')
      .type('form')
      .send({ username: org.owner.deliveryEmail, password: 'nope' });
    expectError(wrong, 'Your username or password is incorrect', 401, 'AUTHENTICATION_FAILED');
    const nobody = await api
      .post(org.host, '/fetch_api_key')
      .type('form')
      .send({ username: 'nobody@example.com', password: 'x' });
    expectError(nobody, 'Your username or password is incorrect', 401, 'AUTHENTICATION_FAILED');
  });

  it('answers a deactivated account with USER_DEACTIVATED', async () => {
    const user = await createTestUser(org.realm);
    await getPrisma().user.update({
      where: { id: user.id },
      data: { isActive: false, passwordHash: await hashPassword('pw') },
    });
    const res = await api
      .post(org.host, '/fetch_api_key')
      .type('form')
      .send({ username: user.deliveryEmail, password: 'pw' });
    expectError(res, 'Account is deactivated', 401, 'USER_DEACTIVATED');
    // Zulip finds the active account before it checks the password.
    const wrong = await api
      .post(org.host, '/fetch_api_key')
      .type('form')
      .send({ username: user.deliveryEmail, password: 'not it' });
    expectError(wrong, 'Account is deactivated', 401, 'USER_DEACTIVATED');
    // An empty password never gets that far.
    const empty = await api
      .post(org.host, '/fetch_api_key')
      .type('form')
      .send({ username: user.deliveryEmail, password: '' });
    expectError(empty, 'Your username or password is incorrect', 401, 'AUTHENTICATION_FAILED');
  });

  it('answers a deactivated organization, and one without password login', async () => {
    const closed = await createTestRealm();
    await getPrisma().user.update({
      where: { id: closed.owner.id },
      data: { passwordHash: await hashPassword('pw') },
    });
    await getPrisma().realm.update({ where: { id: closed.realm.id }, data: { deactivated: true } });
    const res = await api
      .post(closed.host, '/fetch_api_key')
      .type('form')
      .send({ username: closed.owner.deliveryEmail, password: 'pw' });
    expectError(res, 'This organization has been deactivated', 401, 'REALM_DEACTIVATED');

    const sso = await createTestRealm();
    await getPrisma().realm.update({
      where: { id: sso.realm.id },
      data: { passwordAuthEnabled: false },
    });
    const disabled = await api
      .post(sso.host, '/fetch_api_key')
      .type('form')
      .send({ username: sso.owner.deliveryEmail, password: 'pw' });
    expectError(
      disabled,
      'Password authentication is disabled in this organization',
      401,
      'PASSWORD_AUTH_DISABLED',
    );
    // As in Zulip, the address is checked first (authenticate() refuses later).
    expectError(
      await api
        .post(sso.host, '/fetch_api_key')
        .type('form')
        .send({ username: 'not-an-address', password: 'pw' }),
      'Enter a valid email address.',
    );
  });

  it('validates its parameters', async () => {
    expectError(
      await api.post(org.host, '/fetch_api_key').type('form').send({ username: 'x@y.z' }),
      "Missing 'password' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await api
        .post(org.host, '/fetch_api_key')
        .type('form')
        .send({ username: 'not-an-email', password: 'x' }),
      'Enter a valid email address.',
    );
    expectError(
      await api
        .post('nowhere.localhost:9991', '/fetch_api_key')
        .type('form')
        .send({ username: 'a@b.c', password: 'x' }),
      'Invalid subdomain',
      404,
      'NONEXISTENT_SUBDOMAIN',
    );
  });

  it('forgets the failed attempts before a successful login, as Zulip does', async () => {
    const user = await createTestUser(org.realm);
    await getPrisma().user.update({
      where: { id: user.id },
      data: { passwordHash: await hashPassword('right') },
    });
    const login = (password: string) =>
      api
        .post(org.host, '/fetch_api_key')
        .type('form')
        .send({ username: user.deliveryEmail, password });
    for (let attempt = 0; attempt < 4; attempt++) expect((await login('wrong')).status).toBe(401);
    expectSuccess(await login('right'));
    // Four more failures would have been the ninth without the reset.
    for (let attempt = 0; attempt < 4; attempt++) expect((await login('wrong')).status).toBe(401);
    expectSuccess(await login('right'));
  });

  it('allows 5 failed attempts per username in 30 minutes, then answers 429', async () => {
    const user = await createTestUser(org.realm);
    await getPrisma().user.update({
      where: { id: user.id },
      data: { passwordHash: await hashPassword('right') },
    });
    for (let attempt = 0; attempt < 5; attempt++) {
      const res = await api
        .post(org.host, '/fetch_api_key')
        .type('form')
        .send({ username: user.deliveryEmail, password: 'wrong' });
      expect(res.status).toBe(401);
    }
    const limited = await api
      .post(org.host, '/fetch_api_key')
      .type('form')
      .send({ username: user.deliveryEmail, password: 'right' });
    expectError(limited, 'API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT');
    expect(limited.body['retry-after']).toBeGreaterThan(1700);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(1700);
    // Another username is not affected.
    const other = await api
      .post(org.host, '/fetch_api_key')
      .type('form')
      .send({ username: org.owner.deliveryEmail, password: 'hunter2' });
    expectSuccess(other);
    await clearFailedLogins(org.realm.id, user.deliveryEmail);
  });

  it('dates a user an owner created through the API from their first login', async () => {
    const email = `api-made-${Date.now()}@example.com`;
    const created = expectSuccess(
      await as(org.owner, org.host).post('/users', {
        email,
        password: 'pw-for-api-user',
        full_name: 'Made By API',
      }),
    ).user_id as number;
    const joined = new Date('2020-01-01T00:00:00Z');
    await getPrisma().user.update({ where: { id: created }, data: { dateJoined: joined } });
    const login = () =>
      api
        .post(org.host, '/fetch_api_key')
        .type('form')
        .send({ username: email, password: 'pw-for-api-user' });
    expectSuccess(await login());
    const first = await getPrisma().user.findUniqueOrThrow({ where: { id: created } });
    expect(first.dateJoined.getTime()).toBeGreaterThan(joined.getTime());
    expect(first.dateJoined.getTime()).toBe(first.lastLogin!.getTime());
    // Only the first login.
    await getPrisma().user.update({ where: { id: created }, data: { dateJoined: joined } });
    expectSuccess(await login());
    const second = await getPrisma().user.findUniqueOrThrow({ where: { id: created } });
    expect(second.dateJoined).toEqual(joined);
    expect(second.isImportedStub).toBe(false);
  });

  it('turns an imported stub account into a regular one at its first login, and says so', async () => {
    const stub = await createTestUser(org.realm);
    const joined = new Date('2020-01-01T00:00:00Z');
    await getPrisma().user.update({
      where: { id: stub.id },
      data: { isImportedStub: true, dateJoined: joined, passwordHash: await hashPassword('pw') },
    });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await api
          .post(org.host, '/fetch_api_key')
          .type('form')
          .send({ username: stub.deliveryEmail, password: 'pw' }),
      );
    });
    const after = await getPrisma().user.findUniqueOrThrow({ where: { id: stub.id } });
    expect(after.isImportedStub).toBe(false);
    expect(after.dateJoined.getTime()).toBeGreaterThan(joined.getTime());
    const everyone = (
      await getPrisma().user.findMany({ where: { realmId: org.realm.id, isActive: true } })
    )
      .map((u) => u.id)
      .sort((a, b) => a - b);
    expect(published).toEqual([
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: { user_id: stub.id, is_imported_stub: false },
        },
        users: everyone,
      },
    ]);
    // The second login changes nothing more.
    const again = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await api
          .post(org.host, '/fetch_api_key')
          .type('form')
          .send({ username: stub.deliveryEmail, password: 'pw' }),
      );
    });
    expect(again).toEqual([]);
  });
});

describe('POST /jwt/fetch_api_key', () => {
  const secret = 'a-very-secret-key-for-hs256-tokens';
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
    await getPrisma().realm.update({
      where: { id: org.realm.id },
      data: { jwtKey: secret, jwtAlgorithms: ['HS256'] },
    });
  });

  const token = (claims: object, key = secret, algorithm: jwt.Algorithm = 'HS256') =>
    jwt.sign(claims, key, { algorithm });

  it('exchanges a signed token with an email claim for the API key', async () => {
    const res = await api
      .post(org.host, '/jwt/fetch_api_key')
      .type('form')
      .send({ token: token({ email: org.owner.deliveryEmail }) });
    expect(expectSuccess(res)).toMatchObject({
      api_key: org.owner.apiKey,
      email: org.owner.deliveryEmail,
      user_id: org.owner.id,
    });
    expect(res.body).not.toHaveProperty('user');
  });

  it('includes the user without profile_data when asked', async () => {
    const res = await api
      .post(org.host, '/jwt/fetch_api_key')
      .type('form')
      .send({ token: token({ email: org.owner.deliveryEmail }), include_profile: 'true' });
    const user = expectSuccess(res).user as Record<string, unknown>;
    expect(user).toMatchObject({
      user_id: org.owner.id,
      email: org.owner.deliveryEmail,
      delivery_email: org.owner.deliveryEmail,
      role: 100,
      is_owner: true,
    });
    expect(user).not.toHaveProperty('profile_data');
  });

  it('refuses tokens that are unsigned, wrongly signed, expired or lack the email claim', async () => {
    const unsigned = jwt.sign({ email: org.owner.deliveryEmail }, '', { algorithm: 'none' });
    for (const bad of [
      unsigned,
      token({ email: org.owner.deliveryEmail }, 'wrong-key'),
      token({ email: org.owner.deliveryEmail, exp: 1 }),
      'not.a.jwt',
    ]) {
      expectError(
        await api.post(org.host, '/jwt/fetch_api_key').type('form').send({ token: bad }),
        'Bad JSON web token',
      );
    }
    expectError(
      await api
        .post(org.host, '/jwt/fetch_api_key')
        .type('form')
        .send({ token: token({ sub: 'x' }) }),
      'No email specified in JSON web token claims',
    );
    expectError(
      await api.post(org.host, '/jwt/fetch_api_key').type('form').send({}),
      'No JSON web token passed in request',
    );
  });

  it('refuses an algorithm the organization did not allow', async () => {
    const hs512 = token({ email: org.owner.deliveryEmail }, secret, 'HS512');
    expectError(
      await api.post(org.host, '/jwt/fetch_api_key').type('form').send({ token: hs512 }),
      'Bad JSON web token',
    );
  });

  it('answers unknown users and organizations without JWT login', async () => {
    const res = await api
      .post(org.host, '/jwt/fetch_api_key')
      .type('form')
      .send({ token: token({ email: 'ghost@example.com' }) });
    expectError(res, 'Your username or password is incorrect', 401, 'AUTHENTICATION_FAILED');
    const plain = await createTestRealm();
    expectError(
      await api
        .post(plain.host, '/jwt/fetch_api_key')
        .type('form')
        .send({ token: token({ email: plain.owner.deliveryEmail }) }),
      'JWT authentication is not enabled for this organization',
    );
  });
});

describe('POST /users/me/api_key/regenerate', () => {
  it('replaces the key: the old one stops working, the new one works', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const res = await as(member, org.host).post('/users/me/api_key/regenerate');
    const apiKey = expectSuccess(res).api_key as string;
    expect(apiKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(apiKey).not.toBe(member.apiKey);
    expect((await as(member, org.host).get('/users/me')).status).toBe(401);
    expectSuccess(await as({ ...member, apiKey }, org.host).get('/users/me'));
  });
});
