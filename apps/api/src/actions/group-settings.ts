// Storing a group-valued setting (Zulip's "group settings"): the value a request names is
// checked against the organization's groups, and an anonymous group is written as a group row
// of its own. Reading and presenting settings is lib/groups.ts.
import { SYSTEM_GROUPS, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';
import type { GroupSettingValue } from '../lib/groups';

export interface GroupSettingRules {
  /** System groups the setting may not name (Zulip refuses e.g. "everyone on the internet"). */
  forbidden?: string[];
}

/** Validates a requested setting and returns the group id to store: a named group of this
 * organization, or a new anonymous group row for `{direct_members, direct_subgroups}`. An
 * anonymous group with no subgroups and one named subgroup is stored as that group. */
export async function checkGroupSetting(
  tx: Tx,
  realmId: number,
  setting: string,
  value: GroupSettingValue,
  rules: GroupSettingRules = {},
): Promise<number> {
  const forbidden = new Set(rules.forbidden ?? [SYSTEM_GROUPS.EVERYONE_ON_INTERNET]);
  // Zulip's get_user_group_by_id_in_realm for the setting's own group ("Invalid user group"),
  // update_or_create_user_group_for_setting for an anonymous group's subgroups ("Invalid
  // user group ID: N"); a deactivated group is refused the same way in both.
  const assertAllowed = async (ids: number[], unknown: (id: number) => string) => {
    if (ids.length === 0) return;
    const groups = await tx.userGroup.findMany({
      where: { id: { in: ids }, realmId, name: { not: null } },
      select: { id: true, name: true, deactivated: true },
    });
    for (const id of ids) {
      const group = groups.find((g) => g.id === id);
      if (!group) throw new JsonableError(unknown(id));
      if (group.deactivated) throw new JsonableError('User group is deactivated.');
      if (forbidden.has(group.name!))
        throw new JsonableError(`'${setting}' setting cannot be set to '${group.name}' group.`);
    }
  };
  if (typeof value === 'number') {
    await assertAllowed([value], () => 'Invalid user group');
    return value;
  }
  const members = [...new Set(value.direct_members)];
  const subgroups = [...new Set(value.direct_subgroups)];
  await assertAllowed(subgroups, (id) => `Invalid user group ID: ${id}`);
  if (members.length > 0) {
    const found = await tx.user.count({ where: { id: { in: members }, realmId } });
    if (found !== members.length) {
      const known = new Set(
        (
          await tx.user.findMany({ where: { id: { in: members }, realmId }, select: { id: true } })
        ).map((u) => u.id),
      );
      throw new JsonableError(`Invalid user ID: ${members.find((id) => !known.has(id))}`);
    }
  }
  if (members.length === 0 && subgroups.length === 1) return subgroups[0]!;
  if (members.length === 0 && subgroups.length === 0) {
    const nobody = await tx.userGroup.findFirst({
      where: { realmId, name: SYSTEM_GROUPS.NOBODY },
      select: { id: true },
    });
    return nobody!.id;
  }
  const group = await tx.userGroup.create({ data: { realmId, isSystemGroup: false } });
  if (members.length > 0)
    await tx.userGroupMembership.createMany({
      data: members.map((userId) => ({ userGroupId: group.id, userId })),
    });
  if (subgroups.length > 0)
    await tx.groupGroupMembership.createMany({
      data: subgroups.map((subgroupId) => ({ supergroupId: group.id, subgroupId })),
    });
  return group.id;
}
