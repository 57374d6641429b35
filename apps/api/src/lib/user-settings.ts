// Zulip's personal settings (UserBaseSettings), declared once: the column each is stored in,
// how PATCH /settings validates it, and how /register and user_settings events present it.
// Settings with side effects of their own (email_address_visibility, timezone, presence_enabled)
// are declared here too; their actions live in actions/users.ts and actions/presence.ts.
import type { Realm, User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { p, type Param } from '@parley/http';
import { LANGUAGES } from './languages';

type Value = boolean | number | string;

export interface SettingSpec {
  column: keyof User;
  /** Zulip's default for a new user (the column's default in the migration). */
  default: Value;
  param: Param<Value | undefined>;
  /** Zulip's check_settings_values: a rule beyond the parameter's type. */
  check?: (value: never) => void;
}

const oneOf = <const V extends readonly number[]>(name: string, values: V) => ({
  param: p.int().optional() as Param<Value | undefined>,
  check: (value: number) => {
    if (!values.includes(value)) throw new JsonableError(`Invalid ${name}`);
  },
});
const bool = (column: keyof User, fallback: boolean): SettingSpec => ({
  column,
  default: fallback,
  param: p.bool().optional() as Param<Value | undefined>,
});
const choice = (
  column: keyof User,
  name: string,
  values: readonly number[],
  fallback: number,
): SettingSpec => ({
  column,
  default: fallback,
  ...oneOf(name, values),
});
const text = (
  column: keyof User,
  values: readonly [string, ...string[]],
  fallback: string,
): SettingSpec => ({
  column,
  default: fallback,
  param: p.enum(values).optional() as Param<Value | undefined>,
});
const int = (column: keyof User, min: number, max: number, fallback: number): SettingSpec => ({
  column,
  default: fallback,
  param: p.int({ min, max }).optional() as Param<Value | undefined>,
});

/** Zulip's static/audio/notification_sounds (the .ogg names); "none" turns sounds off. */
export const NOTIFICATION_SOUNDS = [
  'ascend',
  'beep_boop',
  'bink',
  'bright',
  'brlip',
  'chime',
  'deep tom',
  'ding',
  'double tap',
  'down',
  'dry bongos',
  'dutdut',
  'fast ascend',
  'flute',
  'friendly',
  'kick roll',
  'loud tintong',
  'metallic snare',
  'pan',
  'practicechat',
  'shaker',
  'simple',
  'stairs',
  'subtle',
  'swish',
  'tintong',
  'up',
  'wood block',
  'zaping',
  'zing',
  'zulip',
] as const;

export const EMOJISET_CHOICES = [
  { key: 'google', text: 'Google' },
  { key: 'twitter', text: 'Twitter' },
  { key: 'text', text: 'Plain text' },
] as const;

/** Visibility-policy automation (Zulip's AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_*). */
export const AutoPolicy = { ON_PARTICIPATION: 1, ON_SEND: 2, ON_INITIATION: 3, NEVER: 4 } as const;
const AUTO_POLICIES = Object.values(AutoPolicy);

const MAX_BATCHING_PERIOD_SECONDS = 7 * 24 * 60 * 60;

export const USER_SETTINGS = {
  allow_private_data_export: bool('allowPrivateDataExport', false),
  automatically_follow_topics_policy: choice(
    'automaticallyFollowTopicsPolicy',
    'automatically_follow_topics_policy',
    AUTO_POLICIES,
    3,
  ),
  automatically_follow_topics_where_mentioned: bool(
    'automaticallyFollowTopicsWhereMentioned',
    true,
  ),
  automatically_unmute_topics_in_muted_streams_policy: choice(
    'automaticallyUnmuteTopicsInMutedStreamsPolicy',
    'automatically_unmute_topics_in_muted_streams_policy',
    AUTO_POLICIES,
    2,
  ),
  color_scheme: choice('colorScheme', 'color_scheme', [1, 2, 3], 1),
  default_language: {
    column: 'defaultLanguage',
    default: 'en',
    param: p.string({ maxLength: 50 }).optional() as Param<Value | undefined>,
    check: (value: string) => {
      if (!Object.hasOwn(LANGUAGES, value)) throw new JsonableError('Invalid default_language');
    },
  },
  demote_inactive_streams: choice('demoteInactiveStreams', 'demote_inactive_streams', [1, 2, 3], 1),
  desktop_icon_count_display: choice(
    'desktopIconCountDisplay',
    'desktop_icon_count_display',
    [1, 2, 3, 4],
    1,
  ),
  display_emoji_reaction_users: bool('displayEmojiReactionUsers', true),
  email_address_visibility: choice(
    'emailAddressVisibility',
    'email_address_visibility',
    [1, 2, 3, 4, 5],
    1,
  ),
  email_notifications_batching_period_seconds: {
    column: 'emailNotificationsBatchingPeriodSeconds',
    default: 120,
    param: p.int().optional() as Param<Value | undefined>,
    check: (seconds: number) => {
      if (seconds <= 0 || seconds > MAX_BATCHING_PERIOD_SECONDS)
        throw new JsonableError(`Invalid email batching period: ${seconds} seconds`);
    },
  },
  emojiset: text(
    'emojiset',
    EMOJISET_CHOICES.map((set) => set.key) as unknown as [string, ...string[]],
    'google',
  ),
  enable_desktop_notifications: bool('enableDesktopNotifications', true),
  enable_digest_emails: bool('enableDigestEmails', true),
  enable_drafts_synchronization: bool('enableDraftsSynchronization', true),
  enable_followed_topic_audible_notifications: bool(
    'enableFollowedTopicAudibleNotifications',
    true,
  ),
  enable_followed_topic_desktop_notifications: bool(
    'enableFollowedTopicDesktopNotifications',
    true,
  ),
  enable_followed_topic_email_notifications: bool('enableFollowedTopicEmailNotifications', true),
  enable_followed_topic_push_notifications: bool('enableFollowedTopicPushNotifications', true),
  enable_followed_topic_wildcard_mentions_notify: bool(
    'enableFollowedTopicWildcardMentionsNotify',
    true,
  ),
  enable_login_emails: bool('enableLoginEmails', true),
  enable_marketing_emails: bool('enableMarketingEmails', true),
  enable_offline_email_notifications: bool('enableOfflineEmailNotifications', true),
  enable_offline_push_notifications: bool('enableOfflinePushNotifications', true),
  enable_online_push_notifications: bool('enableOnlinePushNotifications', true),
  enable_sounds: bool('enableSounds', true),
  enable_stream_audible_notifications: bool('enableStreamAudibleNotifications', false),
  enable_stream_desktop_notifications: bool('enableStreamDesktopNotifications', false),
  enable_stream_email_notifications: bool('enableStreamEmailNotifications', false),
  enable_stream_push_notifications: bool('enableStreamPushNotifications', false),
  enter_sends: bool('enterSends', false),
  fluid_layout_width: bool('fluidLayoutWidth', false),
  hide_ai_features: bool('hideAiFeatures', false),
  high_contrast_mode: bool('highContrastMode', false),
  left_side_userlist: bool('leftSideUserlist', false),
  message_content_in_email_notifications: bool('messageContentInEmailNotifications', true),
  notification_sound: {
    column: 'notificationSound',
    default: 'zulip',
    param: p.string({ maxLength: 30 }).optional() as Param<Value | undefined>,
    check: (sound: string) => {
      if (sound !== 'none' && !(NOTIFICATION_SOUNDS as readonly string[]).includes(sound))
        throw new JsonableError(`Invalid notification sound '${sound}'`);
    },
  },
  pm_content_in_desktop_notifications: bool('pmContentInDesktopNotifications', true),
  presence_enabled: bool('presenceEnabled', true),
  realm_name_in_email_notifications_policy: choice(
    'realmNameInEmailNotificationsPolicy',
    'realm_name_in_email_notifications_policy',
    [1, 2, 3],
    1,
  ),
  receives_typing_notifications: bool('receivesTypingNotifications', true),
  resolved_topic_notice_auto_read_policy: text(
    'resolvedTopicNoticeAutoReadPolicy',
    ['always', 'except_followed', 'never'],
    'except_followed',
  ),
  send_private_typing_notifications: bool('sendPrivateTypingNotifications', true),
  send_read_receipts: bool('sendReadReceipts', true),
  send_stream_typing_notifications: bool('sendStreamTypingNotifications', true),
  starred_message_counts: bool('starredMessageCounts', true),
  timezone: {
    column: 'timezone',
    default: '',
    param: p.string({ maxLength: 40 }).optional() as Param<Value | undefined>,
  },
  translate_emoticons: bool('translateEmoticons', false),
  twenty_four_hour_time: bool('twentyFourHourTime', false),
  user_list_style: choice('userListStyle', 'user_list_style', [1, 2, 3], 3),
  web_animate_image_previews: text(
    'webAnimateImagePreviews',
    ['always', 'on_hover', 'never'],
    'on_hover',
  ),
  web_channel_default_view: choice(
    'webChannelDefaultView',
    'web_channel_default_view',
    [1, 2, 3, 4],
    1,
  ),
  web_escape_navigates_to_home_view: bool('webEscapeNavigatesToHomeView', true),
  // Zulip takes any integer; these bounds keep a typo from making the web app unusable.
  web_font_size_px: int('webFontSizePx', 8, 64, 16),
  // "recent" replaced "recent_topics" at feature level 454; both are accepted.
  web_home_view: text('webHomeView', ['recent', 'recent_topics', 'inbox', 'all_messages'], 'inbox'),
  web_inbox_show_channel_folders: bool('webInboxShowChannelFolders', true),
  web_left_sidebar_show_channel_folders: bool('webLeftSidebarShowChannelFolders', true),
  web_left_sidebar_unreads_count_summary: bool('webLeftSidebarUnreadsCountSummary', true),
  web_line_height_percent: int('webLineHeightPercent', 50, 300, 140),
  web_mark_read_on_scroll_policy: choice(
    'webMarkReadOnScrollPolicy',
    'web_mark_read_on_scroll_policy',
    [1, 2, 3],
    1,
  ),
  web_navigate_to_sent_message: bool('webNavigateToSentMessage', true),
  web_stream_unreads_count_display_policy: choice(
    'webStreamUnreadsCountDisplayPolicy',
    'web_stream_unreads_count_display_policy',
    [1, 2, 3],
    2,
  ),
  web_suggest_update_timezone: bool('webSuggestUpdateTimezone', true),
  wildcard_mentions_notify: bool('wildcardMentionsNotify', true),
} satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof USER_SETTINGS;
export const SETTING_NAMES = Object.keys(USER_SETTINGS) as SettingName[];

/** Runs a setting's extra rule (the parameter already has the right type). */
export function checkSetting(name: SettingName, value: Value): void {
  const spec: SettingSpec = USER_SETTINGS[name];
  (spec.check as ((value: Value) => void) | undefined)?.(value);
}

/** The settings among `names` a request gives, each checked, in `names`' order. */
export function checkedSettingChanges(
  names: readonly SettingName[],
  params: Partial<Record<SettingName, Value | undefined>>,
): [SettingName, Value][] {
  const changes: [SettingName, Value][] = [];
  for (const name of names) {
    const value = params[name];
    if (value === undefined) continue;
    checkSetting(name, value);
    changes.push([name, value]);
  }
  return changes;
}

/** The user_settings object of /register: every setting, plus the lists clients choose from. */
export function presentUserSettings(user: User): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (const name of SETTING_NAMES) settings[name] = user[USER_SETTINGS[name].column];
  settings.emojiset_choices = EMOJISET_CHOICES;
  settings.available_notification_sounds = NOTIFICATION_SOUNDS;
  return settings;
}

/** The settings an organization chooses for its new members (Zulip's
 * update_realm_user_settings_defaults parameters): all but a person's time zone and language,
 * data export consent, and the security and marketing emails, which stay their own choice. */
export const REALM_DEFAULT_SETTING_NAMES = SETTING_NAMES.filter(
  (name) =>
    ![
      'allow_private_data_export',
      'default_language',
      'enable_login_emails',
      'enable_marketing_emails',
      'timezone',
    ].includes(name),
);

type DefaultsRealm = Pick<Realm, 'userSettingsDefaults' | 'defaultEmailAddressVisibility'>;

/** The organization's changes to Zulip's defaults, by setting name (only settings it may
 * choose, in case the stored object holds anything else). */
export function realmDefaultOverrides(realm: DefaultsRealm): Partial<Record<SettingName, Value>> {
  const stored = (realm.userSettingsDefaults ?? {}) as Record<string, unknown>;
  const overrides: Partial<Record<SettingName, Value>> = {
    email_address_visibility: realm.defaultEmailAddressVisibility,
  };
  for (const name of REALM_DEFAULT_SETTING_NAMES) {
    const value = stored[name];
    if (typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string')
      overrides[name] = value;
  }
  return overrides;
}

/** realm_user_settings_defaults: the settings a new member starts with, Zulip's defaults where
 * the organization kept them. */
export function realmUserSettingsDefaults(realm: DefaultsRealm): Record<string, unknown> {
  const defaults: Record<string, unknown> = {};
  for (const name of SETTING_NAMES)
    if (name !== 'timezone') defaults[name] = USER_SETTINGS[name].default;
  Object.assign(defaults, realmDefaultOverrides(realm));
  defaults.emojiset_choices = EMOJISET_CHOICES;
  defaults.available_notification_sounds = NOTIFICATION_SOUNDS;
  return defaults;
}

/** A new member's columns for the organization's chosen defaults (Zulip's
 * copy_default_settings); the email address visibility is set apart (bots' is public). */
export function newUserSettingColumns(realm: DefaultsRealm): Record<string, Value> {
  const columns: Record<string, Value> = {};
  for (const [name, value] of Object.entries(realmDefaultOverrides(realm)))
    if (name !== 'email_address_visibility')
      columns[USER_SETTINGS[name as SettingName].column] = value;
  return columns;
}
