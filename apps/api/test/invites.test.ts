// Invitations: POST/GET /invites, DELETE /invites/{id}, POST /invites/{id}/resend,
// POST /invites/multiuse, DELETE /invites/multiuse/{id} (spec 4.6, Zulip's
// zerver/views/invite.py). The email job itself and sign-up are in signup.test.ts.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Response } from 'supertest';
import { getConfig, resetConfig } from '@parley/config';
import { getPrisma, Role, type Realm, type User } from '@parley/db';
import { closeQueues } from '@parley/jobs';
import { ACTORS, type Actor } from './permission-matrix';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectPublished,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();
let mailQueue: Queue;
/** Each test organization's host, for helpers given only the realm. */
const hostOf = new Map<number, string>();
async function newOrg(): Promise<TestRealm> {
  const org = await createTestRealm();
  hostOf.set(org.realm.id, org.host);
  return org;
}

beforeAll(() => {
  process.env.EMAIL_BACKEND = 'directory';
  process.env.EMAIL_DIR = mkdtempSync(join(tmpdir(), 'parley-invites-'));
  process.env.INVITES_DEFAULT_REALM_DAILY_MAX = '30';
  // The limit shared by new organizations would count every test organization's invitations.
  process.env.INVITES_NEW_REALM_LIMIT_DAYS = '[]';
  resetConfig();
  mailQueue = new Queue('mail', { connection: { url: getConfig().REDIS_URL } });
});

afterAll(async () => {
  await mailQueue.close();
  await closeQueues();
});

const SOME_SKIPPED =
  "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!";

async function pendingEmails(realmId: number): Promise<string[]> {
  return (
    await prisma().preregistrationUser.findMany({
      where: { realmId, status: 0 },
      orderBy: { email: 'asc' },
    })
  ).map((row) => row.email);
}

function invite(user: User, org: TestRealm, emails: string, extra: Record<string, unknown> = {}) {
  return as(user, org.host).post('/invites', { invitee_emails: emails, stream_ids: [], ...extra });
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

async function invitationFor(realmId: number, email: string) {
  return prisma().preregistrationUser.findFirstOrThrow({
    where: { realmId, email },
    include: { confirmations: true },
    orderBy: { id: 'desc' },
  });
}

async function createGroup(realm: Realm, creator: User, name = `group${Math.random()}`) {
  const org = { host: hostOf.get(realm.id)! };
  const body = expectSuccess(
    await as(creator, org.host).post('/user_groups/create', { name, description: '', members: [] }),
  );
  return { id: body.group_id as number };
}

describe('POST /invites', () => {
  it('invites every address of a comma- and newline-separated list, once each', async () => {
    const org = await newOrg();
    const res = await invite(
      org.owner,
      org,
      'ann@example.com, Bob Smith <bob@example.com>\ncid@example.com,ann@example.com',
    );
    expectSuccess(res);
    expect(await pendingEmails(org.realm.id)).toEqual([
      'ann@example.com',
      'bob@example.com',
      'cid@example.com',
    ]);
    const row = await invitationFor(org.realm.id, 'bob@example.com');
    expect(row).toMatchObject({
      referredById: org.owner.id,
      invitedAs: Role.MEMBER,
      streamIds: [],
      groupIds: [],
      includeRealmDefaultSubscriptions: false,
      notifyReferrerOnJoin: true,
      welcomeMessageCustomText: null,
      status: 0,
      mailRequested: 1,
    });
    expect(row.confirmations).toHaveLength(1);
    expect(row.confirmations[0]!.key).toMatch(/^[a-z2-7]{24}$/);
    expect(row.confirmations[0]!.type).toBe(2);
  });

  it('queues one email job per invitation, after the commit', async () => {
    const org = await newOrg();
    expectSuccess(await invite(org.owner, org, 'queued@example.com'));
    const row = await invitationFor(org.realm.id, 'queued@example.com');
    const job = await mailQueue.getJob(`invitation-email-${row.id}-1`);
    expect(job?.name).toBe('invitation-email');
    expect(job?.data).toEqual({ invitationId: row.id, sequence: 1 });
    // The key never goes to Redis.
    expect(JSON.stringify(job?.data)).not.toContain(row.confirmations[0]!.key);
  });

  it('sends invites_changed to the administrators and the referrer', async () => {
    const org = await newOrg();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const member = await createTestUser(org.realm, Role.MEMBER);
    await createTestUser(org.realm, Role.MODERATOR);
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(await invite(member, org, 'ev@example.com')),
    );
    expectPublished(published, [
      {
        event: { type: 'invites_changed' },
        users: [org.owner.id, admin.id, member.id].sort((a, b) => a - b),
      },
    ]);
  });

  it('expires after INVITATION_LINK_VALIDITY_MINUTES by default, as asked, or never', async () => {
    const org = await newOrg();
    const before = Date.now();
    expectSuccess(await invite(org.owner, org, 'default@example.com'));
    expectSuccess(
      await invite(org.owner, org, 'short@example.com', { invite_expires_in_minutes: 30 }),
    );
    expectSuccess(
      await invite(org.owner, org, 'never@example.com', { invite_expires_in_minutes: null }),
    );
    const expiry = async (email: string) =>
      (await invitationFor(org.realm.id, email)).confirmations[0]!.expiryDate?.getTime() ?? null;
    const tenDays = 14400 * 60_000;
    expect(await expiry('default@example.com')).toBeGreaterThanOrEqual(before + tenDays - 1000);
    expect(await expiry('default@example.com')).toBeLessThanOrEqual(Date.now() + tenDays);
    expect(await expiry('short@example.com')).toBeLessThanOrEqual(Date.now() + 30 * 60_000);
    expect(await expiry('never@example.com')).toBeNull();
  });

  it('stores the options the invitation grants', async () => {
    const org = await newOrg();
    const channel = await createChannel(org, 'granted');
    const group = await createGroup(org.realm, org.owner);
    expectSuccess(
      await invite(org.owner, org, 'opts@example.com', {
        stream_ids: [channel.id],
        group_ids: [group.id],
        invite_as: Role.MODERATOR,
        include_realm_default_subscriptions: true,
        notify_referrer_on_join: false,
        welcome_message_custom_text: 'Welcome **aboard**',
      }),
    );
    expect(await invitationFor(org.realm.id, 'opts@example.com')).toMatchObject({
      streamIds: [channel.id],
      groupIds: [group.id],
      invitedAs: Role.MODERATOR,
      includeRealmDefaultSubscriptions: true,
      notifyReferrerOnJoin: false,
      welcomeMessageCustomText: 'Welcome **aboard**',
    });
  });

  it("keeps only administrators' custom welcome text; others' is null", async () => {
    const org = await newOrg();
    const member = await createTestUser(org.realm, Role.MEMBER);
    const moderator = await createTestUser(org.realm, Role.MODERATOR);
    expectSuccess(
      await invite(member, org, 'w1@example.com', { welcome_message_custom_text: 'x' }),
    );
    expectSuccess(
      await invite(moderator, org, 'w2@example.com', { welcome_message_custom_text: '' }),
    );
    expectSuccess(
      await invite(org.owner, org, 'w3@example.com', { welcome_message_custom_text: '' }),
    );
    expect((await invitationFor(org.realm.id, 'w1@example.com')).welcomeMessageCustomText).toBe(
      null,
    );
    expect((await invitationFor(org.realm.id, 'w2@example.com')).welcomeMessageCustomText).toBe(
      null,
    );
    expect((await invitationFor(org.realm.id, 'w3@example.com')).welcomeMessageCustomText).toBe('');
  });

  it('limits the welcome text to 8000 code points', async () => {
    const org = await newOrg();
    // Emoji are two UTF-16 units each but one code point.
    expectSuccess(
      await invite(org.owner, org, 'long@example.com', {
        welcome_message_custom_text: '😀'.repeat(8000),
      }),
    );
    expectError(
      await invite(org.owner, org, 'longer@example.com', {
        welcome_message_custom_text: 'a'.repeat(8001),
      }),
      'welcome_message_custom_text is too long (limit: 8000 characters)',
    );
    expect(await pendingEmails(org.realm.id)).toEqual(['long@example.com']);
  });

  it('refuses an empty list of addresses', async () => {
    const org = await newOrg();
    expectError(await invite(org.owner, org, ''), 'You must specify at least one email address.');
  });

  it('requires stream_ids, as JSON integers', async () => {
    const org = await newOrg();
    expectError(
      await as(org.owner, org.host).post('/invites', { invitee_emails: 'a@example.com' }),
      "Missing 'stream_ids' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await invite(org.owner, org, 'a@example.com', { stream_ids: 'nope' }),
      'stream_ids is not valid JSON',
    );
    expectError(
      await invite(org.owner, org, 'a@example.com', { stream_ids: ['x'] }),
      'stream_ids[0] is not an integer',
    );
  });

  it('refuses bad parameter values', async () => {
    const org = await newOrg();
    const cases: [Record<string, unknown>, string][] = [
      [{ invite_as: 500 }, 'Invalid invite_as'],
      [{ invite_as: '"member"' }, 'Invalid invite_as'],
      [{ invite_expires_in_minutes: 0 }, 'invite_expires_in_minutes is too small'],
      [{ invite_expires_in_minutes: 'soon' }, 'invite_expires_in_minutes is not valid JSON'],
      [{ invite_expires_in_minutes: 1.5 }, 'invite_expires_in_minutes is not an integer'],
      [{ group_ids: '{}' }, 'group_ids is not a list'],
      [
        { include_realm_default_subscriptions: 'maybe' },
        'include_realm_default_subscriptions is not a boolean',
      ],
      [{ notify_referrer_on_join: 'yes' }, 'notify_referrer_on_join is not a boolean'],
    ];
    for (const [params, msg] of cases) {
      expectError(await invite(org.owner, org, 'bad@example.com', params), msg);
    }
    expect(await pendingEmails(org.realm.id)).toEqual([]);
  });

  it('sends nothing when an address does not validate', async () => {
    const org = await newOrg();
    const member = await createTestUser(org.realm);
    const res = await invite(
      org.owner,
      org,
      `good@example.com, not-an-address, ${member.deliveryEmail}`,
    );
    expectError(
      res,
      "Some emails did not validate, so we didn't send any invitations.",
      400,
      'INVITATION_FAILED',
    );
    expect(res.body).toMatchObject({
      errors: [
        ['not-an-address', 'Invalid address.', false],
        [member.deliveryEmail, 'Already has an account.', false],
      ],
      sent_invitations: false,
      license_limit_reached: false,
      daily_limit_reached: false,
    });
    expect(await pendingEmails(org.realm.id)).toEqual([]);
  });

  it('passes over an empty entry of the list, as Zulip’s do_invite_users', async () => {
    const org = await newOrg();
    expectSuccess(await invite(org.owner, org, 'good@example.com,\n'));
    expect(await pendingEmails(org.realm.id)).toEqual(['good@example.com']);
  });

  it('skips addresses that have accounts and invites the others (INVITATION_FAILED)', async () => {
    const org = await newOrg();
    const active = await createTestUser(org.realm);
    const gone = await createTestUser(org.realm);
    await prisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    const res = await invite(
      org.owner,
      org,
      `${active.deliveryEmail.toUpperCase()}, ${gone.deliveryEmail}, new@example.com`,
    );
    expectError(res, SOME_SKIPPED, 400, 'INVITATION_FAILED');
    expect(res.body).toEqual({
      result: 'error',
      code: 'INVITATION_FAILED',
      msg: SOME_SKIPPED,
      errors: [
        [active.deliveryEmail.toUpperCase(), 'Already has an account.', false],
        [gone.deliveryEmail, 'Account has been deactivated.', true],
      ],
      sent_invitations: true,
      license_limit_reached: false,
      daily_limit_reached: false,
    });
    expect(await pendingEmails(org.realm.id)).toEqual(['new@example.com']);
  });

  it('says so when nobody could be invited', async () => {
    const org = await newOrg();
    const res = await invite(org.owner, org, org.owner.deliveryEmail);
    expectError(res, "We weren't able to invite anyone.", 400, 'INVITATION_FAILED');
    expect(res.body).toMatchObject({
      errors: [[org.owner.deliveryEmail, 'Already has an account.', false]],
      sent_invitations: false,
    });
  });

  it('refuses a channel that does not exist or that the inviter cannot see', async () => {
    const org = await newOrg();
    const member = await createTestUser(org.realm);
    const secret = await createChannel(org, 'secret', { invite_only: true });
    const archived = await createChannel(org, 'old');
    await prisma().stream.update({ where: { id: archived.id }, data: { deactivated: true } });
    const other = await newOrg();
    const elsewhere = await createChannel(other, 'elsewhere');
    for (const [user, id] of [
      [org.owner, 999_999_999],
      [org.owner, -1],
      [org.owner, archived.id],
      [org.owner, elsewhere.id],
      [member, secret.id],
    ] as const) {
      expectError(
        await invite(user, org, 'x@example.com', { stream_ids: [id] }),
        `Invalid channel ID ${id}. No invites were sent.`,
      );
    }
    expect(await pendingEmails(org.realm.id)).toEqual([]);
  });

  it('needs permission to subscribe others, except to default channels', async () => {
    const org = await newOrg();
    const member = await createTestUser(org.realm);
    const plain = await createChannel(org, 'plain');
    const general = await createChannel(org, 'general', { is_default_stream: true });
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { canAddSubscribersGroupId: admins.id },
    });
    expectError(
      await invite(member, org, 'p@example.com', { stream_ids: [plain.id] }),
      'You do not have permission to subscribe other users to channels.',
    );
    expectSuccess(await invite(member, org, 'd@example.com', { stream_ids: [general.id] }));
    expectSuccess(await invite(member, org, 'n@example.com', { stream_ids: [] }));
    expectSuccess(await invite(org.owner, org, 'o@example.com', { stream_ids: [plain.id] }));
    expect(await pendingEmails(org.realm.id)).toEqual([
      'd@example.com',
      'n@example.com',
      'o@example.com',
    ]);
  });

  it('needs permission to add members to the groups', async () => {
    const org = await newOrg();
    const member = await createTestUser(org.realm);
    const own = await createGroup(org.realm, member);
    const others = await createGroup(org.realm, org.owner);
    const system = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:members' },
    });
    expectSuccess(await invite(member, org, 'g1@example.com', { group_ids: [own.id] }));
    expectError(
      await invite(member, org, 'g2@example.com', { group_ids: [others.id] }),
      'Insufficient permission',
    );
    expectError(
      await invite(org.owner, org, 'g3@example.com', { group_ids: [system.id] }),
      'Insufficient permission',
    );
    expectError(
      await invite(org.owner, org, 'g4@example.com', { group_ids: [999_999_999] }),
      'Invalid user group',
    );
    // Beyond int4: refused as a parameter, never handed to the database.
    expect((await invite(org.owner, org, 'g6@example.com', { group_ids: [2 ** 31] })).status).toBe(
      400,
    );
    expectSuccess(await invite(org.owner, org, 'g5@example.com', { group_ids: null }));
    expect(await pendingEmails(org.realm.id)).toEqual(['g1@example.com', 'g5@example.com']);
  });

  it("follows the organization's can_invite_users_group", async () => {
    const org = await newOrg();
    const member = await createTestUser(org.realm);
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { canInviteUsersGroupId: admins.id },
    });
    expectError(await invite(member, org, 'm@example.com'), 'Insufficient permission');
    expectSuccess(await invite(admin, org, 'a@example.com'));
    expect(await pendingEmails(org.realm.id)).toEqual(['a@example.com']);
  });

  it('stops at the daily limit and sends nothing then', async () => {
    const org = await newOrg();
    const many = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => `l${from + i}@example.com`).join(',');
    expectSuccess(await invite(org.owner, org, many(0, 29)));
    const res = await invite(org.owner, org, many(100, 2));
    expectError(
      res,
      'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
      400,
      'INVITATION_FAILED',
    );
    expect(res.body).toMatchObject({
      errors: [],
      sent_invitations: false,
      daily_limit_reached: true,
    });
    expect(await pendingEmails(org.realm.id)).toHaveLength(29);
    expectSuccess(await invite(org.owner, org, many(200, 1)));
  });

  it('applies the limit new organizations share', async () => {
    const org = await newOrg();
    process.env.INVITES_NEW_REALM_LIMIT_DAYS = JSON.stringify([[1, 0]]);
    resetConfig();
    try {
      const res = await invite(org.owner, org, 'shared@example.com');
      expectError(
        res,
        'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
        400,
        'INVITATION_FAILED',
      );
      await prisma().realm.update({
        where: { id: org.realm.id },
        data: { dateCreated: new Date(Date.now() - 30 * 86_400_000) },
      });
      expectSuccess(await invite(org.owner, org, 'old-org@example.com'));
    } finally {
      process.env.INVITES_NEW_REALM_LIMIT_DAYS = '[]';
      resetConfig();
    }
  });

  it('in organizations anyone may join, new accounts other than administrators may not invite', async () => {
    const org = await newOrg();
    await prisma().realm.update({ where: { id: org.realm.id }, data: { inviteRequired: false } });
    const member = await createTestUser(org.realm);
    const res = await invite(member, org, 'young@example.com');
    expectError(
      res,
      'Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.',
      400,
      'INVITATION_FAILED',
    );
    const veteran = await prisma().user.update({
      where: { id: member.id },
      data: { dateJoined: new Date(Date.now() - 4 * 86_400_000) },
    });
    expectSuccess(await invite(veteran, org, 'old@example.com'));
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    expectSuccess(await invite(admin, org, 'byadmin@example.com'));
  });
});

describe('GET /invites', () => {
  async function setup() {
    const org = await newOrg();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const member = await createTestUser(org.realm);
    const other = await createTestUser(org.realm);
    expectSuccess(
      await invite(member, org, 'mine@example.com', { notify_referrer_on_join: false }),
    );
    expectSuccess(await invite(other, org, 'theirs@example.com'));
    expectSuccess(
      await invite(org.owner, org, 'owner@example.com', {
        invite_as: Role.GUEST,
        invite_expires_in_minutes: null,
      }),
    );
    const link = expectSuccess(await as(org.owner, org.host).post('/invites/multiuse', {}));
    return { org, admin, member, other, link: link.invite_link as string };
  }

  it("lists everyone's pending invitations and links for administrators", async () => {
    const { org, admin, member, link } = await setup();
    const body = expectSuccess(await as(admin, org.host).get('/invites'));
    const invites = body.invites as Record<string, unknown>[];
    expect(invites.map((i) => i.email ?? i.link_url)).toEqual([
      'mine@example.com',
      'theirs@example.com',
      'owner@example.com',
      link,
    ]);
    const mine = await invitationFor(org.realm.id, 'mine@example.com');
    expect(invites[0]).toEqual({
      email: 'mine@example.com',
      invited_by_user_id: member.id,
      invited: Math.floor(mine.invitedAt.getTime() / 1000),
      expiry_date: Math.floor(mine.confirmations[0]!.expiryDate!.getTime() / 1000),
      id: mine.id,
      invited_as: Role.MEMBER,
      is_multiuse: false,
      notify_referrer_on_join: false,
    });
    expect(invites[2]).toMatchObject({ invited_as: Role.GUEST, expiry_date: null });
    const multiuse = await prisma().multiuseInvite.findFirstOrThrow({
      where: { realmId: org.realm.id },
    });
    expect(invites[3]).toEqual({
      invited_by_user_id: org.owner.id,
      invited: expect.any(Number),
      expiry_date: expect.any(Number),
      id: multiuse.id,
      link_url: link,
      invited_as: Role.MEMBER,
      is_multiuse: true,
    });
  });

  it('lists only their own invitations for others', async () => {
    const { org, member } = await setup();
    const body = expectSuccess(await as(member, org.host).get('/invites'));
    expect((body.invites as { email: string }[]).map((i) => i.email)).toEqual(['mine@example.com']);
  });

  it('leaves out revoked, used and expired invitations', async () => {
    const { org, admin } = await setup();
    const mine = await invitationFor(org.realm.id, 'mine@example.com');
    const theirs = await invitationFor(org.realm.id, 'theirs@example.com');
    expectSuccess(await as(admin, org.host).delete(`/invites/${mine.id}`));
    await prisma().confirmation.update({
      where: { id: theirs.confirmations[0]!.id },
      data: { expiryDate: new Date(Date.now() - 1000) },
    });
    await prisma().multiuseInvite.updateMany({
      where: { realmId: org.realm.id },
      data: { status: 2 },
    });
    const body = expectSuccess(await as(admin, org.host).get('/invites'));
    expect((body.invites as { email: string }[]).map((i) => i.email)).toEqual([
      'owner@example.com',
    ]);
  });

  it("drops a deactivated inviter's invitations and links, and tells the administrators", async () => {
    const { org, admin } = await setup();
    expectSuccess(await invite(admin, org, 'byadmin@example.com'));
    const link = expectSuccess(await as(admin, org.host).post('/invites/multiuse', {}));
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).delete(`/users/${admin.id}`));
    });
    expect(published.filter((p) => p.event.type === 'invites_changed').map((p) => p.users)).toEqual(
      [[org.owner.id]],
    );
    const body = expectSuccess(await as(org.owner, org.host).get('/invites'));
    const listed = (body.invites as { email?: string; link_url?: string }[]).map(
      (i) => i.email ?? i.link_url,
    );
    expect(listed).not.toContain('byadmin@example.com');
    expect(listed).not.toContain(link.invite_link);
    expect(listed).toContain('mine@example.com');
    // Their links no longer open (Zulip's revoke_invites_generated_by_user expires them).
    const key = (link.invite_link as string).split('/').filter(Boolean).pop()!;
    const confirmation = await prisma().confirmation.findUniqueOrThrow({ where: { key } });
    expect(confirmation.expiryDate!.getTime()).toBeLessThanOrEqual(Date.now());
    // Deactivating someone with nothing pending sends nothing.
    const idle = await createTestUser(org.realm);
    const quiet = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).delete(`/users/${idle.id}`));
    });
    expect(quiet.filter((p) => p.event.type === 'invites_changed')).toEqual([]);
  });

  it('refuses guests and bots', async () => {
    const org = await newOrg();
    const guest = await createTestUser(org.realm, Role.GUEST);
    expectError(await as(guest, org.host).get('/invites'), 'Not allowed for guest users');
    const created = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Inv Bot', short_name: 'inv' }),
    );
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    expectError(
      await as(bot, org.host).get('/invites'),
      'This endpoint does not accept bot requests.',
    );
  });
});

describe('DELETE /invites/{invite_id}', () => {
  it('revokes the invitation and tells the administrators and the referrer', async () => {
    const org = await newOrg();
    const member = await createTestUser(org.realm);
    expectSuccess(await invite(member, org, 'rev@example.com'));
    const row = await invitationFor(org.realm.id, 'rev@example.com');
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(await as(member, org.host).delete(`/invites/${row.id}`)),
    );
    expectPublished(published, [
      { event: { type: 'invites_changed' }, users: [org.owner.id, member.id] },
    ]);
    expect((await invitationFor(org.realm.id, 'rev@example.com')).status).toBe(2);
  });

  it('answers "No such invitation" for unknown ids and other organizations\' invitations', async () => {
    const org = await newOrg();
    const other = await newOrg();
    expectSuccess(await invite(other.owner, other, 'there@example.com'));
    const theirs = await invitationFor(other.realm.id, 'there@example.com');
    expectError(await as(org.owner, org.host).delete('/invites/999999999'), 'No such invitation');
    expectError(
      await as(org.owner, org.host).delete(`/invites/${theirs.id}`),
      'No such invitation',
    );
    expectError(
      await as(org.owner, org.host).delete('/invites/abc'),
      'invite_id is not an integer',
    );
    expect((await invitationFor(other.realm.id, 'there@example.com')).status).toBe(0);
  });

  it("lets administrators revoke others' invitations, but owner invitations only owners", async () => {
    const org = await newOrg();
    const admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    const member = await createTestUser(org.realm);
    const moderator = await createTestUser(org.realm, Role.MODERATOR);
    expectSuccess(await invite(member, org, 'by-member@example.com'));
    expectSuccess(await invite(org.owner, org, 'future-owner@example.com', { invite_as: 100 }));
    const byMember = await invitationFor(org.realm.id, 'by-member@example.com');
    const ownerInvite = await invitationFor(org.realm.id, 'future-owner@example.com');
    expectError(
      await as(moderator, org.host).delete(`/invites/${byMember.id}`),
      'Must be an organization administrator',
    );
    expectError(
      await as(admin, org.host).delete(`/invites/${ownerInvite.id}`),
      'Must be an organization owner',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectSuccess(await as(admin, org.host).delete(`/invites/${byMember.id}`));
    expectSuccess(await as(org.owner, org.host).delete(`/invites/${ownerInvite.id}`));
  });
});

describe('POST /invites/{invite_id}/resend', () => {
  it('queues the next email of the invitation', async () => {
    const org = await newOrg();
    expectSuccess(await invite(org.owner, org, 'again@example.com'));
    const row = await invitationFor(org.realm.id, 'again@example.com');
    expectSuccess(await as(org.owner, org.host).post(`/invites/${row.id}/resend`));
    expect((await invitationFor(org.realm.id, 'again@example.com')).mailRequested).toBe(2);
    expect((await mailQueue.getJob(`invitation-email-${row.id}-2`))?.data).toEqual({
      invitationId: row.id,
      sequence: 2,
    });
  });

  it('refuses invitations that can no longer be used, and unknown ones', async () => {
    const org = await newOrg();
    expectSuccess(await invite(org.owner, org, 'gone@example.com'));
    const row = await invitationFor(org.realm.id, 'gone@example.com');
    expectSuccess(await as(org.owner, org.host).delete(`/invites/${row.id}`));
    expectError(
      await as(org.owner, org.host).post(`/invites/${row.id}/resend`),
      'No such invitation',
    );
    expectError(await as(org.owner, org.host).post('/invites/0/resend'), 'No such invitation');
  });

  it('counts against the daily limit', async () => {
    const org = await newOrg();
    const many = Array.from({ length: 30 }, (_, i) => `r${i}@example.com`).join(',');
    expectSuccess(await invite(org.owner, org, many));
    const row = await invitationFor(org.realm.id, 'r0@example.com');
    const res = await as(org.owner, org.host).post(`/invites/${row.id}/resend`);
    expectError(
      res,
      'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
      400,
      'INVITATION_FAILED',
    );
    expect((await invitationFor(org.realm.id, 'r0@example.com')).mailRequested).toBe(1);
  });
});

describe('POST /invites/multiuse', () => {
  it('creates a reusable link with what it grants', async () => {
    const org = await newOrg();
    const channel = await createChannel(org, 'linked');
    const group = await createGroup(org.realm, org.owner);
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(
        await as(org.owner, org.host).post('/invites/multiuse', {
          stream_ids: [channel.id],
          group_ids: [group.id],
          invite_as: Role.GUEST,
          invite_expires_in_minutes: 60,
          include_realm_default_subscriptions: true,
          welcome_message_custom_text: 'Hi',
        }),
      );
      expect(body.invite_link).toMatch(
        new RegExp(`^http://${org.host.replace(/\./g, '\\.')}/join/[a-z2-7]{24}/$`),
      );
    });
    expectPublished(published, [{ event: { type: 'invites_changed' }, users: [org.owner.id] }]);
    expect(
      await prisma().multiuseInvite.findFirstOrThrow({ where: { realmId: org.realm.id } }),
    ).toMatchObject({
      referredById: org.owner.id,
      streamIds: [channel.id],
      groupIds: [group.id],
      invitedAs: Role.GUEST,
      includeRealmDefaultSubscriptions: true,
      welcomeMessageCustomText: 'Hi',
      status: 0,
    });
  });

  it('checks channels like email invitations', async () => {
    const org = await newOrg();
    expectError(
      await as(org.owner, org.host).post('/invites/multiuse', { stream_ids: [999_999_999] }),
      'Invalid channel ID 999999999. No invites were sent.',
    );
  });
});

describe('DELETE /invites/multiuse/{invite_id}', () => {
  it('revokes the link once', async () => {
    const org = await newOrg();
    expectSuccess(await as(org.owner, org.host).post('/invites/multiuse', {}));
    const row = await prisma().multiuseInvite.findFirstOrThrow({
      where: { realmId: org.realm.id },
    });
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(await as(org.owner, org.host).delete(`/invites/multiuse/${row.id}`)),
    );
    expectPublished(published, [{ event: { type: 'invites_changed' }, users: [org.owner.id] }]);
    expectError(
      await as(org.owner, org.host).delete(`/invites/multiuse/${row.id}`),
      'Invitation has already been revoked',
    );
    expectError(
      await as(org.owner, org.host).delete('/invites/multiuse/999999999'),
      'No such invitation',
    );
  });
});

// ---- Who may do what ---------------------------------------------------------------------------

/** Zulip's answers differ by actor here (guests and bots are refused before any permission
 * is looked at), so each operation lists what each denied actor gets; the rest is
 * permission-matrix.ts's rule: allowed actors change something, denied ones nothing. */
type Denial = [msg: string, code?: string];
interface InviteOperation {
  name: string;
  allowed: Actor[];
  denied?: Partial<Record<Actor, Denial>>;
  run(ctx: MatrixCtx, actor: User): Promise<Response>;
}
interface MatrixCtx {
  org: TestRealm;
  actors: Record<Actor, User>;
}

const NOT_GUEST: Denial = ['Not allowed for guest users'];
const NOT_BOT: Denial = ['This endpoint does not accept bot requests.'];
const NEED_ADMIN: Denial = ['Must be an organization administrator'];
const NEED_OWNER: Denial = ['Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL'];
const INSUFFICIENT: Denial = ['Insufficient permission'];

async function ownerInvitation(ctx: MatrixCtx, invitedAs: number = Role.MEMBER): Promise<number> {
  const email = `t${Math.random().toString(36).slice(2)}@example.com`;
  expectSuccess(await invite(ctx.actors.owner, ctx.org, email, { invite_as: invitedAs }));
  return (await invitationFor(ctx.org.realm.id, email)).id;
}

const operations: InviteOperation[] = [
  {
    name: 'send an invitation',
    allowed: ['owner', 'admin', 'moderator', 'member'],
    run: (ctx, actor) => invite(actor, ctx.org, `m${Math.random()}@example.com`.replace('0.', '')),
  },
  {
    name: 'invite a moderator',
    allowed: ['owner', 'admin', 'moderator'],
    denied: { member: INSUFFICIENT },
    run: (ctx, actor) =>
      invite(actor, ctx.org, `mod${Math.random()}@example.com`.replace('0.', ''), {
        invite_as: Role.MODERATOR,
      }),
  },
  {
    name: 'invite an owner',
    allowed: ['owner'],
    denied: { admin: NEED_OWNER, moderator: NEED_OWNER, member: NEED_OWNER },
    run: (ctx, actor) =>
      invite(actor, ctx.org, `own${Math.random()}@example.com`.replace('0.', ''), {
        invite_as: Role.OWNER,
      }),
  },
  {
    name: 'invite an administrator',
    allowed: ['owner', 'admin'],
    denied: { moderator: NEED_ADMIN, member: NEED_ADMIN },
    run: (ctx, actor) =>
      invite(actor, ctx.org, `adm${Math.random()}@example.com`.replace('0.', ''), {
        invite_as: Role.ADMINISTRATOR,
      }),
  },
  {
    name: 'create a reusable link',
    allowed: ['owner', 'admin'],
    denied: { moderator: INSUFFICIENT, member: INSUFFICIENT },
    run: (ctx, actor) => as(actor, ctx.org.host).post('/invites/multiuse', {}),
  },
  {
    name: "revoke someone else's invitation",
    allowed: ['owner', 'admin'],
    denied: { moderator: NEED_ADMIN, member: NEED_ADMIN },
    run: async (ctx, actor) =>
      as(actor, ctx.org.host).delete(`/invites/${await ownerInvitation(ctx)}`),
  },
  {
    name: "resend someone else's invitation",
    allowed: ['owner', 'admin'],
    denied: { moderator: NEED_ADMIN, member: NEED_ADMIN },
    run: async (ctx, actor) =>
      as(actor, ctx.org.host).post(`/invites/${await ownerInvitation(ctx)}/resend`),
  },
  {
    name: 'revoke an invitation to be an owner',
    allowed: ['owner'],
    denied: { admin: NEED_OWNER, moderator: NEED_OWNER, member: NEED_OWNER },
    run: async (ctx, actor) =>
      as(actor, ctx.org.host).delete(`/invites/${await ownerInvitation(ctx, Role.OWNER)}`),
  },
  {
    name: "revoke someone else's reusable link",
    allowed: ['owner', 'admin'],
    denied: { moderator: NEED_ADMIN, member: NEED_ADMIN },
    run: async (ctx, actor) => {
      expectSuccess(await as(ctx.actors.owner, ctx.org.host).post('/invites/multiuse', {}));
      const link = await prisma().multiuseInvite.findFirstOrThrow({
        where: { realmId: ctx.org.realm.id },
        orderBy: { id: 'desc' },
      });
      return as(actor, ctx.org.host).delete(`/invites/multiuse/${link.id}`);
    },
  },
];

describe('who may send and manage invitations', () => {
  const ctx = { actors: {} } as MatrixCtx;

  beforeAll(async () => {
    ctx.org = await newOrg();
    ctx.actors.owner = ctx.org.owner;
    ctx.actors.admin = await createTestUser(ctx.org.realm, Role.ADMINISTRATOR);
    ctx.actors.moderator = await createTestUser(ctx.org.realm, Role.MODERATOR);
    ctx.actors.member = await createTestUser(ctx.org.realm, Role.MEMBER);
    ctx.actors.guest = await createTestUser(ctx.org.realm, Role.GUEST);
    const bot = expectSuccess(
      await as(ctx.actors.member, ctx.org.host).post('/bots', {
        full_name: 'Matrix Bot',
        short_name: 'matrix',
      }),
    );
    ctx.actors.bot = await prisma().user.findUniqueOrThrow({
      where: { id: bot.user_id as number },
    });
  });

  /** Everything these operations may change in the organization (fresh operations set up
   * their target invitation before the "before" snapshot is taken, inside run). */
  async function snapshot() {
    const realmId = ctx.org.realm.id;
    const [invites, links] = await Promise.all([
      prisma().preregistrationUser.findMany({
        where: { realmId },
        select: { id: true, status: true, mailRequested: true },
        orderBy: { id: 'asc' },
      }),
      prisma().multiuseInvite.findMany({
        where: { realmId },
        select: { id: true, status: true },
        orderBy: { id: 'asc' },
      }),
    ]);
    return { invites, links };
  }

  const cases = operations.flatMap((operation) =>
    ACTORS.map((actor) => [operation.name, actor, operation] as const),
  );

  it.each(cases)('%s as %s', async (_name, actorName, operation) => {
    const counts = await snapshot();
    const res = await operation.run(ctx, ctx.actors[actorName]);
    // The operation's own fixture (an invitation to act on) is not the change to check.
    const fixtures = await snapshot();
    if (operation.allowed.includes(actorName)) {
      expectSuccess(res);
      expect(fixtures).not.toEqual(counts);
      return;
    }
    const denial =
      operation.denied?.[actorName] ??
      (actorName === 'guest' ? NOT_GUEST : actorName === 'bot' ? NOT_BOT : INSUFFICIENT);
    expectError(res, denial[0], 400, denial[1] ?? 'BAD_REQUEST');
    // Nothing beyond the fixture: pending invitations stay pending, links active, no mail.
    const fixtureIds = new Set(counts.invites.map((row) => row.id));
    expect(fixtures.invites.filter((row) => fixtureIds.has(row.id))).toEqual(counts.invites);
    expect(fixtures.invites.filter((row) => !fixtureIds.has(row.id))).toEqual(
      fixtures.invites
        .filter((row) => !fixtureIds.has(row.id))
        .map((row) => ({ ...row, status: 0, mailRequested: 1 })),
    );
    const linkIds = new Set(counts.links.map((row) => row.id));
    expect(fixtures.links.filter((row) => linkIds.has(row.id))).toEqual(counts.links);
    expect(fixtures.links.filter((row) => !linkIds.has(row.id) && row.status !== 0)).toEqual([]);
  });
});
