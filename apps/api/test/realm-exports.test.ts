// Data exports (Zulip's /export/realm): who may ask, Zulip's refusals, the job that makes the
// tarball (what a public and a consent export hold), the events administrators get, the
// Notification Bot's message, the download and the deletion; GET /export/realm/consents and
// the realm_export_consent events.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Queue } from 'bullmq';
import request from 'supertest';
import sharp from 'sharp';
import { extract } from 'tar-stream';
import { getConfig } from '@parley/config';
import { getPrisma, Role, runAction, type User } from '@parley/db';
import { closeQueues } from '@parley/jobs';
import {
  runRealmExport,
  STARTED_EXPORT_GIVE_UP_MS,
  sweepExports,
} from '../src/actions/realm-exports';
import { doAddSubscriptions } from '../src/actions/subscriptions';
import { uploadFilePath } from '../src/lib/upload-store';
import { ExportStatus } from '../src/lib/realm-exports';
import {
  api,
  app,
  as,
  bytes,
  captureEvents,
  createChannel,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  uploadFile,
  type TestRealm,
} from './helpers';
import { send } from './message-helpers';

let maintenance: Queue;
beforeAll(() => {
  maintenance = new Queue('maintenance', { connection: { url: getConfig().REDIS_URL } });
});
afterAll(async () => {
  await maintenance.close();
  await closeQueues();
});

/** The export's job, taken out of the queue (no worker runs in this process) and run here.
 * Another test file's worker may have taken it first (they share Redis): then it is left to
 * finish there. */
async function runJob(exportId: number): Promise<void> {
  const job = await maintenance.getJob(`realm-export-${exportId}`);
  expect(job?.data).toEqual({ exportId });
  const removed = await job!.remove().then(
    () => true,
    () => false,
  );
  if (removed) return runRealmExport({ exportId });
  const finishedBy = Date.now() + 30_000;
  while (Date.now() < finishedBy) {
    const { status } = await getPrisma().realmExport.findUniqueOrThrow({ where: { id: exportId } });
    if (status !== ExportStatus.REQUESTED && status !== ExportStatus.STARTED) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A bot of the organization, written directly (its creation's events are not under test). */
function createBot(realmId: number, fields: { role?: number; botOwnerId?: number } = {}) {
  const email = `bot-${randomBytes(4).toString('hex')}@example.com`;
  return getPrisma().user.create({
    data: {
      realmId,
      email,
      deliveryEmail: email,
      fullName: 'Bot',
      isBot: true,
      apiKey: randomBytes(16).toString('hex'),
      ...fields,
    },
  });
}

/** The files of a gzipped tarball, by path below its one top directory. */
async function untar(tarball: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const reader = extract();
  const done = new Promise<void>((resolve, reject) => {
    reader.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk) => chunks.push(chunk as Buffer));
      stream.on('end', () => {
        files.set(header.name.split('/').slice(1).join('/'), Buffer.concat(chunks));
        next();
      });
    });
    reader.on('finish', resolve);
    reader.on('error', reject);
  });
  reader.end(gunzipSync(tarball));
  await done;
  return files;
}

const json = (files: Map<string, Buffer>, path: string) =>
  JSON.parse(files.get(path)!.toString()) as Record<string, Record<string, unknown>[]>;

async function download(host: string, url: string) {
  return request(app).get(new URL(url).pathname).set('Host', host).buffer(true).parse(bytes);
}

describe('/export/realm', () => {
  let org: TestRealm;
  let admin: User;
  let member: User;
  let admins: number[];
  beforeEach(async () => {
    org = await createTestRealm();
    admin = await createTestUser(org.realm, Role.ADMINISTRATOR);
    member = await createTestUser(org.realm, Role.MEMBER);
    // Neither moderators nor administrator bots are told: Zulip's human administrators.
    await createTestUser(org.realm, Role.MODERATOR);
    await createBot(org.realm.id, { role: Role.ADMINISTRATOR });
    admins = [org.owner.id, admin.id].sort((a, b) => a - b);
  });
  // Exports left waiting would be made by a worker test's sweep: they are failed, their jobs
  // gone.
  afterEach(async () => {
    const waiting = await getPrisma().realmExport.findMany({
      where: { realmId: org.realm.id, status: ExportStatus.REQUESTED },
    });
    for (const { id } of waiting)
      await (await maintenance.getJob(`realm-export-${id}`))?.remove().catch(() => undefined);
    await getPrisma().realmExport.updateMany({
      where: { realmId: org.realm.id, status: ExportStatus.REQUESTED },
      data: { status: ExportStatus.FAILED, dateFailed: new Date() },
    });
  });

  const exportsListed = async () =>
    expectSuccess(await as(admin, org.host).get('/export/realm')).exports as Record<
      string,
      unknown
    >[];

  it('is for administrators', async () => {
    for (const res of [
      await as(member, org.host).get('/export/realm'),
      await as(member, org.host).post('/export/realm'),
      await as(member, org.host).delete('/export/realm/1'),
      await as(member, org.host).get('/export/realm/consents'),
    ])
      expectError(res, 'Must be an organization administrator', 400, 'UNAUTHORIZED_PRINCIPAL');
    expect(await getPrisma().realmExport.count({ where: { realmId: org.realm.id } })).toBe(0);
    expectError(
      await as(admin, org.host).delete('/export/realm/abc'),
      'export_id is not an integer',
    );
    expect((await as(admin, org.host).delete('/export/realm/2147483648')).status).toBe(400);
    // Not a tarball: not found, whatever the path holds.
    for (const path of [
      '/user_avatars/exports/99999999999/abc/zulip-export-1.tar.gz',
      `/user_avatars/exports/${org.realm.id}/abc/zulip-export-1.tar.gz`,
      `/user_avatars/exports/${org.realm.id}/a.b/x.tar.gz`,
    ])
      expect((await request(app).get(path).set('Host', org.host)).status).toBe(404);
  });

  it('makes a public export: its job, its events, the tarball, the message, download and deletion', async () => {
    const general = await createChannel(org.realm, org.owner, 'general', [org.owner, member]);
    const secret = await createChannel(org.realm, org.owner, 'secret', [org.owner], {
      inviteOnly: true,
    });
    const file = await uploadFile(org.host, member, 'notes.txt', Buffer.from('exported bytes'));
    const shared = expectSuccess(
      await send(member, org.host, {
        type: 'stream',
        to: general.name,
        topic: 'plans',
        content: `public words [notes](${file.url})`,
      }),
    ).id as number;
    const poll = expectSuccess(
      await send(member, org.host, {
        type: 'stream',
        to: general.name,
        topic: 'plans',
        content: '/poll Where?',
      }),
    ).id as number;
    const picture = await sharp({
      create: { width: 8, height: 8, channels: 3, background: { r: 1, g: 2, b: 3 } },
    })
      .png()
      .toBuffer();
    const avatarUrl = expectSuccess(
      await api
        .post(org.host, '/users/me/avatar')
        .auth(member.deliveryEmail, member.apiKey)
        .attach('picture', picture, 'picture.png'),
    ).avatar_url as string;
    const privateFile = await uploadFile(org.host, org.owner, 'private.txt', Buffer.from('no'));
    const hidden = expectSuccess(
      await send(org.owner, org.host, {
        type: 'stream',
        to: secret.name,
        topic: 't',
        content: `[private](${privateFile.url})`,
      }),
    ).id as number;
    const direct = expectSuccess(
      await send(member, org.host, { type: 'direct', to: [org.owner.id], content: 'psst' }),
    ).id as number;
    // The member's address is visible to nobody; the owner has a Zoom token.
    await getPrisma().user.update({
      where: { id: member.id },
      data: { emailAddressVisibility: 4 },
    });
    await getPrisma().user.update({
      where: { id: org.owner.id },
      data: { zoomToken: { access_token: 'secret' } },
    });

    let id = 0;
    const requested = await captureEvents(org.realm.id, async () => {
      id = expectSuccess(await as(admin, org.host).post('/export/realm')).id as number;
    });
    const pending = {
      id,
      acting_user_id: admin.id,
      export_time: expect.any(Number) as number,
      deleted_timestamp: null,
      failed_timestamp: null,
      export_url: null,
      pending: true,
      export_type: 'public',
    };
    expect(requested).toEqual([
      { event: { type: 'realm_export', exports: [pending] }, users: admins },
    ]);
    expect(await exportsListed()).toEqual([pending]);

    const made = await captureEvents(org.realm.id, () => runJob(id));
    const listed = await exportsListed();
    expect(listed).toEqual([
      { ...pending, pending: false, export_url: expect.stringMatching(/\.tar\.gz$/) as string },
    ]);
    const url = listed[0]!.export_url as string;
    expect(new URL(url).pathname).toMatch(
      new RegExp(
        `^/user_avatars/exports/${org.realm.id}/[\\w-]+/zulip-export-[0-9a-f]+\\.tar\\.gz$`,
      ),
    );
    expect(made.filter((p) => p.event.type === 'realm_export')).toEqual([
      { event: { type: 'realm_export', exports: listed }, users: admins },
    ]);
    // The Notification Bot tells the administrator who asked.
    const told = made.find((p) => p.event.type === 'message');
    expect(told?.users).toContain(admin.id);
    expect((told!.event.message as { content: string }).content).toContain(
      'Your data export is complete.',
    );
    const row = await getPrisma().realmExport.findUniqueOrThrow({ where: { id } });
    expect(row.status).toBe(ExportStatus.SUCCEEDED);
    expect(row.sha256sumHex).toMatch(/^[0-9a-f]{64}$/);

    const fetched = await download(org.host, url);
    expect(fetched.status).toBe(200);
    expect(fetched.headers['content-type']).toBe('application/gzip');
    const tarball = fetched.body as Buffer;
    expect(Number(row.tarballSizeBytes)).toBe(tarball.length);
    const files = await untar(tarball);
    const realm = json(files, 'realm.json');
    expect(realm.zerver_realm!.map((r) => r.id)).toEqual([org.realm.id]);
    expect(realm.zerver_realm![0]).not.toHaveProperty('jwt_key');
    const users = realm.zerver_userprofile!;
    expect(users.map((u) => u.id)).toEqual(expect.arrayContaining([org.owner.id, member.id]));
    for (const user of users) {
      expect(user).not.toHaveProperty('api_key');
      expect(user).not.toHaveProperty('password_hash');
      expect(user).not.toHaveProperty('zoom_token');
    }
    const exportedMember = users.find((u) => u.id === member.id)!;
    const dummy = expect.stringMatching(new RegExp(`^user${member.id}@`)) as unknown;
    expect(exportedMember).toMatchObject({ email: dummy, delivery_email: dummy });
    expect(users.find((u) => u.id === org.owner.id)!.delivery_email).toBe(org.owner.deliveryEmail);
    const subscribed = new Set(realm.zerver_subscription!.map((sub) => sub.recipient_id));
    expect(subscribed.has(general.recipientId)).toBe(true);
    expect(subscribed.has(secret.recipientId)).toBe(false);
    expect(realm.zerver_stream!.map((s) => s.name)).toEqual(
      expect.arrayContaining(['general', 'secret']),
    );
    const messages = json(files, 'messages-000001.json');
    const ids = messages.zerver_message!.map((m) => m.id);
    expect(ids).toContain(shared);
    expect(ids).not.toContain(hidden);
    expect(ids).not.toContain(direct);
    // Every user's copies of a public message.
    expect(
      messages
        .zerver_usermessage!.filter((um) => um.message_id === shared)
        .map((um) => um.user_profile_id),
    ).toEqual(expect.arrayContaining([org.owner.id, member.id]));
    // Uploaded avatars, both sizes.
    const avatarHash = /\/([0-9a-f]{40})\.png/.exec(avatarUrl)![1]!;
    expect(JSON.parse(files.get('avatars/records.json')!.toString())).toEqual([
      { path: `${avatarHash}.png`, user_profile_id: member.id },
      { path: `${avatarHash}-medium.png`, user_profile_id: member.id },
    ]);
    expect(files.has(`avatars/${avatarHash}-medium.png`)).toBe(true);
    // A widget's submessages go with their message.
    expect(messages.zerver_submessage!.map((sub) => [sub.message_id, sub.msg_type])).toEqual([
      [poll, 'widget'],
    ]);
    expect(json(files, 'attachment.json').zerver_attachment!.map((a) => a.path_id)).toEqual([
      file.pathId,
    ]);
    expect(files.get(`uploads/${file.pathId}`)!.toString()).toBe('exported bytes');
    expect(files.has(`uploads/${privateFile.pathId}`)).toBe(false);
    expect(JSON.parse(files.get('stats.json')!.toString())).toMatchObject({
      zerver_message: ids.length,
    });

    // Deleted: announced, listed as deleted, no longer served, and not deleted twice.
    const deleted = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).delete(`/export/realm/${id}`));
    });
    const afterDeletion = await exportsListed();
    expect(afterDeletion).toEqual([
      { ...pending, pending: false, deleted_timestamp: expect.any(Number) as number },
    ]);
    expect(deleted).toEqual([
      { event: { type: 'realm_export', exports: afterDeletion }, users: admins },
    ]);
    expect((await download(org.host, url)).status).toBe(404);
    expectError(await as(admin, org.host).delete(`/export/realm/${id}`), 'Export already deleted');
  });

  it('exports the private data of consenting users only, and deactivates the others', async () => {
    // Consenting is announced to the administrators.
    const consented = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.owner, org.host).patch('/settings', { allow_private_data_export: true }),
      );
    });
    expect(consented.filter((p) => p.event.type === 'realm_export_consent')).toEqual([
      {
        event: { type: 'realm_export_consent', user_id: org.owner.id, consented: true },
        users: admins,
      },
    ]);
    const ownersChannel = await createChannel(org.realm, org.owner, 'owners', [org.owner], {
      inviteOnly: true,
    });
    const membersChannel = await createChannel(org.realm, member, 'members', [member], {
      inviteOnly: true,
    });
    const sent = async (from: User, form: Record<string, unknown>) =>
      expectSuccess(await send(from, org.host, form)).id as number;
    const inOwners = await sent(org.owner, {
      type: 'stream',
      to: ownersChannel.name,
      topic: 't',
      content: 'mine',
    });
    const inMembers = await sent(member, {
      type: 'stream',
      to: membersChannel.name,
      topic: 't',
      content: 'theirs',
    });
    const toOwner = await sent(member, { type: 'direct', to: [org.owner.id], content: 'a' });
    const fromOwner = await sent(org.owner, { type: 'direct', to: [member.id], content: 'b' });
    const between = await sent(member, { type: 'direct', to: [admin.id], content: 'c' });
    const group = await sent(member, {
      type: 'direct',
      to: [org.owner.id, admin.id],
      content: 'd',
    });
    // A channel with protected history: only what the consenting owner received once there.
    const protectedChannel = await createChannel(org.realm, member, 'protected', [member], {
      inviteOnly: true,
      historyPublicToSubscribers: false,
    });
    const beforeJoining = await sent(member, {
      type: 'stream',
      to: protectedChannel.name,
      topic: 't',
      content: 'before',
    });
    await runAction((ctx) =>
      doAddSubscriptions(
        ctx,
        org.realm,
        [{ user: org.owner, stream: protectedChannel }],
        member.id,
      ),
    );
    const afterJoining = await sent(member, {
      type: 'stream',
      to: protectedChannel.name,
      topic: 't',
      content: 'after',
    });
    const ownersBot = await createBot(org.realm.id, { botOwnerId: org.owner.id });
    await getPrisma().user.updateMany({
      where: { id: { in: [org.owner.id, admin.id] } },
      data: { emailAddressVisibility: 4 },
    });

    const id = expectSuccess(
      await as(admin, org.host).post('/export/realm', { export_type: 'full_with_consent' }),
    ).id as number;
    await runJob(id);
    const [listed] = await exportsListed();
    expect(listed).toMatchObject({ export_type: 'full_with_consent', pending: false });
    const files = await untar(
      (await download(org.host, listed!.export_url as string)).body as Buffer,
    );
    const messages = json(files, 'messages-000001.json');
    const ids = messages.zerver_message!.map((m) => m.id);
    expect(ids).toEqual(
      expect.arrayContaining([inOwners, toOwner, fromOwner, group, afterJoining]),
    );
    for (const excluded of [inMembers, between, beforeJoining]) expect(ids).not.toContain(excluded);
    // Only the consenting users' copies.
    expect(new Set(messages.zerver_usermessage!.map((um) => um.user_profile_id))).toEqual(
      new Set([org.owner.id]),
    );
    const realm = json(files, 'realm.json');
    // The consenting owner's private subscriptions go; the member's do not.
    const subscriptions = realm.zerver_subscription!.map((sub) => [
      sub.user_profile_id,
      sub.recipient_id,
    ]);
    expect(subscriptions).toContainEqual([org.owner.id, ownersChannel.recipientId]);
    expect(subscriptions).not.toContainEqual([member.id, membersChannel.recipientId]);
    const users = new Map(realm.zerver_userprofile!.map((u) => [u.id, u]));
    expect(users.get(org.owner.id)!.is_active).toBe(true);
    expect(users.get(member.id)!.is_active).toBe(false);
    // A consenting person's bot consents too.
    expect(users.get(ownersBot.id)!.is_active).toBe(true);
    // A consenting user's address goes as it is, hidden or not; another's hidden one does not.
    expect(users.get(org.owner.id)!.delivery_email).toBe(org.owner.deliveryEmail);
    expect(users.get(admin.id)!.delivery_email).toMatch(new RegExp(`^user${admin.id}@`));
  });

  it("refuses what Zulip refuses, in Zulip's words", async () => {
    const post = (form: Record<string, unknown> = {}) =>
      as(admin, org.host).post('/export/realm', form);
    expectError(await post({ export_type: 'full_without_consent' }), 'Invalid export_type');
    expectError(await post({ export_type: 3 }), 'Invalid export_type');
    const support = `zulip-admin@${getConfig().EXTERNAL_HOST.replace(/:\d+$/, '')}`;
    expectError(
      await post({ export_type: 'full_with_consent' }),
      `Make sure at least one Organization Owner is consenting to the export or contact ${support} for help.`,
    );
    await getPrisma().user.update({
      where: { id: org.owner.id },
      data: { emailAddressVisibility: 4 },
    });
    expectError(
      await post(),
      'Make sure at least one Organization Owner allows other Administrators to see their ' +
        `email address or contact ${support} for help`,
    );
    await getPrisma().user.update({
      where: { id: org.owner.id },
      data: { emailAddressVisibility: 1, allowPrivateDataExport: true },
    });

    // Integers, as clients before feature level 449 send them, still name the types.
    const legacy = expectSuccess(await post({ export_type: 2 })).id as number;
    expect((await exportsListed()).map((e) => e.export_type)).toEqual(['full_with_consent']);
    expectError(
      await as(admin, org.host).delete(`/export/realm/${legacy}`),
      'Export still in progress',
    );
    expectError(
      await as(admin, org.host).delete('/export/realm/999999999'),
      'Invalid data export ID',
    );
    // A job run again for an export it had started (its worker died) marks it failed.
    await getPrisma().realmExport.update({
      where: { id: legacy },
      data: { status: ExportStatus.STARTED },
    });
    await runJob(legacy);
    const [failed] = await exportsListed();
    expect(failed).toMatchObject({ pending: false, export_url: null });
    expect(failed!.failed_timestamp).toEqual(expect.any(Number));
    expectError(
      await as(admin, org.host).delete(`/export/realm/${legacy}`),
      'Export failed, nothing to delete',
    );

    // Too large to make here.
    const big = await getPrisma().attachment.create({
      data: {
        realmId: org.realm.id,
        ownerId: member.id,
        fileName: 'huge.bin',
        pathId: `${org.realm.id}/${randomBytes(8).toString('hex')}/huge.bin`,
        size: 1024 ** 3 + 1,
      },
    });
    expectError(
      await post(),
      `The export you requested is too large for automatic processing. Please request a manual export by contacting ${support}.`,
    );
    await getPrisma().attachment.delete({ where: { id: big.id } });

    // Five a week.
    for (let i = 0; i < 4; i++) {
      const id = expectSuccess(await post()).id as number;
      await (await maintenance.getJob(`realm-export-${id}`))?.remove();
    }
    expectError(await post(), 'Exceeded rate limit.');
    expect(await getPrisma().realmExport.count({ where: { realmId: org.realm.id } })).toBe(5);
  });

  it("the worker's sweep queues a lost job again, and fails an export its lost job left started", async () => {
    const lost = expectSuccess(await as(admin, org.host).post('/export/realm')).id as number;
    await (await maintenance.getJob(`realm-export-${lost}`))!.remove();
    const stuck = expectSuccess(await as(admin, org.host).post('/export/realm')).id as number;
    await (await maintenance.getJob(`realm-export-${stuck}`))!.remove();
    const hoursAgo = new Date(Date.now() - STARTED_EXPORT_GIVE_UP_MS - 60_000);
    await getPrisma().realmExport.update({
      where: { id: lost },
      data: { dateRequested: new Date(Date.now() - 120_000) },
    });
    await getPrisma().realmExport.update({
      where: { id: stuck },
      data: { status: ExportStatus.STARTED, dateRequested: hoursAgo, dateStarted: hoursAgo },
    });
    await sweepExports();
    await runJob(lost);
    const listed = new Map((await exportsListed()).map((e) => [e.id, e]));
    expect(listed.get(lost)).toMatchObject({ pending: false, failed_timestamp: null });
    expect(listed.get(lost)!.export_url).toEqual(expect.any(String));
    expect(listed.get(stuck)).toMatchObject({ pending: false, export_url: null });
    expect(listed.get(stuck)!.failed_timestamp).toEqual(expect.any(Number));
  });

  it('marks an export failed when it cannot be stored, and tells the administrators', async () => {
    // The organization's export directory is a file: storing the tarball fails.
    const blocker = uploadFilePath(`user_avatars/exports/${org.realm.id}`)!;
    mkdirSync(dirname(blocker), { recursive: true });
    writeFileSync(blocker, 'not a directory');
    try {
      const id = expectSuccess(await as(admin, org.host).post('/export/realm')).id as number;
      const failed = await captureEvents(org.realm.id, () => runJob(id));
      const listed = await exportsListed();
      expect(listed).toEqual([
        expect.objectContaining({ id, pending: false, export_url: null }) as unknown,
      ]);
      expect(listed[0]!.failed_timestamp).toEqual(expect.any(Number));
      expect(failed).toEqual([{ event: { type: 'realm_export', exports: listed }, users: admins }]);
    } finally {
      rmSync(blocker, { force: true });
    }
  });

  it('lists the consent of every active human, and tells administrators of new ones', async () => {
    const bot = await createBot(org.realm.id);
    await getPrisma().user.update({
      where: { id: member.id },
      data: { allowPrivateDataExport: true, emailAddressVisibility: 2 },
    });
    const consents = expectSuccess(await as(admin, org.host).get('/export/realm/consents'))
      .export_consents as { user_id: number; consented: boolean }[];
    const ids = consents.map((c) => c.user_id);
    expect(ids).not.toContain(bot.id);
    expect(consents.find((c) => c.user_id === member.id)).toEqual({
      user_id: member.id,
      consented: true,
      email_address_visibility: 2,
    });
    expect(consents.find((c) => c.user_id === org.owner.id)).toMatchObject({ consented: false });

    let newcomer: User | undefined;
    const created = await captureEvents(org.realm.id, async () => {
      newcomer = await createTestUser(org.realm, Role.MEMBER);
    });
    expect(created.filter((p) => p.event.type === 'realm_export_consent')).toEqual([
      {
        event: { type: 'realm_export_consent', user_id: newcomer!.id, consented: false },
        users: admins,
      },
    ]);
  });
});
