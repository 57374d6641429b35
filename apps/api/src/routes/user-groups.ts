// User groups (spec 4.20): POST /user_groups/create, GET /user_groups, PATCH
// /user_groups/{id}, POST /user_groups/{id}/deactivate, GET and POST
// /user_groups/{id}/members, GET /user_groups/{id}/members/{user_id}, GET and POST
// /user_groups/{id}/subgroups. Guests may use none of them; bots all (feature level 496).
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, int32, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkAddUserGroup,
  checkDeactivateUserGroup,
  checkUpdateGroupMembers,
  checkUpdateSubgroups,
  checkUpdateUserGroup,
  MAX_GROUP_DESCRIPTION_LENGTH,
} from '../actions/user-groups';
import { groupSettingValue, MAX_LIST } from '../lib/channel-params';
import {
  groupIdsOfUser,
  isDirectMember,
  groupMemberIds,
  subgroupIdsOf,
  type GroupSettingValue,
  type GroupSettingChange,
} from '../lib/groups';
import type { GroupPermissionSettingName } from '../lib/permission-settings';
import {
  accessNamedGroup,
  checkNotGuest,
  GROUP_SETTING_NAMES,
} from '../lib/user-group-permissions';
import { loadRealmGroups, presentRealmUserGroups } from '../lib/user-groups-state';
import { realmSettingGroupIds } from '../lib/realm-state';
import { accessUserById } from '../lib/users';

export const userGroupRoutes = Router();

// Any integer: an id no user or group has gets the lookups' "Invalid user ID: N" / "Invalid
// user group ID: N", as Zulip's Json[list[int]] lets it through to them.
const idList = p.json(z.array(int32).max(MAX_LIST));
const groupPath = { user_group_id: p.int() };
const description = p.string({ maxLength: MAX_GROUP_DESCRIPTION_LENGTH });
const settingChange: z.ZodType<GroupSettingChange> = z.strictObject({
  new: groupSettingValue,
  old: groupSettingValue.nullish(),
});

/** Each group setting as an optional JSON parameter of shape `shape`. */
function settingParams<T>(shape: z.ZodType<T>) {
  return Object.fromEntries(
    GROUP_SETTING_NAMES.map((setting) => [setting, p.json(shape).optional()]),
  ) as Record<GroupPermissionSettingName, ReturnType<ReturnType<typeof p.json<T>>['optional']>>;
}

function pickSettings<T>(
  params: Partial<Record<GroupPermissionSettingName, T | undefined>>,
): Partial<Record<GroupPermissionSettingName, T>> {
  return Object.fromEntries(
    GROUP_SETTING_NAMES.flatMap((setting) =>
      params[setting] === undefined ? [] : [[setting, params[setting]]],
    ),
  ) as Partial<Record<GroupPermissionSettingName, T>>;
}

defineRoute(userGroupRoutes, '/user_groups/create', {
  POST: userEndpoint(
    {
      params: {
        name: p.string(),
        description,
        members: idList,
        subgroups: idList.optional(),
        ...settingParams<GroupSettingValue>(groupSettingValue),
      },
      response: z.object({ group_id: schema.id }),
    },
    async ({ user, realm, params }) => ({
      group_id: await runAction((ctx) =>
        checkAddUserGroup(ctx, realm, user, {
          name: params.name,
          description: params.description,
          members: params.members,
          subgroups: params.subgroups,
          settings: pickSettings(params),
        }),
      ),
    }),
  ),
});

defineRoute(userGroupRoutes, '/user_groups', {
  GET: userEndpoint(
    {
      params: { include_deactivated_groups: p.bool().default(false) },
      response: z.object({ user_groups: z.array(schema.userGroup) }),
    },
    async ({ user, realm, params }) => {
      checkNotGuest(user);
      const groups = await loadRealmGroups(realm, realmSettingGroupIds(realm), true);
      return { user_groups: presentRealmUserGroups(groups, params.include_deactivated_groups) };
    },
  ),
});

defineRoute(userGroupRoutes, '/user_groups/:user_group_id', {
  PATCH: userEndpoint(
    {
      path: groupPath,
      params: {
        name: p.string().optional(),
        description: description.optional(),
        deactivated: p.bool().optional(),
        ...settingParams<GroupSettingChange>(settingChange),
      },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      await runAction((ctx) =>
        checkUpdateUserGroup(ctx, realm, user, path.user_group_id, {
          name: params.name,
          description: params.description,
          deactivated: params.deactivated,
          settings: pickSettings(params),
        }),
      );
      return {};
    },
  ),
});

defineRoute(userGroupRoutes, '/user_groups/:user_group_id/deactivate', {
  POST: userEndpoint({ path: groupPath, response: schema.empty }, async ({ user, realm, path }) => {
    await runAction((ctx) => checkDeactivateUserGroup(ctx, realm, user, path.user_group_id));
    return {};
  }),
});

defineRoute(userGroupRoutes, '/user_groups/:user_group_id/members', {
  GET: userEndpoint(
    {
      path: groupPath,
      params: { direct_member_only: p.bool().default(false) },
      response: z.object({ members: schema.ids }),
    },
    async ({ user, realm, path, params }) => {
      checkNotGuest(user);
      const group = await accessNamedGroup(realm.id, path.user_group_id);
      return { members: await groupMemberIds(group.id, params.direct_member_only) };
    },
  ),
  POST: userEndpoint(
    {
      path: groupPath,
      params: {
        add: idList.optional(),
        delete: idList.optional(),
        add_subgroups: idList.optional(),
        delete_subgroups: idList.optional(),
      },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      await runAction((ctx) =>
        checkUpdateGroupMembers(ctx, realm, user, path.user_group_id, {
          add: params.add,
          delete: params.delete,
          addSubgroups: params.add_subgroups,
          deleteSubgroups: params.delete_subgroups,
        }),
      );
      return {};
    },
  ),
});

defineRoute(userGroupRoutes, '/user_groups/:user_group_id/members/:user_id', {
  GET: userEndpoint(
    {
      path: { user_group_id: p.int(), user_id: p.int() },
      params: { direct_member_only: p.bool().default(false) },
      response: z.object({ is_user_group_member: z.boolean() }),
    },
    async ({ user, realm, path, params }) => {
      checkNotGuest(user);
      const group = await accessNamedGroup(realm.id, path.user_group_id);
      // Zulip's access_user_by_id: bots and deactivated users are not looked up.
      const target = await accessUserById(user, path.user_id);
      if (target.isBot) throw new JsonableError('No such user');
      if (!target.isActive) throw new JsonableError('User is deactivated');
      return {
        is_user_group_member: params.direct_member_only
          ? await isDirectMember(group.id, target.id)
          : (await groupIdsOfUser(target.id)).has(group.id),
      };
    },
  ),
});

defineRoute(userGroupRoutes, '/user_groups/:user_group_id/subgroups', {
  GET: userEndpoint(
    {
      path: groupPath,
      params: { direct_subgroup_only: p.bool().default(false) },
      response: z.object({ subgroups: schema.ids }),
    },
    async ({ user, realm, path, params }) => {
      checkNotGuest(user);
      const group = await accessNamedGroup(realm.id, path.user_group_id);
      return { subgroups: await subgroupIdsOf(group.id, params.direct_subgroup_only) };
    },
  ),
  POST: userEndpoint(
    {
      path: groupPath,
      params: { add: idList.optional(), delete: idList.optional() },
      response: schema.empty,
    },
    async ({ user, realm, path, params }) => {
      await runAction((ctx) =>
        checkUpdateSubgroups(
          ctx,
          realm,
          user,
          path.user_group_id,
          params.add ?? [],
          params.delete ?? [],
        ),
      );
      return {};
    },
  ),
});
