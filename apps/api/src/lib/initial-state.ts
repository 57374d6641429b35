// The state POST /register returns (Zulip's fetch_initial_state_data), one section per event
// type the client fetches, and the folding of events that raced the registration
// (apply_events), so the client's state and its queue agree.
import { ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION, getConfig } from '@parley/config';
import { getPrisma, type Realm, type User } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { realmUrl } from '@parley/auth';
import { presentBot } from '../presenters/bots';
import { presentLinkifier } from '../presenters/linkifiers';
import { renderDescription } from '../presenters/realm';
import { presentUser } from '../presenters/users';
import { applyChannelEvent, fetchChannelState, type ChannelStateOptions } from './channel-state';
import { linkifierRows } from './linkifiers';
import { loadProfileData } from './profile-fields';
import { realmEmojiDict } from './realm-emoji';
import { alertWordsOf } from './alert-words';
import { mutedUsersOf } from './muted-users';
import {
  lastUpdateIdOf,
  presenceRows,
  presentPresences,
  serverTimestamp,
  type LegacyClientPresence,
  type ModernPresence,
} from './presence';
import { applyUnreadEvent, fetchUnreadMsgs, type UnreadState } from './unread';
import { presentUserSettings } from './user-settings';
import {
  mutedTopicsLegacy,
  userTopics,
  VisibilityPolicy,
  type UserTopicEntry,
} from './user-topics';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import { isAdmin, isGuest, isModerator } from './users';

/** Event types whose state /register can return (later issues add theirs). */
export const STATE_TYPES = [
  'realm',
  'realm_user',
  'realm_bot',
  'user_settings',
  'custom_profile_fields',
  'subscription',
  'stream',
  'default_streams',
  'message',
  'update_message_flags',
  'realm_linkifiers',
  'realm_emoji',
  'presence',
  'user_topic',
  'muted_topics',
  'muted_users',
  'alert_words',
] as const;

export const FIELD_TYPES = {
  SHORT_TEXT: { id: 1, name: 'Text (short)' },
  LONG_TEXT: { id: 2, name: 'Text (long)' },
  SELECT: { id: 3, name: 'List of options' },
  DATE: { id: 4, name: 'Date picker' },
  URL: { id: 5, name: 'Link' },
  USER: { id: 6, name: 'Person picker' },
  EXTERNAL_ACCOUNT: { id: 7, name: 'External account' },
  PRONOUNS: { id: 8, name: 'Pronouns' },
};

type State = Record<string, unknown>;

export interface StateOptions extends ChannelStateOptions {
  clientGravatar: boolean;
  /** The modern presence form: slim_presence or the simplified_presence_events capability. */
  slimPresence: boolean;
  presenceHistoryLimitDays?: number;
  /** The empty_topic_name capability: without it "" topics read realm_empty_topic_display_name. */
  emptyTopicName: boolean;
  /** Whether fetch_event_types was given (Zulip leaves muted_topics out when it names
   * user_topic). */
  explicitTypes: boolean;
  /** The linkifier_url_template capability: without it realm_linkifiers is always []. */
  linkifierUrlTemplate: boolean;
}

/** Values every registration returns, whatever it fetches. */
export function baseState(): State {
  return {
    zulip_feature_level: ZULIP_FEATURE_LEVEL,
    zulip_version: ZULIP_VERSION,
    zulip_merge_base: ZULIP_MERGE_BASE,
    max_message_length: 10000,
    max_topic_length: 60,
    max_stream_name_length: 60,
    max_stream_description_length: 1024,
    max_file_upload_size_mib: getConfig().MAX_FILE_UPLOAD_SIZE_MIB,
    max_bulk_new_subscription_messages: 100,
    realm_empty_topic_display_name: 'general chat',
    event_queue_longpoll_timeout_seconds: 90,
    server_typing_started_expiry_period_milliseconds: 45000,
    server_typing_stopped_wait_period_milliseconds: 12000,
    server_typing_started_wait_period_milliseconds: 30000,
    server_presence_ping_interval_seconds: 60,
    server_presence_offline_threshold_seconds: 200,
  };
}

export async function fetchInitialState(
  user: User,
  realm: Realm,
  types: Set<string>,
  options: StateOptions,
): Promise<State> {
  const prisma = getPrisma();
  const state: State = baseState();
  if (types.has('realm')) {
    Object.assign(state, {
      realm_name: realm.name,
      realm_description: renderDescription(realm.description),
      realm_url: realmUrl(realm),
      realm_uri: realmUrl(realm),
      realm_date_created: Math.floor(realm.dateCreated.getTime() / 1000),
      realm_default_language: realm.defaultLanguage,
      realm_invite_required: realm.inviteRequired,
      realm_emails_restricted_to_domains: realm.emailsRestrictedToDomains,
      realm_waiting_period_threshold: realm.waitingPeriodThreshold,
      realm_allow_message_editing: realm.allowMessageEditing,
      realm_message_content_edit_limit_seconds: realm.messageContentEditLimitSeconds,
      realm_message_content_delete_limit_seconds: realm.messageContentDeleteLimitSeconds,
      realm_message_retention_days: realm.messageRetentionDays,
      realm_mandatory_topics: realm.mandatoryTopics,
      realm_enable_spectator_access: realm.webPublicAccessEnabled,
      realm_password_auth_enabled: realm.passwordAuthEnabled,
      realm_push_notifications_enabled: getConfig().PUSH_NOTIFICATIONS_ENABLED,
      realm_is_zephyr_mirror_realm: false,
      realm_can_create_public_channel_group: realm.canCreatePublicChannelGroupId,
      realm_can_create_private_channel_group: realm.canCreatePrivateChannelGroupId,
      realm_can_create_web_public_channel_group: realm.canCreateWebPublicChannelGroupId,
      realm_can_add_subscribers_group: realm.canAddSubscribersGroupId,
    });
  }
  if (types.has('realm_user')) {
    const users = await prisma.user.findMany({
      where: { realmId: realm.id },
      orderBy: { id: 'asc' },
    });
    const profileData = await loadProfileData(realm.id, undefined);
    const present = (target: User) =>
      presentUser(target, user, realm, { clientGravatar: options.clientGravatar, profileData });
    Object.assign(state, {
      realm_users: users.filter((u) => u.isActive).map(present),
      realm_non_active_users: users.filter((u) => !u.isActive).map(present),
      cross_realm_bots: [],
      user_id: user.id,
      email: user.deliveryEmail,
      delivery_email: user.deliveryEmail,
      full_name: user.fullName,
      is_owner: user.role === 100,
      is_admin: isAdmin(user),
      is_moderator: isModerator(user),
      is_guest: isGuest(user),
      avatar_source: user.avatarSource,
      avatar_version: user.avatarVersion,
      avatar_url: presentUser(user, user, realm, { clientGravatar: false }).avatar_url,
    });
  }
  if (types.has('realm_bot')) {
    const bots = await prisma.user.findMany({
      where: { realmId: realm.id, isBot: true, ...(isAdmin(user) ? {} : { botOwnerId: user.id }) },
      orderBy: { id: 'asc' },
    });
    state.realm_bots = bots.map((bot) => presentBot(bot, realm));
  }
  // The legacy top-level copies of the settings went at feature level 439.
  if (types.has('user_settings')) state.user_settings = presentUserSettings(user);
  if (types.has('custom_profile_fields')) {
    const fields = await prisma.customProfileField.findMany({
      where: { realmId: realm.id },
      orderBy: [{ order: 'asc' }, { id: 'asc' }],
    });
    state.custom_profile_fields = fields.map((field) => ({
      id: field.id,
      name: field.name,
      type: field.fieldType,
      hint: field.hint,
      field_data: field.fieldData,
      order: field.order,
      required: field.required,
      editable_by_user: field.editableByUser,
      ...(field.displayInProfileSummary ? { display_in_profile_summary: true } : {}),
      ...(field.useForUserMatching ? { use_for_user_matching: true } : {}),
    }));
    state.custom_profile_field_types = FIELD_TYPES;
  }
  Object.assign(state, await fetchChannelState(user, realm, types, options));
  if (types.has('message')) {
    const newest = await prisma.userMessage.aggregate({
      where: { userId: user.id },
      _max: { messageId: true },
    });
    state.max_message_id = newest._max.messageId ?? -1;
  }
  if (types.has('realm_emoji')) state.realm_emoji = await realmEmojiDict(realm.id);
  if (types.has('realm_linkifiers'))
    state.realm_linkifiers = options.linkifierUrlTemplate
      ? (await linkifierRows(realm.id)).map(presentLinkifier)
      : [];
  if (types.has('presence')) {
    const rows = await presenceRows(realm.id, {
      historyLimitDays: options.presenceHistoryLimitDays,
    });
    Object.assign(state, {
      presences: presentPresences(rows, user, realm, options.slimPresence),
      presence_last_update_id: lastUpdateIdOf(rows),
      server_timestamp: serverTimestamp(),
    });
  }
  if (types.has('user_topic'))
    state.user_topics = (await userTopics(user)).map((entry) =>
      entry.topic_name === '' && !options.emptyTopicName
        ? { ...entry, topic_name: EMPTY_TOPIC_DISPLAY_NAME }
        : entry,
    );
  if (types.has('muted_topics') && !(options.explicitTypes && types.has('user_topic')))
    state.muted_topics = await mutedTopicsLegacy(user);
  if (types.has('muted_users')) state.muted_users = await mutedUsersOf(user.id);
  if (types.has('alert_words')) state.alert_words = await alertWordsOf(user.id);
  // Zulip sends unread_msgs to clients that follow both messages and their flags.
  if (types.has('message') && types.has('update_message_flags'))
    state.unread_msgs = await fetchUnreadMsgs(user);
  return state;
}

type Person = Record<string, unknown> & { user_id: number };

/** Applies one queued event to the state (Zulip's apply_event) for the sections present. */
export function applyEvent(
  state: State,
  event: QueuedEvent,
  user: User,
  options: StateOptions,
): void {
  switch (event.type) {
    case 'realm_user':
      return applyRealmUser(state, event, user);
    case 'realm_bot': {
      const bots = state.realm_bots as Person[] | undefined;
      const bot = event.bot as Person;
      if (!bots) return;
      const index = bots.findIndex((b) => b.user_id === bot.user_id);
      if (event.op === 'add' && index === -1) bots.push(bot);
      else if (event.op === 'update' && index !== -1) Object.assign(bots[index]!, bot);
      else if (event.op === 'remove' && index !== -1) bots.splice(index, 1);
      return;
    }
    case 'user_settings': {
      const settings = state.user_settings as Record<string, unknown> | undefined;
      if (settings && event.op === 'update') settings[event.property as string] = event.value;
      return;
    }
    case 'presence':
      return applyPresence(state, event, options);
    case 'user_topic':
      return applyUserTopic(state, event, options);
    case 'muted_topics':
    case 'muted_users':
    case 'alert_words':
      // These events carry the whole list.
      if (event.type in state) state[event.type] = event[event.type];
      return;
    case 'custom_profile_fields':
      if (state.custom_profile_fields) state.custom_profile_fields = event.fields;
      return;
    case 'message': {
      const id = (event.message as { id: number }).id;
      if (typeof state.max_message_id === 'number' && id > state.max_message_id)
        state.max_message_id = id;
      if (state.unread_msgs) applyUnreadEvent(state.unread_msgs as UnreadState, event, user);
      return;
    }
    case 'update_message_flags':
      if (state.unread_msgs) applyUnreadEvent(state.unread_msgs as UnreadState, event, user);
      return;
    case 'subscription':
    case 'stream':
    case 'default_streams':
      return applyChannelEvent(state, event, options);
    case 'realm_emoji':
      if (state.realm_emoji) state.realm_emoji = event.realm_emoji;
      return;
    case 'realm_linkifiers':
      if (state.realm_linkifiers && options.linkifierUrlTemplate)
        state.realm_linkifiers = event.realm_linkifiers;
      return;
    default:
      return;
  }
}

function applyRealmUser(state: State, event: QueuedEvent, user: User): void {
  const active = state.realm_users as Person[] | undefined;
  const inactive = state.realm_non_active_users as Person[] | undefined;
  if (!active || !inactive) return;
  const person = event.person as Person;
  const find = () => {
    for (const list of [active, inactive]) {
      const index = list.findIndex((p) => p.user_id === person.user_id);
      if (index !== -1) return { list, index };
    }
    return null;
  };
  if (event.op === 'add') {
    if (!find()) active.push(person);
    return;
  }
  if (event.op === 'remove') {
    const found = find();
    found?.list.splice(found.index, 1);
    return;
  }
  const found = find();
  if (!found) return;
  const target = found.list[found.index]!;
  const { custom_profile_field: field, new_email: newEmail, ...fields } = person;
  Object.assign(target, fields);
  if (newEmail !== undefined) target.email = newEmail;
  if (field) {
    const { id, ...value } = field as { id: number; value: unknown };
    const profile = (target.profile_data ?? {}) as Record<string, unknown>;
    if (value.value === null) delete profile[String(id)];
    else profile[String(id)] = value;
    target.profile_data = profile;
  }
  if ('role' in fields) {
    const role = fields.role as number;
    Object.assign(target, {
      is_owner: role === 100,
      is_admin: role <= 200,
      is_guest: role === 600,
    });
  }
  if ('is_active' in fields) {
    found.list.splice(found.index, 1);
    (fields.is_active ? active : inactive).push(target);
  }
  if (person.user_id === user.id && typeof fields.full_name === 'string' && 'full_name' in state)
    state.full_name = fields.full_name;
}

/** A raced presence event replaces that user's entry. Queued events are already in the form
 * the queue asked for: modern ({presences}) or legacy (one user's website status). The change
 * id stays: the client's next poll by id just fetches the entry again. */
function applyPresence(state: State, event: QueuedEvent, options: StateOptions): void {
  const presences = state.presences as Record<string, unknown> | undefined;
  if (!presences) return;
  if (event.presences) {
    if (options.slimPresence) Object.assign(presences, event.presences);
    return;
  }
  const website = (event.presence as { website?: LegacyClientPresence } | undefined)?.website;
  if (!website) return;
  if (options.slimPresence) {
    const key = String(event.user_id);
    const previous = presences[key] as ModernPresence | undefined;
    presences[key] = {
      active_timestamp:
        website.status === 'active' ? website.timestamp : (previous?.active_timestamp ?? 0),
      idle_timestamp: website.timestamp,
    };
  } else if (typeof event.email === 'string') {
    const { pushable: _pushable, ...aggregated } = website;
    presences[event.email] = { aggregated, website };
  }
}

function applyUserTopic(state: State, event: QueuedEvent, options: StateOptions): void {
  const topics = state.user_topics as UserTopicEntry[] | undefined;
  if (!topics) return;
  const name = event.topic_name as string;
  const shown = name === '' && !options.emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : name;
  const rest = topics.filter(
    (t) => !(t.stream_id === event.stream_id && t.topic_name.toLowerCase() === shown.toLowerCase()),
  );
  if (event.visibility_policy !== VisibilityPolicy.INHERIT)
    rest.push({
      stream_id: event.stream_id as number,
      topic_name: shown,
      visibility_policy: event.visibility_policy as number,
      last_updated: event.last_updated as number,
    });
  state.user_topics = rest;
}
