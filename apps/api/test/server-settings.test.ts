import { ZULIP_FEATURE_LEVEL } from '@parley/config';
import { getPrisma } from '@parley/db';
import { api, createTestRealm, ensureRootRealm, expectError, expectSuccess } from './helpers';

describe('GET /server_settings', () => {
  it('describes the server and the organization of the Host header without authentication', async () => {
    const { realm, host } = await createTestRealm('Settings Org');
    await getPrisma().realm.update({
      where: { id: realm.id },
      data: { description: 'Hello <b>world</b>' },
    });
    const body = expectSuccess(await api.get(host, '/server_settings'));
    expect(body).toMatchObject({
      zulip_feature_level: ZULIP_FEATURE_LEVEL,
      push_notifications_enabled: false,
      is_incompatible: false,
      email_auth_enabled: true,
      require_email_format_usernames: true,
      realm_uri: `http://${host}`,
      realm_url: `http://${host}`,
      realm_name: 'Settings Org',
      realm_description: '<p>Hello &lt;b&gt;world&lt;/b&gt;</p>',
      realm_web_public_access_enabled: false,
      external_authentication_methods: [],
    });
    expect(body.zulip_feature_level).toBe(496);
    expect(typeof body.zulip_version).toBe('string');
    expect(typeof body.zulip_merge_base).toBe('string');
    expect(body.authentication_methods).toMatchObject({
      password: true,
      email: true,
      ldap: false,
      dev: false,
    });
    expect(body.realm_icon).toMatch(/^https:\/\//);
  });

  it('reflects an organization that disabled password authentication', async () => {
    const { realm, host } = await createTestRealm();
    await getPrisma().realm.update({
      where: { id: realm.id },
      data: { passwordAuthEnabled: false },
    });
    const body = expectSuccess(await api.get(host, '/server_settings'));
    expect(body.email_auth_enabled).toBe(false);
    expect(body.authentication_methods).toMatchObject({ password: false, email: false });
  });

  it('flags clients that announce themselves as incompatible', async () => {
    const { host } = await createTestRealm();
    const res = await api.get(host, '/server_settings').set('User-Agent', 'ZulipInvalid/1.0');
    expect(expectSuccess(res).is_incompatible).toBe(true);
  });

  it('lists unsupported parameters', async () => {
    const { host } = await createTestRealm();
    const res = await api.get(host, '/server_settings?zebra=1&apple=2');
    expect(expectSuccess(res).ignored_parameters_unsupported).toEqual(['apple', 'zebra']);
  });

  it('answers other methods with 405', async () => {
    const { host } = await createTestRealm();
    const res = await api.post(host, '/server_settings');
    expect(res.status).toBe(405);
    expect(res.body).toMatchObject({
      result: 'error',
      msg: 'Method Not Allowed',
      allowed_methods: ['GET'],
    });
  });
});

describe('organizations chosen by the Host header', () => {
  it('answers an unknown subdomain with 404 NONEXISTENT_SUBDOMAIN', async () => {
    const res = await api.get('no-such-org.localhost:9991', '/server_settings');
    expectError(res, 'Invalid subdomain', 404, 'NONEXISTENT_SUBDOMAIN');
  });

  it('keeps organizations on different subdomains apart', async () => {
    const first = await createTestRealm('First');
    const second = await createTestRealm('Second');
    expect(expectSuccess(await api.get(first.host, '/server_settings')).realm_name).toBe('First');
    expect(expectSuccess(await api.get(second.host, '/server_settings')).realm_name).toBe('Second');
  });

  it('matches the subdomain case-insensitively', async () => {
    const { host } = await createTestRealm('Upper');
    expect(expectSuccess(await api.get(host.toUpperCase(), '/server_settings')).realm_name).toBe(
      'Upper',
    );
  });

  it('serves the root organization on EXTERNAL_HOST and on hosts outside it', async () => {
    const { name } = await ensureRootRealm();
    for (const host of ['localhost:9991', '127.0.0.1:4000', 'chat.other-domain.test']) {
      const body = expectSuccess(await api.get(host, '/server_settings'));
      expect(body.realm_name).toBe(name);
      expect(body.realm_url).toBe('http://localhost:9991');
    }
  });
});

describe('JSON for every answer', () => {
  it('answers unknown API routes with 404 JSON', async () => {
    const { host } = await createTestRealm();
    expectError(await api.get(host, '/no/such/endpoint'), 'Endpoint does not exist', 404);
  });

  it('answers unknown routes outside the API with 404 JSON', async () => {
    const { host } = await createTestRealm();
    const res = await api.get(host, '/../../favicon.ico');
    expect(res.status).toBe(404);
    expect(res.body.result).toBe('error');
  });

  it('answers malformed JSON bodies with INVALID_JSON', async () => {
    const { host } = await createTestRealm();
    const res = await api
      .post(host, '/server_settings')
      .set('Content-Type', 'application/json')
      .send('{');
    expectError(res, 'Malformed JSON', 400, 'INVALID_JSON');
  });
});
