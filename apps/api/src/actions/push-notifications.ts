// Mobile push notifications (Zulip's handle_push_notification and its transports). The send
// path decides who is notified and why (lib/push-notifications.ts pushTrigger) and queues one
// `push-notifications` job per message after its commit; the job builds each user's APNs and
// FCM payloads and hands them to the transport PUSH_TRANSPORT names:
// - `log` (the default): a log line and a row of push_notification_log; nothing is delivered.
// - `bouncer`: Zulip's push notification service (POST {PUSH_BOUNCER_URL}/api/v1/remotes/
//   push/notify, HTTP Basic with ZULIP_ORG_ID and ZULIP_ORG_KEY). A 5xx answer or a network
//   failure fails the job, which BullMQ retries; a 4xx answer is logged and not retried.
// Devices registered for end-to-end encryption (client devices, feature level 468) get the
// same notification encrypted with their own key (lib/e2ee-push.ts), through the bouncer's
// push/e2ee/notify or into the same log row; legacy devices get the plaintext payloads.
// A user's notification is sent once: a delivered one sets the copy's
// active_mobile_push_notification flag, and a retry skips such users (and those who read the
// message meanwhile), as Zulip does. A user who turned enable_online_push_notifications off
// is skipped while present; that notification waits for their last client to go
// (set-aside-notifications.ts).
import { createHash } from 'node:crypto';
import { realmUrl } from '@parley/auth';
import { getConfig } from '@parley/config';
import {
  bitmaskToFlags,
  flagBit,
  getPrisma,
  Prisma,
  query,
  RecipientType,
  statement,
  type ActionContext,
  type Realm,
  type User,
} from '@parley/db';
import { enqueueJob, type JobData } from '@parley/jobs';
import {
  FailedToConnectBouncerError,
  InternalBouncerServerError,
  InvalidPushDeviceTokenError,
  InvalidRemotePushDeviceTokenError,
  JsonableError,
  NoActivePushDeviceError,
  PushAdminActionRequiredError,
  PushBouncerUnavailableError,
} from '@parley/errors';
import { getLogger } from '@parley/logger';
import { parseTokenId } from '../lib/client-devices';
import { groupConversationMembers } from '../lib/conversations';
import {
  e2eeDevicesOf,
  e2eePushRequests,
  type E2eeDevice,
  type E2eePushRequest,
} from '../lib/e2ee-push';
import { activeMemberIds } from '../lib/groups';
import {
  bouncerRefusal,
  postToBouncer,
  PushRetryLaterError,
  serverScopedUuid,
  usesBouncer,
} from '../lib/push-bouncer';
import {
  mentionedGroupIds,
  mentionsPersonally,
  messagePayloadApns,
  messagePayloadE2ee,
  messagePayloadGcm,
  PushTrigger,
  pushTrigger,
  removedIds,
  removePayloadApns,
  removePayloadE2ee,
  removePayloadGcm,
  testPayloadE2ee,
  testPayloads,
  basePayload,
  type Payload,
  type PushMessage,
  type PushOptions,
} from '../lib/push-notifications';
import { inaccessibleUsersByGuest } from '../lib/user-access';
import { apiEmailFor, canSeeDeliveryEmail, dummyEmail } from '../lib/users';
import {
  avatarUrl,
  INACCESSIBLE_USER_AVATAR_URL,
  INACCESSIBLE_USER_NAME,
} from '../presenters/users';
import { forgetExpiredE2eeTokens } from './client-devices';
import { notificationSettings, pushSettingsOf } from './notification-settings';
import { PushDeviceKind } from './push-devices';
import { forgetSetAside, presentSettingAside, setAsideAmong } from './set-aside-notifications';

/** Queues the message's notifications once the send commits; the job id is the message's,
 * so queuing it again does nothing. */
export function queuePushNotifications(
  ctx: Pick<ActionContext, 'onCommit'>,
  messageId: number,
  recipients: { userId: number; trigger: string }[],
): void {
  ctx.onCommit(() =>
    enqueueJob('push-notifications', { messageId, recipients }, `push-notifications-${messageId}`),
  );
}

/** The user's last client went, its queue holding these unread messages (the `last-queue-gone`
 * job): the notifications set aside because a client was open go now, by the user's settings
 * as they are now. Returns how many were queued. */
export async function pushAfterLastQueueGone(
  userId: number,
  messageIds: number[],
): Promise<number> {
  const setAsideIds = await setAsideAmong('push', userId, messageIds);
  let queued = 0;
  for (const messageId of setAsideIds) {
    const [row] = await notificationSettings(messageId, [userId]);
    const trigger =
      row?.has_push_device &&
      pushTrigger(bitmaskToFlags(row.flags), pushSettingsOf(row), row.is_channel);
    if (!trigger) continue;
    // A retry may queue it again: the job skips a user it notified (their copy's
    // active_mobile_push_notification flag).
    await enqueueJob(
      'push-notifications',
      { messageId, recipients: [{ userId, trigger }], clientsGone: true },
      `push-notifications-${messageId}-for-${userId}-${Date.now()}`,
    );
    queued += 1;
  }
  await forgetSetAside('push', userId, setAsideIds);
  return queued;
}

/** One user's notification, as a transport gets it. */
export interface PushDelivery {
  user: Pick<User, 'id'>;
  realm: Pick<Realm, 'id'>;
  /** Null for a removal (its payloads name the messages). */
  messageId: number | null;
  apnsPayload: Payload;
  gcmPayload: Payload;
  gcmOptions: Payload;
  appleDevices: string[];
  androidDevices: string[];
  /** The same notification for the user's devices registered for encryption. */
  e2ee: E2eeDelivery | null;
}

export interface E2eeDelivery {
  /** Before encryption (what the log transport records). */
  payload: Payload;
  requests: E2eePushRequest[];
}

/** The encrypted form of a payload for the user's devices, or null when they have none. */
function e2eeDelivery(
  devices: E2eeDevice[],
  payload: Payload,
  alert: boolean,
): E2eeDelivery | null {
  if (devices.length === 0) return null;
  return { payload, requests: e2eePushRequests(devices, payload, { alert }) };
}

/** The push_notification_log row of the `log` transport. */
async function logTransport(delivery: PushDelivery): Promise<void> {
  await getPrisma().pushNotificationLog.create({
    data: {
      userId: delivery.user.id,
      messageId: delivery.messageId,
      event: String(delivery.gcmPayload.event ?? 'message'),
      appleDevices: delivery.appleDevices.length,
      androidDevices: delivery.androidDevices.length,
      apnsPayload: delivery.apnsPayload as Prisma.InputJsonObject,
      gcmPayload: delivery.gcmPayload as Prisma.InputJsonObject,
      gcmOptions: delivery.gcmOptions as Prisma.InputJsonObject,
      e2eeDevices: delivery.e2ee?.requests.length ?? 0,
      e2eePayload: (delivery.e2ee?.payload as Prisma.InputJsonObject | undefined) ?? Prisma.DbNull,
      e2eeRequests:
        (delivery.e2ee?.requests as unknown as Prisma.InputJsonArray | undefined) ?? Prisma.DbNull,
    },
  });
  getLogger().info('push notification (PUSH_TRANSPORT=log: not delivered)', {
    user_id: delivery.user.id,
    message_id: delivery.messageId,
    apple_devices: delivery.appleDevices.length,
    android_devices: delivery.androidDevices.length,
    e2ee_devices: delivery.e2ee?.requests.length ?? 0,
  });
}

/** Zulip's send_notifications_to_bouncer: the legacy devices' request, then the encrypted
 * one (each only when the user has such devices). */
async function bouncerTransport(delivery: PushDelivery): Promise<void> {
  // Each path is tried whatever the other's fate; a failure to retry is raised afterwards.
  let retry: unknown = null;
  if (delivery.appleDevices.length + delivery.androidDevices.length > 0)
    await legacyThroughBouncer(delivery).catch((error: unknown) => (retry = error));
  if (delivery.e2ee)
    await e2eeThroughBouncer(delivery.user, delivery.realm, delivery.e2ee).catch(
      (error: unknown) => (retry ??= error),
    );
  if (retry) throw retry;
}

async function legacyThroughBouncer(delivery: PushDelivery): Promise<void> {
  const answer = await postToBouncer('push/notify', {
    json: {
      user_uuid: serverScopedUuid('user', delivery.user.id),
      user_id: delivery.user.id,
      realm_uuid: serverScopedUuid('realm', delivery.realm.id),
      apns_payload: delivery.apnsPayload,
      gcm_payload: delivery.gcmPayload,
      gcm_options: delivery.gcmOptions,
      android_devices: delivery.androidDevices,
      apple_devices: delivery.appleDevices,
    },
  });
  if (answer.status >= 400) {
    getLogger().warn('push bouncer refused a notification (not retried)', {
      user_id: delivery.user.id,
      message_id: delivery.messageId,
      status: answer.status,
      response: answer.text.slice(0, 500),
    });
    return;
  }
  await forgetDeletedDevices(answer.text);
  getLogger().info('push notification sent through the bouncer', {
    user_id: delivery.user.id,
    message_id: delivery.messageId,
  });
}

/** Zulip's send_push_notifications for E2EE devices (remotes/push/e2ee/notify). Tokens the
 * answer names in delete_token_ids are gone: the devices holding them lose them. Returns the
 * answer with those token ids (none for a refusal, which is logged). */
async function e2eeThroughBouncer(
  user: Pick<User, 'id'>,
  realm: Pick<Realm, 'id'>,
  e2ee: E2eeDelivery,
  timeoutMs?: number,
): Promise<{ status: number; text: string; expired: bigint[] }> {
  const answer = await postToBouncer(
    'push/e2ee/notify',
    { json: { realm_uuid: serverScopedUuid('realm', realm.id), push_requests: e2ee.requests } },
    timeoutMs === undefined ? {} : { timeoutMs },
  );
  if (answer.status >= 400) {
    getLogger().warn('push bouncer refused an encrypted notification', {
      user_id: user.id,
      status: answer.status,
      response: answer.text.slice(0, 500),
    });
    return { ...answer, expired: [] };
  }
  const expired = expiredTokenIds(answer.text);
  // Delivered already: failing to forget the gone tokens must not send it again on a retry.
  const forgotten = await forgetExpiredE2eeTokens(user, expired).catch((error: unknown) => {
    getLogger().error('expired E2EE push tokens not forgotten', { user_id: user.id, error });
    return 0;
  });
  getLogger().info('encrypted push notification sent through the bouncer', {
    user_id: user.id,
    devices: e2ee.requests.length,
    expired: forgotten,
  });
  return { ...answer, expired };
}

/** The token ids a push/e2ee/notify answer lists as gone (base64, as sent). */
function expiredTokenIds(responseText: string): bigint[] {
  let listed: unknown;
  try {
    listed = (JSON.parse(responseText) as { delete_token_ids?: unknown }).delete_token_ids;
  } catch {
    return [];
  }
  if (!Array.isArray(listed)) return [];
  const ids: bigint[] = [];
  for (const id of listed) {
    if (typeof id !== 'string') continue;
    try {
      ids.push(parseTokenId(id));
    } catch {
      // Not a token id this server sent: nothing to forget.
    }
  }
  return ids;
}

/** The bouncer names the devices APNs or FCM no longer know: they are removed here too. */
async function forgetDeletedDevices(responseText: string): Promise<void> {
  let deleted: { android_devices?: unknown; apple_devices?: unknown } | undefined;
  try {
    deleted = (JSON.parse(responseText) as { deleted_devices?: typeof deleted }).deleted_devices;
  } catch {
    return;
  }
  const tokens = (list: unknown) =>
    Array.isArray(list) ? list.filter((t): t is string => typeof t === 'string') : [];
  const android = tokens(deleted?.android_devices);
  const apple = tokens(deleted?.apple_devices);
  if (android.length + apple.length === 0) return;
  getLogger().info('push devices removed as the bouncer asked', {
    android: android.length,
    apple: apple.length,
  });
  await getPrisma().pushDeviceToken.deleteMany({
    where: {
      OR: [
        { kind: PushDeviceKind.FCM, token: { in: android } },
        { kind: PushDeviceKind.APNS, token: { in: apple } },
      ],
    },
  });
}

/** The server-wide part of every payload, from the configuration. */
function pushOptions(): PushOptions {
  const config = getConfig();
  return { server: config.EXTERNAL_HOST, redactContent: config.PUSH_NOTIFICATION_REDACT_CONTENT };
}

/** Who a removal or test notification goes to, as the payload builders take it. */
function pushRecipient(user: { id: number }, realm: Realm) {
  return { id: user.id, realm: { id: realm.id, name: realm.name, url: realmUrl(realm) } };
}

function transport(): (delivery: PushDelivery) => Promise<void> {
  return usesBouncer() ? bouncerTransport : logTransport;
}

const SKIP_FLAGS = flagBit('read') | flagBit('active_mobile_push_notification');

/** The `push-notifications` job: each user's notification, once. Users who read the message
 * meanwhile, lost their copy or their devices, or were already notified are skipped. Returns
 * how many users were notified. */
export async function sendPushNotifications({
  messageId,
  recipients,
  editedAt,
  clientsGone = false,
}: JobData['push-notifications']): Promise<number> {
  const prisma = getPrisma();
  const message = await prisma.message.findUnique({
    where: { id: messageId },
    include: { sender: true, recipient: true, realm: true },
  });
  if (!message || recipients.length === 0) return 0;
  const userIds = recipients.map((r) => r.userId);
  const [users, devices, e2eeDevices, copies] = await Promise.all([
    prisma.user.findMany({ where: { id: { in: userIds }, isActive: true, isBot: false } }),
    prisma.pushDeviceToken.findMany({ where: { userId: { in: userIds } }, orderBy: { id: 'asc' } }),
    e2eeDevicesOf(userIds),
    prisma.userMessage.findMany({ where: { messageId, userId: { in: userIds } } }),
  ]);
  const copyFlags = new Map(copies.map((c) => [c.userId, c.flags]));
  const unnotified = users.filter((user) => {
    const flags = copyFlags.get(user.id);
    return flags !== undefined && (flags & SKIP_FLAGS) === 0n;
  });
  // Zulip notifies a user who is not idle only with enable_online_push_notifications (on by
  // default); the others' notifications are set aside until their last client goes.
  const withDevice = new Set([...devices, ...e2eeDevices].map((device) => device.userId));
  const present = clientsGone
    ? new Set<number>()
    : await presentSettingAside(
        'push',
        unnotified
          .filter((user) => withDevice.has(user.id) && !user.enableOnlinePushNotifications)
          .map((user) => user.id),
        { id: messageId, at: editedAt ?? message.dateSent.getTime() },
      );
  const pending = unnotified.filter((user) => !present.has(user.id));
  if (pending.length === 0) return 0;

  const { realm, sender } = message;
  const base = await pushMessageBase(message.recipient.type, message.recipient.typeId, message);
  const groups = await mentionedGroups(message.renderedContent ?? '');
  const options = pushOptions();
  const pushRealm = { id: realm.id, name: realm.name, url: realmUrl(realm) };
  const triggers = new Map(recipients.map((r) => [r.userId, r.trigger]));
  // Guests limited by can_access_all_users_group see a sender they may not access as Zulip's
  // "Unknown user" (handle_push_notification's can_access_sender).
  const hiddenFrom = sender.isBot
    ? new Map<number, Set<number>>()
    : await inaccessibleUsersByGuest(realm, pending, [sender.id]);
  const send = transport();
  let notified = 0;
  let retry: unknown = null;
  for (const user of pending) {
    const own = devices.filter((d) => d.userId === user.id);
    const ownE2ee = e2eeDevices.filter((d) => d.userId === user.id);
    if (own.length === 0 && ownE2ee.length === 0) continue;
    const trigger = triggers.get(user.id)!;
    const visible = canSeeDeliveryEmail(user, sender);
    const pushMessage: PushMessage = {
      ...base,
      sender: hiddenFrom.has(user.id)
        ? {
            id: sender.id,
            fullName: INACCESSIBLE_USER_NAME,
            email: dummyEmail(sender, realm),
            avatarUrl: INACCESSIBLE_USER_AVATAR_URL,
          }
        : {
            id: sender.id,
            fullName: sender.fullName,
            email: apiEmailFor(user, sender, realm),
            // Zulip's absolute_avatar_url: an uploaded avatar's is relative to the organization.
            avatarUrl: new URL(avatarUrl(sender, visible, realm), realmUrl(realm)).toString(),
          },
    };
    const recipient = {
      id: user.id,
      realm: pushRealm,
      trigger,
      mentionedGroup:
        trigger === PushTrigger.MENTION &&
        !mentionsPersonally(message.renderedContent ?? '', user.id)
          ? smallestGroupOf(user.id, groups)
          : null,
    };
    const [gcmPayload, gcmOptions] = messagePayloadGcm(pushMessage, recipient, options);
    try {
      await send({
        user,
        realm,
        messageId,
        apnsPayload: messagePayloadApns(pushMessage, recipient, options),
        gcmPayload,
        gcmOptions,
        appleDevices: own.filter((d) => d.kind === PushDeviceKind.APNS).map((d) => d.token),
        androidDevices: own.filter((d) => d.kind === PushDeviceKind.FCM).map((d) => d.token),
        e2ee: e2eeDelivery(ownE2ee, messagePayloadE2ee(pushMessage, recipient, options), true),
      });
    } catch (error) {
      // The others are still tried; the job fails afterwards and its retry skips the
      // users notified now.
      retry = error;
      continue;
    }
    // Showing now, unless the user read the message while it was being sent: then the read
    // found no notification to remove, so the removal is queued here.
    const showing = await prisma.$executeRaw`
      UPDATE user_message SET flags = flags | ${flagBit('active_mobile_push_notification')}
      WHERE user_profile_id = ${user.id} AND message_id = ${messageId}
        AND (flags & ${flagBit('read')}) = 0`;
    if (showing === 0) await queueRemoval(user.id, [messageId]);
    notified += 1;
  }
  if (retry) throw retry instanceof Error ? retry : new PushRetryLaterError(String(retry));
  return notified;
}

/** The parts of a notification that do not depend on who gets it. */
async function pushMessageBase(
  recipientType: number,
  typeId: number,
  message: { id: number; dateSent: Date; renderedContent: string | null; subject: string },
): Promise<Omit<PushMessage, 'sender'>> {
  const prisma = getPrisma();
  let channel: PushMessage['channel'] = null;
  let groupParticipants: PushMessage['groupParticipants'] = null;
  if (recipientType === RecipientType.STREAM) {
    const stream = await prisma.stream.findUniqueOrThrow({ where: { id: typeId } });
    channel = { id: stream.id, name: stream.name, topic: message.subject };
  } else if (recipientType === RecipientType.DIRECT_MESSAGE_GROUP) {
    const group = await prisma.directMessageGroup.findUniqueOrThrow({ where: { id: typeId } });
    const members = await groupConversationMembers(group.recipientId!);
    if (members.length > 2) groupParticipants = members;
  }
  return {
    id: message.id,
    dateSent: message.dateSent,
    renderedContent: message.renderedContent ?? '',
    channel,
    groupParticipants,
  };
}

export interface MentionedGroup {
  id: number;
  name: string;
  members: Set<number>;
}

/** The user groups the message mentions, with their active members. */
export async function mentionedGroups(renderedContent: string): Promise<MentionedGroup[]> {
  const ids = mentionedGroupIds(renderedContent);
  if (ids.length === 0) return [];
  const rows = await getPrisma().userGroup.findMany({ where: { id: { in: ids } } });
  return Promise.all(
    rows.map(async (row) => ({
      id: row.id,
      name: row.name ?? '',
      members: new Set(await activeMemberIds([row.id])),
    })),
  );
}

/** The smallest mentioned group the user is in (Zulip's get_user_group_mentions_data). */
export function smallestGroupOf(
  userId: number,
  groups: MentionedGroup[],
): { id: number; name: string } | null {
  let best: MentionedGroup | null = null;
  for (const group of groups)
    if (group.members.has(userId) && (!best || group.members.size < best.members.size))
      best = group;
  return best ? { id: best.id, name: best.name } : null;
}

const ACTIVE_PUSH = flagBit('active_mobile_push_notification');

const clearActivePush = statement<{ messageId: number }, [number, number[]]>(`
  UPDATE user_message SET flags = flags & ~${ACTIVE_PUSH}::bigint
  WHERE user_profile_id = $1 AND message_id = ANY($2::int[])
    AND (flags & ${ACTIVE_PUSH}::bigint) <> 0
  RETURNING message_id AS "messageId"`);

/** Zulip's do_clear_mobile_push_notifications_for_ids: among `messageIds`, the user's copies
 * with a notification showing lose the flag, and once committed a job tells the devices to
 * remove those notifications. One statement; call it in the transaction that marks the
 * messages read, or before deleting them. */
export async function doClearMobilePushNotifications(
  ctx: ActionContext,
  userId: number,
  messageIds: number[],
): Promise<void> {
  if (messageIds.length === 0) return;
  const rows = await query(clearActivePush, [userId, messageIds]);
  if (rows.length === 0) return;
  const ids = rows.map((row) => row.messageId).sort((a, b) => a - b);
  ctx.onCommit(() => queueRemoval(userId, ids));
}

/** After commit, the removal of these messages' notifications from each user's phones (a
 * deletion: the copies and their flags are gone with the message). */
export function queuePushRemovalsOnCommit(
  ctx: Pick<ActionContext, 'onCommit'>,
  userIds: number[],
  messageIds: number[],
): void {
  if (userIds.length === 0 || messageIds.length === 0) return;
  const ids = [...messageIds].sort((a, b) => a - b);
  ctx.onCommit(async () => {
    for (const userId of userIds) await queueRemoval(userId, ids);
  });
}

/** The removal job for these notifications of the user (keyed by them: queued twice, sent
 * once). */
async function queueRemoval(userId: number, messageIds: number[]): Promise<void> {
  const digest = createHash('sha1').update(messageIds.join(',')).digest('hex').slice(0, 16);
  await enqueueJob(
    'push-notification-removal',
    { userId, messageIds },
    `push-notification-removal-${userId}-${digest}`,
  );
}

/** The `push-notification-removal` job (Zulip's handle_remove_push_notification): the
 * messages are treated as opaque ids, since they may be gone. */
export async function sendPushNotificationRemoval({
  userId,
  messageIds,
}: JobData['push-notification-removal']): Promise<void> {
  const prisma = getPrisma();
  const user = await prisma.user.findUnique({ where: { id: userId }, include: { realm: true } });
  if (!user || messageIds.length === 0) return;
  const [devices, e2eeDevices] = await Promise.all([
    prisma.pushDeviceToken.findMany({ where: { userId }, orderBy: { id: 'asc' } }),
    e2eeDevicesOf([userId]),
  ]);
  if (devices.length === 0 && e2eeDevices.length === 0) return;
  const options = pushOptions();
  const recipient = pushRecipient(user, user.realm);
  const ids = removedIds(messageIds);
  const [gcmPayload, gcmOptions] = removePayloadGcm(recipient, ids, options);
  await transport()({
    user,
    realm: user.realm,
    messageId: null,
    apnsPayload: removePayloadApns(recipient, ids, options),
    gcmPayload,
    gcmOptions,
    appleDevices: devices.filter((d) => d.kind === PushDeviceKind.APNS).map((d) => d.token),
    androidDevices: devices.filter((d) => d.kind === PushDeviceKind.FCM).map((d) => d.token),
    e2ee: e2eeDelivery(e2eeDevices, removePayloadE2ee(recipient, ids), false),
  });
}

/** POST /mobile_push/test_notification (Zulip's send_test_push_notification_api): a test
 * notification to the device with `token`, or to all of the user's devices, sent within the
 * request as Zulip sends it. Through the bouncer, one request per device, whose refusal the
 * caller sees; with the log transport, one push_notification_log row. */
export async function sendTestPushNotification(
  user: User,
  realm: Realm,
  token: string | undefined,
): Promise<void> {
  const devices = await getPrisma().pushDeviceToken.findMany({
    where: { userId: user.id, ...(token === undefined ? {} : { token }) },
    orderBy: { id: 'asc' },
  });
  if (token !== undefined && devices.length === 0) throw new InvalidPushDeviceTokenError();
  const options = pushOptions();
  const recipient = pushRecipient(user, realm);
  if (usesBouncer()) {
    const base = basePayload(recipient, options);
    for (const device of devices) await testThroughBouncer(user, realm, device, base);
    return;
  }
  if (devices.length === 0) return;
  const payloads = testPayloads(recipient, options, new Date());
  await logTransport({
    user,
    realm,
    messageId: null,
    apnsPayload: payloads.apns,
    gcmPayload: payloads.gcm,
    gcmOptions: payloads.gcmOptions,
    appleDevices: devices.filter((d) => d.kind === PushDeviceKind.APNS).map((d) => d.token),
    androidDevices: devices.filter((d) => d.kind === PushDeviceKind.FCM).map((d) => d.token),
    e2ee: null,
  });
}

/** POST /mobile_push/e2ee/test_notification (Zulip's send_e2ee_test_push_notification_api):
 * an encrypted test notification to the device `deviceId`, or to all of the user's devices
 * registered for encryption, sent within the request. None registered (an unknown device
 * included), or every token gone by the push service's answer: NO_ACTIVE_PUSH_DEVICE. */
export async function sendE2eeTestPushNotification(
  user: User,
  realm: Realm,
  deviceId: number | undefined,
): Promise<void> {
  const devices = (await e2eeDevicesOf([user.id])).filter(
    (device) => deviceId === undefined || device.id === deviceId,
  );
  if (devices.length === 0) throw new NoActivePushDeviceError();
  const recipient = pushRecipient(user, realm);
  const e2ee = e2eeDelivery(devices, testPayloadE2ee(recipient, new Date()), true)!;
  if (!usesBouncer()) {
    const payloads = testPayloads(recipient, pushOptions(), new Date());
    await logTransport({
      user,
      realm,
      messageId: null,
      apnsPayload: payloads.apns,
      gcmPayload: payloads.gcm,
      gcmOptions: payloads.gcmOptions,
      appleDevices: [],
      androidDevices: [],
      e2ee,
    });
    return;
  }
  let answer;
  try {
    answer = await e2eeThroughBouncer(user, realm, e2ee, 10_000);
  } catch (error) {
    if (error instanceof PushRetryLaterError)
      throw error.reached ? new InternalBouncerServerError() : new FailedToConnectBouncerError();
    throw error;
  }
  if (answer.status >= 400) {
    // The bouncer refused this server (its registration, credentials or plan): only the
    // administrator can mend that (Zulip's PushNotificationAdminActionRequiredError).
    if (answer.status === 401 || answer.status === 403) throw new PushAdminActionRequiredError();
    throw new JsonableError(`Push notifications bouncer error: ${bouncerRefusal(answer).msg}`);
  }
  const expired = new Set(answer.expired);
  if (devices.every((device) => expired.has(device.tokenId))) throw new NoActivePushDeviceError();
}

/** The bouncer's push/test_notification for one device, with Zulip's base payload; its
 * refusals become the request's errors (Zulip's send_to_push_bouncer). */
async function testThroughBouncer(
  user: User,
  realm: Realm,
  device: { token: string; kind: number },
  basePayload: Payload,
): Promise<void> {
  let answer;
  try {
    answer = await postToBouncer(
      'push/test_notification',
      {
        json: {
          realm_uuid: serverScopedUuid('realm', realm.id),
          user_uuid: serverScopedUuid('user', user.id),
          user_id: user.id,
          token: device.token,
          token_kind: device.kind,
          base_payload: basePayload,
        },
      },
      { timeoutMs: 10_000 },
    );
  } catch (error) {
    if (error instanceof PushRetryLaterError) throw new PushBouncerUnavailableError(error.message);
    throw error;
  }
  if (answer.status < 400) return;
  const { code, msg } = bouncerRefusal(answer);
  if (code === 'INVALID_REMOTE_PUSH_DEVICE_TOKEN') throw new InvalidRemotePushDeviceTokenError();
  // Zulip names the bouncer only when it refused this server's credentials; other refusals
  // are the client's (a token never registered there).
  throw new JsonableError(
    code === 'INVALID_ZULIP_SERVER' ? `Push notifications bouncer error: ${msg}` : msg,
  );
}

/** The `prune-push-log` job: the `log` transport's rows hold message text, so they are kept
 * only PUSH_LOG_RETENTION_HOURS (a deleted message's text must not live on here). In batches;
 * returns how many rows went. */
export async function prunePushNotificationLog(
  cutoff = new Date(Date.now() - getConfig().PUSH_LOG_RETENTION_HOURS * 3600_000),
): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await getPrisma().$executeRaw`
      DELETE FROM push_notification_log WHERE id IN (
        SELECT id FROM push_notification_log WHERE created < ${cutoff} ORDER BY id LIMIT 5000)`;
    total += deleted;
    if (deleted < 5000) return total;
  }
}
