// The organization's user groups as /register needs them (Zulip's
// user_groups_in_realm_serialized): the named groups for realm_user_groups, and the members of
// the anonymous groups that organization settings point at, so that group-setting values can
// be given as {direct_members, direct_subgroups}. One query serves both.
import { query, statement, type Realm } from '@parley/db';
import { SYSTEM_GROUPS } from '../actions/system-groups';
import { presentUserGroup } from '../presenters/user-groups';
import type { GroupSettingValue } from './groups';
import { GROUP_PERMISSION_SETTINGS, type GroupPermissionSettingName } from './permission-settings';

export interface GroupRow {
  id: number;
  name: string | null;
  description: string;
  is_system_group: boolean;
  deactivated: boolean;
  creator_id: number | null;
  date_created: Date;
  /** Direct members that are active users, sorted; null when not loaded. */
  members: number[] | null;
  /** Direct subgroups, sorted; null when not loaded. */
  subgroups: number[] | null;
}

export interface RealmGroups {
  /** Named groups and the anonymous groups of `settingGroupIds`, by id. */
  rows: GroupRow[];
  /** The system groups' ids by name (role:members …). */
  systemIds: Map<string, number>;
  /** The API form of a setting naming `groupId`: the id of a named group, or an anonymous
   * group's contents. */
  settingValue(groupId: number): GroupSettingValue;
}

const realmGroupRows = statement<GroupRow, [number, number[], boolean]>(`
  SELECT g.id, g.name, g.description, g.is_system_group, g.deactivated, g.creator_id,
         g.date_created,
         CASE WHEN $3::boolean OR g.name IS NULL THEN ARRAY(
           SELECT m.user_profile_id FROM user_group_membership m
             JOIN user_profile u ON u.id = m.user_profile_id
           WHERE m.user_group_id = g.id AND u.is_active ORDER BY 1) END AS members,
         CASE WHEN $3::boolean OR g.name IS NULL THEN ARRAY(
           SELECT s.subgroup_id FROM group_group_membership s
           WHERE s.supergroup_id = g.id ORDER BY 1) END AS subgroups
  FROM user_group g
  WHERE g.realm_id = $1 AND (g.name IS NOT NULL OR g.id = ANY($2::int[]))
  ORDER BY g.id`);

/** Loads the realm's named groups (with their members when `withMembers`: only
 * realm_user_groups lists them) and the anonymous groups in `settingGroupIds`. */
export async function loadRealmGroups(
  realm: Pick<Realm, 'id'>,
  settingGroupIds: number[],
  withMembers: boolean,
): Promise<RealmGroups> {
  const rows = await query(realmGroupRows, [realm.id, settingGroupIds, withMembers]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return {
    rows,
    systemIds: new Map(
      rows
        .filter((row) => row.is_system_group && row.name !== null)
        .map((row) => [row.name!, row.id]),
    ),
    settingValue(groupId) {
      const row = byId.get(groupId);
      if (!row || row.name !== null) return groupId;
      return { direct_members: row.members ?? [], direct_subgroups: row.subgroups ?? [] };
    },
  };
}

/** realm_user_groups: the named groups sorted by id, deactivated ones only for clients with
 * the include_deactivated_groups capability. Parley stores no group permission settings yet,
 * so each group reports Zulip's defaults: "nobody" throughout for system groups; for other
 * groups an anonymous group of the creator where Zulip uses "group_creator". */
export function presentRealmUserGroups(
  groups: RealmGroups,
  includeDeactivated: boolean,
): Record<string, unknown>[] {
  const nobody = groups.systemIds.get(SYSTEM_GROUPS.NOBODY)!;
  return groups.rows
    .filter((row) => row.name !== null && (includeDeactivated || !row.deactivated))
    .map((row) => {
      const settings = {} as Record<GroupPermissionSettingName, GroupSettingValue>;
      for (const [name, spec] of Object.entries(GROUP_PERMISSION_SETTINGS)) {
        const groupName = row.is_system_group ? spec.defaultForSystemGroups! : spec.default;
        settings[name as GroupPermissionSettingName] =
          groupName === 'group_creator'
            ? row.creator_id === null
              ? nobody
              : { direct_members: [row.creator_id], direct_subgroups: [] }
            : (groups.systemIds.get(groupName) ?? nobody);
      }
      return presentUserGroup(row, settings);
    });
}

export interface Membership {
  /** Every group the user belongs to, directly or through subgroups. */
  ids: Set<number>;
  /** The names of those that are named (system groups among them). */
  names: Set<string>;
}

const membershipRows = statement<{ id: number; name: string | null }, [number]>(`
  WITH RECURSIVE g(id) AS (
    SELECT user_group_id FROM user_group_membership WHERE user_profile_id = $1
    UNION
    SELECT ggm.supergroup_id FROM group_group_membership ggm JOIN g ON ggm.subgroup_id = g.id
  )
  SELECT g.id, (SELECT name FROM user_group WHERE id = g.id) AS name FROM g`);

/** The user's groups, by id and by name, in one query: settings Parley stores name a group id,
 * the ones it does not store fall back to a system group by name. The names are looked up
 * per group (a handful) rather than joined, which would invite a scan of every group. */
export async function membershipOf(userId: number): Promise<Membership> {
  const rows = await query(membershipRows, [userId]);
  return {
    ids: new Set(rows.map((row) => row.id)),
    names: new Set(rows.flatMap((row) => (row.name === null ? [] : [row.name]))),
  };
}
