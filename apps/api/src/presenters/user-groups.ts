// User group rows → the group objects of realm_user_groups (Zulip's UserGroupDict).
import type { GroupSettingValue } from '../lib/groups';
import type { GroupPermissionSettingName } from '../lib/permission-settings';
import type { GroupRow } from '../lib/user-groups-state';

export function presentUserGroup(
  group: GroupRow,
  settings: Record<GroupPermissionSettingName, GroupSettingValue>,
): Record<string, unknown> {
  return {
    id: group.id,
    name: group.name,
    creator_id: group.creator_id,
    date_created: Math.floor(group.date_created.getTime() / 1000),
    description: group.description,
    members: group.members ?? [],
    direct_subgroup_ids: group.subgroups ?? [],
    is_system_group: group.is_system_group,
    ...settings,
    deactivated: group.deactivated,
  };
}
