// Changing one's own email address (Zulip's PATCH /settings `email`, confirm_email_change):
// the request → the email-change-mail job on a real BullMQ worker → the mail to the new
// address (EMAIL_BACKEND=directory) → its link → the change, its events and the notice to the
// old address.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { resetConfig } from '@parley/config';
import { AuditLogEvent, getPrisma, Role, type User } from '@parley/db';
import { closeMail, closeQueues, type JobWorkers } from '@parley/jobs';
import { startWorkers } from '../../worker/src/jobs';
import { requeueUnsentEmailChangeMails, sendEmailChangeMail } from '../src/actions/email-change';
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
import { until } from './until';

const prisma = () => getPrisma();
let mailDir: string;
let workers: JobWorkers;

beforeAll(async () => {
  mailDir = mkdtempSync(join(tmpdir(), 'parley-email-change-'));
  process.env.EMAIL_BACKEND = 'directory';
  process.env.EMAIL_DIR = mailDir;
  resetConfig();
  workers = startWorkers({ concurrency: 2, sweepIntervalMs: 0 });
  await workers.ready();
});

afterAll(async () => {
  await workers.close();
  await closeQueues();
  closeMail();
});

/** The text of the mails written to `address` (quoted-printable undone), oldest first. */
function mailsTo(address: string): { subject: string; body: string }[] {
  return readdirSync(mailDir)
    .sort()
    .map((file) => readFileSync(join(mailDir, file), 'utf8'))
    .filter((raw) => new RegExp(`^To: .*${address.replace(/[.+]/g, '\\$&')}`, 'mi').test(raw))
    .map((raw) => ({
      subject: /^Subject: (.*)$/m.exec(raw)?.[1] ?? '',
      body: raw.replace(/=\r?\n/g, '').replace(/=3D/g, '='),
    }));
}

function linkIn(body: string): string {
  const match = /https?:\/\/[^/\s]+(\/accounts\/confirm_new_email\/[a-z2-7]{24}\/)/.exec(body);
  if (!match) throw new Error(`no confirmation link in ${body}`);
  return match[1]!;
}

/** Confirms through the link's page: its button POSTs to the same address. */
const open = (org: TestRealm, path: string) => request(app).post(path).set('Host', org.host);

let counter = 0;
const fresh = () => `new-${Date.now()}-${++counter}@example.org`;

describe('PATCH /settings with email', () => {
  it('mails a link to the new address; opening it changes the address and tells the old one', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const oldEmail = member.deliveryEmail;
    const newEmail = fresh();
    expect(
      expectSuccess(await as(member, org.host).patch('/settings', { email: newEmail })),
    ).toEqual({ result: 'success', msg: '' });
    // Nothing changes until the link is opened.
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: member.id } })).deliveryEmail,
    ).toBe(oldEmail);
    const [mail] = await until(
      async () => mailsTo(newEmail).length > 0 && mailsTo(newEmail),
      'the link',
    );
    expect(mail!.subject).toContain('Verify your new email address');
    const link = linkIn(mail!.body);
    // Opening the link shows a page; only its button's POST changes the address (mail
    // scanners open links).
    const page = await request(app).get(link).set('Host', org.host);
    expect([page.status, page.type]).toEqual([200, 'text/html']);
    expect(page.text).toContain('<form method="post">');
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: member.id } })).deliveryEmail,
    ).toBe(oldEmail);

    let answer: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      answer = expectSuccess(await open(org, link));
    });
    expect(answer).toMatchObject({ old_email: oldEmail, new_email: newEmail });
    const changed = await prisma().user.findUniqueOrThrow({ where: { id: member.id } });
    expect(changed.deliveryEmail).toBe(newEmail);
    // The user's clients learn the new address (delivery_email), as with an administrator's change.
    expect(
      published.some(
        (e) =>
          e.event.type === 'realm_user' &&
          (e.event.person as { delivery_email?: string }).delivery_email === newEmail &&
          e.users.includes(member.id),
      ),
    ).toBe(true);
    const audit = await prisma().auditLog.findFirst({
      where: { modifiedUserId: member.id, eventType: AuditLogEvent.USER_EMAIL_CHANGED },
    });
    expect(audit?.actingUserId).toBe(member.id);
    // The old address is told; the new one now logs in (its API key is unchanged).
    const [notice] = await until(
      async () => mailsTo(oldEmail).length > 0 && mailsTo(oldEmail),
      'the notice',
    );
    expect(notice!.subject).toContain('Email address changed');
    expect(notice!.body).toContain(newEmail);
    expectSuccess(await as({ ...member, deliveryEmail: newEmail }, org.host).get('/users/me'));
    // The link works once.
    expectError(await open(org, link), 'The confirmation link has expired or been deactivated.');
  });

  it("refuses in Zulip's words: disabled changes, bad or taken addresses, the domains", async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const change = (user: User, email: string) => as(user, org.host).patch('/settings', { email });
    expectError(await change(member, 'not-an-address'), 'Invalid address.');
    expectError(await change(member, `${'a'.repeat(300)}@example.org`), 'Invalid address.');
    expectError(
      await change(member, 'nul\u0000@example.org'),
      'Invalid email: null bytes are not allowed',
    );
    expectError(await change(member, admin.deliveryEmail), 'Already has an account.');
    expectError(await change(member, admin.deliveryEmail.toUpperCase()), 'Already has an account.');
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { emailChangesDisabled: true },
    });
    expectError(
      await change(member, fresh()),
      'Email address changes are disabled in this organization.',
    );
    // Administrators still may; the same address is no change at all.
    expectSuccess(await change(admin, fresh()));
    expectSuccess(await change(member, ` ${member.deliveryEmail} `));
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { emailChangesDisabled: false, emailsRestrictedToDomains: true },
    });
    await prisma().realmDomain.create({
      data: { realmId: org.realm.id, domain: 'allowed.example', allowSubdomains: false },
    });
    expectError(await change(member, fresh()), 'Outside your domain.');
    expectSuccess(await change(member, `m${Date.now()}@allowed.example`));
    // Nothing was stored for the refusals: two requests were made.
    expect(
      await prisma().$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM email_change_status WHERE realm_id = ${org.realm.id}`,
    ).toEqual([{ n: 2 }]);
  });

  it('allows two requests an hour per user (email_change_by_user)', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const change = () => as(member, org.host).patch('/settings', { email: fresh() });
    expectSuccess(await change());
    expectSuccess(await change());
    const refused = await change();
    expectError(refused, 'API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT');
    expect(
      await prisma().$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM email_change_status WHERE user_profile_id = ${member.id}`,
    ).toEqual([{ n: 2 }]);
  });

  it('checks the link again when opened: taken since, expired, unknown, or of another kind', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const wanted = fresh();
    expectSuccess(await as(member, org.host).patch('/settings', { email: wanted }));
    const link = linkIn(
      (await until(async () => mailsTo(wanted).length > 0 && mailsTo(wanted), 'the link'))[0]!.body,
    );
    // Someone else got the address meanwhile.
    const rival = await createTestUser(org.realm, Role.MEMBER);
    await prisma().user.update({
      where: { id: rival.id },
      data: { deliveryEmail: wanted, email: wanted },
    });
    expectError(await open(org, link), 'Already has an account.');
    await prisma().user.update({
      where: { id: rival.id },
      data: {
        deliveryEmail: `rival-${rival.id}@example.org`,
        email: `rival-${rival.id}@example.org`,
      },
    });
    // Not on another organization's host.
    const elsewhere = await createTestRealm();
    expectError(await open(elsewhere, link), 'Invalid confirmation link.');
    expectError(await open(org, '/accounts/confirm_new_email/abc/'), 'Invalid confirmation link.');
    expectError(
      await open(org, `/accounts/confirm_new_email/${'a'.repeat(300)}/`),
      'Invalid confirmation link.',
    );
    // An email-change key is not an invitation's.
    const key = /([a-z2-7]{24})/.exec(link)![1]!;
    expectError(
      await as(member, org.host).post('/invites/confirm', { key }),
      'Invalid confirmation link.',
    );
    await prisma().confirmation.update({ where: { key }, data: { expiryDate: new Date(0) } });
    expectError(await open(org, link), 'The confirmation link has expired or been deactivated.');
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: member.id } })).deliveryEmail,
    ).toBe(member.deliveryEmail);
  });
  it('keeps only the latest link, and only while the address is the one it replaces', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const owner = org.owner;
    const first = fresh();
    const second = fresh();
    const linkTo = async (email: string) =>
      linkIn(
        (
          await until(async () => mailsTo(email).length > 0 && mailsTo(email), `mail to ${email}`)
        )[0]!.body,
      );
    expectSuccess(await as(member, org.host).patch('/settings', { email: first }));
    const firstLink = await linkTo(first);
    expectSuccess(await as(member, org.host).patch('/settings', { email: second }));
    const secondLink = await linkTo(second);
    const expired = 'The confirmation link has expired or been deactivated.';
    // A newer request revokes the older link.
    expectError(await open(org, firstLink), expired);
    // An owner changes the address meanwhile: the link no longer replaces the current one.
    await prisma().user.update({ where: { id: owner.id }, data: { canChangeUserEmails: true } });
    const byOwner = fresh();
    expectSuccess(await as(owner, org.host).patch(`/users/${member.id}`, { new_email: byOwner }));
    expectError(await open(org, secondLink), expired);
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: member.id } })).deliveryEmail,
    ).toBe(byOwner);
  });

  it('checks the request again at confirmation: changes disabled, the account deactivated', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const wanted = fresh();
    expectSuccess(await as(member, org.host).patch('/settings', { email: wanted }));
    const link = linkIn(
      (await until(async () => mailsTo(wanted).length > 0 && mailsTo(wanted), 'the link'))[0]!.body,
    );
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { emailChangesDisabled: true },
    });
    expectError(await open(org, link), 'Email address changes are disabled in this organization.');
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { emailChangesDisabled: false },
    });
    await prisma().user.update({ where: { id: member.id }, data: { isActive: false } });
    expectError(await open(org, link), 'Account is deactivated', 401, 'USER_DEACTIVATED');
    await prisma().user.update({ where: { id: member.id }, data: { isActive: true } });
    expectSuccess(await open(org, link));
  });

  it('sends each mail once however often its job runs, and queues lost ones again', async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const wanted = fresh();
    expectSuccess(await as(member, org.host).patch('/settings', { email: wanted }));
    await until(async () => mailsTo(wanted).length > 0, 'the link');
    const [row] = await prisma().$queryRaw<{ id: number }[]>`
      SELECT id FROM email_change_status WHERE user_profile_id = ${member.id}`;
    await sendEmailChangeMail({ changeId: row!.id, kind: 'confirm' });
    await sendEmailChangeMail({ changeId: row!.id, kind: 'notice' });
    expect(mailsTo(wanted)).toHaveLength(1);
    expect(mailsTo(member.deliveryEmail)).toHaveLength(0);
    // A request whose job never reached Redis (the API replica died after its commit): the
    // sweep queues it once it is a minute old, and the worker sends it.
    const lost = fresh();
    const [made] = await prisma().$queryRaw<{ id: number }[]>`
      INSERT INTO email_change_status (realm_id, user_profile_id, old_email, new_email, updated_at)
      VALUES (${org.realm.id}, ${member.id}, ${member.deliveryEmail}, ${lost},
        now() - interval '2 minutes')
      RETURNING id`;
    await prisma().$executeRaw`
      INSERT INTO confirmation (realm_id, confirmation_key, type, email_change_status_id, expiry_date)
      VALUES (${org.realm.id}, ${'x'.repeat(8) + String(made!.id).padStart(16, 'a')}, 3,
        ${made!.id}, now() + interval '1 day')`;
    expect(await requeueUnsentEmailChangeMails()).toBeGreaterThanOrEqual(1);
    await until(async () => mailsTo(lost).length > 0, 'the lost mail');
    // A request whose old address is no longer the account's cannot be confirmed: not mailed.
    const stale = fresh();
    const [old] = await prisma().$queryRaw<{ id: number }[]>`
      INSERT INTO email_change_status (realm_id, user_profile_id, old_email, new_email)
      VALUES (${org.realm.id}, ${member.id}, ${'former@example.org'}, ${stale})
      RETURNING id`;
    await prisma().$executeRaw`
      INSERT INTO confirmation (realm_id, confirmation_key, type, email_change_status_id, expiry_date)
      VALUES (${org.realm.id}, ${'y'.repeat(8) + String(old!.id).padStart(16, 'a')}, 3,
        ${old!.id}, now() + interval '1 day')`;
    await sendEmailChangeMail({ changeId: old!.id, kind: 'confirm' });
    expect(mailsTo(stale)).toHaveLength(0);
    expect(row!.id).toBeLessThan(made!.id);
  });
});
