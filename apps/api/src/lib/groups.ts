// Group-valued permission settings (Zulip's "group settings"): a setting names either a
// system group by id or an anonymous group given as its direct members and subgroups. Group
// membership is transitive through subgroups ("moderators" contains "administrators").
import { query, statement } from '@parley/db';

export interface AnonymousGroup {
  direct_members: number[];
  direct_subgroups: number[];
}

/** How settings travel in the API: a named group's id, or an anonymous group's contents. */
export type GroupSettingValue = number | AnonymousGroup;

/** One level of a walk through the subgroup links from the groups of the recursive CTE `g`: up
 * to their supergroups, or down to their subgroups. Each group's links are read through the
 * index on its own column. OFFSET 0 keeps PostgreSQL from flattening the subquery into a join:
 * it planned that join as a hash join that scanned every organization's links at each level
 * (the benchmark database's 2,260 links: 0.19 ms for a member's groups, 0.03 ms this way). */
export function groupWalkStep(direction: 'up' | 'down'): string {
  const [next, from] =
    direction === 'up' ? ['supergroup_id', 'subgroup_id'] : ['subgroup_id', 'supergroup_id'];
  return `SELECT link.id FROM g, LATERAL (
        SELECT ggm.${next} AS id FROM group_group_membership ggm WHERE ggm.${from} = g.id OFFSET 0
      ) link`;
}

/** SQL for the array of every group the user `$param` belongs to, directly or through
 * subgroups, for statements that need it beside their own columns. */
export function groupIdsOfUserSql(param: string): string {
  return `ARRAY(
    WITH RECURSIVE g(id) AS (
      SELECT user_group_id FROM user_group_membership WHERE user_profile_id = ${param}
      UNION
      ${groupWalkStep('up')}
    )
    SELECT id FROM g)`;
}

const groupIdsOfUserStatement = statement<{ ids: number[] }, [number]>(
  `SELECT ${groupIdsOfUserSql('$1')} AS ids`,
);

/** Ids of every group `userId` belongs to, directly or through subgroups. One query answers
 * every permission check of a request (in the caller's transaction, if any). */
export async function groupIdsOfUser(userId: number): Promise<Set<number>> {
  const [row] = await query(groupIdsOfUserStatement, [userId]);
  return new Set(row!.ids);
}

/** SQL for the active users of the groups `seed` selects (a SELECT of group ids: a set-returning
 * expression, or a correlated column), directly or through subgroups, each once; for
 * statements that need them beside their own columns (wrap it in ARRAY(…)). */
export function activeMembersSql(seed: string): string {
  return `
    WITH RECURSIVE g(id) AS (
      SELECT ${seed}
      UNION
      ${groupWalkStep('down')}
    )
    SELECT DISTINCT u.id FROM user_group_membership m
      JOIN g ON m.user_group_id = g.id
      JOIN user_profile u ON u.id = m.user_profile_id
    WHERE u.is_active`;
}

const activeMembersOfGroups = statement<{ id: number }, [number[]]>(
  activeMembersSql('unnest($1::int[])'),
);

/** Active users in any of `groupIds`, directly or through subgroups. */
export async function activeMemberIds(groupIds: number[]): Promise<number[]> {
  if (groupIds.length === 0) return [];
  return (await query(activeMembersOfGroups, [groupIds])).map((row) => row.id);
}

const systemGroupsOfRealm = statement<{ id: number; name: string }, [number]>(
  `SELECT id, name FROM user_group WHERE realm_id = $1 AND is_system_group`,
);

/** The organization's system groups by name (role:members …), in the caller's transaction if
 * any. */
export async function systemGroupIds(realmId: number): Promise<Map<string, number>> {
  const groups = await query(systemGroupsOfRealm, [realmId]);
  return new Map(groups.map((group) => [group.name, group.id]));
}

// Only anonymous groups (no name) need their members and subgroups.
const groupSettingRows = statement<
  { id: number; name: string | null; members: number[] | null; subgroups: number[] | null },
  [number[]]
>(`
  SELECT g.id, g.name,
    CASE WHEN g.name IS NULL THEN ARRAY(
      SELECT m.user_profile_id FROM user_group_membership m
        JOIN user_profile u ON u.id = m.user_profile_id
      WHERE m.user_group_id = g.id AND u.is_active ORDER BY 1
    ) END AS members,
    CASE WHEN g.name IS NULL THEN ARRAY(
      SELECT subgroup_id FROM group_group_membership WHERE supergroup_id = g.id ORDER BY 1
    ) END AS subgroups
  FROM user_group g WHERE g.id = ANY($1::int[])`);

/** API form of the settings held in `groupIds`: named groups by id, anonymous ones expanded
 * to their active direct members (as /register shows them, and as Zulip does). */
export async function presentGroupSettings(
  groupIds: Iterable<number>,
): Promise<Map<number, GroupSettingValue>> {
  const groups = await query(groupSettingRows, [[...new Set(groupIds)]]);
  return new Map(
    groups.map((group) => [
      group.id,
      group.name !== null
        ? group.id
        : { direct_members: group.members ?? [], direct_subgroups: group.subgroups ?? [] },
    ]),
  );
}

/** A `{new, old}` change of a group setting (Zulip's GroupSettingChangeRequest): `old`, when
 * given, must match what the setting holds. */
export interface GroupSettingChange {
  new: GroupSettingValue;
  old?: GroupSettingValue | null;
}

/** The form a value is stored and compared in, as checkGroupSetting stores it: an anonymous
 * group of one subgroup and no members is that subgroup, an empty one is "nobody"; members
 * and subgroups sorted and each once. */
export function normalizeGroupSetting(
  value: GroupSettingValue,
  nobodyId: number,
): GroupSettingValue {
  if (typeof value === 'number') return value;
  const members = [...new Set(value.direct_members)].sort((a, b) => a - b);
  const subgroups = [...new Set(value.direct_subgroups)].sort((a, b) => a - b);
  if (members.length === 0 && subgroups.length === 1) return subgroups[0]!;
  if (members.length === 0 && subgroups.length === 0) return nobodyId;
  return { direct_members: members, direct_subgroups: subgroups };
}

/** Whether two normalized values name the same group or the same members and subgroups. */
export function sameGroupSetting(a: GroupSettingValue, b: GroupSettingValue): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  return (
    a.direct_members.join(',') === b.direct_members.join(',') &&
    a.direct_subgroups.join(',') === b.direct_subgroups.join(',')
  );
}

// ---- Reads of one named group (GET /user_groups/{id}/members, /subgroups) -------------------

const directActiveMembers = statement<{ id: number }, [number]>(`
  SELECT m.user_profile_id AS id FROM user_group_membership m
    JOIN user_profile u ON u.id = m.user_profile_id
  WHERE m.user_group_id = $1 AND u.is_active ORDER BY 1`);

/** Active members of a group: direct ones, or (Zulip's get_recursive_group_members) those of
 * its subgroups too; ascending. */
export async function groupMemberIds(groupId: number, directOnly: boolean): Promise<number[]> {
  if (directOnly) return (await query(directActiveMembers, [groupId])).map((row) => row.id);
  return (await activeMemberIds([groupId])).sort((a, b) => a - b);
}

const strictSubgroups = statement<{ id: number }, [number]>(`
  WITH RECURSIVE g(id) AS (
    SELECT subgroup_id FROM group_group_membership WHERE supergroup_id = $1
    UNION
    ${groupWalkStep('down')}
  )
  SELECT g.id FROM g JOIN user_group ug ON ug.id = g.id WHERE ug.name IS NOT NULL ORDER BY 1`);
const directSubgroups = statement<{ id: number }, [number]>(
  `SELECT subgroup_id AS id FROM group_group_membership WHERE supergroup_id = $1 ORDER BY 1`,
);

/** A group's subgroups: direct ones, or every named group below it. */
export async function subgroupIdsOf(groupId: number, directOnly: boolean): Promise<number[]> {
  return (await query(directOnly ? directSubgroups : strictSubgroups, [groupId])).map(
    (row) => row.id,
  );
}

/** Whether the user is a direct member of the group (not through a subgroup). */
export async function isDirectMember(groupId: number, userId: number): Promise<boolean> {
  const [row] = await query(directMembership, [groupId, userId]);
  return row !== undefined;
}

const directMembership = statement<{ one: number }, [number, number]>(`
  SELECT 1 AS one FROM user_group_membership WHERE user_group_id = $1 AND user_profile_id = $2`);
