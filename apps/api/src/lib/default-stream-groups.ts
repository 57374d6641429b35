// Default channel groups (Zulip's DefaultStreamGroup): what /register's
// realm_default_stream_groups and the default_stream_groups event show, and how a request
// finds one group. Their changes are actions/default-stream-groups.ts.
import { query, statement, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';

/** Zulip's DefaultStreamGroup.to_dict: its channels as ids, in the order of their names
 * (feature level 330). */
export interface DefaultStreamGroupEntry {
  name: string;
  id: number;
  description: string;
  streams: number[];
}

/** Zulip's DefaultStreamGroup.MAX_NAME_LENGTH and its description's column. */
export const MAX_DEFAULT_STREAM_GROUP_NAME_LENGTH = 60;
export const MAX_DEFAULT_STREAM_GROUP_DESCRIPTION_LENGTH = 1024;

// Sorted by name as Zulip's default_stream_groups_to_dicts_sorted sorts them (Python compares
// code points, as COLLATE "C" does).
const groupsOfRealm = statement<DefaultStreamGroupEntry, [number]>(`
  SELECT g.name, g.id, g.description, ARRAY(
      SELECT s.id FROM default_stream_group_streams gs JOIN stream s ON s.id = gs.stream_id
      WHERE gs.defaultstreamgroup_id = g.id ORDER BY s.name COLLATE "C", s.id) AS streams
  FROM default_stream_group g WHERE g.realm_id = $1
  ORDER BY g.name COLLATE "C", g.id`);

/** In the current action's transaction when there is one (typed SQL follows runAction). */
export function defaultStreamGroupsOf(realmId: number): Promise<DefaultStreamGroupEntry[]> {
  return query(groupsOfRealm, [realmId]);
}

export interface DefaultStreamGroupRow {
  id: number;
  name: string;
  description: string;
  streamIds: number[];
}

/** Zulip's access_default_stream_group_by_id, with the group's channels; locked for the rest
 * of the transaction, so concurrent changes to one group apply one after the other. */
export async function lockDefaultStreamGroup(
  tx: Tx,
  realmId: number,
  groupId: number,
): Promise<DefaultStreamGroupRow> {
  const [group] = await tx.$queryRaw<DefaultStreamGroupRow[]>`
    SELECT g.id, g.name, g.description, ARRAY(
        SELECT stream_id FROM default_stream_group_streams WHERE defaultstreamgroup_id = g.id
        ORDER BY stream_id) AS "streamIds"
    FROM default_stream_group g
    WHERE g.realm_id = ${realmId} AND g.id = ${groupId}
    FOR UPDATE OF g`;
  if (!group) throw new JsonableError(`Default channel group with id '${groupId}' does not exist.`);
  return group;
}
