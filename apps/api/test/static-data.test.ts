// The emoji names at /register's server_emoji_data_url, which zulip-flutter fetches for its
// emoji picker, autocomplete and status suggestions (a 404 left them without Unicode emoji).
import request from 'supertest';
import { app, as, createTestRealm, expectSuccess } from './helpers';

describe('server_emoji_data_url', () => {
  it("serves Zulip's emoji_api.json, canonical names first, without credentials", async () => {
    const org = await createTestRealm();
    const state = expectSuccess(
      await as(org.owner, org.host).post('/register', { fetch_event_types: ['realm'] }),
    );
    const url = new URL(state.server_emoji_data_url as string);
    expect(url.pathname).toBe('/static/generated/emoji/emoji_api.json');
    const res = await request(app).get(url.pathname).set('Host', org.host);
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/json');
    expect(res.headers['cache-control']).toBe('public, max-age=86400');
    const names = (res.body as { code_to_names: Record<string, string[]> }).code_to_names;
    expect(names['1f600']![0]).toBe('grinning');
    // Aliases follow the canonical name; every code has at least one name.
    expect(names['1f44d']).toEqual(expect.arrayContaining(['+1', 'thumbs_up']));
    expect(names['1f44d']![0]).toBe('+1');
    expect(Object.keys(names).length).toBeGreaterThan(1500);
    expect(Object.values(names).every((list) => list.length > 0)).toBe(true);
  });
});
