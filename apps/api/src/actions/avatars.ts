// Uploaded avatars (Zulip's set_avatar_backend and delete_avatar_backend): the upload is
// decoded and resized in the request, as in Zulip (resize_avatar), to the two square PNGs
// served from then on (100 and 500 pixels); what was uploaded is never served, so its metadata
// (a photo's location) never leaves the server. Each upload has files of its own under a random
// name (user_profile.avatar_hash); the previous upload's go once the change commits.
import { randomBytes } from 'node:crypto';
import { lockUserRow, runAction, type ActionContext, type Realm, type User } from '@parley/db';
import { JsonableError, UserDeactivatedError } from '@parley/errors';
import { imageSize } from 'image-size';
import { avatarStorePath, removeAvatarFiles, type AvatarSize } from '../lib/avatars';
import { IMAGE_BOMB_TOTAL_PIXELS } from '../lib/thumbnails';
import { storeUpload } from '../lib/upload-store';
import { isAdmin } from '../lib/users';
import { avatarUrl } from '../presenters/users';
import { loadSharp } from './thumbnails';
import { doChangeAvatarFields } from './users';
import type { UploadedFile } from './uploads';

/** Zulip's MAX_AVATAR_FILE_SIZE_MIB (the route's parser refuses larger files). */
export const MAX_AVATAR_FILE_BYTES = 5 * 1024 * 1024;
/** Zulip's DEFAULT_AVATAR_SIZE and MEDIUM_AVATAR_SIZE. */
const AVATAR_SIZES: Record<AvatarSize, number> = { small: 100, medium: 500 };

/** The formats an avatar may be, by image-size's name and by sharp's (Zulip blocks every other
 * libvips loader). */
const AVATAR_TYPES = new Set(['png', 'jpg', 'gif', 'webp']);
const AVATAR_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);

const BAD_IMAGE = 'Could not decode image; did you upload an image file?';

/** Zulip's avatar_changes_disabled: administrators may always change their own. */
export function checkChangeAvatar(user: User, realm: Realm): void {
  if (realm.avatarChangesDisabled && !isAdmin(user))
    throw new JsonableError('Avatar changes are disabled in this organization.');
}

/** Zulip's resize_avatar: the header is checked first (a decompression bomb is refused before
 * anything is decoded), then each size is cropped to a centred square, its first frame only,
 * turned as its EXIF orientation says, as PNG without metadata. */
async function resizedAvatars(bytes: Buffer): Promise<Record<AvatarSize, Buffer>> {
  // The type from the bytes' signature first, so that sharp never parses anything but the
  // four formats (libvips would pick a TIFF, SVG or HEIF loader by itself).
  let header: { type?: string; width?: number; height?: number };
  try {
    header = imageSize(bytes);
  } catch {
    header = {};
  }
  if (header.type === undefined || !AVATAR_TYPES.has(header.type))
    throw new JsonableError(BAD_IMAGE);
  // A GIF's canvas (its logical screen) may be far larger than its first frame.
  if ((header.width ?? 0) * (header.height ?? 0) > IMAGE_BOMB_TOTAL_PIXELS)
    throw new JsonableError('Image size exceeds limit.');
  const sharp = await loadSharp();
  let metadata: Awaited<ReturnType<ReturnType<typeof sharp>['metadata']>>;
  try {
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw new JsonableError(BAD_IMAGE);
  }
  if (!AVATAR_FORMATS.has(metadata.format ?? '') || !metadata.width || !metadata.height)
    throw new JsonableError(BAD_IMAGE);
  if (metadata.width * metadata.height > IMAGE_BOMB_TOTAL_PIXELS)
    throw new JsonableError('Image size exceeds limit.');
  try {
    // One decode (its first frame only: sharp's default), for the medium size; the small one
    // is made from that, so the API holds one decoded image per upload at a time.
    const medium = await sharp(bytes, {
      limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS,
      failOn: 'error',
    })
      .rotate()
      .resize(AVATAR_SIZES.medium, AVATAR_SIZES.medium, { fit: 'cover' })
      .png()
      .toBuffer();
    const small = await sharp(medium)
      .resize(AVATAR_SIZES.small, AVATAR_SIZES.small)
      .png()
      .toBuffer();
    return { small, medium };
  } catch {
    // sharp's errors while decoding mean a corrupt or truncated image.
    throw new JsonableError(BAD_IMAGE);
  }
}

/** The user's avatar fields as committed, read with the row locked: the auth cache's copy may
 * be behind another replica's change, and the files to remove are the current ones. */
async function lockedAvatar(ctx: ActionContext, user: User): Promise<User> {
  await lockUserRow(ctx, user.id);
  const current = await ctx.tx.user.findUniqueOrThrow({ where: { id: user.id } });
  // Deactivated since the request was authenticated (a deleted profile keeps no picture).
  if (!current.isActive) throw new UserDeactivatedError();
  return current;
}

/** Resizes an upload and stores its files under a new random name, which it returns: a bad
 * image is refused before anything changes. */
export async function prepareAvatar(realm: Realm, file: UploadedFile): Promise<string> {
  const images = await resizedAvatars(file.buffer);
  const hash = randomBytes(20).toString('hex');
  try {
    for (const size of ['small', 'medium'] as const)
      await storeUpload(avatarStorePath(realm.id, hash, size), images[size], 'image/png');
  } catch (error) {
    await removeAvatarFiles(realm.id, hash);
    throw error;
  }
  return hash;
}

/** In the caller's action: a prepared upload becomes a bot's avatar (Zulip's patch_bot_backend
 * with a file), read with its row locked. Returns the previous upload's name, whose files go
 * once the change commits. A deleted bot keeps no picture. */
export async function doSetBotAvatar(
  ctx: ActionContext,
  realm: Realm,
  bot: User,
  hash: string,
  actingUserId: number,
): Promise<string | null> {
  await lockUserRow(ctx, bot.id);
  const current = await ctx.tx.user.findUniqueOrThrow({ where: { id: bot.id } });
  if (current.isDeleted) throw new JsonableError('No such bot');
  await doChangeAvatarFields(ctx, realm, current, 'U', hash, actingUserId);
  return current.avatarHash;
}

/** POST /users/me/avatar: the upload, resized, becomes the user's avatar ('U'). Returns its
 * URL. */
export async function doUploadAvatar(
  user: User,
  realm: Realm,
  file: UploadedFile,
): Promise<string> {
  const hash = await prepareAvatar(realm, file);
  let previous: string | null = null;
  let updated: User;
  try {
    updated = await runAction(async (ctx) => {
      const current = await lockedAvatar(ctx, user);
      previous = current.avatarHash;
      return doChangeAvatarFields(ctx, realm, current, 'U', hash, user.id);
    });
  } catch (error) {
    await removeAvatarFiles(realm.id, hash);
    throw error;
  }
  await removeAvatarFiles(realm.id, previous);
  return avatarUrl(updated, true, realm);
}

/** DELETE /users/me/avatar: back to Gravatar if the avatar was uploaded (else nothing
 * changes). Returns the avatar URL. */
export async function doDeleteAvatar(user: User, realm: Realm): Promise<string> {
  let previous: string | null = null;
  const updated = await runAction(async (ctx) => {
    const current = await lockedAvatar(ctx, user);
    if (current.avatarSource !== 'U') return current;
    previous = current.avatarHash;
    return doChangeAvatarFields(ctx, realm, current, 'G', null, user.id);
  });
  await removeAvatarFiles(realm.id, previous);
  return avatarUrl(updated, true, realm);
}
