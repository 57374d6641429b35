// Zulip's role-based system groups, created with every organization. Group-based permission
// settings (later issues) point at these; each role group contains the next-higher role group
// as a subgroup, so "moderators" includes administrators and owners.
import { Role, SYSTEM_GROUPS, type RoleValue, type Tx } from '@parley/db';

const DESCRIPTIONS: Record<string, string> = {
  [SYSTEM_GROUPS.OWNERS]: 'Owners of this organization',
  [SYSTEM_GROUPS.ADMINISTRATORS]: 'Administrators of this organization, including owners',
  [SYSTEM_GROUPS.MODERATORS]: 'Moderators of this organization, including administrators',
  [SYSTEM_GROUPS.FULL_MEMBERS]:
    'Members of this organization, not including new accounts and guests',
  [SYSTEM_GROUPS.MEMBERS]: 'Members of this organization, not including guests',
  [SYSTEM_GROUPS.EVERYONE]: 'Everyone in this organization, including guests',
  [SYSTEM_GROUPS.EVERYONE_ON_INTERNET]: 'Everyone on the Internet',
  [SYSTEM_GROUPS.NOBODY]: 'Nobody',
};

/** [supergroup, subgroup] edges. */
const EDGES: [string, string][] = [
  [SYSTEM_GROUPS.ADMINISTRATORS, SYSTEM_GROUPS.OWNERS],
  [SYSTEM_GROUPS.MODERATORS, SYSTEM_GROUPS.ADMINISTRATORS],
  [SYSTEM_GROUPS.FULL_MEMBERS, SYSTEM_GROUPS.MODERATORS],
  [SYSTEM_GROUPS.MEMBERS, SYSTEM_GROUPS.FULL_MEMBERS],
  [SYSTEM_GROUPS.EVERYONE, SYSTEM_GROUPS.MEMBERS],
  [SYSTEM_GROUPS.EVERYONE_ON_INTERNET, SYSTEM_GROUPS.EVERYONE],
];

/** Groups a user of `role` is a direct member of. Members join "full members" at once: the
 * organization's waiting period starts at 0 days. */
export function systemGroupsForRole(role: RoleValue): string[] {
  switch (role) {
    case Role.OWNER:
      return [SYSTEM_GROUPS.OWNERS];
    case Role.ADMINISTRATOR:
      return [SYSTEM_GROUPS.ADMINISTRATORS];
    case Role.MODERATOR:
      return [SYSTEM_GROUPS.MODERATORS];
    case Role.MEMBER:
      return [SYSTEM_GROUPS.MEMBERS, SYSTEM_GROUPS.FULL_MEMBERS];
    case Role.GUEST:
      return [SYSTEM_GROUPS.EVERYONE];
  }
}

/** The group settings every system group holds: "nobody" throughout (Zulip's
 * default_for_system_groups), so system groups are read-only. */
const GROUP_SETTING_COLUMNS = [
  'canAddMembersGroupId',
  'canJoinGroupId',
  'canLeaveGroupId',
  'canManageGroupId',
  'canMentionGroupId',
  'canRemoveMembersGroupId',
] as const;

/** Creates the groups and their edges; returns their ids by name. The ids are taken first, so
 * that every group, "nobody" itself included, can name "nobody" in its settings as it is
 * inserted (named groups must hold all their settings). */
export async function createSystemGroups(tx: Tx, realmId: number): Promise<Map<string, number>> {
  const names = Object.values(SYSTEM_GROUPS);
  const ids = (
    await tx.$queryRaw<{ id: number }[]>`
      SELECT nextval(pg_get_serial_sequence('user_group', 'id'))::int AS id
      FROM generate_series(1, ${names.length}::int)`
  )
    .map((row) => row.id)
    .sort((a, b) => a - b);
  const idOf = new Map(names.map((name, index) => [name as string, ids[index]!]));
  const nobody = idOf.get(SYSTEM_GROUPS.NOBODY)!;
  await tx.userGroup.createMany({
    data: names.map((name) => ({
      id: idOf.get(name)!,
      realmId,
      name,
      description: DESCRIPTIONS[name] ?? '',
      isSystemGroup: true,
      ...Object.fromEntries(GROUP_SETTING_COLUMNS.map((column) => [column, nobody])),
    })),
  });
  await tx.groupGroupMembership.createMany({
    data: EDGES.map(([supergroup, subgroup]) => ({
      supergroupId: idOf.get(supergroup)!,
      subgroupId: idOf.get(subgroup)!,
    })),
  });
  return idOf;
}
