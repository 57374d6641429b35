// Who may do what to a named user group (Zulip's access_user_group_for_update and
// user_has_permission_for_group_setting): the organization's can_manage_all_groups may do
// everything, a group's can_manage_group may do everything to it, and each of its other
// settings (can_add_members_group …) grants one thing more. System groups are read-only.
import {
  getPrisma,
  query,
  statement,
  type Realm,
  type Tx,
  type User,
  type UserGroup,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { GROUP_PERMISSION_SETTINGS, type GroupPermissionSettingName } from './permission-settings';
import { hasRealmPermission } from './realm-permissions';
import { membershipOf, type Membership } from './user-groups-state';
import { isGuest } from './users';

/** The column of each group setting. */
export const GROUP_SETTING_COLUMN = {
  can_add_members_group: 'canAddMembersGroupId',
  can_join_group: 'canJoinGroupId',
  can_leave_group: 'canLeaveGroupId',
  can_manage_group: 'canManageGroupId',
  can_mention_group: 'canMentionGroupId',
  can_remove_members_group: 'canRemoveMembersGroupId',
} as const satisfies Record<GroupPermissionSettingName, keyof UserGroup>;

export const GROUP_SETTING_NAMES = Object.keys(
  GROUP_SETTING_COLUMN,
) as GroupPermissionSettingName[];

/** A named group's row (anonymous groups have no name and no settings). */
export type NamedGroup = UserGroup & { name: string };

/** Zulip's require_non_guest_user, which every user-group endpoint has (bots may call them
 * since feature level 496). */
export function checkNotGuest(user: User): void {
  if (isGuest(user)) throw new JsonableError('Not allowed for guest users');
}

/** A named group of the organization, locked for the rest of the transaction when `lock`
 * (Zulip's get_user_group_by_id_in_realm). */
export async function getNamedGroup(
  tx: Tx,
  realmId: number,
  groupId: number,
  { allowDeactivated = false, lock = false }: { allowDeactivated?: boolean; lock?: boolean } = {},
): Promise<NamedGroup> {
  if (lock)
    await tx.$queryRaw`SELECT id FROM user_group
      WHERE id = ${groupId} AND realm_id = ${realmId} AND name IS NOT NULL FOR UPDATE`;
  const group = await tx.userGroup.findFirst({
    where: { id: groupId, realmId, name: { not: null } },
  });
  if (!group) throw new JsonableError('Invalid user group');
  if (group.deactivated && !allowDeactivated) throw new JsonableError('User group is deactivated.');
  return group as NamedGroup;
}

/** A named group of the organization for a read outside any transaction. */
export async function accessNamedGroup(realmId: number, groupId: number): Promise<NamedGroup> {
  return getNamedGroup(getPrisma(), realmId, groupId);
}

/** Whether a member of `membership` holds the permission a group setting naming `groupId`
 * grants; guests never hold those that may not name "everyone". */
export function inGroupSetting(
  user: Pick<User, 'role'>,
  membership: Membership,
  setting: GroupPermissionSettingName,
  groupId: number | null,
): boolean {
  if (groupId === null) return false;
  if (isGuest(user) && !GROUP_PERMISSION_SETTINGS[setting].allowEveryone) return false;
  return membership.ids.has(groupId);
}

/** Whether `user` may do what `permission` governs in `group`, beyond the group's managers
 * and the organization's can_manage_all_groups (who may do everything). */
export async function hasGroupPermission(
  realm: Realm,
  user: User,
  group: NamedGroup,
  permission: GroupPermissionSettingName,
  membership?: Membership,
): Promise<boolean> {
  if (group.isSystemGroup) return false;
  if (await hasRealmPermission(realm, user, 'can_manage_all_groups')) return true;
  const groups = membership ?? (await membershipOf(user.id));
  const holds = (setting: GroupPermissionSettingName) =>
    inGroupSetting(user, groups, setting, group[GROUP_SETTING_COLUMN[setting]]);
  return holds('can_manage_group') || (permission !== 'can_manage_group' && holds(permission));
}

/** Zulip's access_user_group_for_update: loads and locks the group, then refuses unless
 * `user` may do what `permission` governs. */
export async function accessUserGroupForUpdate(
  tx: Tx,
  realm: Realm,
  user: User,
  groupId: number,
  permission: GroupPermissionSettingName,
  { allowDeactivated = false }: { allowDeactivated?: boolean } = {},
): Promise<NamedGroup> {
  const group = await getNamedGroup(tx, realm.id, groupId, { allowDeactivated, lock: true });
  if (!(await hasGroupPermission(realm, user, group, permission)))
    throw new JsonableError('Insufficient permission');
  return group;
}

/** Refuses unless `user` may add members to every group of `groupIds` (invitations check the
 * groups new users will join, as Zulip's access_user_groups_for_invite). Throws Zulip's
 * messages: "Invalid user group", "User group is deactivated.", "Insufficient permission". */
export async function checkCanAddMembersToGroups(
  realm: Realm,
  user: User,
  groupIds: number[],
): Promise<void> {
  const ids = [...new Set(groupIds)];
  if (ids.length === 0) return;
  const db = getPrisma();
  const membership = await membershipOf(user.id);
  for (const id of ids) {
    const group = await getNamedGroup(db, realm.id, id);
    if (!(await hasGroupPermission(realm, user, group, 'can_add_members_group', membership)))
      throw new JsonableError('Insufficient permission');
  }
}

const mentionSettings = statement<
  { id: number; name: string; canMentionGroupId: number | null },
  [number[]]
>(`SELECT id, name, can_mention_group_id AS "canMentionGroupId" FROM user_group
  WHERE id = ANY($1::int[]) ORDER BY id`);

/** Zulip's check_user_group_mention_allowed, for the edit path: refuses a message that
 * mentions (not silently) a group the sender is not in the can_mention_group of.
 * `senderGroupIds` are the sender's groups, through subgroups (one statement). */
export async function checkGroupMentionsAllowed(
  sender: Pick<User, 'role'>,
  senderGroupIds: Set<number>,
  mentionedGroupIds: Iterable<number>,
): Promise<void> {
  const ids = [...new Set(mentionedGroupIds)];
  if (ids.length === 0) return;
  assertGroupMentionsAllowed(sender, senderGroupIds, await query(mentionSettings, [ids]));
}

/** The same check on groups already read (a send reads them with what its content names). */
export function assertGroupMentionsAllowed(
  sender: Pick<User, 'role'>,
  senderGroupIds: Set<number>,
  mentioned: readonly { id: number; name: string; canMentionGroupId: number | null }[],
): void {
  const membership = { ids: senderGroupIds, names: new Set<string>() };
  for (const group of [...mentioned].sort((a, b) => a.id - b.id))
    if (!inGroupSetting(sender, membership, 'can_mention_group', group.canMentionGroupId))
      throw new JsonableError(`You are not allowed to mention user group '${group.name}'.`);
}
