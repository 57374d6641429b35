// The organization's email domains (Zulip's RealmDomain): GET, POST, PATCH and DELETE
// /realm/domains, Zulip's checks, the events, /register, and emails_restricted_to_domains
// applied to invitations, POST /users and sign-up from a reusable link.
import { getPrisma, Role } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import {
  api,
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();

describe('/realm/domains', () => {
  let org: TestRealm;
  let everyone: number[];
  beforeEach(async () => {
    org = await createTestRealm();
    await createTestUser(org.realm, Role.MEMBER);
    everyone = (
      await prisma().user.findMany({
        where: { realmId: org.realm.id, isActive: true },
        orderBy: { id: 'asc' },
      })
    ).map((user) => user.id);
  });

  const owner = () => as(org.owner, org.host);
  const add = (domain: string, allowSubdomains = false) =>
    owner().post('/realm/domains', { domain, allow_subdomains: allowSubdomains });
  const listed = async () => expectSuccess(await owner().get('/realm/domains')).domains;
  const registered = async () =>
    expectSuccess(
      await as(org.owner, org.host, { atOnce: true }).post('/register', {
        fetch_event_types: ['realm_domains'],
      }),
    ).realm_domains;

  it('adds, changes and removes domains, telling everyone', async () => {
    let body: Record<string, unknown> = {};
    const added = await captureEvents(org.realm.id, async () => {
      body = expectSuccess(await add(' ACME.com ', true));
    });
    const row = await prisma().realmDomain.findFirstOrThrow({ where: { realmId: org.realm.id } });
    expect(body.new_domain).toEqual([row.id, 'acme.com']);
    const entry = { domain: 'acme.com', allow_subdomains: true };
    expect(added).toEqual([
      { event: { type: 'realm_domains', op: 'add', realm_domain: entry }, users: everyone },
    ]);
    expect(await listed()).toEqual([entry]);
    expect(await registered()).toEqual([entry]);

    const changed = await captureEvents(org.realm.id, async () => {
      expectSuccess(await owner().patch('/realm/domains/acme.com', { allow_subdomains: false }));
    });
    expect(changed.map((c) => c.event)).toEqual([
      {
        type: 'realm_domains',
        op: 'change',
        realm_domain: { domain: 'acme.com', allow_subdomains: false },
      },
    ]);
    const removed = await captureEvents(org.realm.id, async () => {
      expectSuccess(await owner().delete('/realm/domains/acme.com'));
    });
    expect(removed.map((c) => c.event)).toEqual([
      { type: 'realm_domains', op: 'remove', domain: 'acme.com' },
    ]);
    expect(await listed()).toEqual([]);
    const audit = await prisma().auditLog.findMany({
      where: { realmId: org.realm.id, eventType: { in: [218, 219, 220] } },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => a.eventType)).toEqual([218, 219, 220]);
    expect(audit[0]!.extraData).toEqual({ realm_domains: [entry], added_domain: entry });
  });

  it('turns emails_restricted_to_domains off when its last domain goes', async () => {
    expectSuccess(await add('acme.com'));
    expectSuccess(await add('acme.org'));
    expectSuccess(await owner().patch('/realm', { emails_restricted_to_domains: true }));
    expectSuccess(await owner().delete('/realm/domains/acme.com'));
    const restricted = async () =>
      (await prisma().realm.findUniqueOrThrow({ where: { id: org.realm.id } }))
        .emailsRestrictedToDomains;
    expect(await restricted()).toBe(true);
    const last = await captureEvents(org.realm.id, async () => {
      expectSuccess(await owner().delete('/realm/domains/acme.org'));
    });
    expect(last).toEqual([
      {
        event: {
          type: 'realm',
          op: 'update',
          property: 'emails_restricted_to_domains',
          value: false,
        },
        users: everyone,
      },
      {
        event: { type: 'realm_domains', op: 'remove', domain: 'acme.org' },
        users: everyone,
      },
    ]);
    const audit = await prisma().auditLog.findFirstOrThrow({
      where: { realmId: org.realm.id, eventType: 207 },
      orderBy: { id: 'desc' },
    });
    expect(audit.extraData).toMatchObject({
      property: 'emails_restricted_to_domains',
      old_value: true,
      new_value: false,
    });
    expect(await restricted()).toBe(false);
  });

  it('refuses what Zulip refuses, and anyone but owners', async () => {
    expectSuccess(await add('acme.com'));
    const cases: [string, string][] = [
      ['', "Invalid domain: Domain can't be empty."],
      ['localhost', 'Invalid domain: Domain must have at least one dot (.)'],
      ['.acme.com', 'Invalid domain: Domain cannot start or end with a dot (.)'],
      ['acme..com', "Invalid domain: Consecutive '.' are not allowed."],
      ['-acme.com', "Invalid domain: Subdomains cannot start or end with a '-'."],
      ['ac_me.com', "Invalid domain: Domain can only have letters, numbers, '.' and '-'s."],
      ['ACME.com', 'The domain acme.com is already a part of your organization.'],
      // Longer than the column (80) or than Zulip's own limit (255).
      [`${'a'.repeat(80)}.com`, 'Invalid domain: Domain is too long'],
      [`${'a'.repeat(300)}.com`, 'Invalid domain: Domain is too long'],
    ];
    for (const [domain, msg] of cases) {
      const res = await add(domain);
      expect({ status: res.status, msg: res.body.msg }).toEqual({ status: 400, msg });
    }
    expectError(
      await owner().patch('/realm/domains/non-existent.com', { allow_subdomains: true }),
      'No entry found for domain non-existent.com.',
    );
    expectError(
      await owner().delete('/realm/domains/non-existent.com'),
      'No entry found for domain non-existent.com.',
    );
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    for (const res of [
      await as(admin, org.host).post('/realm/domains', {
        domain: 'x.com',
        allow_subdomains: false,
      }),
      await as(admin, org.host).patch('/realm/domains/acme.com', { allow_subdomains: true }),
      await as(admin, org.host).delete('/realm/domains/acme.com'),
    ])
      expectError(res, 'Must be an organization owner', 400, 'UNAUTHORIZED_PRINCIPAL');
    // Anyone may list them; another organization sees its own.
    expect(expectSuccess(await as(admin, org.host).get('/realm/domains')).domains).toHaveLength(1);
    const elsewhere = await createTestRealm();
    expectError(
      await as(elsewhere.owner, elsewhere.host).delete('/realm/domains/acme.com'),
      'No entry found for domain acme.com.',
    );
  });

  it('limits who may join while emails_restricted_to_domains is on', async () => {
    expectSuccess(await add('acme.com'));
    expectSuccess(await add('corp.example', true));
    expectSuccess(await owner().patch('/realm', { emails_restricted_to_domains: true }));

    const invite = await owner().post('/invites', {
      invitee_emails:
        'a@acme.com, b@elsewhere.com, c+tag@acme.com, d@eng.corp.example, e@eng.acme.com',
      stream_ids: [],
    });
    expectError(
      invite,
      "Some emails did not validate, so we didn't send any invitations.",
      400,
      'INVITATION_FAILED',
    );
    expect(invite.body.errors).toEqual([
      ['b@elsewhere.com', 'Outside your domain.', false],
      ['c+tag@acme.com', 'Email addresses containing + are not allowed.', false],
      ['e@eng.acme.com', 'Outside your domain.', false],
    ]);

    const create = (email: string) =>
      owner().post('/users', { email, password: 'a long password', full_name: 'New Person' });
    expectError(
      await create('x@elsewhere.com'),
      "Email 'x@elsewhere.com' not allowed in this organization",
    );
    expectError(await create('x+y@acme.com'), 'Email addresses containing + are not allowed.');
    expectSuccess(await create('x@sub.corp.example'));

    const link = expectSuccess(await owner().post('/invites/multiuse', { stream_ids: [] }));
    const key = /\/join\/([a-z2-7]{24})\/$/.exec(link.invite_link as string)![1]!;
    expectError(
      await api
        .post(org.host, '/join_from_link')
        .type('form')
        .send({ key, email: 'z@elsewhere.com' }),
      'Your email address, z@elsewhere.com, is not in one of the domains that are allowed to register for accounts in this organization.',
    );
    expectSuccess(
      await api.post(org.host, '/join_from_link').type('form').send({ key, email: 'z@acme.com' }),
    );

    // An invitation sent while any address would do is refused once the domains change.
    expectSuccess(await owner().patch('/realm', { emails_restricted_to_domains: false }));
    expectSuccess(
      await owner().post('/invites', { invitee_emails: 'early@elsewhere.com', stream_ids: [] }),
    );
    expectSuccess(await owner().patch('/realm', { emails_restricted_to_domains: true }));
    const prereg = await prisma().preregistrationUser.findFirstOrThrow({
      where: { realmId: org.realm.id, email: 'early@elsewhere.com' },
    });
    const confirmation = await prisma().confirmation.findFirstOrThrow({
      where: { preregistrationUserId: prereg.id },
    });
    expectError(
      await api
        .post(org.host, '/register_from_invite')
        .type('form')
        .send({ key: confirmation.key, full_name: 'Early Bird', password: 'a long password' }),
      'Your email address, early@elsewhere.com, is not in one of the domains that are allowed to register for accounts in this organization.',
    );

    // Off again: any address will do.
    expectSuccess(await owner().patch('/realm', { emails_restricted_to_domains: false }));
    expectSuccess(await create('y+tag@elsewhere.com'));
  });

  it('folds its events into a registered state as a fresh /register shows it', async () => {
    expectSuccess(await add('one.com'));
    expectSuccess(await add('two.com'));
    const state = { realm_domains: await registered() };
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await add('three.com', true));
      expectSuccess(await owner().patch('/realm/domains/one.com', { allow_subdomains: true }));
      expectSuccess(await owner().delete('/realm/domains/two.com'));
    });
    for (const [index, { event }] of published.entries())
      applyEvent(state, { id: index, ...event } as QueuedEvent, org.owner, {} as StateOptions);
    expect(state.realm_domains).toEqual(await registered());
  });
});
