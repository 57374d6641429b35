// Push-device registration (spec 4.14; Zulip's zerver/views/push_notifications.py):
// registering and removing APNs and FCM (GCM) device tokens, Zulip's validation and error
// messages, every role but bots, and each user's devices kept apart from everyone else's.
import { getPrisma, Role, type User } from '@parley/db';
import {
  as,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();
const APNS = '/users/me/apns_device_token';
const GCM = '/users/me/android_gcm_reg_id';
const APP_ID = 'org.zulip.Zulip';

let org: TestRealm;
let user: User;

beforeAll(async () => {
  org = await createTestRealm();
});
beforeEach(async () => {
  user = await createTestUser(org.realm, Role.MEMBER);
});

const devicesOf = (who: User) =>
  prisma().pushDeviceToken.findMany({ where: { userId: who.id }, orderBy: { id: 'asc' } });

const hexToken = (seed: string) => Buffer.from(seed.padEnd(32, '.')).toString('hex');

describe('POST /users/me/apns_device_token', () => {
  it('registers a device with its app id', async () => {
    const token = hexToken('one');
    expectSuccess(await as(user, org.host).post(APNS, { token, appid: APP_ID }));
    const [device, ...others] = await devicesOf(user);
    expect(others).toEqual([]);
    expect(device).toMatchObject({ kind: 1, token, iosAppId: APP_ID });
    expect(Date.now() - device!.lastUpdated.getTime()).toBeLessThan(60_000);
  });

  it('registering the same token again updates the device instead of adding one', async () => {
    const token = hexToken('again');
    expectSuccess(await as(user, org.host).post(APNS, { token, appid: APP_ID }));
    const [before] = await devicesOf(user);
    await prisma().pushDeviceToken.update({
      where: { id: before!.id },
      data: { lastUpdated: new Date('2020-01-01T00:00:00Z') },
    });
    expectSuccess(await as(user, org.host).post(APNS, { token, appid: 'org.zulip.Zulip.beta' }));
    const devices = await devicesOf(user);
    expect(devices).toHaveLength(1);
    expect(devices[0]).toMatchObject({ id: before!.id, iosAppId: 'org.zulip.Zulip.beta' });
    expect(devices[0]!.lastUpdated.getFullYear()).toBeGreaterThan(2020);
  });

  it('accepts hex in either case, with whitespace between bytes (Python bytes.fromhex)', async () => {
    for (const token of ['ABCDEF0123', 'ab cd ef', ' 0a1b ']) {
      expectSuccess(await as(user, org.host).post(APNS, { token, appid: APP_ID }));
    }
    expect((await devicesOf(user)).map((d) => d.token)).toEqual([
      'ABCDEF0123',
      'ab cd ef',
      ' 0a1b ',
    ]);
  });

  it('accepts a token of 4096 characters and refuses a longer or empty one', async () => {
    expectSuccess(await as(user, org.host).post(APNS, { token: 'a'.repeat(4096), appid: APP_ID }));
    for (const token of ['a'.repeat(4098), '']) {
      expectError(
        await as(user, org.host).post(APNS, { token, appid: APP_ID }),
        'Empty or invalid length token',
      );
    }
    expect(await devicesOf(user)).toHaveLength(1);
  });

  it('refuses tokens that are not hex', async () => {
    for (const token of ['xyz', 'abc', 'a b', '0x1234', 'ab\u00a0cd', 'zz'.repeat(32)]) {
      expectError(
        await as(user, org.host).post(APNS, { token, appid: APP_ID }),
        'Invalid APNS token',
      );
    }
    expect(await devicesOf(user)).toEqual([]);
  });

  it('refuses app ids with other characters than letters, digits, dots and dashes', async () => {
    for (const appid of ['', 'org zulip', 'org/zulip', 'org.zulip.Zulip\n', 'é.zulip', 'a_b']) {
      expectError(
        await as(user, org.host).post(APNS, { token: hexToken('app'), appid }),
        'Invalid app ID',
      );
    }
    expectSuccess(
      await as(user, org.host).post(APNS, { token: hexToken('app'), appid: 'com-X.9' }),
    );
  });

  it('checks the app id before the token, as Zulip’s parameter validation does', async () => {
    expectError(await as(user, org.host).post(APNS, { token: '', appid: 'x y' }), 'Invalid app ID');
  });

  it('requires both parameters', async () => {
    expectError(
      await as(user, org.host).post(APNS, { appid: APP_ID }),
      "Missing 'token' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await as(user, org.host).post(APNS, { token: hexToken('t') }),
      "Missing 'appid' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });

  it('refuses null bytes with a clear error', async () => {
    const res = await as(user, org.host).post(APNS, { token: 'ab\u0000cd', appid: APP_ID });
    expect(res.status).toBe(400);
    expect(res.body.result).toBe('error');
    expect(await devicesOf(user)).toEqual([]);
  });

  it('lists parameters it does not know', async () => {
    const body = expectSuccess(
      await as(user, org.host).post(APNS, { token: hexToken('x'), appid: APP_ID, colour: 'red' }),
    );
    expect(body.ignored_parameters_unsupported).toEqual(['colour']);
  });
});

describe('DELETE /users/me/apns_device_token', () => {
  it('removes the device', async () => {
    const token = hexToken('gone');
    expectSuccess(await as(user, org.host).post(APNS, { token, appid: APP_ID }));
    expectSuccess(await as(user, org.host).delete(APNS, { token }));
    expect(await devicesOf(user)).toEqual([]);
  });

  it('refuses a token that is not registered, or registered as an Android one', async () => {
    expectError(
      await as(user, org.host).delete(APNS, { token: hexToken('never') }),
      'Token does not exist',
    );
    expectSuccess(await as(user, org.host).post(GCM, { token: 'abcd' }));
    expectError(await as(user, org.host).delete(APNS, { token: 'abcd' }), 'Token does not exist');
    expect(await devicesOf(user)).toHaveLength(1);
  });

  it('validates the token as registration does', async () => {
    expectError(
      await as(user, org.host).delete(APNS, { token: '' }),
      'Empty or invalid length token',
    );
    expectError(await as(user, org.host).delete(APNS, { token: 'xyz' }), 'Invalid APNS token');
    expectError(
      await as(user, org.host).delete(APNS, {}),
      "Missing 'token' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });
});

describe('POST /users/me/android_gcm_reg_id', () => {
  it('registers any token of 1 to 4096 characters, counted as Zulip counts them', async () => {
    const emoji = '😀'.repeat(4096); // 8192 UTF-16 units, 4096 code points
    for (const token of ['not hex at all: ünïcödé', 'x', emoji]) {
      expectSuccess(await as(user, org.host).post(GCM, { token }));
    }
    const devices = await devicesOf(user);
    expect(devices.map((d) => [d.kind, d.token, d.iosAppId])).toEqual([
      [2, 'not hex at all: ünïcödé', null],
      [2, 'x', null],
      [2, emoji, null],
    ]);
    for (const token of ['', 'y'.repeat(4097), '😀'.repeat(4097)]) {
      expectError(await as(user, org.host).post(GCM, { token }), 'Empty or invalid length token');
    }
  });

  it('registering the same token again keeps one device', async () => {
    expectSuccess(await as(user, org.host).post(GCM, { token: 'same' }));
    expectSuccess(await as(user, org.host).post(GCM, { token: 'same' }));
    expect(await devicesOf(user)).toHaveLength(1);
  });

  it('ignores an appid (Android devices have none)', async () => {
    const body = expectSuccess(await as(user, org.host).post(GCM, { token: 'tok', appid: APP_ID }));
    expect(body.ignored_parameters_unsupported).toEqual(['appid']);
    expect((await devicesOf(user))[0]!.iosAppId).toBeNull();
  });

  it('requires a token', async () => {
    expectError(
      await as(user, org.host).post(GCM, {}),
      "Missing 'token' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });
});

describe('DELETE /users/me/android_gcm_reg_id', () => {
  it('removes the device, and only once', async () => {
    expectSuccess(await as(user, org.host).post(GCM, { token: 'android' }));
    expectSuccess(await as(user, org.host).delete(GCM, { token: 'android' }));
    expect(await devicesOf(user)).toEqual([]);
    expectError(await as(user, org.host).delete(GCM, { token: 'android' }), 'Token does not exist');
    expectError(
      await as(user, org.host).delete(GCM, { token: '' }),
      'Empty or invalid length token',
    );
  });

  it('refuses an APNs token of the user', async () => {
    const token = hexToken('ios');
    expectSuccess(await as(user, org.host).post(APNS, { token, appid: APP_ID }));
    expectError(await as(user, org.host).delete(GCM, { token }), 'Token does not exist');
    expect(await devicesOf(user)).toHaveLength(1);
  });
});

describe('devices belong to their user', () => {
  it('two users may register the same token; each removes only their own', async () => {
    const other = await createTestUser(org.realm, Role.MEMBER);
    const token = hexToken('shared');
    expectSuccess(await as(user, org.host).post(APNS, { token, appid: APP_ID }));
    expectSuccess(await as(other, org.host).post(APNS, { token, appid: APP_ID }));
    expectSuccess(await as(user, org.host).delete(APNS, { token }));
    expect(await devicesOf(user)).toEqual([]);
    expect(await devicesOf(other)).toHaveLength(1);
    expectSuccess(await as(other, org.host).delete(APNS, { token }));
    expect(await devicesOf(other)).toEqual([]);
  });

  it('a user cannot remove another user’s device', async () => {
    const other = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await as(other, org.host).post(GCM, { token: 'theirs' }));
    expectError(await as(user, org.host).delete(GCM, { token: 'theirs' }), 'Token does not exist');
    expect(await devicesOf(other)).toHaveLength(1);
  });

  it('users of another organization are kept apart too', async () => {
    const elsewhere = await createTestRealm();
    const stranger = await createTestUser(elsewhere.realm, Role.MEMBER);
    expectSuccess(await as(stranger, elsewhere.host).post(GCM, { token: 'far' }));
    expectError(await as(user, org.host).delete(GCM, { token: 'far' }), 'Token does not exist');
    expect(await devicesOf(stranger)).toHaveLength(1);
  });
});

describe("the user's has_push_device mark", () => {
  // A send reads push settings only for recipients marked (actions/messages.ts): the mark must
  // follow every way a device comes and goes, including writes that bypass the endpoints (the
  // worker drops tokens the push service refuses).
  const marked = async (who: User) =>
    (await prisma().user.findUniqueOrThrow({ where: { id: who.id } })).hasPushDevice;

  it('is set while the user has a device, whichever endpoint added or removed it', async () => {
    expect(await marked(user)).toBe(false);
    expectSuccess(await as(user, org.host).post(APNS, { token: hexToken('m1'), appid: APP_ID }));
    expect(await marked(user)).toBe(true);
    expectSuccess(await as(user, org.host).post(GCM, { token: 'm2' }));
    expectSuccess(await as(user, org.host).delete(APNS, { token: hexToken('m1') }));
    expect(await marked(user)).toBe(true);
    expectSuccess(await as(user, org.host).delete(GCM, { token: 'm2' }));
    expect(await marked(user)).toBe(false);
  });

  it('follows rows written directly, and a device given to another user', async () => {
    const other = await createTestUser(org.realm, Role.MEMBER);
    const device = await prisma().pushDeviceToken.create({
      data: { userId: user.id, kind: 2, token: 'direct' },
    });
    expect([await marked(user), await marked(other)]).toEqual([true, false]);
    await prisma().pushDeviceToken.update({ where: { id: device.id }, data: { userId: other.id } });
    expect([await marked(user), await marked(other)]).toEqual([false, true]);
    await prisma().pushDeviceToken.deleteMany({ where: { userId: other.id } });
    expect([await marked(user), await marked(other)]).toEqual([false, false]);
  });
});

describe('who may register devices', () => {
  it('every human role, on both endpoints', async () => {
    const roles = [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST];
    for (const role of roles) {
      const who = await createTestUser(org.realm, role);
      expectSuccess(
        await as(who, org.host).post(APNS, { token: hexToken(`r${role}`), appid: APP_ID }),
      );
      expectSuccess(await as(who, org.host).post(GCM, { token: `role-${role}` }));
      expect(await devicesOf(who)).toHaveLength(2);
      expectSuccess(await as(who, org.host).delete(APNS, { token: hexToken(`r${role}`) }));
      expectSuccess(await as(who, org.host).delete(GCM, { token: `role-${role}` }));
    }
  });

  it('not bots (Zulip’s human_users_only)', async () => {
    const created = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Push Bot', short_name: 'pushy' }),
    );
    const bot = await prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    const refused = 'This endpoint does not accept bot requests.';
    expectError(
      await as(bot, org.host).post(APNS, { token: hexToken('b'), appid: APP_ID }),
      refused,
    );
    expectError(await as(bot, org.host).delete(APNS, { token: hexToken('b') }), refused);
    expectError(await as(bot, org.host).post(GCM, { token: 'b' }), refused);
    expectError(await as(bot, org.host).delete(GCM, { token: 'b' }), refused);
    expect(await devicesOf(bot)).toEqual([]);
  });

  it('not anonymous requests', async () => {
    const res = await as({ deliveryEmail: 'nobody@example.com', apiKey: 'x' }, org.host).post(GCM, {
      token: 'anon',
    });
    expect(res.status).toBe(401);
    expect(res.body.result).toBe('error');
  });
});
