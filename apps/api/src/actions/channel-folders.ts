// Channel folders (Zulip's zerver/actions/channel_folders.py and the checks of its view):
// administrators create, rename, describe, archive, unarchive and reorder them; every change is
// audited and reaches every active member of the organization as a channel_folder event.
import {
  AuditLogEvent,
  isUniqueViolation,
  type ActionContext,
  type ChannelFolder,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import {
  orderPositions,
  presentChannelFolder,
  type ChannelFolderEntry,
} from '../lib/channel-folders';
import { renderDescriptionForRealm } from '../lib/rendering';
import { unprintablePosition } from '../lib/text';
import { activeUserIds } from '../lib/users';
import { auditRealmChange } from './audit';

const NAME_IN_USE = 'Channel folder name already in use';

/** Zulip's check_channel_folder_name. The name is kept as given, as Zulip keeps it. `renamed`:
 * the folder being renamed, which may change the case of its own name (Zulip refuses that as
 * "already in use", which nobody renaming "frontend" to "Frontend" would expect). */
export async function checkChannelFolderName(
  tx: Tx,
  realmId: number,
  name: string,
  renamed?: number,
): Promise<void> {
  if (name.trim() === '') throw new JsonableError("Channel folder name can't be empty.");
  const bad = unprintablePosition(name);
  if (bad !== null)
    throw new JsonableError(`Invalid character in channel folder name, at position ${bad}.`);
  const taken = await tx.$queryRaw<unknown[]>`
    SELECT 1 FROM channel_folder
    WHERE realm_id = ${realmId} AND lower(name) = lower(${name}) AND id <> ${renamed ?? 0}`;
  if (taken.length > 0) throw new JsonableError(NAME_IN_USE);
}

/** A concurrent request took the name between the check and the write. */
function refuseTakenName(error: unknown): never {
  if (isUniqueViolation(error)) throw new JsonableError(NAME_IN_USE);
  throw error;
}

/** Everyone active in the organization, read once per request however many events it sends. */
function folderAudience(ctx: ActionContext, realmId: number): () => Promise<number[]> {
  let audience: Promise<number[]> | undefined;
  return () => (audience ??= activeUserIds(realmId, ctx.tx));
}

/** Zulip's check_add_channel_folder: the new folder goes last (its order is its id). */
export async function doCreateChannelFolder(
  ctx: ActionContext,
  actor: User,
  name: string,
  description: string,
): Promise<number> {
  const { tx } = ctx;
  const renderedDescription = await renderDescriptionForRealm(actor.realmId, description, tx);
  const created = await tx.channelFolder
    .create({
      data: { realmId: actor.realmId, name, description, renderedDescription, creatorId: actor.id },
    })
    .catch(refuseTakenName);
  const folder = await tx.channelFolder.update({
    where: { id: created.id },
    data: { order: created.id },
  });
  await auditRealmChange(
    ctx,
    actor,
    AuditLogEvent.CHANNEL_FOLDER_CREATED,
    {},
    { modifiedChannelFolderId: folder.id },
  );
  sendEventOnCommit(
    ctx,
    { type: 'channel_folder', op: 'add', channel_folder: presentChannelFolder(folder) },
    await folderAudience(ctx, actor.realmId)(),
  );
  return folder.id;
}

/** Zulip's try_reorder_realm_channel_folders: `order` must name every folder of the
 * organization, archived ones too; each folder's order becomes its position there. */
export async function doReorderChannelFolders(
  ctx: ActionContext,
  actor: User,
  order: number[],
): Promise<void> {
  const { tx } = ctx;
  // Locked: two reorders at once must not interleave their writes.
  const folders = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM channel_folder WHERE realm_id = ${actor.realmId} ORDER BY id FOR UPDATE`;
  const positions = orderPositions(order);
  if (folders.some((folder) => !positions.has(folder.id)))
    throw new JsonableError('Invalid order mapping.');
  if (folders.length > 0)
    await tx.$executeRaw`
      UPDATE channel_folder SET "order" = p.position
      FROM unnest(${[...positions.keys()]}::int[], ${[...positions.values()]}::int[])
        AS p(id, position)
      WHERE channel_folder.id = p.id AND channel_folder.realm_id = ${actor.realmId}`;
  sendEventOnCommit(
    ctx,
    { type: 'channel_folder', op: 'reorder', order },
    await folderAudience(ctx, actor.realmId)(),
  );
}

export interface FolderChanges {
  name?: string;
  description?: string;
  isArchived?: boolean;
}

/** The changes of a PATCH that change something, checked as Zulip's view checks them: a free
 * name, and no channel (archived ones included) in a folder being archived. `folder` is locked
 * (channelFolderById's forUpdate). */
export async function checkChannelFolderChanges(
  tx: Tx,
  folder: ChannelFolder,
  requested: FolderChanges,
): Promise<FolderChanges> {
  const changes: FolderChanges = {};
  if (requested.name !== undefined && requested.name !== folder.name) {
    await checkChannelFolderName(tx, folder.realmId, requested.name, folder.id);
    changes.name = requested.name;
  }
  if (requested.description !== undefined && requested.description !== folder.description)
    changes.description = requested.description;
  if (requested.isArchived !== undefined && requested.isArchived !== folder.isArchived) {
    if (requested.isArchived && (await tx.stream.findFirst({ where: { folderId: folder.id } })))
      throw new JsonableError(
        'You need to remove all the channels from this folder to archive it.',
      );
    changes.isArchived = requested.isArchived;
  }
  return changes;
}

/** PATCH /channel_folders/{id}, after checkChannelFolderChanges: each change in Zulip's order
 * (name, description, archival), audited and sent as its own update event. */
export async function doUpdateChannelFolder(
  ctx: ActionContext,
  actor: User,
  folder: ChannelFolder,
  changes: FolderChanges,
): Promise<void> {
  const { tx } = ctx;
  const audience = folderAudience(ctx, actor.realmId);
  const update = async (
    data: Partial<ChannelFolder>,
    eventType: number,
    event: Partial<ChannelFolderEntry>,
    audit: Record<string, unknown> = {},
  ) => {
    await tx.channelFolder.update({ where: { id: folder.id }, data }).catch(refuseTakenName);
    await auditRealmChange(ctx, actor, eventType, audit, { modifiedChannelFolderId: folder.id });
    sendEventOnCommit(
      ctx,
      { type: 'channel_folder', op: 'update', channel_folder_id: folder.id, data: event },
      await audience(),
    );
  };
  if (changes.name !== undefined)
    await update(
      { name: changes.name },
      AuditLogEvent.CHANNEL_FOLDER_NAME_CHANGED,
      { name: changes.name },
      { old_value: folder.name, new_value: changes.name },
    );
  if (changes.description !== undefined) {
    const rendered = await renderDescriptionForRealm(actor.realmId, changes.description, tx);
    await update(
      { description: changes.description, renderedDescription: rendered },
      AuditLogEvent.CHANNEL_FOLDER_DESCRIPTION_CHANGED,
      { description: changes.description, rendered_description: rendered },
      { old_value: folder.description, new_value: changes.description },
    );
  }
  if (changes.isArchived !== undefined)
    await update(
      { isArchived: changes.isArchived },
      changes.isArchived
        ? AuditLogEvent.CHANNEL_FOLDER_ARCHIVED
        : AuditLogEvent.CHANNEL_FOLDER_UNARCHIVED,
      { is_archived: changes.isArchived },
    );
}
