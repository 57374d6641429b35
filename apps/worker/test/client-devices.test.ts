// Logged-in client devices and end-to-end encrypted push notifications (Zulip's feature levels
// 468-492), as the official mobile app (zulip-flutter) uses them: POST /register_client_device
// once per login, POST /mobile_push/register with a key and a token sealed for the bouncer,
// rotations of either, POST /remove_client_device at logout; the `device` events and
// /register's `devices`; a real BullMQ worker registering the token (with the `log` transport
// locally, with the bouncer through push/e2ee/register) and sending notifications encrypted
// with each device's key, which the tests open with libsodium's secretbox as the app does.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import nacl from 'tweetnacl';
import { resetConfig } from '@parley/config';
import { getPrisma, type User } from '@parley/db';
import { closeQueues, type JobWorkers } from '@parley/jobs';
import {
  as,
  captureEvents,
  createTestUser,
  expectError,
  expectPublished,
  expectSuccess,
} from '../../api/test/helpers';
import { createMessageOrg, send, type MessageOrg } from '../../api/test/message-helpers';
import { registerE2eeDevice } from '@parley/api/actions/client-devices';
import { startWorkers } from '../src/jobs';
import { until } from '../../api/test/until';

const prisma = () => getPrisma();

let workers: JobWorkers;
let org: MessageOrg;

beforeAll(async () => {
  workers = startWorkers({ concurrency: 1, sweepIntervalMs: 0 });
  await workers.ready();
  org = await createMessageOrg();
});

afterAll(async () => {
  await workers.close();
  await closeQueues();
});

/** What an app holds for one account: its key and its FCM or APNs token. */
interface AppKeys {
  pushKey: Buffer;
  pushKeyId: number;
  token: string;
}

function appKeys(token = `fcm-${randomBytes(8).toString('hex')}`): AppKeys {
  return {
    pushKey: Buffer.concat([Buffer.from([0x31]), randomBytes(32)]),
    pushKeyId: randomBytes(4).readUInt32BE(),
    token,
  };
}

/** The app's token id: base64 of the first 8 bytes of the token's SHA-256. */
const tokenIdOf = (token: string) =>
  createHash('sha256').update(token).digest().subarray(0, 8).toString('base64');

const keyFields = (keys: AppKeys) => ({
  push_key: keys.pushKey.toString('base64'),
  push_key_id: keys.pushKeyId,
});

const tokenFields = (keys: AppKeys, kind: 'fcm' | 'apns' = 'fcm') => ({
  token_kind: kind,
  token_id: tokenIdOf(keys.token),
  bouncer_public_key: randomBytes(32).toString('base64'),
  // Sealed for the bouncer in the app; opaque to the server.
  encrypted_push_registration: randomBytes(120).toString('base64'),
});

async function registerDevice(user: User): Promise<number> {
  return expectSuccess(await as(user, org.host).post('/register_client_device'))
    .device_id as number;
}

const deviceRow = (id: number) => prisma().clientDevice.findUnique({ where: { id } });

/** Registers the device for encrypted push and waits until the worker registered its token. */
async function registerForPush(user: User, deviceId: number, keys: AppKeys): Promise<void> {
  expectSuccess(
    await as(user, org.host).post('/mobile_push/register', {
      device_id: deviceId,
      ...keyFields(keys),
      ...tokenFields(keys),
    }),
  );
  await until(async () => (await deviceRow(deviceId))?.pushTokenId != null);
}

/** Opens an encrypted notification as the app does: base64 of the 24-byte nonce, then the
 * secretbox, under the key without its cryptosystem byte. */
function open(keys: AppKeys, encrypted: string): Record<string, unknown> {
  const bytes = Buffer.from(encrypted, 'base64');
  const plain = nacl.secretbox.open(
    bytes.subarray(24),
    bytes.subarray(0, 24),
    keys.pushKey.subarray(1),
  );
  if (!plain) throw new Error('the notification does not open with the key');
  return JSON.parse(Buffer.from(plain).toString('utf8')) as Record<string, unknown>;
}

const emptyDevice = {
  push_key_id: null,
  push_token_id: null,
  pending_push_token_id: null,
  push_token_last_updated_timestamp: null,
  push_registration_error_code: null,
};

describe('POST /register_client_device and /remove_client_device', () => {
  it('makes a device per call, tells the user, and /register lists every device', async () => {
    const user = await createTestUser(org.realm);
    let first = 0;
    const published = await captureEvents(org.realm.id, async () => {
      first = await registerDevice(user);
    });
    expectPublished(published, [
      { event: { type: 'device', op: 'add', device_id: first }, users: [user.id] },
    ]);
    const second = await registerDevice(user);
    expect(second).toBeGreaterThan(first);
    const state = expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: ['device'] }),
    );
    expect(state.devices).toEqual({ [first]: emptyDevice, [second]: emptyDevice });
    // Another user sees none of them.
    const other = expectSuccess(
      await as(org.guest, org.host).post('/register', { fetch_event_types: ['device'] }),
    );
    expect(other.devices).toEqual({});
  });

  it('removes the user’s own device only, with Zulip’s error otherwise', async () => {
    const user = await createTestUser(org.realm);
    const id = await registerDevice(user);
    const theirs = await registerDevice(org.guest);
    for (const deviceId of [theirs, 999_999_999])
      expectError(
        await as(user, org.host).post('/remove_client_device', { device_id: deviceId }),
        'Invalid `device_id`',
      );
    expectError(
      await as(user, org.host).post('/remove_client_device', { device_id: 'one' }),
      'device_id is not an integer',
    );
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(await as(user, org.host).post('/remove_client_device', { device_id: id })),
    );
    expectPublished(published, [
      { event: { type: 'device', op: 'remove', device_id: id }, users: [user.id] },
    ]);
    expect(await deviceRow(id)).toBeNull();
    expect(await deviceRow(theirs)).not.toBeNull();
  });
});

describe('POST /mobile_push/register', () => {
  it('checks in Zulip’s order, with Zulip’s messages', async () => {
    const user = await createTestUser(org.realm);
    const id = await registerDevice(user);
    const keys = appKeys();
    const post = (form: Record<string, unknown>) =>
      as(user, org.host).post('/mobile_push/register', form);
    // The device first, then the groups of fields, then each field.
    for (const device_id of [await registerDevice(org.guest), -1])
      for (const fields of [keyFields(keys), {}])
        expectError(await post({ device_id, ...fields }), 'Invalid `device_id`');
    for (const form of [
      { device_id: id },
      { device_id: id, push_key_id: 1 },
      { device_id: id, token_id: tokenIdOf('x'), token_kind: 'fcm' },
    ])
      expectError(
        await post(form),
        'Missing parameters: must provide either all push key fields, all token fields, or both.',
      );
    expectError(
      await post({ device_id: id, ...keyFields(keys) }),
      'No push registration exists to rotate key for.',
    );
    expectError(
      await post({ device_id: id, ...tokenFields(keys) }),
      'No push registration exists to rotate token for.',
    );
    for (const push_key of [
      'not base64!',
      Buffer.concat([Buffer.from([0x32]), randomBytes(32)]).toString('base64'),
      Buffer.concat([Buffer.from([0x31]), randomBytes(31)]).toString('base64'),
      // Whitespace is not base64 (Python's validate=True).
      keys.pushKey.toString('base64').replace(/^(.{20})/, '$1 '),
    ])
      expectError(
        await post({ device_id: id, ...tokenFields(keys), ...keyFields(keys), push_key }),
        'Invalid `push_key`',
      );
    expectError(
      await post({ device_id: id, ...keyFields(keys), ...tokenFields(keys), token_id: '%%%' }),
      '`token_id` is not Base64 encoded',
    );
    expectError(
      await post({ device_id: id, ...keyFields(keys), ...tokenFields(keys), token_id: 'AAAA' }),
      'Invalid `token_id`',
    );
    for (const push_key_id of [-1, 2 ** 32])
      expectError(
        await post({ device_id: id, ...keyFields(keys), ...tokenFields(keys), push_key_id }),
        'Invalid push_key_id: Value error, Not a valid unsigned 32-bit integer',
      );
    expectError(
      await post({ device_id: id, ...keyFields(keys), ...tokenFields(keys), token_kind: 'gcm' }),
      'Invalid token_kind',
    );
    expect(await deviceRow(id)).toMatchObject({ pushKey: null, pendingPushTokenId: null });
  });

  it('registers a key and a token, which the worker registers; then rotations', async () => {
    const user = await createTestUser(org.realm);
    const id = await registerDevice(user);
    const keys = appKeys();
    const published = await captureEvents(org.realm.id, () => registerForPush(user, id, keys));
    const tokenId = tokenIdOf(keys.token);
    const [requested] = published.map((entry) => entry.event);
    const timestamp = requested!.push_token_last_updated_timestamp as number;
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(60);
    expectPublished(published, [
      {
        event: {
          type: 'device',
          op: 'update',
          device_id: id,
          push_key_id: keys.pushKeyId,
          pending_push_token_id: tokenId,
          push_token_last_updated_timestamp: timestamp,
          push_registration_error_code: null,
        },
        users: [user.id],
      },
      {
        event: {
          type: 'device',
          op: 'update',
          device_id: id,
          push_token_id: tokenId,
          pending_push_token_id: null,
        },
        users: [user.id],
      },
    ]);
    const state = expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: ['device'] }),
    );
    expect(state.devices).toEqual({
      [id]: {
        push_key_id: keys.pushKeyId,
        push_token_id: tokenId,
        pending_push_token_id: null,
        push_token_last_updated_timestamp: timestamp,
        push_registration_error_code: null,
      },
    });
    // The same registration again changes nothing and tells nobody.
    const again = await captureEvents(org.realm.id, async () =>
      expectSuccess(
        await as(user, org.host).post('/mobile_push/register', {
          device_id: id,
          ...keyFields(keys),
          ...tokenFields(keys),
        }),
      ),
    );
    expect(again).toEqual([]);

    // A new key: stored at once, the token untouched.
    const rotated = appKeys(keys.token);
    const keyRotation = await captureEvents(org.realm.id, async () =>
      expectSuccess(
        await as(user, org.host).post('/mobile_push/register', {
          device_id: id,
          ...keyFields(rotated),
        }),
      ),
    );
    expectPublished(keyRotation, [
      {
        event: { type: 'device', op: 'update', device_id: id, push_key_id: rotated.pushKeyId },
        users: [user.id],
      },
    ]);
    expect(Buffer.from((await deviceRow(id))!.pushKey!)).toEqual(rotated.pushKey);

    // A new token: pending until the worker registers it.
    const newToken = appKeys('fcm-the-new-token');
    const tokenRotation = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(user, org.host).post('/mobile_push/register', {
          device_id: id,
          ...tokenFields(newToken),
        }),
      );
      await until(async () => (await deviceRow(id))?.pendingPushTokenId === null);
    });
    const newTokenId = tokenIdOf(newToken.token);
    expect(tokenRotation.map((entry) => entry.event)).toEqual([
      {
        type: 'device',
        op: 'update',
        device_id: id,
        pending_push_token_id: newTokenId,
        push_token_last_updated_timestamp: expect.any(Number) as number,
        push_registration_error_code: null,
      },
      {
        type: 'device',
        op: 'update',
        device_id: id,
        push_token_id: newTokenId,
        pending_push_token_id: null,
      },
    ]);
    expect(await deviceRow(id)).toMatchObject({
      pushTokenId: BigIntOf(newTokenId),
      pushTokenKind: 'fcm',
    });
  });

  it('refuses a token while another is still pending, unless that one was refused', async () => {
    const user = await createTestUser(org.realm);
    const id = await registerDevice(user);
    const keys = appKeys();
    await registerForPush(user, id, keys);
    // As the worker leaves a device between the request and the bouncer's answer.
    const pending = BigIntOf(tokenIdOf('fcm-pending'));
    await prisma().clientDevice.update({ where: { id }, data: { pendingPushTokenId: pending } });
    const next = appKeys('fcm-next');
    const post = () =>
      as(user, org.host).post('/mobile_push/register', { device_id: id, ...tokenFields(next) });
    expectError(await post(), 'A registration for the device already in progress.');
    // Checked before the token id itself.
    expectError(
      await as(user, org.host).post('/mobile_push/register', {
        device_id: id,
        ...tokenFields(next),
        token_id: '%%%',
      }),
      'A registration for the device already in progress.',
    );
    // A key rotation is not a registration: it goes through.
    expectSuccess(
      await as(user, org.host).post('/mobile_push/register', {
        device_id: id,
        ...keyFields(appKeys()),
      }),
    );
    // A registration whose job gave up blocks the next one for a day only.
    await prisma().clientDevice.update({
      where: { id },
      data: { pushTokenLastUpdated: new Date(Date.now() - 25 * 3600_000) },
    });
    expectSuccess(await post());
    await until(async () => (await deviceRow(id))?.pendingPushTokenId === null);
    await prisma().clientDevice.update({
      where: { id },
      data: { pendingPushTokenId: pending, pushRegistrationErrorCode: 'REQUEST_EXPIRED' },
    });
    expectSuccess(await post());
    await until(async () => (await deviceRow(id))?.pendingPushTokenId === null);
    expect(await deviceRow(id)).toMatchObject({
      pushTokenId: BigIntOf(tokenIdOf(next.token)),
      pushRegistrationErrorCode: null,
    });
  });

  it('drops the legacy registration of the same token once the encrypted one is made', async () => {
    const user = await createTestUser(org.realm);
    const keys = appKeys('fcm-legacy-and-e2ee');
    expectSuccess(
      await as(user, org.host).post('/users/me/android_gcm_reg_id', { token: keys.token }),
    );
    expectSuccess(
      await as(user, org.host).post('/users/me/android_gcm_reg_id', { token: 'fcm-another-phone' }),
    );
    await registerForPush(user, await registerDevice(user), keys);
    const legacy = await prisma().pushDeviceToken.findMany({ where: { userId: user.id } });
    expect(legacy.map((row) => row.token)).toEqual(['fcm-another-phone']);
  });

  it('is for humans; a bot may make a device record but not register it', async () => {
    const bot = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Pusher', short_name: 'pusher' }),
    );
    const botUser = await prisma().user.findUniqueOrThrow({ where: { id: bot.user_id as number } });
    const id = await registerDevice(botUser);
    const keys = appKeys();
    expectError(
      await as(botUser, org.host).post('/mobile_push/register', {
        device_id: id,
        ...keyFields(keys),
        ...tokenFields(keys),
      }),
      'This endpoint does not accept bot requests.',
    );
    expectError(
      await as(botUser, org.host).post('/mobile_push/e2ee/test_notification'),
      'This endpoint does not accept bot requests.',
    );
  });

  it('a new API key logs every client out: devices and legacy tokens go', async () => {
    const user = await createTestUser(org.realm);
    const ids = [await registerDevice(user), await registerDevice(user)];
    await registerForPush(user, ids[0]!, appKeys());
    expectSuccess(
      await as(user, org.host).post('/users/me/android_gcm_reg_id', { token: 'fcm-old-login' }),
    );
    expect((await prisma().user.findUniqueOrThrow({ where: { id: user.id } })).hasPushDevice).toBe(
      true,
    );
    const published = await captureEvents(org.realm.id, async () =>
      expectSuccess(await as(user, org.host).post('/users/me/api_key/regenerate')),
    );
    expectPublished(
      published.filter((entry) => entry.event.type === 'device'),
      ids.map((id) => ({
        event: { type: 'device', op: 'remove', device_id: id },
        users: [user.id],
      })),
    );
    expect(await prisma().clientDevice.count({ where: { userId: user.id } })).toBe(0);
    expect(await prisma().pushDeviceToken.count({ where: { userId: user.id } })).toBe(0);
    expect((await prisma().user.findUniqueOrThrow({ where: { id: user.id } })).hasPushDevice).toBe(
      false,
    );
  });
});

const BigIntOf = (base64: string) => Buffer.from(base64, 'base64').readBigInt64BE();

describe('encrypted notifications (the log transport)', () => {
  let keys: AppKeys;
  let deviceId: number;

  beforeAll(async () => {
    keys = appKeys();
    deviceId = await registerDevice(org.other);
    await registerForPush(org.other, deviceId, keys);
  });

  const logRows = (user: User, event: string) =>
    prisma().pushNotificationLog.findMany({
      where: { userId: user.id, event },
      orderBy: { id: 'asc' },
    });

  it('a direct message reaches the device encrypted with its key, in Zulip’s payload', async () => {
    expect(
      (await prisma().user.findUniqueOrThrow({ where: { id: org.other.id } })).hasPushDevice,
    ).toBe(true);
    const id = expectSuccess(
      await send(org.member, org.host, {
        type: 'private',
        to: JSON.stringify([org.other.id]),
        content: 'Meet at **noon**',
      }),
    ).id as number;
    const row = await until(async () =>
      (await logRows(org.other, 'message')).find((r) => r.messageId === id),
    );
    // No legacy device: the plaintext payloads go nowhere.
    expect(row).toMatchObject({ appleDevices: 0, androidDevices: 0, e2eeDevices: 1 });
    const payload = row.e2eePayload as Record<string, unknown>;
    expect(payload).toEqual({
      realm_url: expect.stringContaining(org.host) as string,
      realm_name: org.realm.name,
      user_id: org.other.id,
      sender_id: org.member.id,
      recipient_type: 'direct',
      recipient_user_ids: [org.member.id, org.other.id].sort((a, b) => a - b),
      type: 'message',
      message_id: id,
      time: expect.any(Number) as number,
      content: 'Meet at noon',
      sender_full_name: 'Mia Member',
      sender_avatar_url: expect.any(String) as string,
    });
    const [request, ...more] = row.e2eeRequests as {
      token_id: string;
      fcm_priority: string;
      payload: { push_key_id: number; encrypted_data: string };
    }[];
    expect(more).toEqual([]);
    expect(request).toMatchObject({
      token_id: tokenIdOf(keys.token),
      fcm_priority: 'high',
      payload: { push_key_id: keys.pushKeyId },
    });
    expect(open(keys, request!.payload.encrypted_data)).toEqual(payload);
  });

  it('a channel message names the channel and topic; reading it removes the notification', async () => {
    const id = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'lunch',
        content: `@**Otto Other** are you coming?`,
      }),
    ).id as number;
    const row = await until(async () =>
      (await logRows(org.other, 'message')).find((r) => r.messageId === id),
    );
    const [request] = row.e2eeRequests as { payload: { encrypted_data: string } }[];
    expect(open(keys, request!.payload.encrypted_data)).toMatchObject({
      recipient_type: 'channel',
      channel_name: 'general',
      channel_id: org.general.id,
      topic: 'lunch',
      type: 'message',
      message_id: id,
      content: '@Otto Other are you coming?',
    });
    expectSuccess(
      await as(org.other, org.host).post('/messages/flags', {
        messages: [id],
        op: 'add',
        flag: 'read',
      }),
    );
    const removal = await until(async () =>
      (await logRows(org.other, 'remove')).find((r) =>
        ((r.e2eePayload as { message_ids?: number[] } | null)?.message_ids ?? []).includes(id),
      ),
    );
    const [quiet] = removal.e2eeRequests as {
      fcm_priority: string;
      payload: { encrypted_data: string };
    }[];
    expect(quiet!.fcm_priority).toBe('normal');
    expect(open(keys, quiet!.payload.encrypted_data)).toEqual({
      realm_url: expect.stringContaining(org.host) as string,
      realm_name: org.realm.name,
      user_id: org.other.id,
      type: 'remove',
      message_ids: [id],
    });
  });

  it('POST /mobile_push/e2ee/test_notification: to one device or all, none is an error', async () => {
    const before = (await logRows(org.other, 'test')).length;
    expectSuccess(
      await as(org.other, org.host).post('/mobile_push/e2ee/test_notification', {
        device_id: deviceId,
      }),
    );
    const rows = await logRows(org.other, 'test');
    expect(rows).toHaveLength(before + 1);
    const [request] = rows.at(-1)!.e2eeRequests as { payload: { encrypted_data: string } }[];
    expect(open(keys, request!.payload.encrypted_data)).toEqual({
      realm_url: expect.stringContaining(org.host) as string,
      realm_name: org.realm.name,
      user_id: org.other.id,
      type: 'test',
      time: expect.any(Number) as number,
    });
    // Another user's device, a device without a registration, a user without any.
    const unregistered = await registerDevice(org.other);
    for (const device_id of [unregistered, await registerDevice(org.guest)])
      expectError(
        await as(org.other, org.host).post('/mobile_push/e2ee/test_notification', { device_id }),
        'No active registered push device',
        400,
        'NO_ACTIVE_PUSH_DEVICE',
      );
    expectError(
      await as(org.guest, org.host).post('/mobile_push/e2ee/test_notification'),
      'No active registered push device',
      400,
      'NO_ACTIVE_PUSH_DEVICE',
    );
  });
});

describe('through the push bouncer', () => {
  const ORG_ID = '6cde5f7a-1f7e-4978-9716-49f69ebfc9fe';
  let server: Server;
  const requests: { url: string; body: Record<string, unknown> }[] = [];
  /** How the bouncer answers each request, in order (then success). */
  const answers: { status: number; body: Record<string, unknown> }[] = [];
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        const body = (
          req.headers['content-type']?.startsWith('application/json')
            ? JSON.parse(text)
            : Object.fromEntries(new URLSearchParams(text))
        ) as Record<string, unknown>;
        requests.push({ url: req.url ?? '', body });
        const answer = answers.shift() ?? {
          status: 200,
          body: { result: 'success', msg: '', delete_token_ids: [] },
        };
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const env = {
      PUSH_TRANSPORT: 'bouncer',
      PUSH_BOUNCER_URL: `http://127.0.0.1:${port}`,
      ZULIP_ORG_ID: ORG_ID,
      ZULIP_ORG_KEY: 'k'.repeat(64),
    };
    for (const [key, value] of Object.entries(env)) {
      saved[key] = process.env[key];
      process.env[key] = value;
    }
    resetConfig();
  });

  afterAll(async () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    resetConfig();
    await new Promise((resolve) => server.close(resolve));
  });

  it('registers the sealed token with push/e2ee/register; a refusal is the device’s error', async () => {
    const user = await createTestUser(org.realm);
    const id = await registerDevice(user);
    const keys = appKeys();
    const fields = tokenFields(keys);
    answers.push({
      status: 400,
      body: {
        result: 'error',
        msg: 'Invalid bouncer_public_key',
        code: 'INVALID_BOUNCER_PUBLIC_KEY',
      },
    });
    const refused = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(user, org.host).post('/mobile_push/register', {
          device_id: id,
          ...keyFields(keys),
          ...fields,
        }),
      );
      await until(async () => (await deviceRow(id))?.pushRegistrationErrorCode);
    });
    const request = requests.find((r) => r.url === '/api/v1/remotes/push/e2ee/register');
    expect(request!.body).toEqual({
      realm_uuid: expect.stringMatching(/^[0-9a-f-]{36}$/) as string,
      token_id: fields.token_id,
      encrypted_push_registration: fields.encrypted_push_registration,
      bouncer_public_key: fields.bouncer_public_key,
    });
    expect(refused.at(-1)!.event).toEqual({
      type: 'device',
      op: 'update',
      device_id: id,
      push_registration_error_code: 'INVALID_BOUNCER_PUBLIC_KEY',
    });
    // The app registers again (a newer app, a fresh payload): allowed despite the pending
    // token, and this time the bouncer takes it.
    await registerForPush(user, id, keys);
    expect(await deviceRow(id)).toMatchObject({
      pushTokenId: BigIntOf(fields.token_id),
      pendingPushTokenId: null,
      pushRegistrationErrorCode: null,
    });
  });

  it('retries a registration the bouncer could not take, and drops one superseded', async () => {
    const user = await createTestUser(org.realm);
    const id = await registerDevice(user);
    const keys = appKeys();
    // A failure, then this server refused (the administrator's to mend): both retried, no
    // event; the third attempt succeeds.
    answers.push(
      { status: 502, body: { result: 'error', msg: 'bad gateway' } },
      {
        status: 403,
        body: { result: 'error', msg: 'Organization not registered', code: 'MISSING_REMOTE_REALM' },
      },
    );
    requests.length = 0;
    // BullMQ's backoff: 5 s, then 10 s before the third attempt.
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(user, org.host).post('/mobile_push/register', {
          device_id: id,
          ...keyFields(keys),
          ...tokenFields(keys),
        }),
      );
      await until(
        async () => (await deviceRow(id))?.pushTokenId != null,
        'the token registered after two retries',
        60,
      );
    });
    expect(requests.filter((r) => r.url === '/api/v1/remotes/push/e2ee/register')).toHaveLength(3);
    expect(published.map((entry) => entry.event)).toEqual([
      expect.objectContaining({ pending_push_token_id: tokenIdOf(keys.token) }),
      expect.objectContaining({ push_token_id: tokenIdOf(keys.token) }),
    ]);

    // A job for a device gone (or another token pending) meanwhile does nothing.
    requests.length = 0;
    const gone = await registerDevice(user);
    expectSuccess(await as(user, org.host).post('/remove_client_device', { device_id: gone }));
    await registerE2eeDevice({
      deviceId: gone,
      tokenId: String(BigIntOf(tokenIdOf('fcm-gone'))),
      bouncerPublicKey: 'x',
      encryptedPushRegistration: 'y',
    });
    await registerE2eeDevice({
      deviceId: id,
      tokenId: String(BigIntOf(tokenIdOf('fcm-not-pending'))),
      bouncerPublicKey: 'x',
      encryptedPushRegistration: 'y',
    });
    expect(requests).toEqual([]);
  }, 60_000);

  it('sends push/e2ee/notify; tokens the bouncer says are gone leave their devices', async () => {
    const user = await createTestUser(org.realm);
    const apple = appKeys('c0ffee'.repeat(8));
    const android = appKeys();
    const appleId = await registerDevice(user);
    expectSuccess(
      await as(user, org.host).post('/mobile_push/register', {
        device_id: appleId,
        ...keyFields(apple),
        ...tokenFields(apple, 'apns'),
      }),
    );
    await until(async () => (await deviceRow(appleId))?.pushTokenId != null);
    const androidId = await registerDevice(user);
    await registerForPush(user, androidId, android);

    requests.length = 0;
    expectSuccess(
      await as(user, org.host).post('/mobile_push/e2ee/test_notification', {
        device_id: androidId,
      }),
    );
    const [test] = requests;
    expect(test!.url).toBe('/api/v1/remotes/push/e2ee/notify');
    const testRequests = test!.body.push_requests as { payload: { encrypted_data: string } }[];
    expect(testRequests).toHaveLength(1);
    expect(open(android, testRequests[0]!.payload.encrypted_data)).toMatchObject({ type: 'test' });

    // A message to both: one request, each device's payload under its own key; the bouncer
    // answers that the iPhone's token is gone.
    answers.push({
      status: 200,
      body: { result: 'success', msg: '', delete_token_ids: [tokenIdOf(apple.token)] },
    });
    requests.length = 0;
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await send(org.member, org.host, {
          type: 'private',
          to: JSON.stringify([user.id]),
          content: 'Both phones',
        }),
      );
      await until(async () => (await deviceRow(appleId))?.pushTokenId === null);
    });
    const notify = requests.find((r) => r.url === '/api/v1/remotes/push/e2ee/notify')!;
    expect(notify.body.realm_uuid).toEqual(expect.stringMatching(/^[0-9a-f-]{36}$/));
    const [toApple, toAndroid] = notify.body.push_requests as {
      token_id: string;
      http_headers?: Record<string, unknown>;
      fcm_priority?: string;
      payload: { push_key_id: number; encrypted_data: string; aps?: unknown };
    }[];
    expect(toApple).toMatchObject({
      token_id: tokenIdOf(apple.token),
      http_headers: { apns_priority: 10, apns_push_type: 'alert' },
      payload: {
        push_key_id: apple.pushKeyId,
        aps: { 'mutable-content': 1, alert: { title: 'New notification' } },
      },
    });
    expect(toAndroid).toMatchObject({ token_id: tokenIdOf(android.token), fcm_priority: 'high' });
    expect(open(apple, toApple!.payload.encrypted_data)).toEqual(
      open(android, toAndroid!.payload.encrypted_data),
    );
    expect(open(apple, toApple!.payload.encrypted_data)).toMatchObject({ content: 'Both phones' });
    // No legacy device: no legacy request.
    expect(requests.filter((r) => r.url === '/api/v1/remotes/push/notify')).toEqual([]);
    expect(published.filter((entry) => entry.event.type === 'device')).toEqual([
      {
        event: { type: 'device', op: 'update', device_id: appleId, push_token_id: null },
        users: [user.id],
      },
    ]);
    // The device keeps its key; the app registers its token again when it next runs.
    expect(await deviceRow(appleId)).toMatchObject({ pushKeyId: BigInt(apple.pushKeyId) });
    expect((await prisma().user.findUniqueOrThrow({ where: { id: user.id } })).hasPushDevice).toBe(
      true,
    );

    // Test notifications: every token gone is NO_ACTIVE_PUSH_DEVICE; the bouncer failing or
    // unreachable a 502; refusing this server the administrator's to mend.
    answers.push({
      status: 200,
      body: { result: 'success', msg: '', delete_token_ids: [tokenIdOf(android.token)] },
    });
    expectError(
      await as(user, org.host).post('/mobile_push/e2ee/test_notification'),
      'No active registered push device',
      400,
      'NO_ACTIVE_PUSH_DEVICE',
    );
    // No device left that a notification can reach: the user counts as having no phone.
    expect((await prisma().user.findUniqueOrThrow({ where: { id: user.id } })).hasPushDevice).toBe(
      false,
    );
    await registerForPush(user, androidId, appKeys(android.token));
    answers.push({ status: 500, body: { result: 'error', msg: 'oops' } });
    expectError(
      await as(user, org.host).post('/mobile_push/e2ee/test_notification'),
      'Internal server error on Zulip push notification service, retry later.',
      502,
      'INTERNAL_SERVER_ERROR_ON_BOUNCER',
    );
    answers.push({
      status: 403,
      body: { result: 'error', msg: 'Organization not registered', code: 'MISSING_REMOTE_REALM' },
    });
    expectError(
      await as(user, org.host).post('/mobile_push/e2ee/test_notification'),
      'Push notification configuration issue on server, contact the server administrator or retry later.',
      403,
      'ADMIN_ACTION_REQUIRED',
    );
    await new Promise((resolve) => server.close(resolve));
    try {
      expectError(
        await as(user, org.host).post('/mobile_push/e2ee/test_notification'),
        'Network error while connecting to Zulip push notification service.',
        502,
        'FAILED_TO_CONNECT_BOUNCER',
      );
    } finally {
      const { port } = new URL(process.env.PUSH_BOUNCER_URL!);
      await new Promise<void>((resolve) => server.listen(Number(port), '127.0.0.1', resolve));
    }
  });
});
