// The organization's user groups as /register and GET /user_groups need them (Zulip's
// user_groups_in_realm_serialized): the named groups for realm_user_groups with their stored
// permission settings, and the members of the anonymous groups that organization and group
// settings point at, so that group-setting values can be given as {direct_members,
// direct_subgroups}. One query serves both. Raced user_group events fold in here too.
import { query, statement, type Realm, SYSTEM_GROUPS } from '@parley/db';
import { presentUserGroup } from '../presenters/user-groups';
import { groupWalkStep, type GroupSettingValue } from './groups';
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
  /** The groups a named group's permission settings name (null on anonymous groups). */
  setting_ids: Record<GroupPermissionSettingName, number | null>;
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

const SETTING_IDS_SQL = `json_build_object(${Object.keys(GROUP_PERMISSION_SETTINGS)
  .map((setting) => `'${setting}', g.${setting}_id`)
  .join(', ')})`;
const SETTING_COLUMNS_OF = (alias: string) =>
  `ARRAY[${Object.keys(GROUP_PERMISSION_SETTINGS)
    .map((setting) => `${alias}.${setting}_id`)
    .join(', ')}]`;

// $4: one named group only (with the anonymous groups its settings name), else every named
// group. With $3 (or $4), the anonymous groups the named groups' settings name come too.
const realmGroupRows = statement<GroupRow, [number, number[], boolean, number | null]>(`
  WITH named AS (
    SELECT n.* FROM user_group n
    WHERE n.realm_id = $1 AND n.name IS NOT NULL AND ($4::int IS NULL OR n.id = $4::int)
  ), wanted AS (
    SELECT id FROM named
    UNION SELECT unnest($2::int[])
    UNION SELECT unnest(${SETTING_COLUMNS_OF('n')}) FROM named n
      WHERE $3::boolean OR $4::int IS NOT NULL
  )
  SELECT g.id, g.name, g.description, g.is_system_group, g.deactivated, g.creator_id,
         g.date_created, ${SETTING_IDS_SQL} AS setting_ids,
         CASE WHEN $3::boolean OR $4::int IS NOT NULL OR g.name IS NULL THEN ARRAY(
           SELECT m.user_profile_id FROM user_group_membership m
             JOIN user_profile u ON u.id = m.user_profile_id
           WHERE m.user_group_id = g.id AND u.is_active ORDER BY 1) END AS members,
         CASE WHEN $3::boolean OR $4::int IS NOT NULL OR g.name IS NULL THEN ARRAY(
           SELECT s.subgroup_id FROM group_group_membership s
           WHERE s.supergroup_id = g.id ORDER BY 1) END AS subgroups
  FROM user_group g
  WHERE g.realm_id = $1 AND g.id IN (SELECT id FROM wanted)
  ORDER BY g.id`);

function realmGroups(rows: GroupRow[], systemIds?: Map<string, number>): RealmGroups {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return {
    rows,
    systemIds:
      systemIds ??
      new Map(
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

/** Loads the realm's named groups (with their members, and the anonymous groups their
 * settings name, when `withMembers`: only realm_user_groups lists them) and the anonymous
 * groups in `settingGroupIds`. */
export async function loadRealmGroups(
  realm: Pick<Realm, 'id'>,
  settingGroupIds: number[],
  withMembers: boolean,
): Promise<RealmGroups> {
  return realmGroups(await query(realmGroupRows, [realm.id, settingGroupIds, withMembers, null]));
}

/** The API object of one named group (Zulip's UserGroupDict), as events carry it; null if
 * there is no such named group. Reads in the caller's transaction, if any. */
export async function presentGroupById(
  realmId: number,
  groupId: number,
): Promise<Record<string, unknown> | null> {
  const groups = realmGroups(await query(realmGroupRows, [realmId, [], true, groupId]), new Map());
  const row = groups.rows.find((r) => r.id === groupId && r.name !== null);
  return row ? presentGroupRow(row, groups) : null;
}

/** The API value of one setting of a named group, given the groups loaded with it. */
export function presentGroupRow(row: GroupRow, groups: RealmGroups): Record<string, unknown> {
  const settings = {} as Record<GroupPermissionSettingName, GroupSettingValue>;
  for (const name of Object.keys(GROUP_PERMISSION_SETTINGS) as GroupPermissionSettingName[]) {
    const id = row.setting_ids[name];
    // Every named group holds all its settings (a CHECK constraint): null cannot happen.
    settings[name] =
      id === null ? (groups.systemIds.get(SYSTEM_GROUPS.NOBODY) ?? 0) : groups.settingValue(id);
  }
  return presentUserGroup(row, settings);
}

/** realm_user_groups and GET /user_groups: the named groups sorted by id with their stored
 * settings, deactivated ones only for clients with the include_deactivated_groups capability
 * (Zulip's user_groups_in_realm_serialized). */
export function presentRealmUserGroups(
  groups: RealmGroups,
  includeDeactivated: boolean,
): Record<string, unknown>[] {
  return groups.rows
    .filter((row) => row.name !== null && (includeDeactivated || !row.deactivated))
    .map((row) => presentGroupRow(row, groups));
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
    ${groupWalkStep('up')}
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

type GroupDict = Record<string, unknown> & {
  id: number;
  members: number[];
  direct_subgroup_ids: number[];
};

const addIds = (ids: number[], added: number[]) =>
  [...new Set([...ids, ...added])].sort((a, b) => a - b);

/** Folds a `user_group` event that raced the registration into realm_user_groups (Zulip's
 * apply_event). Events a queue does not take for its include_deactivated_groups capability
 * (lib/events internal_data) are skipped here too. */
export function applyUserGroupEvent(
  state: Record<string, unknown>,
  event: Record<string, unknown>,
  includeDeactivated: boolean,
): void {
  const groups = state.realm_user_groups as GroupDict[] | undefined;
  if (!groups) return;
  const find = (id: unknown) => groups.find((group) => group.id === id);
  switch (event.op) {
    case 'add': {
      const group = event.group as GroupDict;
      const index = groups.findIndex((g) => g.id === group.id);
      if (index === -1) groups.push({ ...group });
      else groups[index] = { ...group };
      groups.sort((a, b) => a.id - b.id);
      return;
    }
    case 'update': {
      const data = event.data as Record<string, unknown>;
      if ('deactivated' in data && !includeDeactivated) return;
      const group = find(event.group_id);
      if (group) Object.assign(group, data);
      return;
    }
    case 'remove': {
      if (includeDeactivated) return;
      const index = groups.findIndex((g) => g.id === event.group_id);
      if (index !== -1) groups.splice(index, 1);
      return;
    }
    case 'add_members':
    case 'remove_members': {
      const group = find(event.group_id);
      const ids = event.user_ids as number[];
      if (!group) return;
      group.members =
        event.op === 'add_members'
          ? addIds(group.members, ids)
          : group.members.filter((id) => !ids.includes(id));
      return;
    }
    case 'add_subgroups':
    case 'remove_subgroups': {
      const group = find(event.group_id);
      const ids = event.direct_subgroup_ids as number[];
      if (!group) return;
      group.direct_subgroup_ids =
        event.op === 'add_subgroups'
          ? addIds(group.direct_subgroup_ids, ids)
          : group.direct_subgroup_ids.filter((id) => !ids.includes(id));
      return;
    }
    default:
      return;
  }
}
