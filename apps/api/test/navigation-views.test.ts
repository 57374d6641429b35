// Navigation views (Zulip's NavigationView): GET and POST /navigation_views, PATCH and DELETE
// /navigation_views/{fragment}; Zulip's checks, the audit log, the events (only to the person)
// and /register.
import { getPrisma, Role, type User } from '@parley/db';
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

const prisma = () => getPrisma();

let org: TestRealm;
let user: User;
beforeAll(async () => {
  org = await createTestRealm();
});
beforeEach(async () => {
  user = await createTestUser(org.realm, Role.MEMBER);
});

const client = (who: User = user) => as(who, org.host);
const add = (form: Record<string, unknown>, who: User = user) =>
  client(who).post('/navigation_views', form);
const listed = async (who: User = user) =>
  expectSuccess(await client(who).get('/navigation_views')).navigation_views;
const registered = async () =>
  expectSuccess(
    await as(user, org.host, { atOnce: true }).post('/register', {
      fetch_event_types: ['navigation_views'],
    }),
  ).navigation_views;

describe('navigation views', () => {
  it('adds built-in and custom views, telling only their owner', async () => {
    const events = await captureEvents(org.realm.id, async () => {
      expectSuccess(await add({ fragment: 'inbox', is_pinned: false }));
      expectSuccess(
        await add({ fragment: ' narrow/is/alerted ', is_pinned: true, name: ' Alert words ' }),
      );
    });
    const inbox = { fragment: 'inbox', is_pinned: false, name: null };
    const alerts = { fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alert words' };
    expect(events).toEqual([
      { event: { type: 'navigation_view', op: 'add', navigation_view: inbox }, users: [user.id] },
      { event: { type: 'navigation_view', op: 'add', navigation_view: alerts }, users: [user.id] },
    ]);
    expect(await listed()).toEqual([inbox, alerts]);
    expect(await registered()).toEqual([inbox, alerts]);
    // Another person's views are theirs alone.
    expect(await listed(org.owner)).toEqual([]);
    const audit = await prisma().auditLog.findMany({
      where: { modifiedUserId: user.id, eventType: 850 },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((row) => row.extraData)).toEqual([
      { fragment: 'inbox' },
      { fragment: 'narrow/is/alerted' },
    ]);
  });

  it('updates and removes a view by its fragment, sent as it is or percent-encoded', async () => {
    expectSuccess(await add({ fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alerts' }));
    const events = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await client().patch('/navigation_views/narrow/is/alerted', {
          is_pinned: false,
          name: 'Watched phrases',
        }),
      );
      // Saving the form again with the same name is no conflict with itself.
      expectSuccess(
        await client().patch('/navigation_views/narrow%2Fis%2Falerted', {
          name: 'Watched phrases',
        }),
      );
    });
    expect(events.map((e) => e.event)).toEqual([
      {
        type: 'navigation_view',
        op: 'update',
        fragment: 'narrow/is/alerted',
        data: { name: 'Watched phrases', is_pinned: false },
      },
      {
        type: 'navigation_view',
        op: 'update',
        fragment: 'narrow/is/alerted',
        data: { name: 'Watched phrases' },
      },
    ]);
    expect(await listed()).toEqual([
      { fragment: 'narrow/is/alerted', is_pinned: false, name: 'Watched phrases' },
    ]);
    const audit = await prisma().auditLog.findMany({
      where: { modifiedUserId: user.id, eventType: 851 },
      orderBy: { id: 'asc' },
    });
    expect(audit[0]!.extraData).toEqual({
      fragment: 'narrow/is/alerted',
      old_value: 'Alerts',
      new_value: 'Watched phrases',
      property: 'name',
    });
    expect(audit[1]!.extraData).toMatchObject({ property: 'is_pinned', new_value: false });

    const removed = await captureEvents(org.realm.id, async () => {
      expectSuccess(await client().delete('/navigation_views/narrow%2Fis%2Falerted'));
    });
    expect(removed).toEqual([
      {
        event: { type: 'navigation_view', op: 'remove', fragment: 'narrow/is/alerted' },
        users: [user.id],
      },
    ]);
    expect(await listed()).toEqual([]);
    expectError(
      await client().delete('/navigation_views/narrow/is/alerted'),
      'Navigation view does not exist.',
      404,
    );
  });

  it('refuses what Zulip refuses', async () => {
    expectSuccess(await add({ fragment: 'recent', is_pinned: true }));
    expectSuccess(await add({ fragment: 'narrow/channel/1', is_pinned: true, name: 'One' }));
    const cases: [Record<string, unknown>, string][] = [
      [
        { fragment: 'feed', is_pinned: true, name: 'Feed' },
        'Built-in views cannot have a custom name.',
      ],
      [{ fragment: 'narrow/view', is_pinned: true }, 'Custom views must have a valid name.'],
      [{ fragment: '  ', is_pinned: true }, 'fragment cannot be blank'],
      [{ fragment: 'narrow/view', is_pinned: true, name: ' ' }, 'name cannot be blank'],
      [{ fragment: 'recent', is_pinned: false }, 'Navigation view already exists.'],
      [
        { fragment: 'narrow/channel/2', is_pinned: true, name: 'One' },
        'Navigation view already exists.',
      ],
      [{ fragment: 'inbox' }, "Missing 'is_pinned' argument"],
      [
        { fragment: 'narrow/'.repeat(100), is_pinned: true, name: 'Long' },
        'fragment is too long (limit: 500 characters)',
      ],
    ];
    for (const [form, msg] of cases) {
      const res = await add(form);
      expect({ status: res.status, msg: res.body.msg }).toEqual({ status: 400, msg });
    }
    expectError(
      await client().patch('/navigation_views/recent', { name: 'Recent' }),
      'Built-in views cannot have a custom name.',
    );
    expectSuccess(await add({ fragment: 'narrow/channel/2', is_pinned: true, name: 'Two' }));
    expectError(
      await client().patch('/navigation_views/narrow/channel/2', { name: 'One' }),
      'Navigation view already exists.',
    );
    expectError(
      await client().patch('/navigation_views/nonexistent', { is_pinned: false }),
      'Navigation view does not exist.',
      404,
    );
    // Nobody reaches another person's views.
    expectError(
      await client(org.owner).patch('/navigation_views/recent', { is_pinned: false }),
      'Navigation view does not exist.',
      404,
    );
  });

  it('answers a second removal of the same view at once with a 404, not a failure', async () => {
    expectSuccess(await add({ fragment: 'narrow/is/followed', is_pinned: true, name: 'Followed' }));
    const answers = await Promise.all(
      [1, 2].map(() => client().delete('/navigation_views/narrow/is/followed')),
    );
    expect(answers.map((res) => res.status).sort()).toEqual([200, 404]);
  });

  it('folds its events into a registered state as a fresh /register shows it', async () => {
    expectSuccess(await add({ fragment: 'inbox', is_pinned: true }));
    expectSuccess(await add({ fragment: 'drafts', is_pinned: true }));
    const state = { navigation_views: await registered() };
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await add({ fragment: 'narrow/is/unread', is_pinned: false, name: 'Unread' }));
      expectSuccess(await client().patch('/navigation_views/inbox', { is_pinned: false }));
      expectSuccess(await client().delete('/navigation_views/drafts'));
    });
    for (const [index, { event }] of published.entries())
      applyEvent(state, { id: index, ...event } as QueuedEvent, user, {} as StateOptions);
    expect(state.navigation_views).toEqual(await registered());
  });
});
