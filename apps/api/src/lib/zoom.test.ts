// The pure parts of the Zoom client: the signed OAuth state and Zoom's webhook signature.
import { createHmac } from 'node:crypto';
import { resetConfig } from '@parley/config';
import { signZoomState, verifyZoomState, verifyZoomWebhook } from './zoom';

const saved = {
  id: process.env.VIDEO_ZOOM_CLIENT_ID,
  secret: process.env.VIDEO_ZOOM_CLIENT_SECRET,
};

beforeAll(() => {
  process.env.VIDEO_ZOOM_CLIENT_ID = 'id';
  process.env.VIDEO_ZOOM_CLIENT_SECRET = 'secret';
  resetConfig();
});

afterAll(() => {
  for (const [key, value] of [
    ['VIDEO_ZOOM_CLIENT_ID', saved.id],
    ['VIDEO_ZOOM_CLIENT_SECRET', saved.secret],
  ] as const)
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  resetConfig();
});

describe('the OAuth state', () => {
  const now = Date.UTC(2026, 0, 1);

  it('names the realm and the user it was signed for', () => {
    const state = JSON.parse(signZoomState('acme', 42, now)) as unknown;
    expect(verifyZoomState(state, now)).toEqual({ realm: 'acme', userId: 42 });
  });

  it('expires after an hour', () => {
    const state = JSON.parse(signZoomState('acme', 42, now)) as unknown;
    expect(verifyZoomState(state, now + 3599_000)).not.toBeNull();
    expect(verifyZoomState(state, now + 3601_000)).toBeNull();
  });

  it('is refused when signed with another secret', () => {
    const state = JSON.parse(signZoomState('acme', 42, now)) as unknown;
    process.env.VIDEO_ZOOM_CLIENT_SECRET = 'rotated';
    resetConfig();
    expect(verifyZoomState(state, now)).toBeNull();
    process.env.VIDEO_ZOOM_CLIENT_SECRET = 'secret';
    resetConfig();
  });

  it('is refused when malformed', () => {
    for (const state of [null, 'x', {}, { realm: 'acme' }, { realm: 'acme', sid: '42.1.zz' }])
      expect(verifyZoomState(state, now)).toBeNull();
  });
});

describe("Zoom's webhook signature", () => {
  const body = '{"event":"app_deauthorized"}';
  const sign = (timestamp: string) =>
    `v0=${createHmac('sha256', 'hook').update(`v0:${timestamp}:${body}`).digest('hex')}`;

  it('is checked over the timestamp and the exact body, within five minutes', () => {
    const now = 1_700_000_000_000;
    const ts = '1700000000';
    expect(verifyZoomWebhook('hook', sign(ts), ts, body, now)).toBe(true);
    expect(verifyZoomWebhook('hook', sign(ts), ts, `${body} `, now)).toBe(false);
    expect(verifyZoomWebhook('other', sign(ts), ts, body, now)).toBe(false);
    expect(verifyZoomWebhook('hook', sign(ts), ts, body, now + 301_000)).toBe(false);
    expect(verifyZoomWebhook('hook', undefined, ts, body, now)).toBe(false);
  });
});
