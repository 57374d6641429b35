// The linkifier cache: every send and message fetch needs the organization's linkifiers, read
// once and then kept in memory. A change made through the API takes effect on this process's
// next request; one made anywhere else (another replica, plain SQL) once its NOTIFY arrives.
import pg from 'pg';
import { getPrisma } from '@parley/db';
import { linkifierCache } from '../src/lib/linkifier-cache';
import { as, expectSuccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';

let org: MessageOrg;

beforeAll(async () => {
  org = await createMessageOrg();
  expect(await linkifierCache().listening()).toBe(true);
});

afterEach(async () => {
  await getPrisma().linkifier.deleteMany({ where: { realmId: org.realm.id } });
});

// Without waiting for notifications: "at once" means this process's next request.
const rendered = async (content: string) =>
  expectSuccess(
    await as(org.member, org.host, { atOnce: true }).post('/messages/render', { content }),
  ).rendered as string;

/** Statements that read linkifiers while `run` runs. */
async function linkifierReads(run: () => Promise<unknown>): Promise<number> {
  const spy = jest.spyOn(pg.Client.prototype, 'query');
  try {
    await run();
    return spy.mock.calls.filter((call) =>
      String((call[0] as { text?: string }).text ?? call[0]).includes('FROM realm_filter'),
    ).length;
  } finally {
    spy.mockRestore();
  }
}

describe('linkifiers in memory', () => {
  it('reads them once, then answers sends and fetches from memory', async () => {
    const { id } = expectSuccess(
      await send(org.member, org.host, { type: 'stream', to: 'general', topic: 't', content: 'x' }),
    );
    await as(org.member, org.host).get(`/messages/${id as number}`);
    expect(
      await linkifierReads(async () => {
        expectSuccess(await as(org.member, org.host).get(`/messages/${id as number}`));
        expectSuccess(
          await send(org.member, org.host, {
            type: 'stream',
            to: 'general',
            topic: 't',
            content: 'y',
          }),
        );
      }),
    ).toBe(0);
  });

  it('uses a linkifier added, changed or removed through the API on the next request', async () => {
    expect(await rendered('#12')).not.toContain('href');
    const { id } = expectSuccess(
      await as(org.admin, org.host).post('/realm/filters', {
        pattern: '#(?P<id>[0-9]+)',
        url_template: 'https://tracker.example/ticket/{id}',
      }),
    );
    expect(await rendered('#12')).toContain('https://tracker.example/ticket/12');
    expectSuccess(
      await as(org.admin, org.host).patch(`/realm/filters/${id as number}`, {
        pattern: '#(?P<id>[0-9]+)',
        url_template: 'https://other.example/{id}',
      }),
    );
    expect(await rendered('#12')).toContain('https://other.example/12');
    expectSuccess(await as(org.admin, org.host).delete(`/realm/filters/${id as number}`));
    expect(await rendered('#12')).not.toContain('href');
  });

  it('learns of a change made elsewhere from its notification', async () => {
    expect(await rendered('#34')).not.toContain('href');
    // As another replica would: a plain write, outside this process's actions.
    await getPrisma().linkifier.create({
      data: {
        realmId: org.realm.id,
        pattern: '#(?P<id>[0-9]+)',
        urlTemplate: 'https://elsewhere.example/{id}',
        order: 0,
      },
    });
    let html = '';
    for (let tries = 0; tries < 100 && !html.includes('href'); tries++) {
      html = await rendered('#34');
      if (!html.includes('href')) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(html).toContain('https://elsewhere.example/34');
  });
});
