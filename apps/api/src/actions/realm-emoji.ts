// Custom emoji administration (Zulip's check_add_realm_emoji, do_remove_realm_emoji): an
// image per name, told to the whole organization as the full dict in a realm_emoji event.
import { imageSize } from 'image-size';
import {
  AuditLogEvent,
  getPrisma,
  isUniqueViolation,
  Role,
  runAction,
  type ActionContext,
  type Realm,
  type User,
} from '@parley/db';
import { InsufficientPermissionError, JsonableError, ResourceNotFoundError } from '@parley/errors';
import { emojiCodeForName } from '@parley/markdown';
import { sendEventOnCommit } from '../lib/events';
import { hasRealmPermission } from '../lib/realm-permissions';
import { emojiStorePath, realmEmojiDict } from '../lib/realm-emoji';
import { removeUpload, storeUpload } from '../lib/upload-store';
import { activeUserIds, requireMemberOrAdmin } from '../lib/users';
import { auditRealmChange } from './audit';
import type { UploadedFile } from './uploads';

/** Zulip's MAX_EMOJI_FILE_SIZE_MIB (the route's parser refuses larger files). */
export const MAX_EMOJI_FILE_BYTES = 5 * 1024 * 1024;
const EMOJI_TYPES: Record<string, string> = { png: 'png', gif: 'gif', jpg: 'jpg', webp: 'webp' };

/** Zulip's check_valid_emoji_name. */
function checkEmojiName(name: string): void {
  if (name === '') throw new JsonableError('Emoji name is missing');
  if (/^[0-9a-z_-]+$/.test(name) && !/[0-9a-z]$/.test(name))
    throw new JsonableError('Emoji names must end with either a letter or digit.');
  if (name.length > 60 || !/^[0-9a-z_-]+$/.test(name))
    throw new JsonableError(
      'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.',
    );
}

async function notifyRealmEmoji(ctx: ActionContext, realmId: number): Promise<void> {
  sendEventOnCommit(
    ctx,
    { type: 'realm_emoji', op: 'update', realm_emoji: await realmEmojiDict(realmId) },
    await activeUserIds(realmId, ctx.tx),
  );
}

export async function doAddRealmEmoji(
  actor: User,
  realm: Realm,
  requestedName: string,
  files: UploadedFile[],
): Promise<void> {
  // Zulip's upload_emoji, in its order: people only (require_member_or_admin), the name, the
  // permission, the name taken, the file.
  requireMemberOrAdmin(actor);
  // Spaces are typed for underscores.
  const name = requestedName.trim().replace(/ /g, '_');
  checkEmojiName(name);
  // The organization's can_add_custom_emoji_group (members by default).
  if (!(await hasRealmPermission(realm, actor, 'can_add_custom_emoji_group')))
    throw new InsufficientPermissionError();
  const taken = await getPrisma().realmEmoji.findFirst({
    where: { realmId: realm.id, name, deactivated: false },
    select: { id: true },
  });
  if (taken) throw new JsonableError('A custom emoji with this name already exists.');
  if (files.length !== 1) throw new JsonableError('You must upload exactly one file.');
  const file = files[0]!;
  if (emojiCodeForName(name) !== undefined && actor.role > Role.ADMINISTRATOR)
    throw new JsonableError('Only administrators can override default emoji.');
  let type: string | undefined;
  try {
    type = EMOJI_TYPES[imageSize(file.buffer).type ?? ''];
  } catch {
    type = undefined;
  }
  if (!type) throw new JsonableError('Invalid image format');
  let stored: string | null = null;
  try {
    await runAction(async (ctx) => {
      const emoji = await ctx.tx.realmEmoji
        .create({
          data: { realmId: actor.realmId, authorId: actor.id, name, isAnimated: type === 'gif' },
        })
        .catch((error: unknown) => {
          if (isUniqueViolation(error))
            throw new JsonableError('A custom emoji with this name already exists.');
          throw error;
        });
      const fileName = `${emoji.id}.${type}`;
      stored = emojiStorePath(actor.realmId, fileName);
      // The database just allocated this id, so an object already at its path belongs to no
      // emoji (left by a database restored to an earlier point, or reset): it goes, where a
      // user upload's random path would never be reused.
      await removeUpload(stored);
      await storeUpload(stored, file.buffer);
      await ctx.tx.realmEmoji.update({ where: { id: emoji.id }, data: { fileName } });
      await auditRealmChange(ctx, actor, AuditLogEvent.REALM_EMOJI_ADDED, { id: emoji.id, name });
      await notifyRealmEmoji(ctx, actor.realmId);
    });
  } catch (error) {
    if (stored) await removeUpload(stored);
    throw error;
  }
}

/** Zulip's check_remove_custom_emoji: administrators, or the emoji's author. */
export async function doRemoveRealmEmoji(ctx: ActionContext, actor: User, name: string) {
  const emoji = await ctx.tx.realmEmoji.findFirst({
    where: { realmId: actor.realmId, name, deactivated: false },
  });
  if (!emoji) throw new ResourceNotFoundError(`Emoji '${name}' does not exist`);
  if (actor.role > Role.ADMINISTRATOR && emoji.authorId !== actor.id)
    throw new JsonableError('Must be an organization administrator or emoji author');
  await ctx.tx.realmEmoji.update({ where: { id: emoji.id }, data: { deactivated: true } });
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_EMOJI_REMOVED, { id: emoji.id, name });
  await notifyRealmEmoji(ctx, actor.realmId);
}
