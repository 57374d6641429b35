// PATCH /realm: organization settings (Zulip's update_realm). Administrators only; some
// settings are for owners (actions/realm-settings.ts says which). Also PATCH
// /realm/user_settings_defaults and POST /realm/test_welcome_bot_custom_message.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p, type Param } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  doUpdateRealmSettings,
  REALM_CHANNEL_SETTINGS,
  type RealmChannelSetting,
  type RealmSettingsRequest,
} from '../actions/realm-settings';
import { sendTestWelcomeText } from '../actions/system-bots';
import { doSetRealmUserDefaults } from '../actions/realm-user-defaults';
import {
  checkedSettingChanges,
  REALM_DEFAULT_SETTING_NAMES,
  USER_SETTINGS,
  type SettingName,
} from '../lib/user-settings';
import type { GroupSettingChange } from '../lib/groups';
import { REALM_PERMISSION_SETTINGS, type RealmPermissionSetting } from '../lib/permission-settings';

export const realmRoutes = Router();

const INT32_MAX = 2 ** 31 - 1;
const id = z.number().int().min(-INT32_MAX).max(INT32_MAX);
const groupValue = z.union([
  id,
  z.object({ direct_members: z.array(id).max(10_000), direct_subgroups: z.array(id).max(1000) }),
]);
/** Zulip's GroupSettingChangeRequest. */
const groupChange = z.object({ new: groupValue, old: groupValue.nullish() });

/** A number, or a word such as "unlimited" (Json[int | str]). */
const intOrWord = () =>
  p.jsonOrText(z.union([z.number().int().max(INT32_MAX), z.string().max(100)])).optional();

const groupParams = Object.fromEntries(
  Object.keys(REALM_PERMISSION_SETTINGS).map((setting) => [
    setting,
    p.json(groupChange).optional(),
  ]),
) as Record<RealmPermissionSetting, Param<GroupSettingChange | undefined>>;

/** Channel ids, -1 for none. */
const channelParams = Object.fromEntries(
  Object.keys(REALM_CHANNEL_SETTINGS).map((setting) => [
    setting,
    p.int({ min: -INT32_MAX, max: INT32_MAX }).optional(),
  ]),
) as Record<RealmChannelSetting, Param<number | undefined>>;

const settingParams = {
  name: p.string().optional(),
  description: p.string().optional(),
  allow_message_editing: p.bool().optional(),
  message_content_edit_limit_seconds: intOrWord(),
  message_content_delete_limit_seconds: intOrWord(),
  move_messages_within_stream_limit_seconds: intOrWord(),
  move_messages_between_streams_limit_seconds: intOrWord(),
  message_edit_history_visibility_policy: p.string().optional(),
  invite_required: p.bool().optional(),
  emails_restricted_to_domains: p.bool().optional(),
  disallow_disposable_email_addresses: p.bool().optional(),
  // Days; the bound keeps the cut-off date (now minus the period) a valid date. 100,000 days
  // is three centuries: as good as "never" for anyone who wants that.
  waiting_period_threshold: p.int({ min: 0, max: 100_000 }).optional(),
  default_language: p.string().optional(),
  mandatory_topics: p.bool().optional(),
  topics_policy: p.string().optional(),
  message_retention_days: intOrWord(),
  enable_spectator_access: p.bool().optional(),
  avatar_changes_disabled: p.bool().optional(),
  name_changes_disabled: p.bool().optional(),
  email_changes_disabled: p.bool().optional(),
  require_unique_names: p.bool().optional(),
  send_welcome_emails: p.bool().optional(),
  enable_read_receipts: p.bool().optional(),
  video_chat_provider: p.int().optional(),
  jitsi_server_url: p.jsonOrText(z.string().max(1000)).optional(),
  welcome_message_custom_text: p.string().optional(),
  authentication_methods: p.json(z.record(z.string().max(100), z.boolean())).optional(),
  org_type: p.int().optional(),
  default_code_block_language: p.string({ maxLength: 100 }).optional(),
  digest_emails_enabled: p.bool().optional(),
  digest_weekday: p.int().optional(),
  enable_guest_user_dm_warning: p.bool().optional(),
  enable_guest_user_indicator: p.bool().optional(),
  giphy_rating: p.int().optional(),
  inline_image_preview: p.bool().optional(),
  inline_url_embed_preview: p.bool().optional(),
  message_content_allowed_in_email_notifications: p.bool().optional(),
  require_e2ee_push_notifications: p.bool().optional(),
  send_channel_events_messages: p.bool().optional(),
  want_advertise_in_communities_directory: p.bool().optional(),
};

defineRoute(realmRoutes, '/realm', {
  PATCH: userEndpoint(
    {
      adminOnly: true,
      params: { ...settingParams, ...groupParams, ...channelParams },
      // Each setting that changed, with its new value (Zulip answers "updated" for text).
      response: z
        .object(
          Object.fromEntries(
            Object.keys({ ...settingParams, ...groupParams, ...channelParams }).map((name) => [
              name,
              z.unknown(),
            ]),
          ),
        )
        .partial(),
    },
    async ({ user, params }) => {
      const request: RealmSettingsRequest = { groups: {}, channels: {} };
      for (const [name, value] of Object.entries(params)) {
        if (value === undefined) continue;
        if (name in REALM_PERMISSION_SETTINGS)
          request.groups[name as RealmPermissionSetting] = value as GroupSettingChange;
        else if (name in REALM_CHANNEL_SETTINGS)
          request.channels[name as RealmChannelSetting] = value as number;
        else (request as unknown as Record<string, unknown>)[name] = value;
      }
      return runAction((ctx) => doUpdateRealmSettings(ctx, user, request));
    },
  ),
});

// Zulip's send_test_welcome_bot_custom_message: the Welcome Bot sends the text to the
// administrator trying it, as it would to a new user.
defineRoute(realmRoutes, '/realm/test_welcome_bot_custom_message', {
  POST: userEndpoint(
    {
      adminOnly: true,
      params: { welcome_message_custom_text: p.string() },
      response: z.object({ message_id: schema.id }),
    },
    async ({ user, realm, params }) => ({
      message_id: await sendTestWelcomeText(realm, user, params.welcome_message_custom_text),
    }),
  ),
});

const defaultSettingParams = Object.fromEntries(
  REALM_DEFAULT_SETTING_NAMES.map((name) => [name, USER_SETTINGS[name].param]),
) as Record<SettingName, Param<string | number | boolean | undefined>>;

// Zulip's update_realm_user_settings_defaults: the personal settings new members start with.
defineRoute(realmRoutes, '/realm/user_settings_defaults', {
  PATCH: userEndpoint(
    { adminOnly: true, params: defaultSettingParams, response: schema.empty },
    async ({ user, params }) => {
      const changes = checkedSettingChanges(REALM_DEFAULT_SETTING_NAMES, params);
      await runAction((ctx) => doSetRealmUserDefaults(ctx, user, changes));
      return {};
    },
  ),
});
