// Zulip's group permission settings as data: for the organization, for channels and for user
// groups, which group each defaults to and which groups it may name. /register reports them as
// server_supported_permission_settings; new organizations, channels and groups get the
// defaults, and PATCH /realm (actions/realm-settings.ts) checks requests against the rules.
import { SYSTEM_GROUPS } from '@parley/db';
import type { StreamGroupSetting } from '../presenters/streams';

/** Zulip's GroupPermissionSetting, in our own words. */
interface PermissionSetting {
  /** A system group name, or a placeholder Zulip resolves at creation: "group_creator"
   * (an anonymous group of the creator) or "channel_creator". */
  default: string;
  allowNobody: boolean;
  allowEveryone: boolean;
  requireSystemGroup?: boolean;
  /** Only these system groups may be named, when requireSystemGroup is set. */
  allowedSystemGroups?: string[];
  /** What system groups themselves get (user-group settings only). */
  defaultForSystemGroups?: string;
}

const { NOBODY, OWNERS, ADMINISTRATORS, MODERATORS, MEMBERS, EVERYONE } = SYSTEM_GROUPS;

const setting = (
  group: string,
  allowNobody: boolean,
  allowEveryone: boolean,
  extra: Partial<PermissionSetting> = {},
): PermissionSetting => ({ default: group, allowNobody, allowEveryone, ...extra });

/** Zulip's Realm.REALM_PERMISSION_GROUP_SETTINGS at feature level 442, with the defaults of an
 * organization of unspecified type (education organizations start stricter in Zulip; Parley
 * has no organization types). */
export const REALM_PERMISSION_SETTINGS = {
  create_multiuse_invite_group: setting(ADMINISTRATORS, true, false),
  can_access_all_users_group: setting(EVERYONE, false, true, {
    requireSystemGroup: true,
    allowedSystemGroups: [EVERYONE, MEMBERS],
  }),
  can_add_subscribers_group: setting(MEMBERS, true, false),
  can_add_custom_emoji_group: setting(MEMBERS, true, false),
  can_create_bots_group: setting(MEMBERS, true, false),
  can_create_groups: setting(MEMBERS, true, false),
  can_create_public_channel_group: setting(MEMBERS, true, false),
  can_create_private_channel_group: setting(MEMBERS, true, false),
  can_create_web_public_channel_group: setting(OWNERS, true, false, {
    requireSystemGroup: true,
    allowedSystemGroups: [MODERATORS, ADMINISTRATORS, OWNERS, NOBODY],
  }),
  can_create_write_only_bots_group: setting(MEMBERS, true, false),
  can_delete_any_message_group: setting(ADMINISTRATORS, true, false),
  can_delete_own_message_group: setting(EVERYONE, true, true),
  can_invite_users_group: setting(MEMBERS, true, false),
  can_manage_all_groups: setting(OWNERS, false, false),
  can_manage_billing_group: setting(ADMINISTRATORS, false, false),
  can_mention_many_users_group: setting(ADMINISTRATORS, true, true),
  can_move_messages_between_channels_group: setting(MEMBERS, true, false),
  can_move_messages_between_topics_group: setting(EVERYONE, true, true),
  can_resolve_topics_group: setting(EVERYONE, true, true),
  can_set_delete_message_policy_group: setting(MODERATORS, true, false),
  can_set_topics_policy_group: setting(MEMBERS, true, true),
  can_summarize_topics_group: setting(EVERYONE, true, true),
  direct_message_initiator_group: setting(EVERYONE, true, true),
  direct_message_permission_group: setting(EVERYONE, true, true),
} satisfies Record<string, PermissionSetting>;

export type RealmPermissionSetting = keyof typeof REALM_PERMISSION_SETTINGS;

/** Zulip's Stream.stream_permission_group_settings: the defaults new channels get (as
 * actions/streams.ts applies them). */
const STREAM_PERMISSION_SETTINGS: Record<StreamGroupSetting, PermissionSetting> = {
  can_add_subscribers_group: setting(NOBODY, true, false),
  can_administer_channel_group: setting('channel_creator', true, false),
  can_create_topic_group: setting(EVERYONE, true, true),
  can_delete_any_message_group: setting(NOBODY, true, true),
  can_delete_own_message_group: setting(NOBODY, true, true),
  can_move_messages_out_of_channel_group: setting(NOBODY, true, true),
  can_move_messages_within_channel_group: setting(NOBODY, true, true),
  can_remove_subscribers_group: setting(ADMINISTRATORS, true, true),
  can_send_message_group: setting(EVERYONE, true, true),
  can_subscribe_group: setting(NOBODY, true, false),
  can_resolve_topics_group: setting(NOBODY, true, true),
};

/** Zulip's NamedUserGroup.GROUP_PERMISSION_SETTINGS: the defaults a new group gets (stored
 * per group, actions/user-groups.ts; system groups get "nobody" throughout). */
export const GROUP_PERMISSION_SETTINGS = {
  can_add_members_group: setting('group_creator', true, false, { defaultForSystemGroups: NOBODY }),
  can_join_group: setting(NOBODY, true, false, { defaultForSystemGroups: NOBODY }),
  can_leave_group: setting(EVERYONE, true, true, { defaultForSystemGroups: NOBODY }),
  can_manage_group: setting('group_creator', true, false, { defaultForSystemGroups: NOBODY }),
  can_mention_group: setting(EVERYONE, true, true, { defaultForSystemGroups: NOBODY }),
  can_remove_members_group: setting(NOBODY, true, false, { defaultForSystemGroups: NOBODY }),
} satisfies Record<string, PermissionSetting>;

export type GroupPermissionSettingName = keyof typeof GROUP_PERMISSION_SETTINGS;

function present(settings: Record<string, PermissionSetting>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(settings).map(([name, s]) => [
      name,
      {
        require_system_group: s.requireSystemGroup ?? false,
        // No setting may name "everyone on the internet" (checkGroupSetting refuses it).
        allow_internet_group: false,
        allow_nobody_group: s.allowNobody,
        allow_everyone_group: s.allowEveryone,
        default_group_name: s.default,
        default_for_system_groups: s.defaultForSystemGroups ?? null,
        allowed_system_groups: s.allowedSystemGroups ?? [],
      },
    ]),
  );
}

/** server_supported_permission_settings. The tables never change at run time, so every
 * response shares one object (nothing folds events into it). */
export const SERVER_SUPPORTED_PERMISSION_SETTINGS = {
  realm: present(REALM_PERMISSION_SETTINGS),
  stream: present(STREAM_PERMISSION_SETTINGS),
  group: present(GROUP_PERMISSION_SETTINGS),
};
