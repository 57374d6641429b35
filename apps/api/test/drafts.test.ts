// Drafts (spec 2.5, 4.9; Zulip's zerver/lib/drafts.py): creating, listing, editing and
// deleting a user's drafts, the rules a draft obeys, the `drafts` events that keep the user's
// clients in step, and /register's drafts.
import { getPrisma, Role, type User } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import { createMessageOrg, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

let org: MessageOrg;
let user: User;

beforeAll(async () => {
  org = await createMessageOrg();
});
beforeEach(async () => {
  user = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Dora Drafter' });
  expectSuccess(
    await as(org.owner, org.host).post('/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }],
      principals: [user.id],
    }),
  );
});

const create = (drafts: unknown, who: User = user) => as(who, org.host).post('/drafts', { drafts });
const edit = (id: number | string, draft: unknown, who: User = user) =>
  as(who, org.host).patch(`/drafts/${id}`, { draft });
const remove = (id: number | string, who: User = user) => as(who, org.host).delete(`/drafts/${id}`);
const list = async (who: User = user) => expectSuccess(await as(who, org.host).get('/drafts'));

const channelDraft = (fields: Record<string, unknown> = {}) => ({
  type: 'stream',
  to: [org.general.id],
  topic: 'plans',
  content: 'Let us meet',
  ...fields,
});

async function createOne(draft: unknown): Promise<number> {
  const ids = expectSuccess(await create([draft])).ids as number[];
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

describe('POST /drafts', () => {
  it('creates drafts in the order given and tells the user’s clients in one event', async () => {
    let ids: number[] = [];
    const published = await captureEvents(org.realm.id, async () => {
      ids = expectSuccess(
        await create([
          channelDraft({ timestamp: 1595479019 }),
          { type: 'private', to: [org.other.id], topic: 'ignored', content: 'Hi', timestamp: 5 },
          { type: '', to: [12345], topic: 'ignored too', content: 'Unaddressed', timestamp: 7.9 },
        ]),
      ).ids as number[];
    });
    expect(ids).toHaveLength(3);
    const drafts = [
      {
        id: ids[0],
        type: 'stream',
        to: [org.general.id],
        topic: 'plans',
        content: 'Let us meet',
        timestamp: 1595479019,
      },
      { id: ids[1], type: 'private', to: [org.other.id], topic: '', content: 'Hi', timestamp: 5 },
      { id: ids[2], type: '', to: [], topic: '', content: 'Unaddressed', timestamp: 7 },
    ];
    expect(published).toEqual([{ event: { type: 'drafts', op: 'add', drafts }, users: [user.id] }]);
    // GET lists the oldest edit first.
    expect(await list()).toEqual({
      result: 'success',
      msg: '',
      count: 3,
      drafts: [drafts[1], drafts[2], drafts[0]],
    });
  });

  it('fills in the time when the client sends none, in whole seconds', async () => {
    const before = Math.floor(Date.now() / 1000);
    const id = await createOne({ type: '', to: [], topic: '', content: 'now', timestamp: null });
    const [draft] = (await list()).drafts as { id: number; timestamp: number }[];
    expect(draft!.id).toBe(id);
    expect(draft!.timestamp).toBeGreaterThanOrEqual(before);
    expect(draft!.timestamp).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    await createOne({ type: '', to: [], topic: '', content: 'no timestamp key' });
  });

  it('keeps a direct draft’s other participants, or the user alone', async () => {
    const group = await createOne({
      type: 'private',
      to: [org.other.id, user.id, org.member.id, org.other.id],
      topic: '',
      content: 'group',
    });
    const self = await createOne({ type: 'private', to: [user.id], topic: '', content: 'me' });
    // Zulip stores a direct draft without recipients as unaddressed.
    const nobody = await createOne({ type: 'private', to: [], topic: '', content: 'nobody' });
    const byId = new Map(
      ((await list()).drafts as { id: number; type: string; to: number[] }[]).map((d) => [d.id, d]),
    );
    expect(byId.get(group)).toMatchObject({
      type: 'private',
      to: [org.member.id, org.other.id].sort((a, b) => a - b),
    });
    expect(byId.get(self)).toMatchObject({ type: 'private', to: [user.id] });
    expect(byId.get(nobody)).toMatchObject({ type: '', to: [] });
  });

  it('normalizes content as messages do and truncates long topics as Zulip does', async () => {
    const longTopic = 'é'.repeat(70);
    const id = await createOne(
      channelDraft({ topic: longTopic, content: '\n\n  indented\ntext   \n' }),
    );
    const draft = ((await list()).drafts as { id: number; topic: string; content: string }[]).find(
      (d) => d.id === id,
    )!;
    expect(draft.topic).toBe(`${'é'.repeat(57)}...`);
    expect(draft.content).toBe('indented\ntext');
    const longContent = 'x'.repeat(10_050);
    const cut = await createOne(channelDraft({ content: longContent }));
    const stored = ((await list()).drafts as { id: number; content: string }[]).find(
      (d) => d.id === cut,
    )!;
    expect(stored.content).toHaveLength(10_000);
    expect(stored.content.endsWith('\n[message truncated]')).toBe(true);
  });

  it('refuses a channel draft without exactly one channel the user can read', async () => {
    const message = 'Must specify exactly 1 channel ID for channel messages';
    expectError(await create([channelDraft({ to: [] })]), message);
    expectError(await create([channelDraft({ to: [org.general.id, org.general.id] })]), message);
    expectError(await create([channelDraft({ to: [org.secret.id] })]), 'Invalid channel ID');
    expectError(await create([channelDraft({ to: [999_999_999] })]), 'Invalid channel ID');
    expectError(await create([channelDraft({ to: [2 ** 40] })]), 'Invalid channel ID');
    expectError(await create([channelDraft({ to: [-3] })]), 'Invalid channel ID');
    // The member subscribed to the private channel may draft there.
    expectSuccess(await create([channelDraft({ to: [org.secret.id] })], org.member));
    // Not in an archived channel (Zulip's access_stream_by_id requires an active one).
    await getPrisma().stream.update({ where: { id: org.secret.id }, data: { deactivated: true } });
    try {
      expectError(
        await create([channelDraft({ to: [org.secret.id] })], org.member),
        'Invalid channel ID',
      );
    } finally {
      await getPrisma().stream.update({
        where: { id: org.secret.id },
        data: { deactivated: false },
      });
    }
  });

  it('tells the clients of an empty batch too, as Zulip does', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expect(expectSuccess(await create([])).ids).toEqual([]);
    });
    expect(published).toEqual([
      { event: { type: 'drafts', op: 'add', drafts: [] }, users: [user.id] },
    ]);
  });

  it('refuses unknown and deactivated users in a direct draft', async () => {
    const direct = (to: number[]) => ({ type: 'private', to, topic: '', content: 'x' });
    expectError(await create([direct([org.other.id, 999_999_999])]), 'Invalid user ID 999999999');
    expectError(await create([direct([2 ** 33])]), `Invalid user ID ${2 ** 33}`);
    const stranger = (await createMessageOrg()).member;
    expectError(await create([direct([stranger.id])]), `Invalid user ID ${stranger.id}`);
    const leaving = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await as(org.owner, org.host).delete(`/users/${leaving.id}`));
    const res = await create([direct([leaving.id])]);
    expect(res.status).toBe(400);
    expect(res.body.msg).toMatch(/^'.+' is no longer using Zulip\.$/);
  });

  it('refuses bad drafts with Zulip’s messages and creates none of the batch', async () => {
    const cases: [unknown, string][] = [
      ['not json', 'drafts is not valid JSON'],
      [{}, 'drafts is not a list'],
      [[5], 'drafts[0] is not a dict'],
      [[channelDraft({ type: 'direct' })], "Invalid drafts[0]['type']"],
      [[channelDraft({ to: 5 })], "drafts[0]['to'] is not a list"],
      [[channelDraft({ to: ['1'] })], "drafts[0]['to'][0] is not an integer"],
      [[channelDraft({ topic: 5 })], "drafts[0]['topic'] is not a string"],
      [[channelDraft({ content: '  \n ' })], "drafts[0]['content'] cannot be blank"],
      [[channelDraft({ timestamp: 'soon' })], "drafts[0]['timestamp'] is not an integer"],
      [[channelDraft({ timestamp: 1e15 })], "drafts[0]['timestamp'] is too large"],
      [[channelDraft({ extra: 1 })], 'Argument "extra" at drafts[0] is unexpected'],
      [[{ type: '', to: [], topic: '' }], "drafts[0]['content'] field is missing"],
      [[channelDraft(), channelDraft({ timestamp: -1 })], 'Timestamp must not be negative.'],
    ];
    for (const [drafts, message] of cases) expectError(await create(drafts), message);
    expectError(
      await as(user, org.host).post('/drafts'),
      "Missing 'drafts' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expect((await list()).count).toBe(0);
  });

  it('refuses null bytes in the topic and the content', async () => {
    for (const draft of [
      channelDraft({ topic: 'a\u0000b' }),
      channelDraft({ content: 'a\u0000' }),
    ]) {
      const res = await create([draft]);
      expect(res.status).toBe(400);
      expect(res.body.result).toBe('error');
    }
    expect((await list()).count).toBe(0);
  });

  it('reports parameters it does not know', async () => {
    const res = await as(user, org.host).post('/drafts', { drafts: '[]', colour: 'red' });
    expect(expectSuccess(res)).toMatchObject({
      ids: [],
      ignored_parameters_unsupported: ['colour'],
    });
  });
});

describe('PATCH /drafts/{draft_id}', () => {
  it('replaces the whole draft and tells the user’s clients', async () => {
    const id = await createOne(channelDraft({ timestamp: 100 }));
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await edit(id, {
          type: 'private',
          to: [org.other.id],
          topic: 'x',
          content: 'new',
          timestamp: 200,
        }),
      );
    });
    const draft = {
      id,
      type: 'private',
      to: [org.other.id],
      topic: '',
      content: 'new',
      timestamp: 200,
    };
    expect(published).toEqual([
      { event: { type: 'drafts', op: 'update', draft }, users: [user.id] },
    ]);
    expect((await list()).drafts).toEqual([draft]);
  });

  it('answers 404 for a draft the user does not have, before checking the new draft', async () => {
    const id = await createOne(channelDraft());
    const missing = 'Draft does not exist';
    expectError(await edit(id, channelDraft({ content: 'mine now' }), org.other), missing, 404);
    expectError(await edit(id + 1000, channelDraft({ to: [] })), missing, 404);
    expectError(await edit(2 ** 31 - 1, channelDraft()), missing, 404);
    expect(((await list()).drafts as { content: string }[])[0]!.content).toBe('Let us meet');
  });

  it('refuses bad ids and bad drafts', async () => {
    const id = await createOne(channelDraft());
    expectError(await edit('abc', channelDraft()), 'draft_id is not an integer');
    expectError(await edit(2 ** 31, channelDraft()), 'draft_id is too large');
    expectError(
      await as(user, org.host).patch(`/drafts/${id}`),
      "Missing 'draft' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(await edit(id, [channelDraft()]), 'draft is not a dict');
    expectError(
      await edit(id, channelDraft({ to: [1, 2] })),
      'Must specify exactly 1 channel ID for channel messages',
    );
    expectError(await edit(id, channelDraft({ content: '' })), "draft['content'] cannot be blank");
  });
});

describe('DELETE /drafts/{draft_id}', () => {
  it('deletes the user’s own draft and tells their clients', async () => {
    const id = await createOne(channelDraft());
    expectError(await remove(id, org.other), 'Draft does not exist', 404);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await remove(id));
    });
    expect(published).toEqual([
      { event: { type: 'drafts', op: 'remove', draft_id: id }, users: [user.id] },
    ]);
    expect((await list()).count).toBe(0);
    expectError(await remove(id), 'Draft does not exist', 404);
    expectError(await remove('x'), 'draft_id is not an integer');
  });
});

describe('drafts synchronization turned off', () => {
  it('refuses every drafts endpoint and sends /register no drafts', async () => {
    const id = await createOne(channelDraft());
    expectSuccess(
      await as(user, org.host).patch('/settings', { enable_drafts_synchronization: false }),
    );
    const off = 'User has disabled synchronizing drafts.';
    expectError(await as(user, org.host).get('/drafts'), off);
    expectError(await create([channelDraft()]), off);
    expectError(await edit(id, channelDraft()), off);
    expectError(await remove(id), off);
    const state = expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: ['drafts'] }),
    );
    expect(state.drafts).toEqual([]);
    // As in Zulip, turning it off forgot them: on again, the list is empty.
    expectSuccess(
      await as(user, org.host).patch('/settings', { enable_drafts_synchronization: true }),
    );
    expect((await list()).count).toBe(0);
  });
});

describe('bots', () => {
  it('may keep drafts, as in Zulip', async () => {
    const botId = expectSuccess(
      await as(user, org.host).post('/bots', { full_name: 'Draft bot', short_name: 'drafty' }),
    ).user_id as number;
    const bot = await getPrisma().user.findUniqueOrThrow({ where: { id: botId } });
    expectSuccess(await create([{ type: '', to: [], topic: '', content: 'beep' }], bot));
    expect((await list(bot)).count).toBe(1);
  });
});

describe('POST /register drafts', () => {
  // Folding drafts and snippets depends on no state option.
  const options = {} as StateOptions;
  const register = async () =>
    expectSuccess(await as(user, org.host).post('/register', { fetch_event_types: ['drafts'] }));

  it('lists the newest edits first', async () => {
    const [a, b, c] = expectSuccess(
      await create([
        channelDraft({ timestamp: 300 }),
        channelDraft({ timestamp: 100 }),
        channelDraft({ timestamp: 200 }),
      ]),
    ).ids as number[];
    const state = await register();
    expect((state.drafts as { id: number }[]).map((d) => d.id)).toEqual([a, c, b]);
  });

  it('becomes the fresh state when the events of changes are applied to it', async () => {
    const [keep, change, gone] = expectSuccess(
      await create([
        channelDraft({ timestamp: 10 }),
        channelDraft({ timestamp: 20 }),
        channelDraft({ timestamp: 30 }),
      ]),
    ).ids as number[];
    const state = await register();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await edit(change!, channelDraft({ content: 'changed', timestamp: 25 })));
      expectSuccess(await remove(gone!));
      expectSuccess(await create([channelDraft({ content: 'later', timestamp: 5 })]));
    });
    for (const [index, { event }] of published.entries())
      applyEvent(state, { id: index, ...event } as QueuedEvent, user, options);
    const fresh = await register();
    const byId = (list: unknown) => [...(list as { id: number }[])].sort((x, y) => x.id - y.id);
    expect(byId(state.drafts)).toEqual(byId(fresh.drafts));
    expect((fresh.drafts as { id: number }[]).map((d) => d.id)).toContain(keep);
  });
});
