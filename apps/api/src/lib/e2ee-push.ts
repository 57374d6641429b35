// End-to-end encrypted push notifications (Zulip's E2EE push, feature level 468): each payload
// is encrypted for each device with the key the app registered, and handed to the push
// bouncer as "push requests" naming the device by its token id. The bouncer (and Apple or
// Google behind it) sees only ciphertext.
import { randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
import { getPrisma } from '@parley/db';
import { SECRETBOX_PUSH_KEY, tokenIdToBase64 } from './client-devices';
import type { Payload } from './push-notifications';

/** A device a notification can be encrypted for and addressed to. */
export interface E2eeDevice {
  id: number;
  userId: number;
  pushKey: Buffer;
  pushKeyId: number;
  tokenId: bigint;
  tokenKind: 'apns' | 'fcm';
}

/** Zulip's push request (remotes/push/e2ee/notify's push_requests). */
export type E2eePushRequest =
  | { token_id: string; fcm_priority: 'high' | 'normal'; payload: EncryptedPayload }
  | {
      token_id: string;
      http_headers: { apns_priority: 10 | 5; apns_push_type: 'alert' | 'background' };
      payload: EncryptedPayload & { aps: Payload };
    };

interface EncryptedPayload {
  push_key_id: number;
  encrypted_data: string;
}

/** The users' devices registered for encrypted notifications (a key and a registered token),
 * oldest first. */
export async function e2eeDevicesOf(userIds: number[]): Promise<E2eeDevice[]> {
  if (userIds.length === 0) return [];
  const rows = await getPrisma().clientDevice.findMany({
    where: { userId: { in: userIds }, pushTokenId: { not: null }, pushKey: { not: null } },
    orderBy: { id: 'asc' },
  });
  return rows.map((row) => ({
    id: row.id,
    userId: row.userId,
    pushKey: Buffer.from(row.pushKey!),
    pushKeyId: Number(row.pushKeyId),
    tokenId: row.pushTokenId!,
    tokenKind: row.pushTokenKind === 'apns' ? 'apns' : 'fcm',
  }));
}

/** libsodium's crypto_secretbox_easy with a fresh nonce, sent as base64 of the nonce and
 * the box (the 16-byte tag, then the ciphertext), as the app unpacks it. */
export function encryptForDevice(pushKey: Uint8Array, plaintext: Uint8Array): string {
  if (pushKey[0] !== SECRETBOX_PUSH_KEY) throw new Error('unsupported push key cryptosystem');
  const nonce = randomBytes(nacl.secretbox.nonceLength);
  const box = nacl.secretbox(plaintext, nonce, pushKey.subarray(1));
  return Buffer.concat([nonce, box]).toString('base64');
}

/** The push requests for one payload, one per device, each encrypted with its own key. A
 * removal goes quietly (FCM normal priority, an APNs background push); the rest alert. */
export function e2eePushRequests(
  devices: E2eeDevice[],
  payload: Payload,
  { alert }: { alert: boolean },
): E2eePushRequest[] {
  const plaintext = Buffer.from(JSON.stringify(payload));
  return devices.map((device) => {
    const encrypted = {
      push_key_id: device.pushKeyId,
      encrypted_data: encryptForDevice(device.pushKey, plaintext),
    };
    const tokenId = tokenIdToBase64(device.tokenId);
    if (device.tokenKind === 'fcm')
      return { token_id: tokenId, fcm_priority: alert ? 'high' : 'normal', payload: encrypted };
    return {
      token_id: tokenId,
      http_headers: alert
        ? { apns_priority: 10, apns_push_type: 'alert' }
        : { apns_priority: 5, apns_push_type: 'background' },
      // What iOS shows if the app's extension cannot decrypt in time.
      payload: {
        ...encrypted,
        aps: { 'mutable-content': 1, alert: { title: 'New notification' } },
      },
    };
  });
}
