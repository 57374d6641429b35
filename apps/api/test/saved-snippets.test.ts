// Saved snippets (spec 2.11, 4.19; Zulip's zerver/views/saved_snippets.py): creating,
// listing, editing and deleting a user's snippets, their `saved_snippets` events and
// /register's saved_snippets.
import { Role, type User } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

let org: TestRealm;
let user: User;
let other: User;

beforeAll(async () => {
  org = await createTestRealm();
});
beforeEach(async () => {
  user = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Sam Snippet' });
  other = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Oli Other' });
});

const create = (form: Record<string, unknown>, who: User = user) =>
  as(who, org.host).post('/saved_snippets', form);
const edit = (id: number | string, form: Record<string, unknown>, who: User = user) =>
  as(who, org.host).patch(`/saved_snippets/${id}`, form);
const remove = (id: number | string, who: User = user) =>
  as(who, org.host).delete(`/saved_snippets/${id}`);
const list = async (who: User = user) =>
  expectSuccess(await as(who, org.host).get('/saved_snippets')).saved_snippets as {
    id: number;
    title: string;
    content: string;
    date_created: number;
  }[];

async function createOne(title = 'Greeting', content = 'Hello there!'): Promise<number> {
  return expectSuccess(await create({ title, content })).saved_snippet_id as number;
}

describe('POST /saved_snippets', () => {
  it('creates a snippet, stripped, and tells the user’s clients', async () => {
    const before = Math.floor(Date.now() / 1000);
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = expectSuccess(await create({ title: '  Greeting ', content: '\n Hello there!  ' }))
        .saved_snippet_id as number;
    });
    const [snippet] = await list();
    expect(snippet).toEqual({
      id,
      title: 'Greeting',
      content: 'Hello there!',
      date_created: expect.any(Number) as number,
    });
    expect(snippet!.date_created).toBeGreaterThanOrEqual(before);
    expect(published).toEqual([
      { event: { type: 'saved_snippets', op: 'add', saved_snippet: snippet }, users: [user.id] },
    ]);
    // Someone else's list stays theirs.
    expect(await list(other)).toEqual([]);
  });

  it('refuses blank, missing and oversize titles and contents with Zulip’s messages', async () => {
    expectError(await create({ title: '   ', content: 'x' }), 'title cannot be blank');
    expectError(await create({ title: 't', content: ' \n ' }), 'content cannot be blank');
    expectError(
      await create({ title: 'x'.repeat(61), content: 'x' }),
      'title is too long (limit: 60 characters)',
    );
    expectError(
      await create({ title: 't', content: 'x'.repeat(10_001) }),
      'content is too long (limit: 10000 characters)',
    );
    expectError(
      await create({ content: 'x' }),
      "Missing 'title' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await create({ title: 'x' }),
      "Missing 'content' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    const nul = await create({ title: 'a\u0000b', content: 'x' });
    expect(nul.status).toBe(400);
    expect(await list()).toEqual([]);
    // Limits count characters (code points), after stripping.
    expectSuccess(await create({ title: ` ${'😀'.repeat(60)} `, content: 'x'.repeat(10_000) }));
  });

  it('reports parameters it does not know', async () => {
    const res = await create({ title: 't', content: 'c', colour: 'red' });
    expect(expectSuccess(res).ignored_parameters_unsupported).toEqual(['colour']);
  });
});

describe('PATCH /saved_snippets/{saved_snippet_id}', () => {
  it('changes what is given and tells the user’s clients', async () => {
    const id = await createOne();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await edit(id, { title: ' New title ' }));
      expectSuccess(await edit(id, { content: 'New content' }));
    });
    const [snippet] = await list();
    expect(snippet).toMatchObject({ id, title: 'New title', content: 'New content' });
    expect(published.map((entry) => entry.event)).toEqual([
      {
        type: 'saved_snippets',
        op: 'update',
        saved_snippet: { ...snippet, content: 'Hello there!' },
      },
      { type: 'saved_snippets', op: 'update', saved_snippet: snippet },
    ]);
    expect(published.every((entry) => entry.users.join() === String(user.id))).toBe(true);
  });

  it('answers at once without an event when nothing is given', async () => {
    const id = await createOne();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await edit(id, {}));
    });
    expect(published).toEqual([]);
  });

  it('answers 404 for a snippet the user does not have and refuses bad input', async () => {
    const id = await createOne();
    const missing = 'Saved snippet does not exist.';
    expectError(await edit(id, { title: 'Mine' }, other), missing, 404);
    expectError(await edit(id + 1000, { title: 'x' }), missing, 404);
    expectError(await edit(id, { title: '' }), 'title cannot be blank');
    expectError(
      await edit(id, { content: 'x'.repeat(10_001) }),
      'content is too long (limit: 10000 characters)',
    );
    expectError(await edit('abc', { title: 'x' }), 'saved_snippet_id is not an integer');
    expectError(await edit(2 ** 31, { title: 'x' }), 'saved_snippet_id is too large');
    expect((await list())[0]).toMatchObject({ title: 'Greeting', content: 'Hello there!' });
  });
});

describe('DELETE /saved_snippets/{saved_snippet_id}', () => {
  it('deletes the user’s own snippet and tells their clients', async () => {
    const id = await createOne();
    expectError(await remove(id, other), 'Saved snippet does not exist.', 404);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await remove(id));
    });
    expect(published).toEqual([
      { event: { type: 'saved_snippets', op: 'remove', saved_snippet_id: id }, users: [user.id] },
    ]);
    expect(await list()).toEqual([]);
    expectError(await remove(id), 'Saved snippet does not exist.', 404);
    expectError(await remove('x'), 'saved_snippet_id is not an integer');
  });
});

describe('POST /register saved_snippets', () => {
  // Folding drafts and snippets depends on no state option.
  const options = {} as StateOptions;
  const register = async () =>
    expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: ['saved_snippets'] }),
    );

  it('lists the user’s snippets and becomes the fresh state when events are applied', async () => {
    const keep = await createOne('Keep', 'kept');
    const change = await createOne('Change', 'before');
    const gone = await createOne('Gone', 'bye');
    const fourth = await createOne('Fourth', 'x');
    const state = await register();
    expect((state.saved_snippets as { id: number }[]).map((s) => s.id)).toEqual([
      keep,
      change,
      gone,
      fourth,
    ]);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await edit(change, { content: 'after' }));
      expectSuccess(await remove(gone));
      await createOne('New', 'new');
      // Another user's changes reach neither the queue nor the state.
      expectSuccess(await create({ title: 'Theirs', content: 'x' }, other));
    });
    for (const [index, { event, users }] of published.entries())
      if (users.includes(user.id))
        applyEvent(state, { id: index, ...event } as QueuedEvent, user, options);
    expect(state.saved_snippets).toEqual((await register()).saved_snippets);
    expect(state.saved_snippets).toEqual(await list());
  });
});
