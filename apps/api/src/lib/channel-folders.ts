// The organization's channel folders as the API shows them (Zulip's ChannelFolderDict, with
// `order` since feature level 414): GET /channel_folders, /register's channel_folders and the
// channel_folder add event. One prepared statement, since every /register reads them.
import { columnsOf, query, statement, type ChannelFolder, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';

/** Zulip's ChannelFolder.MAX_NAME_LENGTH and MAX_DESCRIPTION_LENGTH (/register reports both). */
export const MAX_CHANNEL_FOLDER_NAME_LENGTH = 60;
export const MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH = 1024;

export interface ChannelFolderEntry {
  id: number;
  name: string;
  description: string;
  rendered_description: string;
  order: number;
  creator_id: number | null;
  date_created: number;
  is_archived: boolean;
}

export function presentChannelFolder(folder: ChannelFolder): ChannelFolderEntry {
  return {
    id: folder.id,
    name: folder.name,
    description: folder.description,
    rendered_description: folder.renderedDescription,
    order: folder.order,
    creator_id: folder.creatorId,
    date_created: Math.floor(folder.dateCreated.getTime() / 1000),
    is_archived: folder.isArchived,
  };
}

// $2: whether archived folders are included. Sorted by `order` as Zulip sorts them since
// feature level 414 (ids break ties between folders made before any reordering).
const foldersOfRealm = statement<ChannelFolder, [number, boolean]>(
  `SELECT ${columnsOf('ChannelFolder', 'f')} FROM channel_folder f
   WHERE f.realm_id = $1 AND ($2 OR NOT f.is_archived) ORDER BY f."order", f.id`,
);

/** In the current action's transaction when there is one (typed SQL follows runAction). */
export async function channelFoldersOf(
  realmId: number,
  includeArchived: boolean,
): Promise<ChannelFolderEntry[]> {
  return (await query(foldersOfRealm, [realmId, includeArchived])).map(presentChannelFolder);
}

/** Zulip's get_channel_folder_by_id: a folder of the caller's organization, archived or not.
 * `forUpdate` locks it until the transaction ends, so that archiving it and checking that no
 * channel is in it see the same channels. (A channel put in it meanwhile waits for the archive
 * to commit and then goes in, as Zulip lets channels into archived folders.) */
export async function channelFolderById(
  tx: Tx,
  realmId: number,
  folderId: number,
  { forUpdate = false } = {},
): Promise<ChannelFolder> {
  if (forUpdate)
    await tx.$executeRaw`
      SELECT 1 FROM channel_folder WHERE id = ${folderId} AND realm_id = ${realmId} FOR UPDATE`;
  const folder = await tx.channelFolder.findFirst({ where: { id: folderId, realmId } });
  if (!folder) throw new JsonableError('Invalid channel folder ID');
  return folder;
}

/** Each id's position in a reorder request. A repeated id takes its last position, as
 * Zulip's order mapping does, both when the order is stored and when an event is applied. */
export function orderPositions(order: number[]): Map<number, number> {
  return new Map(order.map((id, position) => [id, position]));
}
