// User groups (spec 4.20; Zulip's zerver/actions/user_groups.py and the checks of
// zerver/views/user_groups.py): creating, renaming, membership, subgroups, permission
// settings, deactivation and reactivation. Every change tells the organization's active users
// in `user_group` events; deactivation is an update for clients with the
// include_deactivated_groups capability and a removal for the others.
import {
  AuditLogEvent,
  isUniqueViolation,
  Prisma,
  type ActionContext,
  type Realm,
  type Tx,
  type User,
  SYSTEM_GROUPS,
} from '@parley/db';
import {
  CannotDeactivateGroupInUseError,
  JsonableError,
  PreviousSettingValueMismatchedError,
} from '@parley/errors';
import type { ZulipEvent } from '@parley/events';
import { sendEventOnCommit } from '../lib/events';
import {
  groupWalkStep,
  normalizeGroupSetting,
  sameGroupSetting,
  type GroupSettingChange,
  type GroupSettingValue,
} from '../lib/groups';
import {
  GROUP_PERMISSION_SETTINGS,
  REALM_PERMISSION_SETTINGS,
  type GroupPermissionSettingName,
} from '../lib/permission-settings';
import { hasRealmPermission } from '../lib/realm-permissions';
import {
  accessUserGroupForUpdate,
  checkNotGuest,
  getNamedGroup,
  GROUP_SETTING_COLUMN,
  GROUP_SETTING_NAMES,
  type NamedGroup,
} from '../lib/user-group-permissions';
import { presentGroupById } from '../lib/user-groups-state';
import { activeUserIds } from '../lib/users';
import { metadataAudience, subscribersOf } from '../lib/streams';
import { STREAM_GROUP_SETTINGS } from '../presenters/streams';
import { announceAudienceChange } from './streams';
import { sendGroupMembershipNotices, type GroupMembershipChange } from './group-notices';

/** Zulip's NamedUserGroup.MAX_NAME_LENGTH and INVALID_NAME_PREFIXES. */
export const MAX_GROUP_NAME_LENGTH = 100;
/** The column's size (Zulip stores descriptions as unbounded text). */
export const MAX_GROUP_DESCRIPTION_LENGTH = 1024;
const INVALID_NAME_PREFIXES = ['@', 'role:', 'user:', 'stream:', 'channel:'];

// ---- Shared checks -----------------------------------------------------------------------------

/** Zulip's check_user_group_name. */
export function checkUserGroupName(name: string): string {
  if (name.trim() === '') throw new JsonableError("User group name can't be empty!");
  if ([...name].length > MAX_GROUP_NAME_LENGTH)
    throw new JsonableError(`User group name cannot exceed ${MAX_GROUP_NAME_LENGTH} characters.`);
  for (const prefix of INVALID_NAME_PREFIXES)
    if (name.startsWith(prefix))
      throw new JsonableError(`User group name cannot start with '${prefix}'.`);
  return name;
}

/** Zulip's user_ids_to_users without deactivated users: every id an active user of the
 * organization, in the order given, without repeats. */
async function activeUsersByIds(tx: Tx, realmId: number, ids: number[]): Promise<number[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const found = new Set(
    (
      await tx.user.findMany({
        where: { id: { in: unique }, realmId, isActive: true },
        select: { id: true },
      })
    ).map((user) => user.id),
  );
  const missing = unique.find((id) => !found.has(id));
  if (missing !== undefined) throw new JsonableError(`Invalid user ID: ${missing}`);
  return unique;
}

/** Named groups usable as subgroups (Zulip's lock_subgroups_with_respect_to_supergroup
 * checks): each of the organization, active. Locks them. */
async function accessSubgroups(tx: Tx, realmId: number, ids: number[]): Promise<number[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const groups = await tx.$queryRaw<{ id: number; deactivated: boolean }[]>`
    SELECT id, deactivated FROM user_group
    WHERE realm_id = ${realmId} AND name IS NOT NULL AND id = ANY(${unique}::int[])
    ORDER BY id FOR UPDATE`;
  const missing = unique.find((id) => !groups.some((group) => group.id === id));
  if (missing !== undefined) throw new JsonableError(`Invalid user group ID: ${missing}`);
  if (groups.some((group) => group.deactivated))
    throw new JsonableError('User group is deactivated.');
  return unique;
}

/** The API form of what a group setting holds now (anonymous groups: active members). */
async function settingApiValue(tx: Tx, groupId: number): Promise<GroupSettingValue> {
  const group = await tx.userGroup.findUniqueOrThrow({
    where: { id: groupId },
    select: {
      name: true,
      members: { where: { user: { isActive: true } }, select: { userId: true } },
      subgroups: { select: { subgroupId: true } },
    },
  });
  if (group.name !== null) return groupId;
  return {
    direct_members: group.members.map((m) => m.userId).sort((a, b) => a - b),
    direct_subgroups: group.subgroups.map((s) => s.subgroupId).sort((a, b) => a - b),
  };
}

async function nobodyGroupId(tx: Tx, realmId: number): Promise<number> {
  const nobody = await tx.userGroup.findFirstOrThrow({
    where: { realmId, name: SYSTEM_GROUPS.NOBODY, isSystemGroup: true },
    select: { id: true },
  });
  return nobody.id;
}

/** Zulip's access_user_group_for_setting for a group permission setting: validates the
 * (normalized) value and returns the group to store, a named group or an anonymous one. An
 * anonymous group the setting holds already (`current`) is edited in place. */
async function checkGroupSettingValue(
  tx: Tx,
  realmId: number,
  setting: GroupPermissionSettingName,
  value: GroupSettingValue,
  current: number | null = null,
): Promise<number> {
  const rules = GROUP_PERMISSION_SETTINGS[setting];
  if (typeof value === 'number') {
    const group = await getNamedGroup(tx, realmId, value);
    const refuse = (name: string) =>
      new JsonableError(`'${setting}' setting cannot be set to '${name}' group.`);
    if (group.name === SYSTEM_GROUPS.EVERYONE_ON_INTERNET) throw refuse(group.name);
    if (!rules.allowNobody && group.name === SYSTEM_GROUPS.NOBODY) throw refuse(group.name);
    if (!rules.allowEveryone && group.name === SYSTEM_GROUPS.EVERYONE) throw refuse(group.name);
    return group.id;
  }
  const members = await activeUsersByIds(tx, realmId, value.direct_members);
  const subgroups = await accessSubgroups(tx, realmId, value.direct_subgroups);
  let groupId: number;
  if (current !== null && (await tx.userGroup.count({ where: { id: current, name: null } }))) {
    groupId = current;
    await tx.userGroupMembership.deleteMany({ where: { userGroupId: groupId } });
    await tx.groupGroupMembership.deleteMany({ where: { supergroupId: groupId } });
  } else {
    groupId = (await tx.userGroup.create({ data: { realmId }, select: { id: true } })).id;
  }
  await tx.userGroupMembership.createMany({
    data: members.map((userId) => ({ userGroupId: groupId, userId })),
  });
  await tx.groupGroupMembership.createMany({
    data: subgroups.map((subgroupId) => ({ supergroupId: groupId, subgroupId })),
  });
  return groupId;
}

// ---- Events ------------------------------------------------------------------------------------

/** `internal_data.include_deactivated_groups`: only queues whose capability is this take the
 * event (Zulip's accepts_event for user_group events). */
function groupEvent(event: ZulipEvent, forDeactivatedAware?: boolean): ZulipEvent {
  return forDeactivatedAware === undefined
    ? event
    : { ...event, internal_data: { include_deactivated_groups: forDeactivatedAware } };
}

async function sendGroupEvent(
  ctx: ActionContext,
  realmId: number,
  event: { op: string; [field: string]: unknown },
  forDeactivatedAware?: boolean,
): Promise<void> {
  const users = await activeUserIds(realmId, ctx.tx);
  sendEventOnCommit(ctx, groupEvent({ type: 'user_group', ...event }, forDeactivatedAware), users);
}

async function sendUpdate(
  ctx: ActionContext,
  group: NamedGroup,
  data: Record<string, unknown>,
  forDeactivatedAware?: boolean,
): Promise<void> {
  await sendGroupEvent(
    ctx,
    group.realmId,
    { op: 'update', group_id: group.id, data },
    forDeactivatedAware,
  );
}

/** Audit rows of one change, one per affected group or user, written in one statement (adding
 * a hundred members is one insert, not a hundred). */
async function audit(
  ctx: ActionContext,
  actor: User | null,
  realmId: number,
  eventType: number,
  rows: { groupId: number; modifiedUserId?: number; extra?: Record<string, unknown> }[],
): Promise<void> {
  if (rows.length === 0) return;
  await ctx.tx.auditLog.createMany({
    data: rows.map((row) => ({
      realmId,
      actingUserId: actor?.id ?? null,
      modifiedUserGroupId: row.groupId,
      modifiedUserId: row.modifiedUserId ?? null,
      eventType,
      extraData: JSON.parse(JSON.stringify(row.extra ?? {})) as object,
    })),
  });
}

// ---- Creating ----------------------------------------------------------------------------------

export interface NewUserGroup {
  name: string;
  description: string;
  members: number[];
  subgroups?: number[];
  settings: Partial<Record<GroupPermissionSettingName, GroupSettingValue>>;
}

/** POST /user_groups/create (Zulip's add_user_group and check_add_user_group). */
export async function checkAddUserGroup(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  input: NewUserGroup,
): Promise<number> {
  const { tx } = ctx;
  checkNotGuest(actor);
  if (!(await hasRealmPermission(realm, actor, 'can_create_groups')))
    throw new JsonableError('Insufficient permission');
  const members = (await activeUsersByIds(tx, realm.id, input.members)).sort((a, b) => a - b);
  const name = checkUserGroupName(input.name);
  const nobody = await nobodyGroupId(tx, realm.id);
  const columns: Partial<Record<string, number>> = {};
  for (const setting of GROUP_SETTING_NAMES) {
    const value = input.settings[setting];
    if (value === undefined) continue;
    columns[GROUP_SETTING_COLUMN[setting]] = await checkGroupSettingValue(
      tx,
      realm.id,
      setting,
      normalizeGroupSetting(value, nobody),
    );
  }
  if (await tx.userGroup.count({ where: { realmId: realm.id, name } }))
    throw new JsonableError(`User group '${name}' already exists.`);
  // Defaults (Zulip's set_defaults_for_group_settings): "group_creator" is a new anonymous
  // group holding the creator, one per setting.
  for (const setting of GROUP_SETTING_NAMES) {
    const column = GROUP_SETTING_COLUMN[setting];
    if (columns[column] !== undefined) continue;
    const defaultName = GROUP_PERMISSION_SETTINGS[setting].default;
    if (defaultName === 'group_creator') {
      const anonymous = await tx.userGroup.create({
        data: { realmId: realm.id, members: { create: [{ userId: actor.id }] } },
        select: { id: true },
      });
      columns[column] = anonymous.id;
    } else {
      const group = await tx.userGroup.findFirstOrThrow({
        where: { realmId: realm.id, name: defaultName, isSystemGroup: true },
        select: { id: true },
      });
      columns[column] = group.id;
    }
  }
  const created = await tx.userGroup
    .create({
      data: {
        realmId: realm.id,
        name,
        description: input.description,
        creatorId: actor.id,
        ...columns,
      },
      select: { id: true },
    })
    .catch((error: unknown) => {
      if (isUniqueViolation(error)) throw new JsonableError(`User group '${name}' already exists.`);
      throw error;
    });
  await tx.userGroupMembership.createMany({
    data: members.map((userId) => ({ userGroupId: created.id, userId })),
  });
  await audit(ctx, actor, realm.id, AuditLogEvent.USER_GROUP_CREATED, [{ groupId: created.id }]);
  await audit(
    ctx,
    actor,
    realm.id,
    AuditLogEvent.USER_GROUP_DIRECT_USER_MEMBERSHIP_ADDED,
    members.map((userId) => ({ groupId: created.id, modifiedUserId: userId })),
  );
  const group = (await presentGroupById(realm.id, created.id))!;
  await sendGroupEvent(ctx, realm.id, {
    op: 'add',
    group: { ...group, members, direct_subgroup_ids: [] },
  });
  // The creator may add subgroups whatever the new group's settings say.
  const subgroups = await accessSubgroups(tx, realm.id, input.subgroups ?? []);
  if (subgroups.length > 0)
    await doAddSubgroups(ctx, actor, await getNamedGroup(tx, realm.id, created.id), subgroups);
  return created.id;
}

// ---- Name, description, settings, reactivation ------------------------------------------------

export interface UserGroupUpdate {
  name?: string;
  description?: string;
  deactivated?: boolean;
  settings: Partial<Record<GroupPermissionSettingName, GroupSettingChange>>;
}

/** PATCH /user_groups/{id} (Zulip's edit_user_group). */
export async function checkUpdateUserGroup(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  update: UserGroupUpdate,
): Promise<void> {
  const { tx } = ctx;
  checkNotGuest(actor);
  if (
    update.name === undefined &&
    update.description === undefined &&
    update.deactivated === undefined &&
    Object.keys(update.settings).length === 0
  )
    throw new JsonableError('No new data supplied');
  let group = await accessUserGroupForUpdate(tx, realm, actor, groupId, 'can_manage_group', {
    allowDeactivated: true,
  });
  if (update.name !== undefined && update.name !== group.name) {
    const name = checkUserGroupName(update.name);
    if (await tx.userGroup.count({ where: { realmId: realm.id, name, NOT: { id: group.id } } }))
      throw new JsonableError(`User group '${name}' already exists.`);
    // The check above can race a concurrent rename; the unique index decides.
    await tx.userGroup
      .update({ where: { id: group.id }, data: { name } })
      .catch((error: unknown) => {
        throw isUniqueViolation(error)
          ? new JsonableError(`User group '${name}' already exists.`)
          : error;
      });
    await audit(ctx, actor, realm.id, AuditLogEvent.USER_GROUP_NAME_CHANGED, [
      {
        groupId: group.id,
        extra: {
          old_value: group.name,
          new_value: name,
        },
      },
    ]);
    // A deactivated group's new name is for clients that list deactivated groups.
    await sendUpdate(ctx, group, { name }, group.deactivated ? true : undefined);
    group = { ...group, name };
  }
  if (update.description !== undefined && update.description !== group.description) {
    await tx.userGroup.update({
      where: { id: group.id },
      data: { description: update.description },
    });
    await audit(ctx, actor, realm.id, AuditLogEvent.USER_GROUP_DESCRIPTION_CHANGED, [
      {
        groupId: group.id,
        extra: {
          old_value: group.description,
          new_value: update.description,
        },
      },
    ]);
    await sendUpdate(ctx, group, { description: update.description });
    group = { ...group, description: update.description };
  }
  // `deactivated: true` does nothing: deactivation has its own endpoint.
  if (update.deactivated === false && group.deactivated) {
    await doReactivateUserGroup(ctx, actor, group);
    group = { ...group, deactivated: false };
  }
  const nobody = await nobodyGroupId(tx, realm.id);
  for (const setting of GROUP_SETTING_NAMES) {
    const change = update.settings[setting];
    if (change === undefined) continue;
    const column = GROUP_SETTING_COLUMN[setting];
    const currentId = group[column]!;
    const current = await settingApiValue(tx, currentId);
    const wanted = normalizeGroupSetting(change.new, nobody);
    if (change.old != null && !sameGroupSetting(normalizeGroupSetting(change.old, nobody), current))
      throw new PreviousSettingValueMismatchedError();
    if (sameGroupSetting(wanted, current)) continue;
    const newId = await checkGroupSettingValue(tx, realm.id, setting, wanted, currentId);
    await tx.userGroup.update({ where: { id: group.id }, data: { [column]: newId } });
    // An anonymous group the setting no longer holds is of no use to anything else.
    if (newId !== currentId && typeof current !== 'number')
      await tx.userGroup.delete({ where: { id: currentId } });
    group = { ...group, [column]: newId };
    const value = await settingApiValue(tx, newId);
    await audit(ctx, actor, realm.id, AuditLogEvent.USER_GROUP_GROUP_BASED_SETTING_CHANGED, [
      {
        groupId: group.id,
        extra: {
          property: setting,
          old_value: current,
          new_value: value,
        },
      },
    ]);
    await sendUpdate(ctx, group, { [setting]: value });
  }
}

async function doReactivateUserGroup(
  ctx: ActionContext,
  actor: User,
  group: NamedGroup,
): Promise<void> {
  await ctx.tx.userGroup.update({ where: { id: group.id }, data: { deactivated: false } });
  await audit(ctx, actor, group.realmId, AuditLogEvent.USER_GROUP_REACTIVATED, [
    { groupId: group.id },
  ]);
  await sendUpdate(ctx, group, { deactivated: false }, true);
  // Clients that drop deactivated groups get the group back whole.
  const presented = (await presentGroupById(group.realmId, group.id))!;
  await sendGroupEvent(ctx, group.realmId, { op: 'add', group: presented }, false);
}

// ---- Deactivation ------------------------------------------------------------------------------

/** Camel-case column of a realm setting (can_create_groups → canCreateGroupsId). */
function realmColumn(setting: string): string {
  return `${setting.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase())}Id`;
}

/** POST /user_groups/{id}/deactivate (Zulip's access_user_group_for_deactivation and
 * do_deactivate_user_group): refused while an active group has it as a subgroup or any
 * setting (an organization's, an active channel's or an active group's) names it directly or
 * through an anonymous group. */
export async function checkDeactivateUserGroup(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
): Promise<void> {
  const { tx } = ctx;
  const group = await accessUserGroupForUpdate(tx, realm, actor, groupId, 'can_manage_group');
  const objections: Record<string, unknown>[] = [];
  const supergroups = await tx.groupGroupMembership.findMany({
    where: { subgroupId: group.id },
    select: { supergroup: { select: { id: true, name: true, deactivated: true } } },
    orderBy: { supergroupId: 'asc' },
  });
  const activeSupergroups = supergroups
    .map((edge) => edge.supergroup)
    .filter((g) => g.name !== null && !g.deactivated)
    .map((g) => g.id);
  if (activeSupergroups.length > 0)
    objections.push({ type: 'subgroup', supergroup_ids: activeSupergroups });
  const using = new Set([
    group.id,
    ...supergroups
      .map((edge) => edge.supergroup)
      .filter((g) => g.name === null)
      .map((g) => g.id),
  ]);
  const usingIds = [...using];

  const streamSettings = Object.entries(STREAM_GROUP_SETTINGS);
  const streams = await tx.stream.findMany({
    where: {
      realmId: realm.id,
      deactivated: false,
      OR: streamSettings.map(([, column]) => ({ [column]: { in: usingIds } })),
    },
    orderBy: { id: 'asc' },
  });
  for (const stream of streams) {
    const settings = streamSettings
      .filter(([, column]) => using.has(stream[column]))
      .map(([name]) => name);
    if (settings.length > 0) objections.push({ type: 'channel', channel_id: stream.id, settings });
  }

  const groups = await tx.userGroup.findMany({
    where: {
      realmId: realm.id,
      name: { not: null },
      deactivated: false,
      OR: GROUP_SETTING_NAMES.map((setting) => ({
        [GROUP_SETTING_COLUMN[setting]]: { in: usingIds },
      })),
    },
    orderBy: { id: 'asc' },
  });
  for (const other of groups) {
    const settings = GROUP_SETTING_NAMES.filter((setting) =>
      using.has(other[GROUP_SETTING_COLUMN[setting]]!),
    );
    if (settings.length > 0) objections.push({ type: 'user_group', group_id: other.id, settings });
  }

  const realmRow = (await tx.realm.findUniqueOrThrow({ where: { id: realm.id } })) as Record<
    string,
    unknown
  >;
  const realmSettings = Object.keys(REALM_PERMISSION_SETTINGS).filter((setting) => {
    const id = realmRow[realmColumn(setting)];
    return typeof id === 'number' && using.has(id);
  });
  if (realmSettings.length > 0) objections.push({ type: 'realm', settings: realmSettings });

  if (objections.length > 0) throw new CannotDeactivateGroupInUseError(objections);

  await tx.userGroup.update({ where: { id: group.id }, data: { deactivated: true } });
  await audit(ctx, actor, realm.id, AuditLogEvent.USER_GROUP_DEACTIVATED, [{ groupId: group.id }]);
  await sendUpdate(ctx, group, { deactivated: true }, true);
  await sendGroupEvent(ctx, realm.id, { op: 'remove', group_id: group.id }, false);
}

// ---- Channels whose metadata a group's members see ---------------------------------------------

/** Private channels (Zulip's get_metadata_access_streams_via_group_ids): those whose
 * administer, subscribe or add-subscribers setting names a group containing `groupId`, with
 * who sees each before a membership change. After it, `finish` tells those who lost sight of
 * a channel that it is gone, and those who gained it the channel and its subscribers. */
async function trackChannelAccess(
  ctx: ActionContext,
  realmId: number,
  groupId: number,
): Promise<() => Promise<void>> {
  const { tx } = ctx;
  const supergroups = await tx.$queryRaw<{ id: number }[]>`
    WITH RECURSIVE g(id) AS (
      SELECT ${groupId}::int
      UNION
      ${Prisma.raw(groupWalkStep('up'))}
    )
    SELECT id FROM g`;
  const ids = supergroups.map((row) => row.id);
  const streams = await tx.stream.findMany({
    where: {
      realmId,
      deactivated: false,
      inviteOnly: true,
      OR: [
        { canAdministerChannelGroupId: { in: ids } },
        { canSubscribeGroupId: { in: ids } },
        { canAddSubscribersGroupId: { in: ids } },
      ],
    },
  });
  const before = await Promise.all(
    streams.map(async (stream) => {
      const subscribers = await subscribersOf(stream);
      return {
        stream,
        subscribers,
        audience: new Set(await metadataAudience(stream, subscribers, tx)),
      };
    }),
  );
  return async () => {
    for (const { stream, subscribers, audience } of before)
      await announceAudienceChange(
        ctx,
        stream,
        subscribers,
        audience,
        new Set(await metadataAudience(stream, subscribers, tx)),
      );
  };
}

// ---- Members -----------------------------------------------------------------------------------

export interface MembershipChanges {
  add?: number[];
  delete?: number[];
  addSubgroups?: number[];
  deleteSubgroups?: number[];
}

/** POST /user_groups/{id}/members (Zulip's update_user_group_backend): each part in turn,
 * all or nothing. */
export async function checkUpdateGroupMembers(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  changes: MembershipChanges,
): Promise<void> {
  checkNotGuest(actor);
  const has = (list?: number[]) => list !== undefined && list.length > 0;
  if (
    !has(changes.add) &&
    !has(changes.delete) &&
    !has(changes.addSubgroups) &&
    !has(changes.deleteSubgroups)
  )
    throw new JsonableError(
      'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".',
    );
  if (has(changes.add)) await checkAddMembers(ctx, realm, actor, groupId, changes.add!);
  if (has(changes.delete)) await checkRemoveMembers(ctx, realm, actor, groupId, changes.delete!);
  if (has(changes.addSubgroups))
    await checkAddSubgroups(ctx, realm, actor, groupId, changes.addSubgroups!);
  if (has(changes.deleteSubgroups))
    await checkRemoveSubgroups(ctx, realm, actor, groupId, changes.deleteSubgroups!);
}

/** The group whose members change, locked, if the actor may: changing only oneself needs
 * the `self` setting or the `others` one, changing anyone else the `others` one. */
async function accessGroupForMembership(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  userIds: number[],
  settings: { self: GroupPermissionSettingName; others: GroupPermissionSettingName },
): Promise<NamedGroup> {
  const access = (setting: GroupPermissionSettingName) =>
    accessUserGroupForUpdate(ctx.tx, realm, actor, groupId, setting, { allowDeactivated: true });
  const self = userIds.length === 1 && userIds[0] === actor.id;
  if (!self) return access(settings.others);
  try {
    return await access(settings.self);
  } catch {
    return access(settings.others);
  }
}

/** Joining oneself needs can_join_group or can_add_members_group; adding others the latter. */
async function checkAddMembers(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  userIds: number[],
): Promise<void> {
  const { tx } = ctx;
  const group = await accessGroupForMembership(ctx, realm, actor, groupId, userIds, {
    self: 'can_join_group',
    others: 'can_add_members_group',
  });
  const members = await activeUsersByIds(tx, realm.id, userIds);
  const existing = await tx.userGroupMembership.findMany({
    where: { userGroupId: group.id, userId: { in: members } },
    select: { userId: true },
  });
  const already = members.find((id) => existing.some((m) => m.userId === id));
  if (already !== undefined)
    throw new JsonableError(`User ${already} is already a member of this group`);
  const channels = await trackChannelAccess(ctx, realm.id, group.id);
  await tx.userGroupMembership.createMany({
    data: members.map((userId) => ({ userGroupId: group.id, userId })),
  });
  await audit(
    ctx,
    actor,
    realm.id,
    AuditLogEvent.USER_GROUP_DIRECT_USER_MEMBERSHIP_ADDED,
    members.map((userId) => ({ groupId: group.id, modifiedUserId: userId })),
  );
  await sendGroupEvent(ctx, realm.id, { op: 'add_members', group_id: group.id, user_ids: members });
  await channels();
  await noticeOnCommit(ctx, realm, actor, group, 'added', members);
}

/** The Notification Bot tells each changed member, once the change has committed. */
async function noticeOnCommit(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  group: NamedGroup,
  change: GroupMembershipChange,
  members: number[],
): Promise<void> {
  const bots = await ctx.tx.user.findMany({
    where: { id: { in: members }, isBot: true },
    select: { id: true },
  });
  const botIds = new Set(bots.map((bot) => bot.id));
  const recipients = members.map((id) => ({ id, isBot: botIds.has(id) }));
  ctx.onCommit(() => sendGroupMembershipNotices(realm, actor, group.name, change, recipients));
}

/** Leaving needs can_leave_group or can_remove_members_group; removing others the latter. */
async function checkRemoveMembers(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  userIds: number[],
): Promise<void> {
  const { tx } = ctx;
  const members = await activeUsersByIds(tx, realm.id, userIds);
  const group = await accessGroupForMembership(ctx, realm, actor, groupId, userIds, {
    self: 'can_leave_group',
    others: 'can_remove_members_group',
  });
  const direct = await tx.userGroupMembership.findMany({
    where: { userGroupId: group.id, userId: { in: members }, user: { isActive: true } },
    select: { userId: true },
  });
  const missing = members.find((id) => !direct.some((m) => m.userId === id));
  if (missing !== undefined)
    throw new JsonableError(`There is no member '${missing}' in this user group`);
  const channels = await trackChannelAccess(ctx, realm.id, group.id);
  await tx.userGroupMembership.deleteMany({
    where: { userGroupId: group.id, userId: { in: members } },
  });
  await audit(
    ctx,
    actor,
    realm.id,
    AuditLogEvent.USER_GROUP_DIRECT_USER_MEMBERSHIP_REMOVED,
    members.map((userId) => ({ groupId: group.id, modifiedUserId: userId })),
  );
  await sendGroupEvent(ctx, realm.id, {
    op: 'remove_members',
    group_id: group.id,
    user_ids: members,
  });
  await channels();
  await noticeOnCommit(ctx, realm, actor, group, 'removed', members);
}

// ---- Subgroups ---------------------------------------------------------------------------------

/** POST /user_groups/{id}/subgroups (spec 4.20; Zulip's update_subgroups_of_user_group). */
export async function checkUpdateSubgroups(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  add: number[],
  remove: number[],
): Promise<void> {
  checkNotGuest(actor);
  if (add.length === 0 && remove.length === 0)
    throw new JsonableError('Nothing to do. Specify at least one of "add" or "delete".');
  if (add.length > 0) await checkAddSubgroups(ctx, realm, actor, groupId, add);
  if (remove.length > 0) await checkRemoveSubgroups(ctx, realm, actor, groupId, remove);
}

/** The groups of `ids` and every group below them (named groups only). */
async function recursiveSubgroupIds(tx: Tx, ids: number[]): Promise<Set<number>> {
  const rows = await tx.$queryRaw<{ id: number }[]>`
    WITH RECURSIVE g(id) AS (
      SELECT unnest(${ids}::int[])
      UNION
      ${Prisma.raw(groupWalkStep('down'))}
    )
    SELECT id FROM g`;
  return new Set(rows.map((row) => row.id));
}

async function checkAddSubgroups(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  subgroupIds: number[],
): Promise<void> {
  const { tx } = ctx;
  // The supergroup and its new subgroups locked in one order (by id), as Zulip's
  // lock_subgroups_with_respect_to_supergroup does: adding A under B while B goes under A
  // then waits instead of deadlocking. The locks below are already held.
  await tx.$queryRaw`
    SELECT id FROM user_group
    WHERE realm_id = ${realm.id} AND id = ANY(${[groupId, ...subgroupIds]}::int[])
    ORDER BY id FOR UPDATE`;
  const group = await accessUserGroupForUpdate(tx, realm, actor, groupId, 'can_add_members_group', {
    allowDeactivated: true,
  });
  const subgroups = await accessSubgroups(tx, realm.id, subgroupIds);
  const existing = await tx.groupGroupMembership.findMany({
    where: { supergroupId: group.id, subgroupId: { in: subgroups } },
    select: { subgroupId: true },
  });
  const already = subgroups.find((id) => existing.some((edge) => edge.subgroupId === id));
  if (already !== undefined)
    throw new JsonableError(`User group ${already} is already a subgroup of this group.`);
  if ((await recursiveSubgroupIds(tx, subgroups)).has(group.id))
    throw new JsonableError(
      `User group ${group.id} is already a subgroup of one of the passed subgroups.`,
    );
  await doAddSubgroups(ctx, actor, group, subgroups);
}

async function doAddSubgroups(
  ctx: ActionContext,
  actor: User,
  group: NamedGroup,
  subgroups: number[],
): Promise<void> {
  const channels = await trackChannelAccess(ctx, group.realmId, group.id);
  await ctx.tx.groupGroupMembership.createMany({
    data: subgroups.map((subgroupId) => ({ supergroupId: group.id, subgroupId })),
  });
  await audit(
    ctx,
    actor,
    group.realmId,
    AuditLogEvent.USER_GROUP_DIRECT_SUBGROUP_MEMBERSHIP_ADDED,
    [{ groupId: group.id, extra: { subgroup_ids: subgroups } }],
  );
  await audit(
    ctx,
    actor,
    group.realmId,
    AuditLogEvent.USER_GROUP_DIRECT_SUPERGROUP_MEMBERSHIP_ADDED,
    subgroups.map((subgroupId) => ({ groupId: subgroupId, extra: { supergroup_ids: [group.id] } })),
  );
  await sendGroupEvent(ctx, group.realmId, {
    op: 'add_subgroups',
    group_id: group.id,
    direct_subgroup_ids: subgroups,
  });
  await channels();
}

async function checkRemoveSubgroups(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  groupId: number,
  subgroupIds: number[],
): Promise<void> {
  const { tx } = ctx;
  const group = await accessUserGroupForUpdate(tx, realm, actor, groupId, 'can_manage_group', {
    allowDeactivated: true,
  });
  const subgroups = await accessSubgroups(tx, realm.id, subgroupIds);
  const existing = await tx.groupGroupMembership.findMany({
    where: { supergroupId: group.id, subgroupId: { in: subgroups } },
    select: { subgroupId: true },
  });
  const missing = subgroups.find((id) => !existing.some((edge) => edge.subgroupId === id));
  if (missing !== undefined)
    throw new JsonableError(`User group ${missing} is not a subgroup of this group.`);
  const channels = await trackChannelAccess(ctx, realm.id, group.id);
  await tx.groupGroupMembership.deleteMany({
    where: { supergroupId: group.id, subgroupId: { in: subgroups } },
  });
  await audit(ctx, actor, realm.id, AuditLogEvent.USER_GROUP_DIRECT_SUBGROUP_MEMBERSHIP_REMOVED, [
    {
      groupId: group.id,
      extra: {
        subgroup_ids: subgroups,
      },
    },
  ]);
  await audit(
    ctx,
    actor,
    realm.id,
    AuditLogEvent.USER_GROUP_DIRECT_SUPERGROUP_MEMBERSHIP_REMOVED,
    subgroups.map((subgroupId) => ({ groupId: subgroupId, extra: { supergroup_ids: [group.id] } })),
  );
  await sendGroupEvent(ctx, realm.id, {
    op: 'remove_subgroups',
    group_id: group.id,
    direct_subgroup_ids: subgroups,
  });
  await channels();
}
