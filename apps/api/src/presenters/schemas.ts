// The objects the presenters build, as zod schemas for the routes' declared answers (the
// OpenAPI description publishes them; every test holds each answer to its route's). Shapes
// follow the presenters beside this file; a key a presenter adds must be added here too, or
// the tests that meet it fail.
import { z } from 'zod';

export const id = z.int().min(0);
export const ids = z.array(id);
/** Unix seconds. */
export const timestamp = z.number();

/** Zulip's group-setting value: a group id, or an anonymous group of members and subgroups. */
export const groupSettingValue = z.union([
  id,
  z.object({ direct_members: ids, direct_subgroups: ids }),
]);

const editHistoryEntry = z.object({
  user_id: id.nullable(),
  timestamp,
  prev_content: z.string().optional(),
  prev_rendered_content: z.string().optional(),
  prev_stream: id.optional(),
  stream: id.optional(),
  prev_topic: z.string().optional(),
  topic: z.string().optional(),
});

const displayRecipientUser = z.object({
  id,
  email: z.string(),
  full_name: z.string(),
  is_mirror_dummy: z.boolean(),
});

export const reaction = z.object({
  emoji_name: z.string(),
  emoji_code: z.string(),
  reaction_type: z.string(),
  user_id: id,
});

/** A message's submessage (spec 2.3, experimental): a widget's description or an addition. */
export const submessage = z.object({
  msg_type: z.string(),
  content: z.string(),
  message_id: id,
  sender_id: id,
  id,
});

/** presenters/messages.ts presentMessage (spec 2.3). */
export const message = z.object({
  id,
  sender_id: id,
  content: z.string(),
  recipient_id: id,
  timestamp,
  client: z.string(),
  subject: z.string(),
  topic_links: z.array(z.object({ text: z.string(), url: z.string() })),
  is_me_message: z.boolean(),
  reactions: z.array(reaction),
  submessages: z.array(submessage),
  flags: z.array(z.string()),
  sender_full_name: z.string(),
  sender_email: z.string(),
  sender_realm_str: z.string(),
  display_recipient: z.union([z.string(), z.array(displayRecipientUser)]),
  type: z.enum(['stream', 'private']),
  stream_id: id.optional(),
  avatar_url: z.string().nullable(),
  content_type: z.enum(['text/html', 'text/x-markdown']),
  last_edit_timestamp: timestamp.optional(),
  last_moved_timestamp: timestamp.optional(),
  edit_history: z.array(editHistoryEntry).optional(),
  /** GET /messages with a search narrow. */
  match_content: z.string().optional(),
  match_subject: z.string().optional(),
});

const profileValue = z.object({ value: z.string(), rendered_value: z.string().optional() });

/** presenters/users.ts presentUser (spec 2.2). */
export const user = z.object({
  user_id: id,
  delivery_email: z.string().nullable(),
  email: z.string(),
  full_name: z.string(),
  date_joined: z.string(),
  is_active: z.boolean(),
  is_owner: z.boolean(),
  is_admin: z.boolean(),
  is_guest: z.boolean(),
  is_bot: z.boolean(),
  bot_type: z.int().nullable(),
  role: z.int(),
  timezone: z.string(),
  avatar_url: z.string().nullable(),
  avatar_version: z.int(),
  is_imported_stub: z.boolean(),
  bot_owner_id: id.nullable().optional(),
  is_system_bot: z.literal(true).optional(),
  is_deleted: z.boolean().optional(),
  profile_data: z.record(z.string(), profileValue).optional(),
});

const streamGroupSettings = {
  can_add_subscribers_group: groupSettingValue,
  can_remove_subscribers_group: groupSettingValue,
  can_administer_channel_group: groupSettingValue,
  can_delete_any_message_group: groupSettingValue,
  can_delete_own_message_group: groupSettingValue,
  can_move_messages_out_of_channel_group: groupSettingValue,
  can_move_messages_within_channel_group: groupSettingValue,
  can_send_message_group: groupSettingValue,
  can_subscribe_group: groupSettingValue,
  can_resolve_topics_group: groupSettingValue,
  can_create_topic_group: groupSettingValue,
};

const streamFields = {
  stream_id: id,
  name: z.string(),
  description: z.string(),
  rendered_description: z.string(),
  date_created: timestamp,
  creator_id: id.nullable(),
  invite_only: z.boolean(),
  is_web_public: z.boolean(),
  history_public_to_subscribers: z.boolean(),
  message_retention_days: z.int().nullable(),
  stream_post_policy: z.int(),
  is_announcement_only: z.boolean(),
  first_message_id: id.nullable(),
  folder_id: id.nullable(),
  is_recently_active: z.boolean(),
  is_archived: z.boolean(),
  topics_policy: z.string(),
  stream_weekly_traffic: z.int().nullable(),
  subscriber_count: z.int(),
  ...streamGroupSettings,
};

/** presenters/streams.ts presentStream. */
export const stream = z.object(streamFields);

/** presenters/streams.ts presentSubscription (spec 2.7). */
export const subscription = z.object({
  ...streamFields,
  color: z.string(),
  is_muted: z.boolean(),
  in_home_view: z.boolean(),
  pin_to_top: z.boolean(),
  desktop_notifications: z.boolean().nullable(),
  audible_notifications: z.boolean().nullable(),
  push_notifications: z.boolean().nullable(),
  email_notifications: z.boolean().nullable(),
  wildcard_mentions_notify: z.boolean().nullable(),
  subscribers: ids.optional(),
});

/** presenters/attachments.ts presentAttachment. */
export const attachment = z.object({
  id,
  name: z.string(),
  path_id: z.string(),
  size: z.int(),
  create_time: z.number(),
  messages: z.array(z.object({ id, date_sent: z.number() })),
});

/** presenters/user-groups.ts presentUserGroup: the settings are named by the caller. */
export const userGroup = z.looseObject({
  id,
  name: z.string(),
  creator_id: id.nullable(),
  date_created: timestamp.nullable(),
  description: z.string(),
  members: ids,
  direct_subgroup_ids: ids,
  is_system_group: z.boolean(),
  deactivated: z.boolean(),
});

/** presenters/bots.ts presentBot. */
export const bot = z.object({
  user_id: id,
  email: z.string(),
  full_name: z.string(),
  bot_type: z.int().nullable(),
  is_active: z.boolean(),
  api_key: z.string(),
  avatar_url: z.string(),
  default_sending_stream: z.string().nullable(),
  default_events_register_stream: z.string().nullable(),
  default_all_public_streams: z.boolean(),
  owner_id: id.nullable(),
  services: z.array(z.unknown()),
});

/** presenters/drafts.ts presentDraft. */
export const draft = z.object({
  id,
  type: z.enum(['', 'stream', 'private']),
  to: ids,
  topic: z.string(),
  content: z.string(),
  timestamp,
});

/** lib/channel-folders.ts ChannelFolderEntry. */
export const channelFolder = z.object({
  id,
  name: z.string(),
  description: z.string(),
  rendered_description: z.string(),
  order: z.int(),
  creator_id: id.nullable(),
  date_created: timestamp,
  is_archived: z.boolean(),
});

/** lib/realm-domains.ts RealmDomainEntry. */
export const realmDomain = z.object({ domain: z.string(), allow_subdomains: z.boolean() });

/** lib/navigation-views.ts NavigationViewEntry. */
export const navigationView = z.object({
  fragment: z.string(),
  is_pinned: z.boolean(),
  name: z.string().nullable(),
});

/** presenters/saved-snippets.ts presentSavedSnippet. */
export const savedSnippet = z.object({
  id,
  title: z.string(),
  content: z.string(),
  date_created: timestamp,
});

const scheduledCommon = {
  content: z.string(),
  rendered_content: z.string(),
  scheduled_delivery_timestamp: timestamp,
  failed: z.boolean(),
};

/** presenters/scheduled-messages.ts presentScheduledMessage. */
export const scheduledMessage = z.union([
  z.object({
    scheduled_message_id: id,
    ...scheduledCommon,
    type: z.literal('stream'),
    to: id,
    topic: z.string(),
  }),
  z.object({ scheduled_message_id: id, ...scheduledCommon, type: z.literal('private'), to: ids }),
]);

/** presenters/scheduled-messages.ts presentReminder. */
export const reminder = z.object({
  reminder_id: id,
  type: z.literal('private'),
  to: ids,
  ...scheduledCommon,
  reminder_target_message_id: id.nullable(),
});

/** presenters/linkifiers.ts presentLinkifier. */
export const linkifier = z.object({
  id,
  pattern: z.string(),
  url_template: z.string(),
  example_input: z.string().nullable(),
  reverse_template: z.string().nullable(),
  alternative_url_templates: z.array(z.string()),
});

/** presenters/profile-fields.ts presentProfileField. */
export const profileField = z.object({
  id,
  name: z.string(),
  type: z.int(),
  hint: z.string(),
  field_data: z.string(),
  order: z.int(),
  required: z.boolean(),
  editable_by_user: z.boolean(),
  display_in_profile_summary: z.literal(true).optional(),
  use_for_user_matching: z.literal(true).optional(),
});

const inviteCommon = {
  id,
  invited_by_user_id: id,
  invited: timestamp,
  expiry_date: timestamp.nullable(),
  invited_as: z.int(),
};

/** presenters/invites.ts presentInvite and presentMultiuseInvite. */
export const invite = z.union([
  z.object({
    ...inviteCommon,
    email: z.string(),
    is_multiuse: z.literal(false),
    notify_referrer_on_join: z.boolean(),
  }),
  z.object({ ...inviteCommon, link_url: z.string(), is_multiuse: z.literal(true) }),
]);

/** presenters/realm-emoji.ts presentRealmEmoji. */
export const realmEmoji = z.object({
  id: z.string(),
  name: z.string(),
  source_url: z.string(),
  deactivated: z.boolean(),
  author_id: id.nullable(),
  still_url: z.string().nullable(),
});

/** An answer that is the envelope alone. */
export const empty = z.object({});
