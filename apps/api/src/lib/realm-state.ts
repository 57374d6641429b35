// The `realm` section of POST /register (Zulip's fetch_initial_state_data under
// want("realm")): the organization's settings and the server's limits and capabilities.
// Settings the Realm row stores come from it; the others are Zulip's defaults for a new
// organization, which is also how Parley behaves for them (docs/register.md lists which).
// Server facts describe this server: what it does not do (thumbnails, URL previews, digest
// emails) is reported as off.
import { createHash } from 'node:crypto';
import { realmBotDomain, realmUrl } from '@parley/auth';
import { getConfig } from '@parley/config';
import { columnsOf, query, statement, type Realm, SYSTEM_GROUPS } from '@parley/db';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import {
  MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH,
  MAX_CHANNEL_FOLDER_NAME_LENGTH,
} from './channel-folders';
import { REPORT_MESSAGE_TYPES } from './message-reports';
import {
  REALM_PERMISSION_SETTINGS,
  SERVER_SUPPORTED_PERMISSION_SETTINGS,
  type RealmPermissionSetting,
} from './permission-settings';
import { MAX_BULK_NEW_SUBSCRIPTION_MESSAGES } from './subscriptions';
import type { Membership, RealmGroups } from './user-groups-state';
import { serverThumbnailFormats } from './thumbnails';
import { maxFileUploadSizeMib, uploadQuotaMib } from './upload-limits';
import { availableVideoChatProviders } from './video-calls';

/** Where server_emoji_data_url points, on every organization's host (Zulip's path; served by
 * routes/static-data.ts). */
export const EMOJI_DATA_PATH = '/static/generated/emoji/emoji_api.json';

/** Limits and protocol constants sent with every registration (Zulip sends them with `realm`;
 * clients that fetch less still find them). The file size limit is the organization's. */
export function alwaysSentLimits(
  realm?: Pick<Realm, 'maxFileUploadSizeMib'>,
): Record<string, unknown> {
  return {
    max_message_length: 10000,
    max_topic_length: 60,
    max_stream_name_length: 60,
    max_stream_description_length: 1024,
    max_file_upload_size_mib: realm
      ? maxFileUploadSizeMib(realm)
      : getConfig().MAX_FILE_UPLOAD_SIZE_MIB,
    max_bulk_new_subscription_messages: MAX_BULK_NEW_SUBSCRIPTION_MESSAGES,
    realm_empty_topic_display_name: EMPTY_TOPIC_DISPLAY_NAME,
    event_queue_longpoll_timeout_seconds: 90,
    server_typing_started_expiry_period_milliseconds: 45000,
    server_typing_stopped_wait_period_milliseconds: 12000,
    server_typing_started_wait_period_milliseconds: 30000,
    server_presence_ping_interval_seconds: 60,
    server_presence_offline_threshold_seconds: 200,
  };
}

/** Zulip's SERVER_GENERATION: when this process started, for clients' error reports. */
const SERVER_GENERATION = Math.floor(Date.now() / 1000);

/** The column of each organization permission setting (Zulip's REALM_PERMISSION_GROUP_SETTINGS).
 * Every one is stored; a null (only between creating the row and its system groups, or after
 * the named group was deleted) falls back to the setting's default system group. */
export const REALM_GROUP_COLUMNS = {
  create_multiuse_invite_group: 'createMultiuseInviteGroupId',
  can_access_all_users_group: 'canAccessAllUsersGroupId',
  can_add_subscribers_group: 'canAddSubscribersGroupId',
  can_add_custom_emoji_group: 'canAddCustomEmojiGroupId',
  can_create_bots_group: 'canCreateBotsGroupId',
  can_create_groups: 'canCreateGroupsId',
  can_create_public_channel_group: 'canCreatePublicChannelGroupId',
  can_create_private_channel_group: 'canCreatePrivateChannelGroupId',
  can_create_web_public_channel_group: 'canCreateWebPublicChannelGroupId',
  can_create_write_only_bots_group: 'canCreateWriteOnlyBotsGroupId',
  can_delete_any_message_group: 'canDeleteAnyMessageGroupId',
  can_delete_own_message_group: 'canDeleteOwnMessageGroupId',
  can_invite_users_group: 'canInviteUsersGroupId',
  can_manage_all_groups: 'canManageAllGroupsId',
  can_manage_billing_group: 'canManageBillingGroupId',
  can_mention_many_users_group: 'canMentionManyUsersGroupId',
  can_move_messages_between_channels_group: 'canMoveMessagesBetweenChannelsGroupId',
  can_move_messages_between_topics_group: 'canMoveMessagesBetweenTopicsGroupId',
  can_resolve_topics_group: 'canResolveTopicsGroupId',
  can_set_delete_message_policy_group: 'canSetDeleteMessagePolicyGroupId',
  can_set_topics_policy_group: 'canSetTopicsPolicyGroupId',
  can_summarize_topics_group: 'canSummarizeTopicsGroupId',
  direct_message_initiator_group: 'directMessageInitiatorGroupId',
  direct_message_permission_group: 'directMessagePermissionGroupId',
} as const satisfies Record<RealmPermissionSetting, keyof Realm>;

/** The group id a realm setting stores (null: its default system group, by name). */
export function realmGroupId(realm: Realm, setting: RealmPermissionSetting): number | null {
  return realm[REALM_GROUP_COLUMNS[setting]];
}

const storedGroupId = realmGroupId;

/** Group ids the settings name (possibly anonymous groups, whose members the state must spell
 * out). */
export function realmSettingGroupIds(realm: Realm): number[] {
  return Object.values(REALM_GROUP_COLUMNS).flatMap((column) =>
    realm[column] === null ? [] : [realm[column]],
  );
}

/** Whether someone in the groups `groupIds` (every group they belong to, through subgroups,
 * as lib/streams.ts Permissions.groups holds them) is in the group a realm setting names.
 * Without a stored group (see REALM_GROUP_COLUMNS) nobody is. */
export function inRealmGroups(
  realm: Realm,
  setting: RealmPermissionSetting,
  groupIds: Set<number>,
): boolean {
  const id = realmGroupId(realm, setting);
  return id !== null && groupIds.has(id);
}

/** Whether a member of `membership` is in the group a realm setting names. */
export function inRealmSetting(
  realm: Realm,
  setting: RealmPermissionSetting,
  membership: Membership,
): boolean {
  const id = storedGroupId(realm, setting);
  return id !== null
    ? membership.ids.has(id)
    : membership.names.has(REALM_PERMISSION_SETTINGS[setting].default);
}

/** Zulip's enum values of the legacy policies, for the role groups that have one. */
const POLICY_OF_GROUP: Record<string, number> = {
  [SYSTEM_GROUPS.MEMBERS]: 1,
  [SYSTEM_GROUPS.ADMINISTRATORS]: 2,
  [SYSTEM_GROUPS.FULL_MEMBERS]: 3,
  [SYSTEM_GROUPS.MODERATORS]: 4,
  [SYSTEM_GROUPS.EVERYONE]: 5,
  [SYSTEM_GROUPS.NOBODY]: 6,
  [SYSTEM_GROUPS.OWNERS]: 7,
};
const WILDCARD_POLICY_OF_GROUP: Record<string, number> = {
  [SYSTEM_GROUPS.EVERYONE]: 1,
  [SYSTEM_GROUPS.MEMBERS]: 2,
  [SYSTEM_GROUPS.FULL_MEMBERS]: 3,
  [SYSTEM_GROUPS.ADMINISTRATORS]: 5,
  [SYSTEM_GROUPS.NOBODY]: 6,
  [SYSTEM_GROUPS.MODERATORS]: 7,
};

/** Zulip's message_edit_history_visibility_policy names. Parley's column holds Zulip's
 * numbers (1 all, 2 moves only, 3 none); the edit-history routes treat anything above 2 as
 * "none", and so does this. */
function editHistoryPolicyName(value: number): 'all' | 'moves' | 'none' {
  if (value === 1) return 'all';
  if (value === 2) return 'moves';
  return 'none';
}

const GIF_RATING_OPTIONS = {
  disabled: { name: 'GIF integration disabled', id: 0 },
  g: { name: 'Allow GIFs rated G (General audience)', id: 1 },
  pg: { name: 'Allow GIFs rated PG (Parental guidance)', id: 2 },
  'pg-13': { name: 'Allow GIFs rated PG-13 (Parental guidance - under 13)', id: 3 },
  r: { name: 'Allow GIFs rated R (Restricted)', id: 4 },
};

/** The organization's login methods as register and the realm event present them: Parley's
 * one is email and password (JWT is a server-to-server exchange Zulip does not list here
 * either). */
export function authenticationMethods(
  passwordAuthEnabled: boolean,
): Record<string, { enabled: boolean; available: boolean }> {
  return { Email: { enabled: passwordAuthEnabled, available: true } };
}

const DEFAULT_EXTERNAL_ACCOUNTS = {
  twitter: {
    text: 'Twitter',
    url_pattern: 'https://twitter.com/%(username)s',
    name: 'Twitter username',
    hint: '',
  },
  github: {
    text: 'GitHub',
    url_pattern: 'https://github.com/%(username)s',
    name: 'GitHub username',
    hint: '',
  },
};

const DEFAULT_LOGO_URL = '/static/images/logo/zulip-org-logo.svg?version=0';

/** Zulip's realm_icon_url without an uploaded icon: Gravatar's identicon of the string id. */
export function realmIconUrl(realm: Pick<Realm, 'stringId'>): string {
  const hash = createHash('md5').update(realm.stringId.toLowerCase()).digest('hex');
  return `https://secure.gravatar.com/avatar/${hash}?d=identicon`;
}

export function realmState(realm: Realm, groups: RealmGroups): Record<string, unknown> {
  const config = getConfig();
  const systemNameOf = new Map([...groups.systemIds].map(([name, id]) => [id, name]));
  const settingGroupId = (setting: RealmPermissionSetting): number =>
    storedGroupId(realm, setting) ??
    groups.systemIds.get(REALM_PERMISSION_SETTINGS[setting].default)!;
  // Zulip's get_corresponding_policy_value_for_group_setting: a role group the old enum could
  // express maps to its value, anything else to `fallback`.
  const legacyPolicy = (
    setting: RealmPermissionSetting,
    table: Record<string, number>,
    allowed: number[],
    fallback: number,
  ): number => {
    const value = table[systemNameOf.get(settingGroupId(setting)) ?? ''];
    return value !== undefined && allowed.includes(value) ? value : fallback;
  };
  const editHistory = editHistoryPolicyName(realm.editHistoryVisibilityPolicy);
  const url = realmUrl(realm);

  const groupSettings = Object.fromEntries(
    (Object.keys(REALM_PERMISSION_SETTINGS) as RealmPermissionSetting[]).map((setting) => [
      `realm_${setting}`,
      groups.settingValue(settingGroupId(setting)),
    ]),
  );

  return {
    ...alwaysSentLimits(realm),
    // Settings the Realm row stores.
    realm_name: realm.name,
    // Zulip sends the Markdown source here (the settings form edits it); GET /server_settings
    // has the rendered HTML.
    realm_description: realm.description,
    realm_date_created: Math.floor(realm.dateCreated.getTime() / 1000),
    realm_invite_required: realm.inviteRequired,
    realm_emails_restricted_to_domains: realm.emailsRestrictedToDomains,
    realm_default_language: realm.defaultLanguage,
    realm_waiting_period_threshold: realm.waitingPeriodThreshold,
    realm_allow_message_editing: realm.allowMessageEditing,
    realm_message_content_edit_limit_seconds: realm.messageContentEditLimitSeconds,
    realm_message_content_delete_limit_seconds: realm.messageContentDeleteLimitSeconds,
    realm_message_edit_history_visibility_policy: editHistory,
    realm_allow_edit_history: editHistory !== 'none',
    realm_message_retention_days: realm.messageRetentionDays,
    realm_mandatory_topics: realm.mandatoryTopics,
    realm_topics_policy: realm.mandatoryTopics ? 'disable_empty_topic' : 'allow_empty_topic',
    realm_enable_spectator_access: realm.webPublicAccessEnabled,
    realm_avatar_changes_disabled: realm.avatarChangesDisabled,
    realm_name_changes_disabled: realm.nameChangesDisabled,
    realm_email_changes_disabled: realm.emailChangesDisabled,
    realm_disallow_disposable_email_addresses: realm.disallowDisposableEmailAddresses,
    realm_require_unique_names: realm.requireUniqueNames,
    realm_send_welcome_emails: realm.sendWelcomeEmails,
    realm_enable_read_receipts: realm.enableReadReceipts,
    realm_move_messages_within_stream_limit_seconds: realm.moveMessagesWithinStreamLimitSeconds,
    realm_move_messages_between_streams_limit_seconds: realm.moveMessagesBetweenStreamsLimitSeconds,
    realm_video_chat_provider: realm.videoChatProvider,
    // null: the server's (jitsi_server_url below).
    realm_jitsi_server_url: realm.jitsiServerUrl,
    realm_welcome_message_custom_text: realm.welcomeMessageCustomText,
    realm_password_auth_enabled: realm.passwordAuthEnabled,
    realm_email_auth_enabled: realm.passwordAuthEnabled,
    realm_authentication_methods: authenticationMethods(realm.passwordAuthEnabled),
    ...groupSettings,
    realm_create_public_stream_policy: legacyPolicy(
      'can_create_public_channel_group',
      POLICY_OF_GROUP,
      [1, 2, 3, 4],
      1,
    ),
    realm_create_private_stream_policy: legacyPolicy(
      'can_create_private_channel_group',
      POLICY_OF_GROUP,
      [1, 2, 3, 4],
      1,
    ),
    realm_create_web_public_stream_policy: legacyPolicy(
      'can_create_web_public_channel_group',
      POLICY_OF_GROUP,
      [2, 4, 6, 7],
      4,
    ),
    realm_wildcard_mention_policy: legacyPolicy(
      'can_mention_many_users_group',
      WILDCARD_POLICY_OF_GROUP,
      [1, 2, 3, 5, 6, 7],
      1,
    ),
    realm_url: url,
    // Deprecated alias Zulip still sends.
    realm_uri: url,
    realm_bot_domain: realmBotDomain(realm),
    realm_push_notifications_enabled: config.PUSH_NOTIFICATIONS_ENABLED,
    realm_push_notifications_enabled_end_timestamp: null,

    realm_default_code_block_language: realm.defaultCodeBlockLanguage,
    realm_digest_emails_enabled: realm.digestEmailsEnabled,
    realm_digest_weekday: realm.digestWeekday,
    realm_enable_guest_user_dm_warning: realm.enableGuestUserDmWarning,
    realm_enable_guest_user_indicator: realm.enableGuestUserIndicator,
    realm_inline_image_preview: realm.inlineImagePreview,
    realm_inline_url_embed_preview: realm.inlineUrlEmbedPreview,
    realm_message_content_allowed_in_email_notifications: realm.contentInEmailsAllowed,
    // -1: none.
    realm_moderation_request_channel_id: realm.moderationRequestChannelId ?? -1,
    realm_new_stream_announcements_stream_id: realm.newStreamAnnouncementsStreamId ?? -1,
    realm_signup_announcements_stream_id: realm.signupAnnouncementsStreamId ?? -1,
    realm_zulip_update_announcements_stream_id: realm.zulipUpdateAnnouncementsStreamId ?? -1,
    realm_org_type: realm.orgType,
    realm_plan_type: 1,
    zulip_plan_is_not_limited: true,
    realm_presence_disabled: false,
    realm_require_e2ee_push_notifications: realm.requireE2eePushNotifications,
    realm_upload_quota_mib: uploadQuotaMib(realm),
    realm_want_advertise_in_communities_directory: realm.wantAdvertiseInCommunitiesDirectory,
    realm_icon_source: 'G',
    realm_icon_url: realmIconUrl(realm),
    realm_logo_source: 'D',
    realm_logo_url: DEFAULT_LOGO_URL,
    realm_night_logo_source: 'D',
    realm_night_logo_url: DEFAULT_LOGO_URL,
    // Feature levels 434, 438, 456 and 469.
    realm_send_channel_events_messages: realm.sendChannelEventsMessages,
    realm_owner_full_content_access: false,
    realm_default_avatar_source: 'G',
    realm_media_preview_size: 100,
    // The GIF rating under all three of its names (giphy_rating until feature level 442,
    // then gif_rating_options, gif_rating_policy from 453), with 442's ids: "g" is 1.
    realm_giphy_rating: realm.giphyRating,
    realm_gif_rating_policy: realm.giphyRating,
    giphy_rating_options: GIF_RATING_OPTIONS,
    gif_rating_options: GIF_RATING_OPTIONS,
    gif_rating_policy_options: GIF_RATING_OPTIONS,

    // The server.
    // Only the providers the server is configured for (lib/video-calls.ts).
    realm_available_video_chat_providers: availableVideoChatProviders(),
    jitsi_server_url: config.JITSI_SERVER_URL,
    server_jitsi_server_url: config.JITSI_SERVER_URL,
    realm_default_external_accounts: DEFAULT_EXTERNAL_ACCOUNTS,
    development_environment: config.NODE_ENV === 'development',
    server_generation: SERVER_GENERATION,
    server_needs_upgrade: false,
    server_avatar_changes_disabled: false,
    server_name_changes_disabled: false,
    server_can_summarize_topics: false,
    server_inline_image_preview: true,
    // Parley renders no previews of linked pages.
    server_inline_url_embed_preview: false,
    // The formats uploaded images are thumbnailed into (lib/thumbnails.ts).
    server_thumbnail_formats: serverThumbnailFormats(),
    server_web_public_streams_enabled: true,
    // Parley sends no email yet.
    settings_send_digest_emails: false,
    server_min_deactivated_realm_deletion_days: 14,
    server_max_deactivated_realm_deletion_days: null,
    server_emoji_data_url: `${url}${EMOJI_DATA_PATH}`,
    server_report_message_types: REPORT_MESSAGE_TYPES,
    server_supported_permission_settings: SERVER_SUPPORTED_PERMISSION_SETTINGS,
    upgrade_text_for_wide_organization_logo:
      'Available on Zulip Cloud Standard. Upgrade to access.',
    max_avatar_file_size_mib: 5,
    max_icon_file_size_mib: 5,
    max_logo_file_size_mib: 5,
    max_channel_folder_name_length: MAX_CHANNEL_FOLDER_NAME_LENGTH,
    max_channel_folder_description_length: MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH,
    // zproject/default_settings.py MAX_REMINDER_NOTE_LENGTH.
    max_reminder_note_length: 1000,
    password_min_length: 6,
    password_max_length: 100,
    password_min_guesses: 10000,
  };
}

/** The current user's permission flags under realm_user (Zulip: membership, through
 * subgroups, of the group each organization setting names). */
export function realmUserPermissions(
  realm: Realm,
  membership: Membership,
): Record<string, boolean> {
  const can = (setting: RealmPermissionSetting) => inRealmSetting(realm, setting, membership);
  const publicStreams = can('can_create_public_channel_group');
  const privateStreams = can('can_create_private_channel_group');
  // As actions/streams.ts checks: web-public channels also need the organization's
  // spectator access.
  const webPublicStreams =
    realm.webPublicAccessEnabled && can('can_create_web_public_channel_group');
  return {
    can_create_public_streams: publicStreams,
    can_create_private_streams: privateStreams,
    can_create_web_public_streams: webPublicStreams,
    can_create_streams: publicStreams || privateStreams || webPublicStreams,
    can_invite_others_to_realm: can('can_invite_users_group'),
    // Documented but no longer sent by Zulip; clients of older feature levels read it.
    can_subscribe_other_users: can('can_add_subscribers_group'),
  };
}

type State = Record<string, unknown>;

/** Folds a `realm` event (op update or update_dict) into the realm section of a /register
 * state, as Zulip's apply_event does: each property lands on realm_<property>. */
export function applyRealmEvent(state: State, event: Record<string, unknown>): void {
  if (!('realm_name' in state)) return;
  const changes =
    event.op === 'update'
      ? { [event.property as string]: event.value }
      : event.op === 'update_dict'
        ? (event.data as Record<string, unknown>)
        : {};
  for (const [property, value] of Object.entries(changes)) {
    // The file size limit is a top-level key (Zulip's apply_event special-cases it too).
    if (property === 'max_file_upload_size_mib') {
      state.max_file_upload_size_mib = value;
      continue;
    }
    state[`realm_${property}`] = value;
    if (property === 'message_edit_history_visibility_policy')
      state.realm_allow_edit_history = value !== 'none';
    // Keys that say the same under other names (see realmState).
    if (property === 'giphy_rating') state.realm_gif_rating_policy = value;
    if (property === 'authentication_methods') {
      const email = (value as Record<string, { enabled: boolean }>).Email?.enabled ?? false;
      state.realm_password_auth_enabled = email;
      state.realm_email_auth_enabled = email;
    }
  }
}

const realmById = statement<Realm, [number]>(
  `SELECT ${columnsOf('Realm', 'r')} FROM realm r WHERE r.id = $1`,
);

/** The organization's row as stored now (the request's copy may predate a raced change). */
export async function currentRealm(realm: Realm): Promise<Realm> {
  const [row] = await query(realmById, [realm.id]);
  return row ?? realm;
}
