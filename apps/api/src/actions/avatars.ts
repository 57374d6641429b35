// Uploaded avatars (Zulip's set_avatar_backend and delete_avatar_backend): the image is kept as
// uploaded and served at once; the worker then makes Zulip's two sizes (100 and 500 pixels,
// square PNGs), which are served in its place from then on. Each upload has files of its own,
// under a random name (user_profile.avatar_hash); the previous upload's go once the change
// commits.
import { randomBytes } from 'node:crypto';
import { imageSize } from 'image-size';
import { runAction, type Realm, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { enqueueJob } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { readUpload, removeUpload, storeUpload } from '../lib/upload-store';
import { isAdmin } from '../lib/users';
import { avatarUrl } from '../presenters/users';
import { IMAGE_BOMB_TOTAL_PIXELS } from '../lib/thumbnails';
import { loadSharp } from './thumbnails';
import { doChangeAvatarFields } from './users';
import type { UploadedFile } from './uploads';

/** Zulip's MAX_AVATAR_FILE_SIZE_MIB (the route's parser refuses larger files). */
export const MAX_AVATAR_FILE_BYTES = 5 * 1024 * 1024;
/** Zulip's DEFAULT_AVATAR_SIZE and MEDIUM_AVATAR_SIZE. */
const AVATAR_SIZE = 100;
const MEDIUM_AVATAR_SIZE = 500;

/** The image types an avatar may be, by image-size's name, as their content type. */
const AVATAR_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};

const BAD_IMAGE = 'Could not decode image; did you upload an image file?';

export type AvatarFile = 'original' | 'small' | 'medium';

/** Where an upload's files are stored (public images, as Zulip's user_avatars/). */
export function avatarStorePath(realmId: number, hash: string, file: AvatarFile): string {
  if (file === 'original') return `user_avatars/${realmId}/${hash}.original`;
  return `user_avatars/${realmId}/${hash}${file === 'medium' ? '-medium' : ''}.png`;
}

/** Zulip's avatar_changes_disabled: administrators may always change their own. */
export function checkChangeAvatar(user: User, realm: Realm): void {
  if (realm.avatarChangesDisabled && !isAdmin(user))
    throw new JsonableError('Avatar changes are disabled in this organization.');
}

/** POST /users/me/avatar: stores the image, makes it the user's avatar ('U') and queues its
 * resizing. Returns the new avatar URL. */
export async function doUploadAvatar(
  user: User,
  realm: Realm,
  file: UploadedFile,
): Promise<string> {
  let type: string | undefined;
  try {
    const size = imageSize(file.buffer);
    type = AVATAR_TYPES[size.type ?? ''];
    if (type && (size.width ?? 0) * (size.height ?? 0) > IMAGE_BOMB_TOTAL_PIXELS) type = undefined;
  } catch {
    type = undefined;
  }
  if (!type) throw new JsonableError(BAD_IMAGE);
  const hash = randomBytes(20).toString('hex');
  const original = avatarStorePath(realm.id, hash, 'original');
  await storeUpload(original, file.buffer, type);
  let updated: User;
  try {
    updated = await runAction(async (ctx) => {
      const changed = await doChangeAvatarFields(ctx, realm, user, 'U', hash, user.id);
      ctx.onCommit(() =>
        enqueueJob('avatar-resize', { realmId: realm.id, hash }, `avatar-${hash}`),
      );
      return changed;
    });
  } catch (error) {
    await removeUpload(original);
    throw error;
  }
  await removeAvatarFiles(realm.id, user.avatarHash);
  return avatarUrl(updated, true, realm);
}

/** DELETE /users/me/avatar: back to Gravatar, if the avatar was uploaded. Returns the avatar
 * URL. */
export async function doDeleteAvatar(user: User, realm: Realm): Promise<string> {
  if (user.avatarSource !== 'U') return avatarUrl(user, true, realm);
  const updated = await runAction((ctx) =>
    doChangeAvatarFields(ctx, realm, user, 'G', null, user.id),
  );
  await removeAvatarFiles(realm.id, user.avatarHash);
  return avatarUrl(updated, true, realm);
}

/** A replaced upload's files; a failure only leaves unreachable files (their name was random),
 * so it is logged, not answered. */
async function removeAvatarFiles(realmId: number, hash: string | null): Promise<void> {
  if (hash === null) return;
  try {
    for (const file of ['original', 'small', 'medium'] as const)
      await removeUpload(avatarStorePath(realmId, hash, file));
  } catch (error) {
    getLogger().warn('removing a replaced avatar failed', { error, realmId });
  }
}

/** The `avatar-resize` job (Zulip's resize_avatar, done at upload there): the two square PNGs,
 * cropped to the centre. An upload replaced meanwhile has no original left: nothing to do. An
 * image sharp cannot decode keeps being served as uploaded. */
export async function resizeAvatar({
  realmId,
  hash,
}: {
  realmId: number;
  hash: string;
}): Promise<void> {
  const bytes = await readUpload(avatarStorePath(realmId, hash, 'original'));
  if (!bytes) return;
  const sharp = await loadSharp();
  for (const [file, size] of [
    ['small', AVATAR_SIZE],
    ['medium', MEDIUM_AVATAR_SIZE],
  ] as const) {
    let png: Buffer;
    try {
      png = await sharp(bytes, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, failOn: 'error' })
        .rotate()
        .resize(size, size, { fit: 'cover' })
        .png()
        .toBuffer();
    } catch (error) {
      getLogger().warn('an uploaded avatar could not be resized', { error, realmId });
      return;
    }
    const path = avatarStorePath(realmId, hash, file);
    // A run that died after storing leaves the file: it is made again the same.
    await removeUpload(path);
    await storeUpload(path, png, 'image/png');
  }
}

/** GET /user_avatars/{realm_id}/{hash}.png and -medium.png: the resized image, or until it is
 * made the image as uploaded, with its type. Null when there is neither. */
export async function servedAvatar(
  realmId: number,
  hash: string,
  medium: boolean,
): Promise<{ bytes: Buffer; contentType: string } | null> {
  const resized = await readUpload(avatarStorePath(realmId, hash, medium ? 'medium' : 'small'));
  if (resized) return { bytes: resized, contentType: 'image/png' };
  const original = await readUpload(avatarStorePath(realmId, hash, 'original'));
  if (!original) return null;
  let type: string | undefined;
  try {
    type = AVATAR_TYPES[imageSize(original).type ?? ''];
  } catch {
    type = undefined;
  }
  return type ? { bytes: original, contentType: type } : null;
}
