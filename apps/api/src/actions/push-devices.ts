// Push-device registration (spec 4.14; Zulip's zerver/views/push_notifications.py and
// add_push_device_token / remove_push_device_token): a user's mobile devices, which the
// `push-notifications` job (./push-notifications.ts) notifies.
import { getConfig } from '@parley/config';
import { getPrisma, type ActionContext, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { enqueueJob, type JobData } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { postToBouncer, serverScopedUuid, usesBouncer } from '../lib/push-bouncer';
import { codePoints } from '../lib/text';

/** PushDeviceToken.kind values, as in Zulip. */
export const PushDeviceKind = { APNS: 1, FCM: 2 } as const;
export type PushDeviceKindValue = (typeof PushDeviceKind)[keyof typeof PushDeviceKind];

/** Python's bytes.fromhex: pairs of hex digits, ASCII whitespace allowed between them. */
const HEX_BYTES = /^[ \t\n\r\f\v]*(?:[0-9a-fA-F]{2}[ \t\n\r\f\v]*)*$/;

/** Zulip's validate_token: a token of 1 to 4096 characters; APNs tokens are hex. */
export function checkPushToken(token: string, kind: PushDeviceKindValue): void {
  if (token === '' || codePoints(token) > 4096)
    throw new JsonableError('Empty or invalid length token');
  if (kind === PushDeviceKind.APNS && !HEX_BYTES.test(token))
    throw new JsonableError('Invalid APNS token');
}

/** Zulip's check_app_id: the iOS app's bundle id. */
export function checkAppId(appId: string): void {
  if (!/^[.a-zA-Z0-9-]+$/.test(appId)) throw new JsonableError('Invalid app ID');
}

/** Registers a device; registering it again refreshes its app id and last_updated. With the
 * bouncer, a job then registers it there too (Zulip does it within the request). */
export async function doAddPushDevice(
  ctx: ActionContext,
  user: User,
  kind: PushDeviceKindValue,
  token: string,
  iosAppId: string | null,
): Promise<void> {
  const [row] = await ctx.tx.$queryRaw<{ id: number; last_updated: Date }[]>`
    INSERT INTO push_device_token (user_profile_id, kind, token, ios_app_id, last_updated)
    VALUES (${user.id}, ${kind}, ${token}, ${iosAppId}, now())
    ON CONFLICT (user_profile_id, kind, md5(token))
    DO UPDATE SET ios_app_id = EXCLUDED.ios_app_id, last_updated = EXCLUDED.last_updated
    RETURNING id, last_updated`;
  const deviceId = row!.id;
  const version = row!.last_updated.getTime();
  ctx.onCommit(async () => {
    // Never the token: it addresses the device.
    getLogger().info('push device registered', { user_id: user.id, kind });
    if (usesBouncer())
      await enqueueJob(
        'push-device-registration',
        { deviceId },
        `push-device-registration-${deviceId}-${version}`,
      );
  });
}

/** Removes one of the user's devices. */
export async function doRemovePushDevice(
  ctx: ActionContext,
  user: User,
  kind: PushDeviceKindValue,
  token: string,
): Promise<void> {
  const { count } = await ctx.tx.pushDeviceToken.deleteMany({
    where: { userId: user.id, kind, token },
  });
  if (count === 0) throw new JsonableError('Token does not exist');
  if (usesBouncer()) ctx.onCommit(() => unregisterFromBouncer(user, kind, token));
}

/** A new API key logs every client out: Zulip's clear_push_device_tokens forgets the user's
 * devices, here and, after the commit, at the bouncer (best effort, as unregistering is). */
export async function doClearPushDevices(ctx: ActionContext, user: User): Promise<void> {
  await ctx.tx.pushDeviceToken.deleteMany({ where: { userId: user.id } });
  // Zulip asks the bouncer whatever this server held: it may know devices this one lost.
  if (usesBouncer() && !user.isBot) ctx.onCommit(() => unregisterAllFromBouncer(user));
}

function unregisterAllFromBouncer(user: User): Promise<void> {
  return unregisterAtBouncer(user, 'push/unregister/all', {
    user_uuid: serverScopedUuid('user', user.id),
    user_id: String(user.id),
    realm_uuid: serverScopedUuid('realm', user.realmId),
  });
}

/** An unregistering request to the bouncer, tried once (from the request that removed the
 * devices here, within 10 s): a refusal or a failure is logged, as the bouncer forgets the
 * devices APNs or FCM report gone anyway. */
async function unregisterAtBouncer(
  user: User,
  endpoint: 'push/unregister' | 'push/unregister/all',
  form: Record<string, string>,
): Promise<void> {
  try {
    const answer = await postToBouncer(endpoint, { form }, { timeoutMs: 10_000 });
    if (answer.status >= 400)
      getLogger().warn('push bouncer refused to unregister devices', {
        endpoint,
        user_id: user.id,
        status: answer.status,
      });
  } catch (error) {
    getLogger().warn('push devices not unregistered from the bouncer', {
      endpoint,
      user_id: user.id,
      error,
    });
  }
}

/** The `push-device-registration` job: Zulip's push/register request for a device still
 * registered here. */
export async function registerWithBouncer({
  deviceId,
}: JobData['push-device-registration']): Promise<void> {
  const device = await getPrisma().pushDeviceToken.findUnique({ where: { id: deviceId } });
  if (!device || !usesBouncer()) return;
  const user = await getPrisma().user.findUniqueOrThrow({ where: { id: device.userId } });
  const form: Record<string, string> = {
    server_uuid: serverScopedOrgId(),
    user_uuid: serverScopedUuid('user', user.id),
    realm_uuid: serverScopedUuid('realm', user.realmId),
    user_id: String(user.id),
    token: device.token,
    token_kind: String(device.kind),
  };
  if (device.kind === PushDeviceKind.APNS && device.iosAppId) form.ios_app_id = device.iosAppId;
  const answer = await postToBouncer('push/register', { form });
  if (answer.status >= 400)
    getLogger().warn('push bouncer refused a device registration (not retried)', {
      user_id: user.id,
      status: answer.status,
      response: answer.text.slice(0, 500),
    });
}

/** Zulip's push/unregister request, once the device is removed here. */
export function unregisterFromBouncer(
  user: User,
  kind: PushDeviceKindValue,
  token: string,
): Promise<void> {
  return unregisterAtBouncer(user, 'push/unregister', {
    server_uuid: serverScopedOrgId(),
    realm_uuid: serverScopedUuid('realm', user.realmId),
    user_uuid: serverScopedUuid('user', user.id),
    user_id: String(user.id),
    token,
    token_kind: String(kind),
  });
}

const serverScopedOrgId = () => getConfig().ZULIP_ORG_ID ?? '';
