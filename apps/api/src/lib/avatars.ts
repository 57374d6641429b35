// Where uploaded avatars' files live: user_avatars/{realm_id}/{hash}.png and {hash}-medium.png
// (Zulip's names), public images under a random name per upload.
import { getLogger } from '@parley/logger';
import { removeUpload } from './upload-store';

export type AvatarSize = 'small' | 'medium';

export function avatarStorePath(realmId: number, hash: string, size: AvatarSize): string {
  return `user_avatars/${realmId}/${hash}${size === 'medium' ? '-medium' : ''}.png`;
}

/** A replaced upload's files, once the change committed. A failure leaves them served at the
 * old URL (which clients had), so it is logged as an error to clean up. */
export async function removeAvatarFiles(realmId: number, hash: string | null): Promise<void> {
  if (hash === null) return;
  try {
    for (const size of ['small', 'medium'] as const)
      await removeUpload(avatarStorePath(realmId, hash, size));
  } catch (error) {
    getLogger().error('removing a replaced avatar failed', { error, realmId, hash });
  }
}
