// The email that tells a deactivated user so (DELETE /users/{id} with
// deactivation_notification_comment; Zulip's zerver/emails/deactivate): the deactivation → the
// deactivation-email job on a real BullMQ worker → the mail (EMAIL_BACKEND=directory), once.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetConfig } from '@parley/config';
import { getPrisma } from '@parley/db';
import { closeMail, closeQueues, type JobWorkers } from '@parley/jobs';
import { startWorkers } from '../../worker/src/jobs';
import {
  requeueUnsentDeactivationEmails,
  sendDeactivationEmail,
} from '../src/actions/deactivation-notice';
import { as, createTestRealm, createTestUser, expectSuccess, type TestRealm } from './helpers';
import { until } from './until';

let mailDir: string;
let workers: JobWorkers;
let org: TestRealm;

beforeAll(async () => {
  mailDir = mkdtempSync(join(tmpdir(), 'parley-deactivation-'));
  process.env.EMAIL_BACKEND = 'directory';
  process.env.EMAIL_DIR = mailDir;
  resetConfig();
  workers = startWorkers({ concurrency: 2, sweepIntervalMs: 0 });
  await workers.ready();
  org = await createTestRealm();
});

afterAll(async () => {
  await workers.close();
  await closeQueues();
  closeMail();
});

/** The mails written to `address` (quoted-printable undone). */
function mailsTo(address: string): { subject: string; body: string }[] {
  return readdirSync(mailDir)
    .map((file) => readFileSync(join(mailDir, file), 'utf8'))
    .filter((raw) => raw.includes(`To: ${address}`))
    .map((raw) => ({
      subject: /^Subject: (.*)$/m.exec(raw)?.[1] ?? '',
      body: raw.replace(/=\r?\n/g, '').replace(/=3D/g, '='),
    }));
}

const noticeRows = (userId: number) =>
  getPrisma().$queryRaw<{ id: number; comment: string; sent: boolean }[]>`
    SELECT id, comment, sent FROM deactivation_notice WHERE user_profile_id = ${userId}`;

describe('deactivation_notification_comment', () => {
  it('emails the deactivated user with the comment, stripped, once', async () => {
    const user = await createTestUser(org.realm);
    expectSuccess(
      await as(org.owner, org.host).delete(`/users/${user.id}`, {
        deactivation_notification_comment: '  Thanks for everything!\n',
      }),
    );
    const [mail] = await until(
      async () => mailsTo(user.deliveryEmail).length > 0 && mailsTo(user.deliveryEmail),
      'the deactivation email',
    );
    expect(mail!.subject).toBe(`Notification of account deactivation on ${org.realm.name}`);
    expect(mail!.body).toContain('has been deactivated, and you will no longer be able to log in.');
    expect(mail!.body).toContain('The administrators provided the following comment:');
    expect(mail!.body).toContain('Thanks for everything!');
    const [row] = await until(async () => {
      const rows = await noticeRows(user.id);
      return rows[0]?.sent && rows;
    }, 'the notice marked sent');
    expect(row!.comment).toBe('Thanks for everything!');
    // The job again (a retry, the sweep): nothing more is sent.
    await sendDeactivationEmail({ noticeId: row!.id });
    expect(mailsTo(user.deliveryEmail)).toHaveLength(1);
  });

  it('an empty comment still sends the email, without the comment part; none sends nothing', async () => {
    const told = await createTestUser(org.realm);
    const quiet = await createTestUser(org.realm);
    expectSuccess(
      await as(org.owner, org.host).delete(`/users/${told.id}`, {
        deactivation_notification_comment: '',
      }),
    );
    expectSuccess(await as(org.owner, org.host).delete(`/users/${quiet.id}`));
    const [mail] = await until(
      async () => mailsTo(told.deliveryEmail).length > 0 && mailsTo(told.deliveryEmail),
      'the deactivation email',
    );
    expect(mail!.body).not.toContain('The administrators provided the following comment:');
    expect(await noticeRows(quiet.id)).toEqual([]);
  });

  it('queues a lost notice again from the sweep, and tells no one active again', async () => {
    const user = await createTestUser(org.realm);
    // A notice whose job was lost a while ago (as if the enqueue after COMMIT never happened).
    await getPrisma().user.update({ where: { id: user.id }, data: { isActive: false } });
    await getPrisma().$executeRaw`
      INSERT INTO deactivation_notice (realm_id, user_profile_id, comment, created_at)
      VALUES (${org.realm.id}, ${user.id}, 'lost', now() - interval '5 minutes')`;
    expect(await requeueUnsentDeactivationEmails()).toBeGreaterThanOrEqual(1);
    await until(
      async () => mailsTo(user.deliveryEmail).length > 0,
      'the deactivation email from the sweep',
    );
    const back = await createTestUser(org.realm);
    const [row] = await getPrisma().$queryRaw<{ id: number }[]>`
      INSERT INTO deactivation_notice (realm_id, user_profile_id, comment)
      VALUES (${org.realm.id}, ${back.id}, 'reactivated since') RETURNING id`;
    await sendDeactivationEmail({ noticeId: row!.id });
    expect(mailsTo(back.deliveryEmail)).toEqual([]);
  });
});
