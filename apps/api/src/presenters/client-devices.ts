// Device rows → Zulip's device objects (/register's `devices`, feature level 468): token ids
// in base64, the token's last update in whole UNIX seconds.
import { tokenIdToBase64, type DeviceStateRow } from '../lib/client-devices';
import { unixSeconds } from './streams';

export interface PresentedDevice {
  push_key_id: number | null;
  push_token_id: string | null;
  pending_push_token_id: string | null;
  push_token_last_updated_timestamp: number | null;
  push_registration_error_code: string | null;
}

const tokenId = (id: string | bigint | null) => (id === null ? null : tokenIdToBase64(BigInt(id)));

export function presentDevice(row: Omit<DeviceStateRow, 'id'>): PresentedDevice {
  return {
    push_key_id: row.push_key_id === null ? null : Number(row.push_key_id),
    push_token_id: tokenId(row.push_token_id),
    pending_push_token_id: tokenId(row.pending_push_token_id),
    push_token_last_updated_timestamp:
      row.push_token_last_updated_timestamp === null
        ? null
        : unixSeconds(row.push_token_last_updated_timestamp),
    push_registration_error_code: row.push_registration_error_code,
  };
}

/** /register's `devices`: every device of the user, keyed by its id. */
export function presentDevices(rows: DeviceStateRow[]): Record<string, PresentedDevice> {
  return Object.fromEntries(rows.map((row) => [String(row.id), presentDevice(row)]));
}
