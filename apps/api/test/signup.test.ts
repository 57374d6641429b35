// Sign-up from an invitation, end to end: POST /invites → the invitation-email job on a real
// BullMQ worker → the email (EMAIL_BACKEND=directory) → its link's key → GET
// POST /invites/confirm → POST /register_from_invite → the new user's first /register.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetConfig } from '@parley/config';
import { bitmaskToFlags, getPrisma, Role, type User } from '@parley/db';
import { closeMail, closeQueues, enqueueJob, type JobWorkers } from '@parley/jobs';
import { startWorkers } from '../../worker/src/jobs';
import { requeueUnsentInvitationEmails, sendInvitationEmail } from '../src/actions/invites';
import { initialDirectMessageContent } from '../src/actions/onboarding';
import { ensureSystemBot } from '../src/actions/system-bots';
import { SYSTEM_BOTS } from '../src/lib/system-bots';
import { verifyPassword } from '../src/lib/credentials';
import { generateConfirmationKey } from '../src/lib/invites';
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
let mailDir: string;
let workers: JobWorkers;

beforeAll(async () => {
  mailDir = mkdtempSync(join(tmpdir(), 'parley-signup-mail-'));
  process.env.EMAIL_BACKEND = 'directory';
  process.env.EMAIL_DIR = mailDir;
  process.env.INVITES_NEW_REALM_LIMIT_DAYS = '[]';
  resetConfig();
  workers = startWorkers({ concurrency: 2, sweepIntervalMs: 0 });
  await workers.ready();
});

afterAll(async () => {
  await workers.close();
  await closeQueues();
  closeMail();
});

interface Mail {
  file: string;
  to: string;
  subject: string;
  body: string;
}

/** Decodes what nodemailer wrote: headers, then a 7bit or quoted-printable text body. */
function readMail(file: string): Mail {
  const raw = readFileSync(join(mailDir, file), 'utf8');
  const [head, ...rest] = raw.split(/\r?\n\r?\n/);
  const header = (name: string) =>
    new RegExp(`^${name}: (.*(?:\\r?\\n[ \\t].*)*)`, 'mi')
      .exec(head!)?.[1]
      ?.replace(/\r?\n[ \t]/g, ' ') ?? '';
  let body = rest.join('\n\n');
  if (/quoted-printable/i.test(header('Content-Transfer-Encoding')))
    body = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return { file, to: header('To'), subject: header('Subject'), body };
}

function mailsTo(address: string): Mail[] {
  return readdirSync(mailDir)
    .sort()
    .map(readMail)
    .filter((mail) => mail.to.includes(address));
}

/** Waits (briefly, polling) until `count` emails to `address` have been written. */
async function waitForMails(address: string, count = 1): Promise<Mail[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const mails = mailsTo(address);
    if (mails.length >= count) return mails;
    if (Date.now() > deadline)
      throw new Error(`expected ${count} email(s) to ${address}, found ${mails.length}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function keyOf(mail: Mail): string {
  const match = /\/accounts\/do_confirm\/([a-z2-7]{24})/.exec(mail.body);
  if (!match) throw new Error(`no confirmation link in ${mail.body}`);
  return match[1]!;
}

async function inviteAndGetKey(
  org: TestRealm,
  inviter: User,
  email: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  expectSuccess(
    await as(inviter, org.host).post('/invites', {
      invitee_emails: email,
      stream_ids: [],
      ...extra,
    }),
  );
  const [mail] = await waitForMails(email);
  return keyOf(mail!);
}

async function createChannel(org: TestRealm, name: string, extra: Record<string, unknown> = {}) {
  expectSuccess(
    await as(org.owner, org.host).post('/users/me/subscriptions', {
      subscriptions: [{ name }],
      ...extra,
    }),
  );
  return prisma().stream.findFirstOrThrow({ where: { realmId: org.realm.id, name } });
}

const register = (org: TestRealm, params: Record<string, string>) =>
  api.post(org.host, '/register_from_invite').type('form').send(params);

/** What the Welcome Bot sent `user`, oldest first, with the user's flags. */
async function welcomeBotMessagesTo(user: User) {
  const copies = await prisma().$queryRaw<{ content: string; flags: bigint }[]>`
    SELECT m.content, um.flags FROM user_message um
    JOIN message m ON m.id = um.message_id JOIN user_profile s ON s.id = m.sender_id
    WHERE um.user_profile_id = ${user.id} AND s.email = ${SYSTEM_BOTS.welcome.email}
    ORDER BY um.message_id`;
  return copies.map(({ content, flags }) => ({ content, flags: bitmaskToFlags(flags) }));
}

async function lastMessageTo(user: User) {
  const copy = await prisma().userMessage.findFirst({
    where: { userId: user.id },
    orderBy: { messageId: 'desc' },
  });
  return copy
    ? prisma().message.findUnique({ where: { id: copy.messageId }, include: { sender: true } })
    : null;
}

describe('the Welcome Bot on sign-up', () => {
  it("sends Zulip's welcome, then the organization's text for null, nothing more for an empty text", async () => {
    const org = await createTestRealm('Welcoming');
    expectSuccess(
      await as(org.owner, org.host).patch('/realm', {
        welcome_message_custom_text: 'Say hello in #**general**.',
      }),
    );
    const member = await createTestUser(org.realm, Role.MEMBER);
    const cases: [User, string, Record<string, unknown>, string[]][] = [
      // A member's invitation always carries null: the organization's text.
      [member, 'by-member@example.com', {}, ['Say hello in #**general**.']],
      [org.owner, 'quiet@example.com', { welcome_message_custom_text: '' }, []],
    ];
    for (const [inviter, email, params, custom] of cases) {
      const key = await inviteAndGetKey(org, inviter, email, { stream_ids: [], ...params });
      const created = expectSuccess(
        await register(org, { key, full_name: 'New Person', password: 'correct horse' }),
      );
      const user = await prisma().user.findUniqueOrThrow({
        where: { id: created.user_id as number },
      });
      const fromBot = await welcomeBotMessagesTo(user);
      expect(fromBot.map((m) => m.content)).toEqual([
        initialDirectMessageContent(org.realm, user),
        ...custom,
      ]);
      // Zulip stars the first one for its reader, and leaves it unread.
      expect(fromBot[0]!.flags).toContain('starred');
      expect(fromBot[0]!.flags).not.toContain('read');
    }
  });
});

describe("the signup announcement (Zulip's notify_new_user)", () => {
  it('tells the signup announcements channel about each new person, however they joined', async () => {
    const org = await createTestRealm();
    const notificationBot = await ensureSystemBot(org.realm, 'notification');
    const announcementsOf = async (channelId: number) => {
      const channel = await prisma().stream.findUniqueOrThrow({ where: { id: channelId } });
      return prisma().message.findMany({
        where: { recipientId: channel.recipientId!, senderId: notificationBot.id },
        orderBy: { id: 'asc' },
      });
    };
    const core = await createChannel(org, 'core team', { invite_only: true });
    // No channel set: nobody is told.
    const quiet = expectSuccess(
      await as(org.owner, org.host).post('/users', {
        email: 'quiet@example.com',
        password: 'correct horse',
        full_name: 'Quiet Person',
      }),
    );
    expect(quiet.user_id).toEqual(expect.any(Number));
    expect((await announcementsOf(core.id)).filter((m) => m.subject === 'signups')).toEqual([]);

    expectSuccess(
      await as(org.owner, org.host).patch('/realm', { signup_announcements_stream_id: core.id }),
    );
    const made = expectSuccess(
      await as(org.owner, org.host).post('/users', {
        email: 'made@example.com',
        password: 'correct horse',
        full_name: 'Made Person',
      }),
    );
    const key = await inviteAndGetKey(org, org.owner, 'invited@example.com');
    const invited = expectSuccess(
      await register(org, { key, full_name: 'Invited Person', password: 'correct horse' }),
    );
    const signups = (await announcementsOf(core.id)).filter((m) => m.subject === 'signups');
    expect(signups.map((m) => m.content)).toEqual([
      `@_**Made Person|${made.user_id as number}** joined this organization.`,
      `@_**Invited Person|${invited.user_id as number}** joined this organization.`,
    ]);
    // Posted before the Welcome Bot's direct message, as Zulip's process_new_human_user does.
    const welcome = await prisma().message.findFirstOrThrow({
      where: { realmId: org.realm.id, subject: '', content: { startsWith: 'Hello, and welcome' } },
      orderBy: { id: 'desc' },
    });
    expect(signups[1]!.id).toBeLessThan(welcome.id);
  });
});

describe('sign-up from an email invitation', () => {
  it('works end to end: invitation email, key, account, channels, groups, notice', async () => {
    const org = await createTestRealm('Acme Corp');
    const general = await createChannel(org, 'general', { is_default_stream: true });
    const invited = await createChannel(org, 'invited', { invite_only: true });
    const created_group = expectSuccess(
      await as(org.owner, org.host).post('/user_groups/create', {
        name: 'newcomers',
        description: '',
        members: [],
      }),
    );
    const group = { id: created_group.group_id as number };
    const email = 'newbie@example.com';

    const key = await inviteAndGetKey(org, org.owner, email, {
      stream_ids: [invited.id],
      group_ids: [group.id],
      welcome_message_custom_text: 'Read #**invited** first.',
    });
    const [mail] = mailsTo(email);
    expect(mail!.subject).toBe('Olivia Owner invited you to join Acme Corp');
    expect(mail!.body).toContain(`http://${org.host}/accounts/do_confirm/${key}`);

    const details = expectSuccess(
      await api.post(org.host, '/invites/confirm').type('form').send({ key }),
    );
    expect(details).toMatchObject({
      email,
      realm_name: 'Acme Corp',
      realm_url: `http://${org.host}`,
      is_multiuse: false,
      invited_as: Role.MEMBER,
      full_name: null,
      password_required: true,
    });

    let created: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      created = expectSuccess(
        await register(org, { key, full_name: '  Nina Newbie ', password: 'correct horse' }),
      );
    });
    const user = await prisma().user.findUniqueOrThrow({
      where: { id: created.user_id as number },
    });
    expect(created).toEqual({
      result: 'success',
      msg: '',
      api_key: user.apiKey,
      email: user.email,
      user_id: user.id,
    });
    expect(user).toMatchObject({
      fullName: 'Nina Newbie',
      role: Role.MEMBER,
      deliveryEmail: email,
    });
    expect(await verifyPassword('correct horse', user.passwordHash)).toBe(true);

    const types = published.map((entry) => `${entry.event.type}:${String(entry.event.op)}`);
    expect(types).toContain('realm_user:add');
    expect(published).toContainEqual(
      expect.objectContaining({
        event: { type: 'user_group', op: 'add_members', group_id: group.id, user_ids: [user.id] },
      }),
    );
    expect(published).toContainEqual({
      event: { type: 'invites_changed' },
      users: [org.owner.id],
    });

    // The new user's first registration: the invited channel, not the default one (the
    // invitation did not ask for the organization's defaults), and the group.
    const state = expectSuccess(
      await as(user, org.host).post('/register', {
        fetch_event_types: ['subscription', 'realm_user_groups'],
      }),
    );
    const subscribed = (state.subscriptions as { stream_id: number }[]).map((s) => s.stream_id);
    expect(subscribed).toEqual([invited.id]);
    expect(subscribed).not.toContain(general.id);
    const groups = state.realm_user_groups as { id: number; members: number[] }[];
    expect(groups.find((g) => g.id === group.id)?.members).toContain(user.id);
    // The default channels of the organization stay default.
    expect(await prisma().defaultStream.findMany({ where: { realmId: org.realm.id } })).toEqual([
      { realmId: org.realm.id, streamId: general.id },
    ]);

    // The referrer's notice from the Notification Bot.
    const notice = await lastMessageTo(org.owner);
    expect(notice?.sender.email).toBe(SYSTEM_BOTS.notification.email);
    expect(notice?.sender.isBot).toBe(true);
    expect(notice?.content).toBe(
      `@_**Nina Newbie|${user.id}** accepted your invitation to join Acme Corp!`,
    );

    // Zulip's welcome, then the invitation's text, from the Welcome Bot.
    expect((await welcomeBotMessagesTo(user)).map((m) => m.content)).toEqual([
      initialDirectMessageContent(org.realm, user),
      'Read #**invited** first.',
    ]);

    const invitation = await prisma().preregistrationUser.findFirstOrThrow({
      where: { realmId: org.realm.id, email },
    });
    expect(invitation).toMatchObject({ status: 1, createdUserId: user.id });

    // The key is used up.
    expectError(
      await register(org, { key, full_name: 'Again', password: 'correct horse' }),
      'The confirmation link has expired or been deactivated.',
    );
  });

  it('subscribes to the default channels too when the invitation asks for them', async () => {
    const org = await createTestRealm();
    const general = await createChannel(org, 'general', { is_default_stream: true });
    const extra = await createChannel(org, 'extra');
    const key = await inviteAndGetKey(org, org.owner, 'defaults@example.com', {
      stream_ids: [extra.id],
      include_realm_default_subscriptions: true,
      invite_as: Role.MODERATOR,
      notify_referrer_on_join: false,
    });
    const created = expectSuccess(
      await register(org, { key, full_name: 'Dee Faults', password: 'secret!' }),
    );
    const user = await prisma().user.findUniqueOrThrow({
      where: { id: created.user_id as number },
    });
    expect(user.role).toBe(Role.MODERATOR);
    const state = expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: ['subscription'] }),
    );
    expect((state.subscriptions as { stream_id: number }[]).map((s) => s.stream_id).sort()).toEqual(
      [general.id, extra.id].sort(),
    );
    // notify_referrer_on_join false: no notice (the last is the channel's first message).
    expect((await lastMessageTo(org.owner))?.content).not.toMatch(/accepted your invitation/);
    // The history of both channels, default and invited (new-user-history.ts): each one's
    // first message, historical and, with no onboarding messages, among the newest 20 unread.
    const firsts = await prisma().message.findMany({
      where: { recipientId: { in: [general.recipientId!, extra.recipientId!] } },
      select: { id: true },
    });
    const copies = await prisma().userMessage.findMany({
      where: { userId: user.id, messageId: { in: firsts.map((m) => m.id) } },
    });
    expect(copies.map((c) => bitmaskToFlags(c.flags))).toEqual([['historical'], ['historical']]);
  });

  it("revokes the address's other pending invitations", async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    const email = 'twice@example.com';
    const key = await inviteAndGetKey(org, org.owner, email);
    expectSuccess(
      await as(member, org.host).post('/invites', { invitee_emails: email, stream_ids: [] }),
    );
    const [, second] = await waitForMails(email, 2);
    expectSuccess(await register(org, { key, full_name: 'Twice', password: 'secret!' }));
    expectError(
      await register(org, { key: keyOf(second!), full_name: 'Twice', password: 'secret!' }),
      'The confirmation link has expired or been deactivated.',
    );
    const statuses = await prisma().preregistrationUser.findMany({
      where: { realmId: org.realm.id, email },
      orderBy: { id: 'asc' },
      select: { status: true },
    });
    expect(statuses).toEqual([{ status: 1 }, { status: 2 }]);
  });

  it('refuses unknown, malformed, foreign, expired and revoked keys', async () => {
    const org = await createTestRealm();
    const other = await createTestRealm();
    const key = await inviteAndGetKey(org, org.owner, 'keys@example.com');
    const form = { full_name: 'K', password: 'secret!' };
    expectError(
      await register(org, { key: 'a'.repeat(24), ...form }),
      'Invalid confirmation link.',
    );
    expectError(await register(org, { key: 'short', ...form }), 'Invalid confirmation link.');
    expectError(await register(other, { key, ...form }), 'Invalid confirmation link.');
    expectError(
      await api.post(org.host, '/invites/confirm').type('form').send({ key: 'nope' }),
      'Invalid confirmation link.',
    );
    const invitation = await prisma().preregistrationUser.findFirstOrThrow({
      where: { realmId: org.realm.id },
      include: { confirmations: true },
    });
    await prisma().confirmation.update({
      where: { id: invitation.confirmations[0]!.id },
      data: { expiryDate: new Date(Date.now() - 1000) },
    });
    expectError(
      await register(org, { key, ...form }),
      'The confirmation link has expired or been deactivated.',
    );
    expectError(
      await api.post(org.host, '/invites/confirm').type('form').send({ key }),
      'The confirmation link has expired or been deactivated.',
    );
    await prisma().confirmation.update({
      where: { id: invitation.confirmations[0]!.id },
      data: { expiryDate: null },
    });
    expectSuccess(await as(org.owner, org.host).delete(`/invites/${invitation.id}`));
    expectError(
      await register(org, { key, ...form }),
      'The confirmation link has expired or been deactivated.',
    );
    expect(await prisma().user.count({ where: { realmId: org.realm.id } })).toBe(1);
  });

  it('refuses bad names and passwords, and creates nothing then', async () => {
    const org = await createTestRealm();
    const key = await inviteAndGetKey(org, org.owner, 'fields@example.com');
    expectError(
      await register(org, { key, password: 'secret!' }),
      "Missing 'full_name' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await register(org, { key, full_name: '   ', password: 'secret!' }),
      'Name too short!',
    );
    expectError(
      await register(org, { key, full_name: 'Bad*Name', password: 'secret!' }),
      'Invalid characters in name!',
    );
    expectError(await register(org, { key, full_name: 'Fine' }), "Missing 'password' argument");
    expectError(
      await register(org, { key, full_name: 'Fine', password: 'abc' }),
      'The password is too weak.',
    );
    expectError(
      await register(org, { full_name: 'Fine', password: 'secret!' }),
      "Missing 'key' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expect(await prisma().user.count({ where: { realmId: org.realm.id } })).toBe(1);
    expectSuccess(await register(org, { key, full_name: 'Fine', password: 'secret!' }));
  });

  it('creates one account when the same key is used twice at once', async () => {
    const org = await createTestRealm();
    const key = await inviteAndGetKey(org, org.owner, 'double@example.com');
    const results = await Promise.all([
      register(org, { key, full_name: 'One', password: 'secret!' }),
      register(org, { key, full_name: 'Two', password: 'secret!' }),
    ]);
    expect(results.map((res) => res.status).sort()).toEqual([200, 400]);
    expect(
      await prisma().user.count({
        where: { realmId: org.realm.id, deliveryEmail: 'double@example.com' },
      }),
    ).toBe(1);
  });

  it('refuses an address that got an account meanwhile', async () => {
    const org = await createTestRealm();
    const email = 'raced@example.com';
    const key = await inviteAndGetKey(org, org.owner, email);
    await createTestUser(org.realm, Role.MEMBER, { email });
    expectError(
      await register(org, { key, full_name: 'Late', password: 'secret!' }),
      'Email is already in use.',
    );
  });
});

describe('the invitation-email job', () => {
  it('sends each email once, however often the job is queued or run', async () => {
    const org = await createTestRealm();
    const email = 'once@example.com';
    await inviteAndGetKey(org, org.owner, email);
    const invitation = await prisma().preregistrationUser.findFirstOrThrow({
      where: { realmId: org.realm.id, email },
    });
    // The same job id again, and the job body run directly: nothing more is sent.
    await enqueueJob(
      'invitation-email',
      { invitationId: invitation.id, sequence: 1 },
      `invitation-email-${invitation.id}-1`,
    );
    await sendInvitationEmail({ invitationId: invitation.id, sequence: 1 });
    // A resend is a new email, sent once.
    expectSuccess(await as(org.owner, org.host).post(`/invites/${invitation.id}/resend`));
    await waitForMails(email, 2);
    await sendInvitationEmail({ invitationId: invitation.id, sequence: 2 });
    expect(mailsTo(email)).toHaveLength(2);
    expect(
      (await prisma().preregistrationUser.findUniqueOrThrow({ where: { id: invitation.id } }))
        .mailSent,
    ).toBe(2);
  });

  it('queues again emails whose job was lost', async () => {
    const org = await createTestRealm();
    const email = 'lost@example.com';
    const lostKey = generateConfirmationKey();
    const invitation = await prisma().preregistrationUser.create({
      data: {
        realmId: org.realm.id,
        email,
        referredById: org.owner.id,
        mailRequested: 1,
        invitedAt: new Date(Date.now() - 5 * 60_000),
        confirmations: {
          create: { realmId: org.realm.id, key: lostKey, type: 2 },
        },
      },
    });
    expect(await requeueUnsentInvitationEmails({ realmId: org.realm.id })).toBe(1);
    const [mail] = await waitForMails(email);
    expect(keyOf(mail!)).toBe(lostKey);
    // Sent: nothing left to queue.
    for (let tries = 0; tries < 100; tries++) {
      const row = await prisma().preregistrationUser.findUniqueOrThrow({
        where: { id: invitation.id },
      });
      if (row.mailSent === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await requeueUnsentInvitationEmails({ realmId: org.realm.id })).toBe(0);
  });

  it('sends nothing for an invitation revoked before the job ran', async () => {
    const org = await createTestRealm();
    const referrer = org.owner;
    const invitation = await prisma().preregistrationUser.create({
      data: {
        realmId: org.realm.id,
        email: 'revoked@example.com',
        referredById: referrer.id,
        status: 2,
        mailRequested: 1,
      },
    });
    await sendInvitationEmail({ invitationId: invitation.id, sequence: 1 });
    expect(mailsTo('revoked@example.com')).toEqual([]);
  });
});

describe('sign-up from a reusable link', () => {
  it('emails a registration link to the given address, then creates the account', async () => {
    const org = await createTestRealm('Linked Org');
    const channel = await createChannel(org, 'linked');
    const body = expectSuccess(
      await as(org.owner, org.host).post('/invites/multiuse', {
        stream_ids: [channel.id],
        invite_as: Role.GUEST,
      }),
    );
    const linkKey = /\/join\/([a-z2-7]{24})\/$/.exec(body.invite_link as string)![1]!;
    expect(
      expectSuccess(
        await api.post(org.host, '/invites/confirm').type('form').send({ key: linkKey }),
      ),
    ).toMatchObject({
      is_multiuse: true,
      email: null,
      invited_as: Role.GUEST,
    });
    // A reusable link's key is not itself a registration.
    expectError(
      await register(org, { key: linkKey, full_name: 'X', password: 'secret!' }),
      'Invalid confirmation link.',
    );
    const join = (email: string) =>
      api.post(org.host, '/join_from_link').type('form').send({ key: linkKey, email });
    expectError(await join('not an address'), "Invalid email 'not an address'");
    expectError(await join(org.owner.deliveryEmail), 'Already has an account.');
    expectSuccess(await join('linker@example.com'));
    // The registration it started is not an email invitation of the link's creator.
    const started = await prisma().preregistrationUser.findFirstOrThrow({
      where: { realmId: org.realm.id, email: 'linker@example.com' },
    });
    expectError(
      await as(org.owner, org.host).delete(`/invites/${started.id}`),
      'No such invitation',
    );
    expect(
      (expectSuccess(await as(org.owner, org.host).get('/invites')).invites as unknown[]).length,
    ).toBe(1);
    const [mail] = await waitForMails('linker@example.com');
    expect(mail!.subject).toBe('Create your account on Linked Org');
    const created = expectSuccess(
      await register(org, { key: keyOf(mail!), full_name: 'Lin Ker', password: 'secret!' }),
    );
    const user = await prisma().user.findUniqueOrThrow({
      where: { id: created.user_id as number },
    });
    expect(user.role).toBe(Role.GUEST);
    const state = expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: ['subscription'] }),
    );
    expect((state.subscriptions as { stream_id: number }[]).map((s) => s.stream_id)).toEqual([
      channel.id,
    ]);
    // The link stays usable for others until revoked.
    expectSuccess(await join('second@example.com'));
    const link = await prisma().multiuseInvite.findFirstOrThrow({
      where: { realmId: org.realm.id },
    });
    expectSuccess(await as(org.owner, org.host).delete(`/invites/multiuse/${link.id}`));
    expectError(
      await join('third@example.com'),
      'The confirmation link has expired or been deactivated.',
    );
  });
});
