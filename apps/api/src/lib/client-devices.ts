// Logged-in client devices (Zulip's Device, feature levels 468-470; zerver/lib/devices.py):
// the formats of push keys and token ids, and reading a user's devices for /register.
import { createHash } from 'node:crypto';
import { query, statement } from '@parley/db';
import { JsonableError } from '@parley/errors';

/** The first byte of a push key names its cryptosystem; 0x31 is libsodium's
 * crypto_secretbox_easy (XSalsa20-Poly1305), the only one Zulip defines. */
export const SECRETBOX_PUSH_KEY = 0x31;
const SECRETBOX_KEY_BYTES = 32;

/** RFC 4648 base64 with its padding, what Python's b64decode(validate=True) accepts. */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function strictBase64(text: string): Buffer | null {
  return STRICT_BASE64.test(text) ? Buffer.from(text, 'base64') : null;
}

/** A push key as clients send it (base64 of the prefix byte and the 32-byte key). */
export function parsePushKey(text: string): Uint8Array<ArrayBuffer> {
  const key = strictBase64(text);
  if (!key || key.length !== 1 + SECRETBOX_KEY_BYTES || key[0] !== SECRETBOX_PUSH_KEY)
    throw new JsonableError('Invalid `push_key`');
  return new Uint8Array(key);
}

/** A token id as clients send it: base64 of 8 bytes, kept as the signed big-endian integer
 * Zulip stores. */
export function parseTokenId(text: string): bigint {
  const bytes = strictBase64(text);
  if (!bytes) throw new JsonableError('`token_id` is not Base64 encoded');
  // Zulip reads any length into its int8 column (and fails past 8 bytes); ids are 8 bytes.
  if (bytes.length !== 8) throw new JsonableError('Invalid `token_id`');
  return bytes.readBigInt64BE();
}

export function tokenIdToBase64(id: bigint): string {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(id);
  return bytes.toString('base64');
}

/** How a client names its FCM or APNs token without revealing it: the first 8 bytes of its
 * SHA-256. Used to find a legacy registration of the same token. */
export function tokenIdOf(token: string): bigint {
  return createHash('sha256').update(token, 'utf8').digest().readBigInt64BE(0);
}

/** A device as /register and the device events show it; int8 columns arrive as text. */
export interface DeviceStateRow {
  id: number;
  push_key_id: string | null;
  push_token_id: string | null;
  pending_push_token_id: string | null;
  push_token_last_updated_timestamp: Date | null;
  push_registration_error_code: string | null;
}

const devicesOfUser = statement<DeviceStateRow, [number]>(
  `SELECT id, push_key_id, push_token_id, pending_push_token_id,
          push_token_last_updated_timestamp, push_registration_error_code
   FROM device WHERE user_profile_id = $1 ORDER BY id`,
);

/** The user's devices, with or without a push registration (a prepared statement: mobile
 * clients ask for them at every registration). */
export function clientDevicesOf(userId: number): Promise<DeviceStateRow[]> {
  return query(devicesOfUser, [userId]);
}
