// Organization-wide permissions of one user (Zulip's user_has_permission_for_group_setting on
// the realm's group settings): membership, through subgroups, of the group a setting names.
import type { Realm, User } from '@parley/db';
import type { RealmPermissionSetting } from './permission-settings';
import { inRealmSetting } from './realm-state';
import { membershipOf } from './user-groups-state';

/** Whether `user` may do what the organization's `setting` governs (one query). Deactivated
 * users and, unless the setting allows everyone, guests fall out of the groups by role. */
export async function hasRealmPermission(
  realm: Realm,
  user: Pick<User, 'id'>,
  setting: RealmPermissionSetting,
): Promise<boolean> {
  return inRealmSetting(realm, setting, await membershipOf(user.id));
}
