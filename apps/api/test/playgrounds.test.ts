// Code playgrounds (Zulip's realm_playgrounds): POST and DELETE /realm/playgrounds, Zulip's
// checks, the audit log, the realm_playgrounds events and /register.
import { getPrisma, Role } from '@parley/db';
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

describe('code playgrounds', () => {
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
  });

  const add = (form: Record<string, unknown>, user = org.owner) =>
    as(user, org.host).post('/realm/playgrounds', form);
  const registered = async () =>
    expectSuccess(
      await as(org.owner, org.host, { atOnce: true }).post('/register', {
        fetch_event_types: ['realm_playgrounds'],
      }),
    ).realm_playgrounds;
  const python = {
    name: ' Python playground ',
    pygments_language: 'Python',
    url_template: 'https://python.example.com?code={code}',
  };

  it('adds and removes playgrounds, telling everyone the whole list', async () => {
    expect(await registered()).toEqual([]);
    let id = 0;
    const added = await captureEvents(org.realm.id, async () => {
      id = expectSuccess(await add(python)).id as number;
    });
    const entry = {
      id,
      name: 'Python playground',
      pygments_language: 'Python',
      url_template: 'https://python.example.com?code={code}',
    };
    const everyone = (
      await prisma().user.findMany({
        where: { realmId: org.realm.id, isActive: true },
        orderBy: { id: 'asc' },
      })
    ).map((user) => user.id);
    expect(added).toEqual([
      { event: { type: 'realm_playgrounds', realm_playgrounds: [entry] }, users: everyone },
    ]);
    expect(await registered()).toEqual([entry]);
    // The same name for another language is another playground.
    const other = expectSuccess(await add({ ...python, pygments_language: 'Python 3' }))
      .id as number;
    const removed = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).delete(`/realm/playgrounds/${id}`));
    });
    expect(removed.map((p) => p.event)).toEqual([
      {
        type: 'realm_playgrounds',
        realm_playgrounds: [{ ...entry, id: other, pygments_language: 'Python 3' }],
      },
    ]);
    const audit = await prisma().auditLog.findMany({
      where: { realmId: org.realm.id, eventType: { in: [221, 222] } },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((row) => row.eventType)).toEqual([221, 221, 222]);
    expect(audit[2]!.extraData).toMatchObject({
      removed_playground: {
        name: 'Python playground',
        pygments_language: 'Python',
        url_template: 'https://python.example.com?code={code}',
      },
    });
    expectError(
      await as(org.owner, org.host).delete(`/realm/playgrounds/${id}`),
      'Invalid playground',
    );
  });

  it('refuses what Zulip refuses, and anyone but administrators', async () => {
    expectSuccess(await add({ ...python, name: 'Taken' }));
    const cases: [Record<string, unknown>, string][] = [
      [
        { ...python, pygments_language: 'x'.repeat(41) },
        'pygments_language is too long (limit: 40 characters)',
      ],
      [{ ...python, pygments_language: 'py<thon>' }, 'Invalid characters in pygments language'],
      [{ ...python, url_template: 'https://x.example.com/{code' }, 'Invalid URL template.'],
      [{ ...python, name: '   ' }, 'This field cannot be blank.'],
      [{ ...python, pygments_language: '  ' }, 'This field cannot be blank.'],
      [
        { ...python, url_template: 'https://x.example.com/' },
        'Missing the required variable "code" in the URL template',
      ],
      [
        { ...python, url_template: 'https://x.example.com/{code}?lang={lang}' },
        '"code" should be the only variable present in the URL template',
      ],
      [
        { ...python, name: 'Taken' },
        'Realm playground with this Realm, Pygments language and Name already exists.',
      ],
      [{ name: 'x', pygments_language: 'Python' }, "Missing 'url_template' argument"],
    ];
    for (const [form, msg] of cases) {
      const res = await add(form);
      expect({ status: res.status, msg: res.body.msg }).toEqual({ status: 400, msg });
    }
    const member = await createTestUser(org.realm, Role.MEMBER);
    expectError(
      await add(python, member),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    const [taken] = (await registered()) as { id: number }[];
    expectError(
      await as(member, org.host).delete(`/realm/playgrounds/${taken!.id}`),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    // Another organization's playground is not this one's.
    const elsewhere = await createTestRealm();
    expectError(
      await as(elsewhere.owner, elsewhere.host).delete(`/realm/playgrounds/${taken!.id}`),
      'Invalid playground',
    );
  });
});
