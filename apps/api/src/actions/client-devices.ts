// Logged-in client devices and their end-to-end encrypted push registrations (Zulip's
// zerver/actions/devices.py and do_register_push_device, feature levels 468-470). Every change
// tells the user's clients with a `device` event; an update event names only what changed
// (null is a value there: a pending registration that succeeded, a token that expired).
import { getPrisma, lockUserRow, runAction, type ActionContext, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { enqueueJob, type JobData } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { parsePushKey, parseTokenId, tokenIdOf, tokenIdToBase64 } from '../lib/client-devices';
import { sendEventOnCommit } from '../lib/events';
import {
  bouncerRefusal,
  PushRetryLaterError,
  postToBouncer,
  serverScopedUuid,
  usesBouncer,
} from '../lib/push-bouncer';
import { unixSeconds } from '../presenters/streams';
import { unregisterFromBouncer, type PushDeviceKindValue } from './push-devices';

export type PushTokenKind = 'apns' | 'fcm';

const invalidDevice = () => new JsonableError('Invalid `device_id`');

// Device writes fire the trigger that keeps user_profile.has_push_device, which locks the
// user's row; every writer here takes that lock first (lockUserRow) so all of them lock in one
// order (user, then device), as a new API key's removal of all devices does.

/** Zulip's PUSH_REGISTRATION_LIVENESS_TIMEOUT: a token pending longer than this (its job gave
 * up) no longer blocks a new registration. */
const PENDING_REGISTRATION_LIVES_MS = 24 * 3600_000;

function deviceEvent(
  ctx: ActionContext,
  user: Pick<User, 'id'>,
  op: 'add' | 'remove' | 'update',
  deviceId: number,
  changes: Record<string, unknown> = {},
): void {
  sendEventOnCommit(ctx, { type: 'device', op, device_id: deviceId, ...changes }, [user.id]);
}

/** POST /register_client_device: a new device record, every push field empty. Zulip makes
 * one per call (an app calls it once per login). */
export async function doRegisterClientDevice(ctx: ActionContext, user: User): Promise<number> {
  const { id } = await ctx.tx.clientDevice.create({
    data: { userId: user.id },
    select: { id: true },
  });
  deviceEvent(ctx, user, 'add', id);
  return id;
}

/** POST /remove_client_device (feature level 470, an app logging out): the device and its
 * key go; the bouncer keeps the token, which nothing addresses any more. */
export async function doRemoveClientDevice(
  ctx: ActionContext,
  user: User,
  deviceId: number,
): Promise<void> {
  await lockUserRow(ctx, user.id);
  const { count } = await ctx.tx.clientDevice.deleteMany({
    where: { id: deviceId, userId: user.id },
  });
  if (count === 0) throw invalidDevice();
  deviceEvent(ctx, user, 'remove', deviceId);
}

/** A new API key logs every client out (feature level 492): their device records go too. */
export async function doRemoveAllClientDevices(ctx: ActionContext, user: User): Promise<void> {
  const gone = await ctx.tx.$queryRaw<{ id: number }[]>`
    DELETE FROM device WHERE user_profile_id = ${user.id} RETURNING id`;
  for (const { id } of gone.sort((a, b) => a.id - b.id)) deviceEvent(ctx, user, 'remove', id);
}

export interface PushKeyFields {
  pushKeyId: number;
  /** As sent: base64 of the cryptosystem byte and the key. */
  pushKey: string;
}

export interface PushTokenFields {
  tokenKind: PushTokenKind;
  /** As sent: base64 of 8 bytes (checked after the device, in Zulip's order). */
  tokenId: string;
  bouncerPublicKey: string;
  encryptedPushRegistration: string;
}

/** POST /mobile_push/register, after the parameters were read (Zulip's register_push_device,
 * its checks in its order): a new registration gives both groups of fields; an existing one
 * rotates its key or its token with one group. A token is registered with the push service
 * by a job; until then it is pending. */
export async function doRegisterPushDevice(
  ctx: ActionContext,
  user: User,
  deviceId: number,
  key: PushKeyFields | null,
  token: PushTokenFields | null,
): Promise<void> {
  await lockUserRow(ctx, user.id);
  const [device] = await ctx.tx.$queryRaw<
    {
      push_key: Uint8Array | null;
      push_key_id: bigint | null;
      push_token_id: bigint | null;
      pending_push_token_id: bigint | null;
      push_token_kind: string | null;
      push_registration_error_code: string | null;
      push_token_last_updated_timestamp: Date | null;
    }[]
  >`SELECT push_key, push_key_id, push_token_id, pending_push_token_id, push_token_kind,
           push_registration_error_code, push_token_last_updated_timestamp
    FROM device WHERE id = ${deviceId} AND user_profile_id = ${user.id} FOR NO KEY UPDATE`;
  if (!device) throw invalidDevice();
  if (!key && !token)
    throw new JsonableError(
      'Missing parameters: must provide either all push key fields, all token fields, or both.',
    );

  if (key && !token) {
    if (device.push_key_id === null)
      throw new JsonableError('No push registration exists to rotate key for.');
    const pushKey = parsePushKey(key.pushKey);
    if (
      device.push_key_id === BigInt(key.pushKeyId) &&
      device.push_key !== null &&
      Buffer.from(device.push_key).equals(Buffer.from(pushKey))
    )
      return;
    await ctx.tx.clientDevice.update({
      where: { id: deviceId },
      data: { pushKey, pushKeyId: key.pushKeyId },
    });
    deviceEvent(ctx, user, 'update', deviceId, { push_key_id: key.pushKeyId });
    return;
  }

  const registration = token!;
  const now = new Date();
  if (
    device.push_registration_error_code === null &&
    device.pending_push_token_id !== null &&
    now.getTime() - (device.push_token_last_updated_timestamp?.getTime() ?? 0) <
      PENDING_REGISTRATION_LIVES_MS
  )
    throw new JsonableError('A registration for the device already in progress.');
  const tokenId = parseTokenId(registration.tokenId);
  const pending = {
    pending_push_token_id: tokenIdToBase64(tokenId),
    push_token_last_updated_timestamp: unixSeconds(now),
    push_registration_error_code: null,
  };

  if (!key) {
    if (device.push_key_id === null)
      throw new JsonableError('No push registration exists to rotate token for.');
    if (device.push_registration_error_code === null && device.push_token_id === tokenId) return;
    // The token's kind stays the device's: an app rotates a token of the same service.
    await ctx.tx.clientDevice.update({
      where: { id: deviceId },
      data: {
        pendingPushTokenId: tokenId,
        pushTokenLastUpdated: now,
        pushRegistrationErrorCode: null,
      },
    });
    deviceEvent(ctx, user, 'update', deviceId, pending);
  } else {
    const pushKey = parsePushKey(key.pushKey);
    if (
      device.push_registration_error_code === null &&
      device.push_key_id === BigInt(key.pushKeyId) &&
      device.push_key !== null &&
      Buffer.from(device.push_key).equals(Buffer.from(pushKey)) &&
      device.push_token_id === tokenId &&
      device.push_token_kind === registration.tokenKind
    )
      return;
    await ctx.tx.clientDevice.update({
      where: { id: deviceId },
      data: {
        pushKey,
        pushKeyId: key.pushKeyId,
        pendingPushTokenId: tokenId,
        pushTokenKind: registration.tokenKind,
        pushTokenLastUpdated: now,
        pushRegistrationErrorCode: null,
      },
    });
    deviceEvent(ctx, user, 'update', deviceId, { push_key_id: key.pushKeyId, ...pending });
  }
  ctx.onCommit(() =>
    enqueueJob(
      'e2ee-push-registration',
      {
        deviceId,
        tokenId: tokenId.toString(),
        bouncerPublicKey: registration.bouncerPublicKey,
        encryptedPushRegistration: registration.encryptedPushRegistration,
      },
      // Job ids may not hold ':' (nor base64's '/'): the token id in hex.
      `e2ee-push-registration-${deviceId}-${BigInt.asUintN(64, tokenId).toString(16)}-${now.getTime()}`,
    ),
  );
}

/** The push service's refusals of a registration that trying again cannot mend: recorded on
 * the device for the app to see (it registers again, with a fresh payload or a newer app). */
const REGISTRATION_REFUSALS = new Set([
  'INVALID_BOUNCER_PUBLIC_KEY',
  'REQUEST_EXPIRED',
  'BAD_REQUEST',
]);

/** The `e2ee-push-registration` job (Zulip's register_push_device_to_bouncer): registers the
 * pending token with the push bouncer, then makes it the device's token. With the `log`
 * transport nothing leaves the server: the token is taken as registered, and notifications to
 * it are recorded in push_notification_log. A registration superseded meanwhile (the device
 * removed, another token pending) is dropped. */
export async function registerE2eeDevice(data: JobData['e2ee-push-registration']): Promise<void> {
  const tokenId = BigInt(data.tokenId);
  const device = await getPrisma().clientDevice.findUnique({ where: { id: data.deviceId } });
  if (!stillPending(device, tokenId)) return;
  const user = await getPrisma().user.findUniqueOrThrow({ where: { id: device!.userId } });
  if (usesBouncer()) {
    const answer = await postToBouncer('push/e2ee/register', {
      form: {
        realm_uuid: serverScopedUuid('realm', user.realmId),
        token_id: tokenIdToBase64(tokenId),
        encrypted_push_registration: data.encryptedPushRegistration,
        bouncer_public_key: data.bouncerPublicKey,
      },
    });
    if (answer.status >= 400) {
      const { code } = bouncerRefusal(answer);
      if (code === null || !REGISTRATION_REFUSALS.has(code)) {
        // This server's registration or credentials: the administrator's to mend; retried.
        getLogger().error(
          `Push device registration request for device_id=${data.deviceId} failed.`,
          {
            status: answer.status,
            response: answer.text.slice(0, 500),
          },
        );
        throw new PushRetryLaterError(`push bouncer refused this server (${answer.status})`);
      }
      if (code === 'REQUEST_EXPIRED')
        getLogger().error(`Push registration request for device_id=${data.deviceId} expired.`);
      await runAction(async (ctx) => {
        await lockUserRow(ctx, user.id);
        const { count } = await ctx.tx.clientDevice.updateMany({
          where: {
            id: data.deviceId,
            pendingPushTokenId: tokenId,
            pushRegistrationErrorCode: null,
          },
          data: { pushRegistrationErrorCode: code },
        });
        if (count > 0)
          deviceEvent(ctx, user, 'update', data.deviceId, { push_registration_error_code: code });
      });
      return;
    }
  } else {
    getLogger().info('E2EE push device registered (PUSH_TRANSPORT=log: not with a bouncer)', {
      user_id: user.id,
      device_id: data.deviceId,
    });
  }
  const legacyGone = await runAction(async (ctx) => {
    await lockUserRow(ctx, user.id);
    const { count } = await ctx.tx.clientDevice.updateMany({
      where: { id: data.deviceId, pendingPushTokenId: tokenId, pushRegistrationErrorCode: null },
      data: { pushTokenId: tokenId, pendingPushTokenId: null },
    });
    if (count === 0) return [];
    deviceEvent(ctx, user, 'update', data.deviceId, {
      push_token_id: tokenIdToBase64(tokenId),
      pending_push_token_id: null,
    });
    // Feature level 483: the same token's legacy registration is dropped, so the app stops
    // getting the same notification twice, once in the clear.
    const legacy = await ctx.tx.pushDeviceToken.findMany({ where: { userId: user.id } });
    const same = legacy.filter((row) => tokenIdOf(row.token) === tokenId);
    if (same.length > 0)
      await ctx.tx.pushDeviceToken.deleteMany({ where: { id: { in: same.map((row) => row.id) } } });
    return same;
  });
  if (usesBouncer())
    for (const row of legacyGone)
      await unregisterFromBouncer(user, row.kind as PushDeviceKindValue, row.token);
}

function stillPending(
  device: { pendingPushTokenId: bigint | null; pushRegistrationErrorCode: string | null } | null,
  tokenId: bigint,
): boolean {
  return (
    device !== null &&
    device.pendingPushTokenId === tokenId &&
    device.pushRegistrationErrorCode === null
  );
}

/** The push service no longer knows these tokens (the app was uninstalled, the token
 * expired): the user's devices holding them lose their token, keep their key, and the app is
 * told, so it registers again when it next runs. Returns how many devices lost theirs. */
export async function forgetExpiredE2eeTokens(
  user: Pick<User, 'id'>,
  tokenIds: bigint[],
): Promise<number> {
  if (tokenIds.length === 0) return 0;
  return runAction(async (ctx) => {
    await lockUserRow(ctx, user.id);
    const gone = await ctx.tx.$queryRaw<{ id: number }[]>`
      UPDATE device SET push_token_id = NULL
      WHERE user_profile_id = ${user.id} AND push_token_id = ANY(${tokenIds}::bigint[])
      RETURNING id`;
    for (const { id } of gone.sort((a, b) => a.id - b.id))
      deviceEvent(ctx, user, 'update', id, { push_token_id: null });
    return gone.length;
  });
}
