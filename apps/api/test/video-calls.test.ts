// Video calls (Zulip's zerver/views/video_calls.py and zerver/tests/test_video_calls.py): Zoom
// with users' own OAuth tokens (authorize, complete, refresh, revoke, deauthorization webhook)
// and with a server-to-server app, BigBlueButton's signed links and checksummed API calls,
// Jitsi Meet rooms, the feature level 493 /calls/{provider}/create family, has_zoom_token in
// /register and its event, and which providers the organization may choose. Zoom and
// BigBlueButton are local HTTP servers that answer as their documented APIs do (Zoom's
// refresh tokens work once, as Zoom's do).
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { realmUrl } from '@parley/auth';
import { getConfig, resetConfig } from '@parley/config';
import { getPrisma, Role, type User } from '@parley/db';
import { getRedis, zoomStateKey } from '@parley/events';
import { signBigBlueButtonLink } from '../src/lib/bigbluebutton';
import { flushServerToServerToken, type ZoomToken } from '../src/lib/zoom';
import {
  app,
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const CLIENT_ID = 'zoom-client-id';
const CLIENT_SECRET = 'zoom-client-secret';
const ACCOUNT_ID = 'zoom-account';
const WEBHOOK_SECRET = 'zoom-webhook-secret';
const BBB_SECRET = '123';

interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** Zoom as its OAuth and REST documentation describes it, with the state a test sets. */
const zoom = {
  requests: [] as Recorded[],
  /** expires_in of the next tokens the token endpoint issues. */
  expiresIn: 3600 as number | undefined,
  /** Access tokens Zoom accepts; refresh tokens it accepts once. */
  validAccess: new Set<string>(),
  validRefresh: new Set<string>(),
  knownEmails: new Set<string>(),
  /** The meetings endpoint answers this status (e.g. 500) when set. */
  meetingFailure: undefined as number | undefined,
  /** The token endpoint answers this status (e.g. 503) when set. */
  tokenFailure: undefined as number | undefined,
  /** Runs before the token endpoint answers (once): another request's work in between. */
  beforeToken: undefined as (() => Promise<void>) | undefined,
  /** The same, before the meetings endpoint answers. */
  beforeMeeting: undefined as (() => Promise<void>) | undefined,
  issued: 0,
};

function issueToken(): Record<string, unknown> {
  zoom.issued += 1;
  const token = {
    access_token: `access-${zoom.issued}`,
    token_type: 'bearer',
    refresh_token: `refresh-${zoom.issued}`,
    scope: 'meeting:write',
    ...(zoom.expiresIn === undefined ? {} : { expires_in: zoom.expiresIn }),
  };
  zoom.validAccess.add(token.access_token);
  zoom.validRefresh.add(token.refresh_token);
  return token;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function handleZoom(req: IncomingMessage, body: string, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://zoom');
  const basic = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`;
  const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
  if (req.method === 'POST' && url.pathname === '/oauth/token') {
    if (zoom.tokenFailure !== undefined) return send(res, zoom.tokenFailure, {});
    if (req.headers.authorization !== basic)
      return send(res, 401, {
        reason: 'Invalid client_id or client_secret',
        error: 'invalid_client',
      });
    const form = new URLSearchParams(body);
    switch (form.get('grant_type')) {
      case 'authorization_code':
        if (form.get('code') !== 'good-code')
          return send(res, 400, { reason: 'Invalid authorization code', error: 'invalid_grant' });
        return send(res, 200, issueToken());
      case 'refresh_token':
        if (!zoom.validRefresh.delete(form.get('refresh_token') ?? ''))
          return send(res, 400, { reason: 'Invalid Token!', error: 'invalid_request' });
        return send(res, 200, issueToken());
      case 'account_credentials':
        if (form.get('account_id') !== ACCOUNT_ID)
          return send(res, 400, { reason: 'Bad request', error: 'invalid_request' });
        zoom.validAccess.add('server-token');
        return send(res, 200, {
          access_token: 'server-token',
          token_type: 'bearer',
          expires_in: 3599,
        });
    }
    return send(res, 400, { error: 'unsupported_grant_type' });
  }
  if (req.method === 'POST' && url.pathname === '/oauth/revoke') {
    if (req.headers.authorization !== basic) return send(res, 401, { error: 'invalid_client' });
    zoom.validAccess.delete(new URLSearchParams(body).get('token') ?? '');
    return send(res, 200, { status: 'success' });
  }
  if (!zoom.validAccess.has(bearer))
    return send(res, 401, { code: 124, message: 'Invalid access token.' });
  if (req.method === 'GET' && url.pathname === '/v2/users/me')
    return send(res, 200, { id: `zoom-user-of-${bearer}`, email: 'someone@example.com' });
  const meetings = /^\/v2\/users\/([^/]+)\/meetings$/.exec(url.pathname);
  if (req.method === 'POST' && meetings) {
    if (zoom.meetingFailure) return send(res, zoom.meetingFailure, { code: 300, message: 'No' });
    const who = decodeURIComponent(meetings[1]!);
    if (who !== 'me' && !zoom.knownEmails.has(who))
      return send(res, 404, { code: 1001, message: `User does not exist: ${who}` });
    return send(res, 201, { id: 85746065, join_url: `https://zoom.example/j/85746065?for=${who}` });
  }
  send(res, 404, { code: 404, message: 'Not found' });
}

/** BigBlueButton's create call: checks the checksum, answers XML. */
const bbb = {
  fail: undefined as 'checksum' | 'status' | 'error' | undefined,
  createTime: '1531241258036',
};

function handleBigBlueButton(req: IncomingMessage, res: ServerResponse): void {
  const [path, query = ''] = (req.url ?? '').split('?');
  const match = /^(.*)&checksum=([0-9a-f]{64})$/.exec(query);
  if (path !== '/bigbluebutton/api/create' || !match) {
    res.writeHead(404).end();
    return;
  }
  if (bbb.fail === 'status') {
    res.writeHead(500).end();
    return;
  }
  const good = createHash('sha256').update(`create${match[1]}${BBB_SECRET}`).digest('hex');
  res.writeHead(200, { 'content-type': 'text/xml' });
  if (match[2] !== good || bbb.fail === 'checksum')
    res.end(
      '<response><returncode>FAILED</returncode><messageKey>checksumError</messageKey>' +
        '<message>You did not pass the checksum security check</message></response>',
    );
  else if (bbb.fail === 'error')
    res.end('<response><returncode>FAILED</returncode><messageKey>other</messageKey></response>');
  else
    res.end(
      '<response><returncode>SUCCESS</returncode><meetingID>x</meetingID>' +
        `<createTime>${bbb.createTime}</createTime><messageKey/></response>`,
    );
}

let server: Server;
let base: string;
const saved: Record<string, string | undefined> = {};

function setEnv(values: Record<string, string | undefined>): void {
  for (const [key, value] of Object.entries(values)) {
    if (!(key in saved)) saved[key] = process.env[key];
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  resetConfig();
  flushServerToServerToken();
}

let org: TestRealm;
let user: User;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      zoom.requests.push({ method: req.method!, path: req.url!, headers: req.headers, body });
      let hook: (() => Promise<void>) | undefined;
      if (req.url === '/oauth/token') [hook, zoom.beforeToken] = [zoom.beforeToken, undefined];
      if (req.url?.endsWith('/meetings'))
        [hook, zoom.beforeMeeting] = [zoom.beforeMeeting, undefined];
      void (hook ?? (() => Promise.resolve()))().then(() => {
        if (req.url?.startsWith('/bigbluebutton/')) handleBigBlueButton(req, res);
        else handleZoom(req, body, res);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  org = await createTestRealm();
});

afterAll(async () => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  resetConfig();
  await new Promise((resolve) => server.close(resolve));
});

const USER_ZOOM = () => ({
  VIDEO_ZOOM_CLIENT_ID: CLIENT_ID,
  VIDEO_ZOOM_CLIENT_SECRET: CLIENT_SECRET,
  VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID: undefined,
  VIDEO_ZOOM_WEBHOOK_SECRET: undefined,
  VIDEO_ZOOM_API_URL: base,
  VIDEO_ZOOM_OAUTH_URL: base,
  BIG_BLUE_BUTTON_URL: undefined,
  BIG_BLUE_BUTTON_SECRET: undefined,
});

beforeEach(async () => {
  setEnv(USER_ZOOM());
  zoom.requests = [];
  zoom.expiresIn = 3600;
  zoom.meetingFailure = undefined;
  zoom.tokenFailure = undefined;
  zoom.beforeToken = undefined;
  zoom.beforeMeeting = undefined;
  bbb.fail = undefined;
  bbb.createTime = '1531241258036';
  user = await createTestUser(org.realm, Role.MEMBER);
});

const tokenOf = async (who: User) =>
  (await getPrisma().user.findUniqueOrThrow({ where: { id: who.id } }))
    .zoomToken as ZoomToken | null;

/** The state of the Zoom authorize URL GET /calls/zoom/register redirects to. */
async function startAuthorization(who: User): Promise<{ location: URL; state: string }> {
  const res = await as(who, org.host).get('/calls/zoom/register');
  expect(res.status).toBe(302);
  const location = new URL(res.headers.location as string);
  return { location, state: location.searchParams.get('state')! };
}

/** Zoom's redirect back to the root domain, as the browser follows it. */
const complete = (query: Record<string, string>) =>
  request(app).get('/calls/zoom/complete').set('Host', getConfig().EXTERNAL_HOST).query(query);

/** The same request on the organization's host, where the root domain sends it, with the
 * credentials of `who` (the browser's Basic prompt) or none. */
const completeAs = (who: User | null, query: Record<string, string>) => {
  const test = request(app).get('/calls/zoom/complete').set('Host', org.host).query(query);
  return who ? test.auth(who.deliveryEmail, who.apiKey) : test;
};

/** Connects `who`'s Zoom account through the whole OAuth flow, as a browser follows it. */
async function connectZoom(who: User): Promise<void> {
  const { state } = await startAuthorization(who);
  const sent = await complete({ code: 'good-code', state });
  expect(sent.status).toBe(302);
  const location = new URL(sent.headers.location as string);
  const res = await request(app)
    .get(`${location.pathname}${location.search}`)
    .set('Host', location.host)
    .auth(who.deliveryEmail, who.apiKey);
  expect(res.status).toBe(200);
}

/** Whether a request is waiting for the lock of a user's row to refresh their Zoom token. */
async function waitingForZoomTokenLock(): Promise<boolean> {
  const [row] = await getPrisma().$queryRaw<{ waiting: number }[]>`
    SELECT count(*)::int AS waiting FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'
      AND query LIKE '%zoom_token%FOR NO KEY UPDATE%'`;
  return (row?.waiting ?? 0) > 0;
}

/** The nonce of a state, the key of its Redis entry. */
const nonceOf = (state: string) => (JSON.parse(state) as { sid: string }).sid.split('.')[2]!;

describe('GET /calls/zoom/register', () => {
  it("redirects to Zoom's authorize page with the app, the redirect URL and a signed state", async () => {
    const { location, state } = await startAuthorization(user);
    expect(`${location.origin}${location.pathname}`).toBe(`${base}/oauth/authorize`);
    expect(location.searchParams.get('response_type')).toBe('code');
    expect(location.searchParams.get('client_id')).toBe(CLIENT_ID);
    const config = getConfig();
    expect(location.searchParams.get('redirect_uri')).toBe(
      `${config.EXTERNAL_URL_SCHEME}://${config.EXTERNAL_HOST}/calls/zoom/complete`,
    );
    const parsed = JSON.parse(state) as { realm: string; sid: string };
    expect(parsed.realm).toBe(org.realm.stringId);
    expect(parsed.sid).toMatch(new RegExp(`^${user.id}\\.\\d+\\.[\\w-]{22}\\.[0-9a-f]{64}$`));
  });

  it("remembers the state's nonce, for the user, until the state expires", async () => {
    const { state } = await startAuthorization(user);
    const key = zoomStateKey(nonceOf(state));
    expect(await getRedis().get(key)).toBe(String(user.id));
    const ttl = await getRedis().ttl(key);
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);
  });

  it('is also served at the root, for browsers', async () => {
    const res = await request(app)
      .get('/calls/zoom/register')
      .set('Host', org.host)
      .auth(user.deliveryEmail, user.apiKey);
    expect(res.status).toBe(302);
    expect(res.headers.location).toContain('/oauth/authorize?');
  });

  it('needs credentials', async () => {
    const res = await request(app).get('/calls/zoom/register').set('Host', org.host);
    expectError(res, 'Missing authorization header for basic auth', 401, 'UNAUTHORIZED');
  });

  it('fails when Zoom is not configured', async () => {
    setEnv({ VIDEO_ZOOM_CLIENT_ID: undefined });
    expectError(
      await as(user, org.host).get('/calls/zoom/register'),
      'Zoom credentials have not been configured',
    );
  });
});

describe('GET /calls/zoom/complete', () => {
  it('exchanges the code, stores the token and tells the user has_zoom_token', async () => {
    const { state } = await startAuthorization(user);
    let res: request.Response | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      res = await completeAs(user, { code: 'good-code', state });
    });
    expect(res!.status).toBe(200);
    expect(res!.headers['content-type']).toMatch(/^text\/html/);
    expect(published).toEqual([
      { event: { type: 'has_zoom_token', value: true }, users: [user.id] },
    ]);
    const exchange = zoom.requests.find((r) => r.path === '/oauth/token')!;
    const form = new URLSearchParams(exchange.body);
    expect(Object.fromEntries(form)).toEqual({
      grant_type: 'authorization_code',
      code: 'good-code',
      redirect_uri: `${getConfig().EXTERNAL_URL_SCHEME}://${getConfig().EXTERNAL_HOST}/calls/zoom/complete`,
    });
    const token = await tokenOf(user);
    expect(token).toMatchObject({
      access_token: expect.stringMatching(/^access-/),
      refresh_token: expect.stringMatching(/^refresh-/),
      zoom_user_id: `zoom-user-of-${token!.access_token}`,
    });
    expect(token!.expires_at! * 1000).toBeGreaterThan(Date.now() + 3500_000);
  });

  it('refuses a state that was tampered with, or belongs to nobody here', async () => {
    const { state } = await startAuthorization(user);
    const parsed = JSON.parse(state) as { realm: string; sid: string };
    const other = await createTestUser(org.realm, Role.MEMBER);
    for (const bad of [
      JSON.stringify({ ...parsed, sid: parsed.sid.replace(/^\d+/, String(other.id)) }),
      JSON.stringify({ ...parsed, realm: 'elsewhere' }),
      JSON.stringify({ realm: parsed.realm, sid: '' }),
      'not json',
    ])
      expectError(
        await complete({ code: 'good-code', state: bad }),
        'Invalid Zoom session identifier',
      );
    expect(await tokenOf(other)).toBeNull();
    expect(await tokenOf(user)).toBeNull();
  });

  it("sends the browser from the root domain to the organization's host, with the same query", async () => {
    const { state } = await startAuthorization(user);
    const query = { code: 'good-code', state };
    const expected = `${realmUrl(org.realm)}/calls/zoom/complete?${new URLSearchParams(query).toString()}`;
    const res = await complete(query);
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(expected);
    // From another organization's host too.
    const elsewhere = await createTestRealm();
    const sent = await request(app)
      .get('/calls/zoom/complete')
      .set('Host', elsewhere.host)
      .query(query);
    expect(sent.status).toBe(302);
    expect(sent.headers.location).toBe(expected);
    // Nothing was exchanged or spent on the way.
    expect(zoom.requests.filter((r) => r.path === '/oauth/token')).toEqual([]);
    expect(await getRedis().exists(zoomStateKey(nonceOf(state)))).toBe(1);
  });

  it("needs credentials on the organization's host (the browser's Basic prompt)", async () => {
    const { state } = await startAuthorization(user);
    const res = await completeAs(null, { code: 'good-code', state });
    expectError(res, 'Missing authorization header for basic auth', 401, 'UNAUTHORIZED');
    expect(res.headers['www-authenticate']).toBe('Basic realm="zulip"');
    expect(await tokenOf(user)).toBeNull();
    // The prompt answered, the flow completes.
    expect((await completeAs(user, { code: 'good-code', state })).status).toBe(200);
  });

  it("never attaches someone else's approval: only the user who started the flow completes it", async () => {
    // A starts the flow (through the API, as a client does) and sends Zoom's authorize URL to
    // V; V approves it on Zoom and Zoom sends V's browser back with V's code.
    const attacker = user;
    const victim = await createTestUser(org.realm, Role.MEMBER);
    const { state } = await startAuthorization(attacker);
    expectError(
      await completeAs(victim, { code: 'good-code', state }),
      'Invalid Zoom session identifier',
    );
    expect(await tokenOf(attacker)).toBeNull();
    expect(await tokenOf(victim)).toBeNull();
    expect(zoom.requests.filter((r) => r.path === '/oauth/token')).toEqual([]);
    // A user of another organization is refused by that host's authentication already.
    const outsider = await createTestRealm();
    expectError(
      await completeAs(outsider.owner, { code: 'good-code', state }),
      'Account is not associated with this subdomain',
      401,
      'UNAUTHORIZED',
    );
    expect(await tokenOf(attacker)).toBeNull();
  });

  it('accepts a state once', async () => {
    const { state } = await startAuthorization(user);
    expect((await completeAs(user, { code: 'good-code', state })).status).toBe(200);
    const first = (await tokenOf(user))!;
    expectError(
      await completeAs(user, { code: 'good-code', state }),
      'Invalid Zoom session identifier',
    );
    expect((await tokenOf(user))!.access_token).toBe(first.access_token);
    expect(await getRedis().exists(zoomStateKey(nonceOf(state)))).toBe(0);
  });

  it('accepts a state once even when two requests bring it at the same time', async () => {
    const { state } = await startAuthorization(user);
    const answers = await Promise.all([
      completeAs(user, { code: 'good-code', state }).then((res) => res),
      completeAs(user, { code: 'good-code', state }).then((res) => res),
    ]);
    expect(answers.map((res) => res.status).sort()).toEqual([200, 400]);
    expect(zoom.requests.filter((r) => r.path === '/oauth/token')).toHaveLength(1);
  });

  it('refuses a state whose entry expired', async () => {
    const { state } = await startAuthorization(user);
    await getRedis().del(zoomStateKey(nonceOf(state)));
    expectError(
      await completeAs(user, { code: 'good-code', state }),
      'Invalid Zoom session identifier',
    );
    expect(await tokenOf(user)).toBeNull();
  });

  it("answers Zulip's error when Zoom refuses the code", async () => {
    const { state } = await startAuthorization(user);
    expectError(await completeAs(user, { code: 'bad-code', state }), 'Invalid Zoom credentials');
    expect(await tokenOf(user)).toBeNull();
  });

  it('needs both parameters', async () => {
    expectError(
      await complete({ code: 'good-code' }),
      "Missing 'state' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });
});

describe('POST /calls/zoom/create (a user OAuth app)', () => {
  it("creates a meeting with the user's token: video on, a default password", async () => {
    await connectZoom(user);
    const token = await tokenOf(user);
    const res = await as(user, org.host).post('/calls/zoom/create', { is_video_call: true });
    expect(expectSuccess(res).url).toBe('https://zoom.example/j/85746065?for=me');
    const meeting = zoom.requests.at(-1)!;
    expect(meeting.path).toBe('/v2/users/me/meetings');
    expect(meeting.headers.authorization).toBe(`Bearer ${token!.access_token}`);
    expect(JSON.parse(meeting.body)).toEqual({
      settings: { host_video: true, participant_video: true },
      default_password: true,
    });
  });

  it('turns video off for an audio call', async () => {
    await connectZoom(user);
    expectSuccess(await as(user, org.host).post('/calls/zoom/create', { is_video_call: false }));
    expect(JSON.parse(zoom.requests.at(-1)!.body)).toEqual({
      settings: { host_video: false, participant_video: false },
      default_password: true,
    });
  });

  it('refreshes an expired token first, storing the new one', async () => {
    zoom.expiresIn = -60;
    await connectZoom(user);
    const old = (await tokenOf(user))!;
    zoom.expiresIn = 3600;
    let res: request.Response | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      res = await as(user, org.host).post('/calls/zoom/create');
    });
    expectSuccess(res!);
    const refresh = zoom.requests.find((r) => r.body.includes('grant_type=refresh_token'))!;
    expect(new URLSearchParams(refresh.body).get('refresh_token')).toBe(old.refresh_token);
    const fresh = (await tokenOf(user))!;
    expect(fresh.access_token).not.toBe(old.access_token);
    expect(fresh.zoom_user_id).toBe(old.zoom_user_id);
    expect(zoom.requests.at(-1)!.headers.authorization).toBe(`Bearer ${fresh.access_token}`);
    // Zulip's token_updater announces the stored token again.
    expect(published).toEqual([
      { event: { type: 'has_zoom_token', value: true }, users: [user.id] },
    ]);
  });

  it('refreshes once when two requests find the token expired together', async () => {
    zoom.expiresIn = -60;
    await connectZoom(user);
    const old = (await tokenOf(user))!;
    zoom.expiresIn = 3600;
    const refreshes = () =>
      zoom.requests.filter((r) => r.body.includes('grant_type=refresh_token')).length;
    let second: Promise<request.Response> | undefined;
    // While the first request's refresh is at Zoom, the second request starts: it must wait
    // for the first to store the new token (it queues for the user's row) rather than send
    // the same refresh token, which Zoom accepts once. The first one's answer is held until
    // the second is waiting, or has reached Zoom (a failure of the check below).
    zoom.beforeToken = async () => {
      second = as(user, org.host)
        .post('/calls/zoom/create')
        .then((res) => res);
      while (refreshes() < 2 && !(await waitingForZoomTokenLock()))
        await new Promise((resolve) => setImmediate(resolve));
    };
    let first: request.Response | undefined;
    let other: request.Response | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      first = await as(user, org.host).post('/calls/zoom/create');
      other = await second!;
    });
    expectSuccess(first!);
    expectSuccess(other!);
    expect(refreshes()).toBe(1);
    const fresh = (await tokenOf(user))!;
    expect(fresh.access_token).not.toBe(old.access_token);
    const meetings = zoom.requests.filter((r) => r.path === '/v2/users/me/meetings');
    expect(meetings.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${fresh.access_token}`,
      `Bearer ${fresh.access_token}`,
    ]);
    expect(published).toEqual([
      { event: { type: 'has_zoom_token', value: true }, users: [user.id] },
    ]);
  });

  it('forgets the token when Zoom refuses to refresh it', async () => {
    zoom.expiresIn = -60;
    await connectZoom(user);
    zoom.validRefresh.clear();
    let res: request.Response | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      res = await as(user, org.host).post('/calls/zoom/create');
    });
    expectError(res!, 'Invalid Zoom access token', 400, 'INVALID_ZOOM_TOKEN');
    expect(published).toEqual([
      { event: { type: 'has_zoom_token', value: false }, users: [user.id] },
    ]);
    expect(await tokenOf(user)).toBeNull();
  });

  it('keeps the token when Zoom cannot answer the refresh (down, failing, throttling)', async () => {
    zoom.expiresIn = -60;
    await connectZoom(user);
    const before = await tokenOf(user);
    for (const status of [503, 429, 403]) {
      zoom.tokenFailure = status;
      let res: request.Response | undefined;
      const published = await captureEvents(org.realm.id, async () => {
        res = await as(user, org.host).post('/calls/zoom/create');
      });
      expectError(res!, 'Failed to create Zoom call', 400, 'BAD_REQUEST');
      expect(published).toEqual([]);
      expect(await tokenOf(user)).toEqual(before);
    }
    // Zoom back: the same refresh token still works.
    zoom.tokenFailure = undefined;
    expectSuccess(await as(user, org.host).post('/calls/zoom/create'));
  });

  it('forgets the token when Zoom answers 401', async () => {
    await connectZoom(user);
    zoom.validAccess.clear();
    expectError(
      await as(user, org.host).post('/calls/zoom/create'),
      'Invalid Zoom access token',
      400,
      'INVALID_ZOOM_TOKEN',
    );
    expect(await tokenOf(user)).toBeNull();
  });

  it('keeps a token another request stored while Zoom refused the one this request used', async () => {
    await connectZoom(user);
    const used = (await tokenOf(user))!;
    // Another request of the user refreshed the token meanwhile, and Zoom no longer takes the
    // old one.
    const replacement = { ...used, access_token: 'replacement' };
    zoom.beforeMeeting = async () => {
      zoom.validAccess.delete(used.access_token);
      await getPrisma().user.update({ where: { id: user.id }, data: { zoomToken: replacement } });
    };
    let res: request.Response | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      res = await as(user, org.host).post('/calls/zoom/create');
    });
    expectError(res!, 'Invalid Zoom access token', 400, 'INVALID_ZOOM_TOKEN');
    expect((await tokenOf(user))!.access_token).toBe('replacement');
    expect(published).toEqual([]);
  });

  it('keeps the token when Zoom fails otherwise', async () => {
    await connectZoom(user);
    zoom.meetingFailure = 400;
    expectError(await as(user, org.host).post('/calls/zoom/create'), 'Failed to create Zoom call');
    expect(await tokenOf(user)).not.toBeNull();
  });

  it('needs a connected account', async () => {
    expectError(
      await as(user, org.host).post('/calls/zoom/create'),
      'Invalid Zoom access token',
      400,
      'INVALID_ZOOM_TOKEN',
    );
  });

  it('fails when Zoom is not configured', async () => {
    setEnv({ VIDEO_ZOOM_CLIENT_SECRET: undefined });
    expectError(
      await as(user, org.host).post('/calls/zoom/create'),
      'Zoom credentials have not been configured',
    );
  });
});

describe('DELETE /calls/zoom/token', () => {
  it("revokes the token at Zoom, forgets it, and tells the user's clients", async () => {
    await connectZoom(user);
    const token = (await tokenOf(user))!;
    let res: request.Response | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      res = await as(user, org.host).delete('/calls/zoom/token');
    });
    expectSuccess(res!);
    expect(published).toEqual([
      { event: { type: 'has_zoom_token', value: false }, users: [user.id] },
    ]);
    const revoke = zoom.requests.at(-1)!;
    expect(revoke.path).toBe('/oauth/revoke');
    expect(new URLSearchParams(revoke.body).get('token')).toBe(token.access_token);
    expect(await tokenOf(user)).toBeNull();
  });

  it('does nothing for a user without a token', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(user, org.host).delete('/calls/zoom/token'));
    });
    expect(published).toEqual([]);
    expect(zoom.requests).toEqual([]);
  });
});

describe('POST /calls/zoom/deauthorize (Zoom webhook)', () => {
  const event = (zoomUserId: string) =>
    JSON.stringify({
      event: 'app_deauthorized',
      payload: {
        account_id: 'EabCDEFghiLHMA',
        user_id: zoomUserId,
        signature: '827edc3452044f0bc86bdd5684afb7d1e6becfa1a767f24df1b287853cf73000',
        deauthorization_time: '2019-06-17T13:52:28.632Z',
        client_id: CLIENT_ID,
      },
    });
  const post = (
    body: string,
    signature?: string,
    timestamp = String(Math.floor(Date.now() / 1000)),
  ) => {
    const sig =
      signature ??
      `v0=${createHmac('sha256', WEBHOOK_SECRET).update(`v0:${timestamp}:${body}`).digest('hex')}`;
    return request(app)
      .post('/calls/zoom/deauthorize')
      .set('Host', getConfig().EXTERNAL_HOST)
      .set('content-type', 'application/json')
      .set('x-zm-request-timestamp', timestamp)
      .set('x-zm-signature', sig)
      .send(body);
  };

  it("answers success and changes nothing without a webhook secret (Zulip's behaviour)", async () => {
    await connectZoom(user);
    const { zoom_user_id } = (await tokenOf(user))!;
    expectSuccess(await post(event(zoom_user_id!), 'v0=whatever'));
    expect(await tokenOf(user)).not.toBeNull();
  });

  it("forgets the Zoom user's token when Zoom's signature is right", async () => {
    setEnv({ VIDEO_ZOOM_WEBHOOK_SECRET: WEBHOOK_SECRET });
    await connectZoom(user);
    const other = await createTestUser(org.realm, Role.MEMBER);
    await connectZoom(other);
    const { zoom_user_id } = (await tokenOf(user))!;
    let res: request.Response | undefined;
    const published = await captureEvents(org.realm.id, async () => {
      res = await post(event(zoom_user_id!));
    });
    expectSuccess(res!);
    expect(published).toEqual([
      { event: { type: 'has_zoom_token', value: false }, users: [user.id] },
    ]);
    expect(await tokenOf(user)).toBeNull();
    expect(await tokenOf(other)).not.toBeNull();
  });

  it('refuses a wrong signature', async () => {
    setEnv({ VIDEO_ZOOM_WEBHOOK_SECRET: WEBHOOK_SECRET });
    await connectZoom(user);
    const { zoom_user_id } = (await tokenOf(user))!;
    expectError(
      await post(event(zoom_user_id!), `v0=${'0'.repeat(64)}`),
      'Invalid Zoom webhook signature',
      401,
      'UNAUTHORIZED',
    );
    expect(await tokenOf(user)).not.toBeNull();
  });

  it('refuses a signed request from too long ago (a replay)', async () => {
    setEnv({ VIDEO_ZOOM_WEBHOOK_SECRET: WEBHOOK_SECRET });
    await connectZoom(user);
    const { zoom_user_id } = (await tokenOf(user))!;
    const old = String(Math.floor(Date.now() / 1000) - 3600);
    expectError(
      await post(event(zoom_user_id!), undefined, old),
      'Invalid Zoom webhook signature',
      401,
      'UNAUTHORIZED',
    );
    expect(await tokenOf(user)).not.toBeNull();
  });

  it("answers Zoom's URL validation challenge", async () => {
    setEnv({ VIDEO_ZOOM_WEBHOOK_SECRET: WEBHOOK_SECRET });
    const res = await post(
      JSON.stringify({ event: 'endpoint.url_validation', payload: { plainToken: 'abc' } }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      plainToken: 'abc',
      encryptedToken: createHmac('sha256', WEBHOOK_SECRET).update('abc').digest('hex'),
    });
  });
});

describe('POST /calls/zoom/create (a server-to-server app)', () => {
  beforeEach(() => {
    setEnv({ VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID: ACCOUNT_ID });
    zoom.knownEmails = new Set([user.deliveryEmail]);
  });

  it("creates the meeting for the user's email with the account's token", async () => {
    const res = await as(user, org.host).post('/calls/zoom/create', { is_video_call: false });
    expect(expectSuccess(res).url).toBe(
      `https://zoom.example/j/85746065?for=${user.deliveryEmail}`,
    );
    const [grant, meeting] = zoom.requests;
    expect(Object.fromEntries(new URLSearchParams(grant!.body))).toEqual({
      grant_type: 'account_credentials',
      account_id: ACCOUNT_ID,
    });
    expect(meeting!.path).toBe(`/v2/users/${user.deliveryEmail}/meetings`);
    expect(meeting!.headers.authorization).toBe('Bearer server-token');
    expect(JSON.parse(meeting!.body)).toEqual({
      settings: { host_video: false, participant_video: false },
      default_password: true,
    });
  });

  it('reuses the account token until it is near its end', async () => {
    expectSuccess(await as(user, org.host).post('/calls/zoom/create'));
    expectSuccess(await as(user, org.host).post('/calls/zoom/create'));
    expect(zoom.requests.filter((r) => r.path === '/oauth/token')).toHaveLength(1);
  });

  it('needs no connected account, but Zoom must know the email', async () => {
    const stranger = await createTestUser(org.realm, Role.MEMBER);
    expectError(
      await as(stranger, org.host).post('/calls/zoom/create'),
      'Unknown Zoom user email',
      400,
      'UNKNOWN_ZOOM_USER',
    );
  });

  it('fetches a new account token after Zoom calls the old one invalid', async () => {
    expectSuccess(await as(user, org.host).post('/calls/zoom/create'));
    zoom.validAccess.clear();
    expectError(await as(user, org.host).post('/calls/zoom/create'), 'Failed to create Zoom call');
    expectSuccess(await as(user, org.host).post('/calls/zoom/create'));
    expect(zoom.requests.filter((r) => r.path === '/oauth/token')).toHaveLength(2);
  });

  it('reports wrong account credentials', async () => {
    setEnv({ VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID: 'someone-else' });
    expectError(await as(user, org.host).post('/calls/zoom/create'), 'Invalid Zoom credentials');
  });
});

describe('BigBlueButton', () => {
  beforeEach(() => {
    setEnv({ BIG_BLUE_BUTTON_URL: `${base}/bigbluebutton/`, BIG_BLUE_BUTTON_SECRET: BBB_SECRET });
  });

  const create = (who: User, query: Record<string, unknown>) =>
    as(who, org.host).get('/calls/bigbluebutton/create', query);
  const linkOf = (res: request.Response) => expectSuccess(res).url as string;
  const join = (who: User, link: string) =>
    request(app).get(link).set('Host', org.host).auth(who.deliveryEmail, who.apiKey);

  it('GET /calls/bigbluebutton/create answers a signed join link', async () => {
    const link = linkOf(
      await create(user, { meeting_name: 'general > meeting', voice_only: false }),
    );
    expect(link).toMatch(/^\/calls\/bigbluebutton\/join\?bigbluebutton=[\w.%-]+$/);
  });

  it('opening the link creates the meeting and redirects to its join URL, as moderator', async () => {
    const link = linkOf(
      await create(user, { meeting_name: 'general > meeting', voice_only: true }),
    );
    const res = await join(user, link);
    expect(res.status).toBe(302);
    const [createCall] = zoom.requests;
    const query = createCall!.path.split('?')[1]!;
    expect(query).toMatch(
      /^meetingID=zulip-\d{12}&name=general%20%3E%20meeting&lockSettingsDisableCam=True&checksum=[0-9a-f]{64}$/,
    );
    const meetingId = /meetingID=(zulip-\d{12})/.exec(query)![1]!;
    const joinQuery = `meetingID=${meetingId}&role=MODERATOR&fullName=${encodeURIComponent(user.fullName)}&createTime=1531241258036`;
    const checksum = createHash('sha256').update(`join${joinQuery}${BBB_SECRET}`).digest('hex');
    expect(res.headers.location).toBe(
      `${base}/bigbluebutton/api/join?${joinQuery}&checksum=${checksum}`,
    );
  });

  it('others join as viewers, under their own name', async () => {
    const link = linkOf(await create(user, { meeting_name: 'm' }));
    const other = await createTestUser(org.realm, Role.MEMBER);
    const res = await join(other, `/api/v1${link}`);
    expect(res.status).toBe(302);
    expect(res.headers.location).toContain('&role=VIEWER&');
    expect(zoom.requests[0]!.path).toContain('&lockSettingsDisableCam=False&');
  });

  it("makes exactly the calls of Zulip's tests (meeting a, secret 123, King Hamlet)", async () => {
    bbb.createTime = '0';
    await getPrisma().user.update({ where: { id: user.id }, data: { fullName: 'King Hamlet' } });
    const link = {
      meeting_id: 'a',
      name: 'a',
      lock_settings_disable_cam: true,
      moderator: user.id,
    };
    const res = await join(
      user,
      `/calls/bigbluebutton/join?bigbluebutton=${signBigBlueButtonLink(link)}`,
    );
    expect(zoom.requests[0]!.path).toBe(
      '/bigbluebutton/api/create?meetingID=a&name=a&lockSettingsDisableCam=True' +
        '&checksum=33349e6374ca9b2d15a0c6e51a42bc3e8f770de13f88660815c6449859856e20',
    );
    expect(res.headers.location).toBe(
      `${base}/bigbluebutton/api/join?meetingID=a&role=MODERATOR&fullName=King%20Hamlet&createTime=0` +
        '&checksum=54259b884a7c20ddcd7b280a1b62e59d7990568fe4f22001812bc4bcfd161a46',
    );
  });

  it('refuses a link that was tampered with', async () => {
    const link = linkOf(await create(user, { meeting_name: 'm' }));
    expectError(await join(user, `${link}zoo`), 'Invalid signature.');
    const forged = link.replace(
      /bigbluebutton=[^.]+/,
      `bigbluebutton=${Buffer.from('{"moderator":1}').toString('base64url')}`,
    );
    expectError(await join(user, forged), 'Invalid signature.');
  });

  it("reports the BigBlueButton server's failures", async () => {
    const link = linkOf(await create(user, { meeting_name: 'm' }));
    bbb.fail = 'checksum';
    expectError(await join(user, link), 'Error authenticating to the BigBlueButton server.');
    bbb.fail = 'error';
    expectError(await join(user, link), 'BigBlueButton server returned an unexpected error.');
    bbb.fail = 'status';
    expectError(await join(user, link), 'Error connecting to the BigBlueButton server.');
  });

  it('needs meeting_name in the GET form; the POST form names the meeting itself', async () => {
    expectError(
      await create(user, {}),
      "Missing 'meeting_name' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    const link = linkOf(await as(user, org.host).post('/calls/bigbluebutton/create'));
    expect((await join(user, link)).status).toBe(302);
    expect(zoom.requests[0]!.path).toContain(`&name=${encodeURIComponent(org.realm.name)}&`);
  });

  it('limits meeting_name to 255 characters', async () => {
    const long = 'm'.repeat(256);
    expectError(
      await create(user, { meeting_name: long }),
      'meeting_name is too long (limit: 255 characters)',
    );
    expectError(
      await as(user, org.host).post('/calls/bigbluebutton/create', { meeting_name: long }),
      'meeting_name is too long (limit: 255 characters)',
    );
    const link = linkOf(await create(user, { meeting_name: long.slice(1) }));
    expect((await join(user, link)).status).toBe(302);
    expect(zoom.requests[0]!.path).toContain(`&name=${long.slice(1)}&`);
  });

  it('adds the trailing slash a BIG_BLUE_BUTTON_URL lacks', async () => {
    setEnv({ BIG_BLUE_BUTTON_URL: `${base}/bigbluebutton` });
    expect(getConfig().BIG_BLUE_BUTTON_URL).toBe(`${base}/bigbluebutton/`);
    const link = linkOf(await create(user, { meeting_name: 'm' }));
    const res = await join(user, link);
    expect(res.status).toBe(302);
    expect(zoom.requests[0]!.path).toMatch(/^\/bigbluebutton\/api\/create\?/);
    expect(res.headers.location).toMatch(new RegExp(`^${base}/bigbluebutton/api/join\\?`));
  });

  it('fails clearly when BigBlueButton is not configured', async () => {
    const link = linkOf(await create(user, { meeting_name: 'm' }));
    setEnv({ BIG_BLUE_BUTTON_SECRET: undefined });
    expectError(await create(user, { meeting_name: 'm' }), 'BigBlueButton is not configured.');
    expectError(await join(user, link), 'BigBlueButton is not configured.');
  });
});

describe('POST /calls/jitsi_meet/create', () => {
  it("opens a random room on the server's Jitsi Meet", async () => {
    const url = expectSuccess(await as(user, org.host).post('/calls/jitsi_meet/create')).url;
    expect(url).toMatch(new RegExp(`^${getConfig().JITSI_SERVER_URL}/\\d{15}$`));
  });

  it("uses the organization's server, with video muted for an audio call", async () => {
    const realm = await createTestRealm();
    await getPrisma().realm.update({
      where: { id: realm.realm.id },
      data: { jitsiServerUrl: 'https://jitsi.example.org/rooms' },
    });
    const url = expectSuccess(
      await as(realm.owner, realm.host).post('/calls/jitsi_meet/create', { is_video_call: false }),
    ).url;
    expect(url).toMatch(
      /^https:\/\/jitsi\.example\.org\/rooms\/\d{15}#config\.startWithVideoMuted=true$/,
    );
  });
});

describe('POST /calls/{provider}/create', () => {
  it('answers 404 for a provider the server does not know', async () => {
    expectError(
      await as(user, org.host).post('/calls/skype/create'),
      "Unknown video call provider 'skype'",
      404,
    );
  });
});

describe('has_zoom_token and the providers in /register', () => {
  const register = async (who: User) =>
    expectSuccess(
      await as(who, org.host).post('/register', { fetch_event_types: ['video_calls', 'realm'] }),
    );

  it('says whether the user connected Zoom', async () => {
    expect((await register(user)).has_zoom_token).toBe(false);
    await connectZoom(user);
    expect((await register(user)).has_zoom_token).toBe(true);
  });

  it('lists only the providers the server is configured for', async () => {
    expect((await register(user)).realm_available_video_chat_providers).toEqual({
      disabled: { name: 'None', id: 0 },
      jitsi_meet: { name: 'Jitsi Meet', id: 1 },
      zoom: { name: 'Zoom', id: 3 },
    });
    setEnv({
      VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID: ACCOUNT_ID,
      BIG_BLUE_BUTTON_URL: `${base}/bigbluebutton/`,
      BIG_BLUE_BUTTON_SECRET: BBB_SECRET,
    });
    expect((await register(user)).realm_available_video_chat_providers).toEqual({
      disabled: { name: 'None', id: 0 },
      jitsi_meet: { name: 'Jitsi Meet', id: 1 },
      big_blue_button: { name: 'BigBlueButton', id: 4 },
      zoom_server_to_server: { name: 'Zoom', id: 5 },
    });
  });

  it('PATCH /realm accepts only a configured provider', async () => {
    const owner = org.owner;
    expectSuccess(await as(owner, org.host).patch('/realm', { video_chat_provider: 3 }));
    expectError(
      await as(owner, org.host).patch('/realm', { video_chat_provider: 4 }),
      'Invalid video_chat_provider 4',
    );
    setEnv({ BIG_BLUE_BUTTON_URL: `${base}/bigbluebutton/`, BIG_BLUE_BUTTON_SECRET: BBB_SECRET });
    expectSuccess(await as(owner, org.host).patch('/realm', { video_chat_provider: 4 }));
    expectSuccess(await as(owner, org.host).patch('/realm', { video_chat_provider: 1 }));
  });
});
