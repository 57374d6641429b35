// The pure parts of the Zoom client: the signed OAuth state and Zoom's webhook signature.
import { createHmac } from 'node:crypto';
import { resetConfig } from '@parley/config';
import {
  newZoomStateNonce,
  parseZoomState,
  signZoomState,
  verifyZoomState,
  verifyZoomWebhook,
} from './zoom';

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
  const nonce = newZoomStateNonce();

  it('names the realm, the user it was signed for and its nonce', () => {
    const state = JSON.parse(signZoomState('acme', 42, nonce, now)) as unknown;
    expect(verifyZoomState(state, now)).toEqual({ realm: 'acme', userId: 42, nonce });
  });

  it('carries a new random nonce each time', () => {
    expect(nonce).toMatch(/^[\w-]{22}$/);
    expect(newZoomStateNonce()).not.toBe(nonce);
  });

  it('expires after an hour', () => {
    const state = JSON.parse(signZoomState('acme', 42, nonce, now)) as unknown;
    expect(verifyZoomState(state, now + 3599_000)).not.toBeNull();
    expect(verifyZoomState(state, now + 3601_000)).toBeNull();
  });

  it('is refused when its user, realm or nonce was changed', () => {
    const { realm, sid } = JSON.parse(signZoomState('acme', 42, nonce, now)) as {
      realm: string;
      sid: string;
    };
    const [, expires, , mac] = sid.split('.');
    for (const state of [
      { realm, sid: `43.${expires}.${nonce}.${mac}` },
      { realm: 'other', sid },
      { realm, sid: `42.${expires}.${newZoomStateNonce()}.${mac}` },
    ])
      expect(verifyZoomState(state, now)).toBeNull();
  });

  it('is refused when signed with another secret', () => {
    const state = JSON.parse(signZoomState('acme', 42, nonce, now)) as unknown;
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

  it("is read from the redirect's JSON text, with Zulip's error otherwise", () => {
    expect(parseZoomState(signZoomState('acme', 42, nonce, now), now)).toEqual({
      realm: 'acme',
      userId: 42,
      nonce,
    });
    for (const text of ['not json', '{}'])
      expect(() => parseZoomState(text, now)).toThrow('Invalid Zoom session identifier');
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

  it('takes the timestamp in seconds or in milliseconds, and no other length', () => {
    const now = 1_700_000_000_000;
    const ms = '1700000000123';
    expect(verifyZoomWebhook('hook', sign(ms), ms, body, now)).toBe(true);
    expect(verifyZoomWebhook('hook', sign(ms), ms, body, now + 301_000)).toBe(false);
    // 11, 12 or 14 digits: neither seconds nor milliseconds of a time near now.
    for (const other of ['17000000000', '170000000000', '17000000001230'])
      expect(verifyZoomWebhook('hook', sign(other), other, body, now)).toBe(false);
  });
});
