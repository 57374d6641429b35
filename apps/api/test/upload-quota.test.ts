// The organization's upload limits (Zulip's max_file_upload_size_mib and upload_quota_gb): what
// POST /register reports, and how POST /user_uploads and the tus endpoint enforce them.
import request from 'supertest';
import { getPrisma, runAction, type User } from '@parley/db';
import { doSetRealmUploadLimits } from '../src/actions/uploads';
import { applyRealmEvent } from '../src/lib/realm-state';
import { randomBytes } from 'node:crypto';
import { stopTusLocker } from '../src/lib/tus-locker';
import {
  api,
  app,
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const QUOTA_MESSAGE = "Upload would exceed your organization's upload quota.";

afterAll(async () => {
  await stopTusLocker();
});

async function setLimits(
  org: TestRealm,
  limits: { maxFileUploadSizeMib?: number | null; uploadQuotaGb?: number | null },
) {
  org.realm = await getPrisma().realm.update({ where: { id: org.realm.id }, data: limits });
}

/** Makes the organization's stored uploads add up to `bytes` (one row, as Zulip's tests do). */
async function useSpace(org: TestRealm, owner: User, bytes: number) {
  await getPrisma().attachment.create({
    data: {
      realmId: org.realm.id,
      ownerId: owner.id,
      fileName: 'big.bin',
      pathId: `${org.realm.id}/00/${randomBytes(18).toString('base64url')}/big.bin`,
      size: bytes,
      contentType: 'application/octet-stream',
    },
  });
}

const upload = (org: TestRealm, user: User, data: Buffer) =>
  api
    .post(org.host, '/user_uploads')
    .auth(user.deliveryEmail, user.apiKey)
    .attach('file', data, 'file.bin');

const tusCreate = (org: TestRealm, user: User, length: number) =>
  request(app)
    .post('/api/v1/tus')
    .set('Host', org.host)
    .auth(user.deliveryEmail, user.apiKey)
    .set('Tus-Resumable', '1.0.0')
    .set('Upload-Length', String(length))
    .set('Upload-Metadata', `filename ${Buffer.from('f.bin').toString('base64')}`);

const tusPatch = (org: TestRealm, user: User, location: string, data: Buffer) =>
  request(app)
    .patch(location)
    .set('Host', org.host)
    .auth(user.deliveryEmail, user.apiKey)
    .set('Tus-Resumable', '1.0.0')
    .set('Content-Type', 'application/offset+octet-stream')
    .set('Upload-Offset', '0')
    .send(data);

describe('POST /register', () => {
  it("reports the organization's file size limit and quota", async () => {
    const org = await createTestRealm();
    const register = async () =>
      expectSuccess(
        await as(org.owner, org.host).post('/register', { fetch_event_types: ['realm'] }),
      );
    expect(await register()).toMatchObject({
      max_file_upload_size_mib: 25,
      realm_upload_quota_mib: null,
    });
    await setLimits(org, { maxFileUploadSizeMib: 3, uploadQuotaGb: 2 });
    expect(await register()).toMatchObject({
      max_file_upload_size_mib: 3,
      realm_upload_quota_mib: 2048,
    });
    // Without the realm section the limit is still the organization's.
    const bare = expectSuccess(
      await as(org.owner, org.host).post('/register', { fetch_event_types: ['message'] }),
    );
    expect(bare.max_file_upload_size_mib).toBe(3);
    // Never above the server's MAX_FILE_UPLOAD_SIZE_MIB.
    await setLimits(org, { maxFileUploadSizeMib: 100 });
    expect((await register()).max_file_upload_size_mib).toBe(25);
  });
});

describe('doSetRealmUploadLimits (pnpm manage set-upload-limits)', () => {
  it("changes the limits and tells the organization's users as Zulip does", async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      await runAction((ctx) =>
        doSetRealmUploadLimits(ctx, org.realm, { uploadQuotaGb: 5, maxFileUploadSizeMib: 10 }),
      );
    });
    const event = {
      type: 'realm',
      op: 'update_dict',
      property: 'default',
      data: { upload_quota_mib: 5120, max_file_upload_size_mib: 10 },
    };
    expect(published).toEqual([
      { event, users: expect.arrayContaining([org.owner.id, member.id]) },
    ]);
    const state = expectSuccess(
      await as(member, org.host).post('/register', { fetch_event_types: ['realm'] }),
    );
    expect(state).toMatchObject({ realm_upload_quota_mib: 5120, max_file_upload_size_mib: 10 });
    // Applied to an older state, the event gives the same.
    const older: Record<string, unknown> = {
      realm_name: 'x',
      realm_upload_quota_mib: null,
      max_file_upload_size_mib: 25,
    };
    applyRealmEvent(older, event);
    expect(older).toEqual({
      realm_name: 'x',
      realm_upload_quota_mib: 5120,
      max_file_upload_size_mib: 10,
    });
  });
});

describe('file size limit', () => {
  let org: TestRealm;
  let member: User;
  beforeAll(async () => {
    org = await createTestRealm();
    member = await createTestUser(org.realm);
    await setLimits(org, { maxFileUploadSizeMib: 1 });
  });

  it("POST /user_uploads refuses a file over the organization's limit", async () => {
    expectError(
      await upload(org, member, Buffer.alloc(MIB + 1)),
      'Uploaded file is larger than the allowed limit of 1 MiB',
    );
    expectSuccess(await upload(org, member, Buffer.alloc(MIB)));
  });

  it('the tus endpoint refuses it at creation, from Upload-Length (413)', async () => {
    expectError(
      await tusCreate(org, member, MIB + 1),
      'Uploaded file is larger than the allowed limit of 1 MiB',
      413,
    );
    expect((await tusCreate(org, member, MIB)).status).toBe(201);
    const options = await request(app).options('/api/v1/tus').set('Host', org.host);
    expect(options.headers['tus-max-size']).toBe(String(MIB));
  });
});

describe('upload quota', () => {
  it('POST /user_uploads refuses an upload over the quota with REALM_UPLOAD_QUOTA', async () => {
    const org = await createTestRealm();
    await setLimits(org, { uploadQuotaGb: 1 });
    await useSpace(org, org.owner, GIB - 11);
    expectSuccess(await upload(org, org.owner, Buffer.from('zulip!')));
    expectError(
      await upload(org, org.owner, Buffer.from('zulip!')),
      QUOTA_MESSAGE,
      400,
      'REALM_UPLOAD_QUOTA',
    );
    // No quota, no limit.
    await setLimits(org, { uploadQuotaGb: null });
    expectSuccess(await upload(org, org.owner, Buffer.from('zulip!')));
  });

  it('the tus endpoint refuses it at creation (413), and at completion if it filled up', async () => {
    const org = await createTestRealm();
    await setLimits(org, { uploadQuotaGb: 1 });
    await useSpace(org, org.owner, GIB - 10);
    expectError(await tusCreate(org, org.owner, 11), QUOTA_MESSAGE, 413, 'REALM_UPLOAD_QUOTA');

    const created = await tusCreate(org, org.owner, 10);
    expect(created.status).toBe(201);
    // Meanwhile another upload takes the rest.
    expectSuccess(await upload(org, org.owner, Buffer.from('x')));
    expectError(
      await tusPatch(org, org.owner, created.headers.location as string, Buffer.alloc(10)),
      QUOTA_MESSAGE,
      413,
      'REALM_UPLOAD_QUOTA',
    );
    expect(await getPrisma().attachment.count({ where: { realmId: org.realm.id } })).toBe(2);
  });

  it("the tus endpoint counts unfinished uploads' declared lengths against it", async () => {
    const org = await createTestRealm();
    const member = await createTestUser(org.realm);
    await setLimits(org, { uploadQuotaGb: 1 });
    await useSpace(org, org.owner, GIB - 100);
    // Staged, not stored: the bytes are promised all the same, whoever's they are.
    const first = await tusCreate(org, org.owner, 60);
    expect(first.status).toBe(201);
    expectError(await tusCreate(org, member, 41), QUOTA_MESSAGE, 413, 'REALM_UPLOAD_QUOTA');
    const second = await tusCreate(org, member, 40);
    expect(second.status).toBe(201);
    expectError(await tusCreate(org, org.owner, 1), QUOTA_MESSAGE, 413, 'REALM_UPLOAD_QUOTA');
    // Abandoned, the first no longer counts.
    const abandoned = await request(app)
      .delete(first.headers.location as string)
      .set('Host', org.host)
      .auth(org.owner.deliveryEmail, org.owner.apiKey)
      .set('Tus-Resumable', '1.0.0');
    expect(abandoned.status).toBe(204);
    expectError(await tusCreate(org, org.owner, 61), QUOTA_MESSAGE, 413, 'REALM_UPLOAD_QUOTA');
    expect((await tusCreate(org, org.owner, 50)).status).toBe(201);
    // Finished, the second counts once: as an attachment.
    expectSuccess(await tusPatch(org, member, second.headers.location as string, Buffer.alloc(40)));
    expectError(await tusCreate(org, org.owner, 11), QUOTA_MESSAGE, 413, 'REALM_UPLOAD_QUOTA');
    expect((await tusCreate(org, org.owner, 10)).status).toBe(201);
  });

  it('racing uploads cannot overshoot it', async () => {
    const org = await createTestRealm();
    await setLimits(org, { uploadQuotaGb: 1 });
    await useSpace(org, org.owner, GIB - 30);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => upload(org, org.owner, Buffer.alloc(10))),
    );
    expect(results.filter((res) => res.status === 200)).toHaveLength(3);
    const used = await getPrisma().attachment.aggregate({
      where: { realmId: org.realm.id },
      _sum: { size: true },
    });
    expect(used._sum.size).toBe(GIB);
  });
});
