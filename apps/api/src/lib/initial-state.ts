// The state POST /register returns (Zulip's fetch_initial_state_data), one section per event
// type the client fetches, and the folding of events that raced the registration
// (apply_events), so the client's state and its queue agree.
import { ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION } from '@parley/config';
import {
  columnsOf,
  query,
  statement,
  type CustomProfileField,
  type Realm,
  type User,
} from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { presentBot } from '../presenters/bots';
import { botDefaultStreamNames } from './bots';
import { isSystemBot } from './system-bots';
import { presentLinkifier } from '../presenters/linkifiers';
import { presentProfileField } from '../presenters/profile-fields';
import { avatarUrl, presentUser } from '../presenters/users';
import { ABSENT_FEATURE_SECTIONS } from './absent-features-state';
import { applyUserStatusEvent, userStatusState } from './user-status';
import { playgroundsOf } from './playgrounds';
import { defaultStreamGroupsOf } from './default-stream-groups';
import { channelFoldersOf, orderPositions, type ChannelFolderEntry } from './channel-folders';
import { navigationViewsOf, type NavigationViewEntry } from './navigation-views';
import { realmDomainsOf, type RealmDomainEntry } from './realm-domains';
import {
  applyChannelEvent,
  fetchChannelState,
  fillNotificationDefaults,
  type ChannelStateOptions,
} from './channel-state';
import { linkifierRows } from './linkifiers';
import { FIELD_TYPES, loadProfileData } from './profile-fields';
import { realmEmojiDict } from './realm-emoji';
import { alertWordsOf } from './alert-words';
import { newestDraftsOf } from './drafts';
import {
  applyScheduledMessagesEvent,
  remindersOf,
  scheduledMessagesOf,
} from './scheduled-messages';
import { savedSnippetsOf } from './saved-snippets';
import { clientDevicesOf } from './client-devices';
import { presentDevices } from '../presenters/client-devices';
import { presentSavedSnippet } from '../presenters/saved-snippets';
import { presentDraft } from '../presenters/drafts';
import { presentReminder, presentScheduledMessage } from '../presenters/scheduled-messages';
import { mutedUsersOf } from './muted-users';
import {
  lastUpdateIdOf,
  presenceRowsFor,
  presentPresences,
  serverTimestamp,
  type LegacyClientPresence,
  type ModernPresence,
} from './presence';
import { applyUnreadEvent, fetchUnreadMsgs, type UnreadState } from './unread';
import {
  applyRecentConversationMessage,
  recentPrivateConversations,
  starredMessageIds,
  type RecentConversation,
} from './message-state';
import {
  alwaysSentLimits,
  applyRealmEvent,
  currentRealm,
  realmSettingGroupIds,
  realmState,
  realmUserPermissions,
} from './realm-state';
import { STOP_WORDS } from './stop-words';
import {
  applyUserGroupEvent,
  loadRealmGroups,
  membershipOf,
  presentRealmUserGroups,
} from './user-groups-state';
import { presentUserSettings, realmUserSettingsDefaults } from './user-settings';
import {
  presentMutedTopicsLegacy,
  presentUserTopics,
  topicPolicyRows,
  VisibilityPolicy,
  type UserTopicEntry,
} from './user-topics';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import { isAdmin, isGuest, isModerator, isOwner } from './users';
import { accessibleUserIds, canAccessUser, presentInaccessibleUser } from './user-access';

/** Every fetch_event_types value /register answers: all that Zulip documents (docs/register.md
 * says where each section's values come from). Without fetch_event_types or event_types the
 * client gets them all. */
export const STATE_TYPES = [
  'realm',
  'realm_user',
  'realm_bot',
  'realm_user_groups',
  'realm_user_settings_defaults',
  'user_settings',
  'custom_profile_fields',
  'subscription',
  'stream',
  'default_streams',
  'default_stream_groups',
  'message',
  'update_message_flags',
  'starred_messages',
  'recent_private_conversations',
  'realm_linkifiers',
  'realm_playgrounds',
  'channel_folders',
  'navigation_views',
  'realm_domains',
  'realm_emoji',
  'presence',
  'user_status',
  'user_topic',
  'muted_topics',
  'muted_users',
  'alert_words',
  'stop_words',
  'drafts',
  'saved_snippets',
  'device',
  'scheduled_messages',
  'reminders',
  'video_calls',
  ...Object.keys(ABSENT_FEATURE_SECTIONS),
];

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
  /** The include_deactivated_groups capability: realm_user_groups lists deactivated groups. */
  includeDeactivatedGroups: boolean;
  /** The user_list_incomplete capability: users the user may not see are left out of
   * realm_users instead of standing there as "Unknown user". */
  userListIncomplete?: boolean;
}

/** Values every registration returns, whatever it fetches. */
export function baseState(realm?: Realm): State {
  return {
    zulip_feature_level: ZULIP_FEATURE_LEVEL,
    zulip_version: ZULIP_VERSION,
    zulip_merge_base: ZULIP_MERGE_BASE,
    ...alwaysSentLimits(realm),
  };
}

const usersOfRealm = statement<User, [number]>(
  `SELECT ${columnsOf('User', 'u')} FROM user_profile u WHERE u.realm_id = $1 ORDER BY u.id`,
);
const botsOfRealm = statement<User, [number]>(
  `SELECT ${columnsOf('User', 'u')} FROM user_profile u WHERE u.realm_id = $1 AND u.is_bot
   ORDER BY u.id`,
);
const profileFieldsOfRealm = statement<CustomProfileField, [number]>(
  `SELECT ${columnsOf('CustomProfileField', 'f')} FROM custom_profile_field f
   WHERE f.realm_id = $1 ORDER BY f."order", f.id`,
);
const newestMessageIdOf = statement<{ id: number | null }, [number]>(
  `SELECT max(message_id) AS id FROM user_message WHERE user_profile_id = $1`,
);

export async function fetchInitialState(
  user: User,
  realm: Realm,
  types: Set<string>,
  options: StateOptions,
): Promise<State> {
  const state: State = baseState(realm);
  // One query serves the organization's group settings and realm_user_groups.
  const groups =
    types.has('realm') || types.has('realm_user_groups')
      ? await loadRealmGroups(realm, realmSettingGroupIds(realm), types.has('realm_user_groups'))
      : null;
  if (types.has('realm')) Object.assign(state, realmState(realm, groups!));
  if (types.has('realm_user_groups'))
    state.realm_user_groups = presentRealmUserGroups(groups!, options.includeDeactivatedGroups);
  // The user's groups serve realm_user's permission flags and channel access: read once.
  const wantChannels = types.has('subscription') || types.has('stream');
  const membership =
    types.has('realm_user') || wantChannels ? await membershipOf(user.id) : undefined;
  // One read of the organization's users serves realm_user and realm_bot.
  const users = types.has('realm_user') ? await query(usersOfRealm, [realm.id]) : null;
  if (users) {
    const profileData = await loadProfileData(realm.id, undefined);
    const present = (target: User) =>
      presentUser(target, user, realm, { clientGravatar: options.clientGravatar, profileData });
    // Under can_access_all_users_group (Zulip's get_users_for_api), a user the viewer may not
    // see is an active "Unknown user", or absent for clients with user_list_incomplete.
    const accessible = await accessibleUserIds(realm, user);
    const seen = users.filter((target) => canAccessUser(accessible, user, target));
    const unknown = options.userListIncomplete
      ? []
      : users.filter((target) => !canAccessUser(accessible, user, target));
    // The user's own avatar never leaves the URL to the client (Zulip forces
    // client_gravatar off here).
    const ownAvatar = avatarUrl(user, true, realm);
    Object.assign(state, {
      realm_users: [
        ...seen.filter((u) => u.isActive).map(present),
        ...unknown.map((u) => presentInaccessibleUser(u.id, realm)),
      ],
      realm_non_active_users: seen.filter((u) => !u.isActive).map(present),
      cross_realm_bots: [],
      user_id: user.id,
      email: user.deliveryEmail,
      delivery_email: user.deliveryEmail,
      full_name: user.fullName,
      is_owner: isOwner(user),
      is_admin: isAdmin(user),
      is_moderator: isModerator(user),
      is_guest: isGuest(user),
      avatar_source: user.avatarSource,
      avatar_version: user.avatarVersion,
      avatar_url: ownAvatar,
      avatar_url_medium: avatarUrl(user, true, realm, { medium: true }),
      ...realmUserPermissions(realm, membership!),
    });
  }
  if (types.has('realm_bot')) {
    // Administrators see every bot, others their own; the system bots are nobody's to manage
    // (Zulip keeps them in an organization of their own).
    const bots = (users ?? (await query(botsOfRealm, [realm.id]))).filter(
      (bot) => bot.isBot && (isAdmin(user) || bot.botOwnerId === user.id) && !isSystemBot(bot),
    );
    const streamNames = await botDefaultStreamNames(bots);
    state.realm_bots = bots.map((bot) => presentBot(bot, realm, streamNames));
  }
  // The legacy top-level copies of the settings went at feature level 439.
  if (types.has('user_settings')) state.user_settings = presentUserSettings(user);
  if (types.has('realm_user_settings_defaults'))
    state.realm_user_settings_defaults = realmUserSettingsDefaults(realm);
  if (types.has('custom_profile_fields')) {
    const fields = await query(profileFieldsOfRealm, [realm.id]);
    state.custom_profile_fields = fields.map(presentProfileField);
    state.custom_profile_field_types = FIELD_TYPES;
  }
  Object.assign(state, await fetchChannelState(user, realm, types, options, membership?.ids));
  if (types.has('message')) {
    const [newest] = await query(newestMessageIdOf, [user.id]);
    state.max_message_id = newest!.id ?? -1;
  }
  if (types.has('realm_emoji')) state.realm_emoji = await realmEmojiDict(realm.id);
  if (types.has('realm_linkifiers'))
    state.realm_linkifiers = options.linkifierUrlTemplate
      ? (await linkifierRows(realm.id)).map(presentLinkifier)
      : [];
  if (types.has('realm_playgrounds')) state.realm_playgrounds = await playgroundsOf(realm.id);
  // Archived folders too, as Zulip sends them: their channels may still be listed.
  if (types.has('channel_folders')) state.channel_folders = await channelFoldersOf(realm.id, true);
  if (types.has('navigation_views')) state.navigation_views = await navigationViewsOf(user.id);
  if (types.has('realm_domains')) state.realm_domains = await realmDomainsOf(realm.id);
  // Guests see no default channels, nor their groups (Zulip sends them []).
  if (types.has('default_stream_groups'))
    state.realm_default_stream_groups = isGuest(user) ? [] : await defaultStreamGroupsOf(realm.id);
  if (types.has('presence')) {
    const rows = await presenceRowsFor(realm, user, {
      historyLimitDays: options.presenceHistoryLimitDays,
    });
    Object.assign(state, {
      presences: presentPresences(rows, user, realm, options.slimPresence),
      presence_last_update_id: lastUpdateIdOf(rows),
      server_timestamp: serverTimestamp(),
    });
  }
  if (types.has('user_status')) state.user_status = await userStatusState(realm, user);
  const wantMutedTopics =
    types.has('muted_topics') && !(options.explicitTypes && types.has('user_topic'));
  const topicRows = types.has('user_topic') || wantMutedTopics ? await topicPolicyRows(user) : [];
  if (types.has('user_topic'))
    state.user_topics = presentUserTopics(topicRows).map((entry) =>
      entry.topic_name === '' && !options.emptyTopicName
        ? { ...entry, topic_name: EMPTY_TOPIC_DISPLAY_NAME }
        : entry,
    );
  if (wantMutedTopics) state.muted_topics = presentMutedTopicsLegacy(topicRows);
  if (types.has('muted_users')) state.muted_users = await mutedUsersOf(user.id);
  if (types.has('alert_words')) state.alert_words = await alertWordsOf(user.id);
  // Zulip sends unread_msgs to clients that follow both messages and their flags.
  if (types.has('message') && types.has('update_message_flags'))
    state.unread_msgs = await fetchUnreadMsgs(user, { emptyTopicName: options.emptyTopicName });
  if (types.has('starred_messages')) state.starred_messages = await starredMessageIds(user.id);
  if (types.has('recent_private_conversations'))
    state.recent_private_conversations = await recentPrivateConversations(user.id);
  if (types.has('stop_words')) state.stop_words = STOP_WORDS;
  // Newest edits first; none while the user does not synchronize drafts (Zulip forgets them
  // when synchronizing is turned off).
  if (types.has('drafts'))
    state.drafts = user.enableDraftsSynchronization
      ? (await newestDraftsOf(user.id)).map(presentDraft)
      : [];
  if (types.has('saved_snippets'))
    state.saved_snippets = (await savedSnippetsOf(user.id)).map(presentSavedSnippet);
  if (types.has('device')) state.devices = presentDevices(await clientDevicesOf(user.id));
  // Undelivered ones (failed included), soonest first: one statement each.
  if (types.has('scheduled_messages'))
    state.scheduled_messages = (await scheduledMessagesOf(user.id)).map(presentScheduledMessage);
  if (types.has('reminders')) state.reminders = (await remindersOf(user.id)).map(presentReminder);
  // From the authenticated user's row, as the other user settings here (no statement).
  if (types.has('video_calls')) state.has_zoom_token = user.zoomToken !== null;
  for (const [type, section] of Object.entries(ABSENT_FEATURE_SECTIONS))
    if (types.has(type)) Object.assign(state, section());
  return state;
}

type Person = Record<string, unknown> & { user_id: number };

function applyStarred(starred: number[], add: boolean, ids: number[]): number[] {
  const changed = new Set(ids);
  const rest = starred.filter((id) => !changed.has(id));
  return add ? [...rest, ...ids].sort((a, b) => a - b) : rest;
}

/** Sections Zulip's apply_event re-reads instead of patching: recent_private_conversations
 * after a direct message is deleted (its newest message may be gone), the user's permission
 * flags after their own role changed (they follow group membership), and the groups' member
 * lists after anyone's role or activity changed. Runs after the raced events are folded. */
export async function refreshAfterEvents(
  state: State,
  raced: QueuedEvent[],
  user: User,
  realm: Realm,
  options: StateOptions,
): Promise<void> {
  const personChanges = raced.filter((e) => e.type === 'realm_user');
  const changed = (e: QueuedEvent, field: string) =>
    e.op === 'update' && field in (e.person as Person);
  if (
    state.recent_private_conversations &&
    raced.some((e) => e.type === 'delete_message' && e.message_type === 'private')
  )
    state.recent_private_conversations = await recentPrivateConversations(user.id);
  // Organization settings decide the permission flags too.
  const realmChanged = raced.some((e) => e.type === 'realm');
  if (
    'can_create_streams' in state &&
    (realmChanged ||
      personChanges.some((e) => changed(e, 'role') && (e.person as Person).user_id === user.id))
  )
    Object.assign(
      state,
      realmUserPermissions(
        realmChanged ? await currentRealm(realm) : realm,
        await membershipOf(user.id),
      ),
    );
  if (
    state.realm_user_groups &&
    personChanges.some((e) => e.op !== 'update' || changed(e, 'role') || changed(e, 'is_active'))
  )
    state.realm_user_groups = presentRealmUserGroups(
      await loadRealmGroups(realm, realmSettingGroupIds(realm), true),
      options.includeDeactivatedGroups,
    );
}

/** Zulip's post_process_state, once the raced events are folded in: the user lists in user id
 * order without `is_active` (which list a user is in says it, and a client trusting the field
 * would miss later changes), and channel notification settings read as the user's defaults
 * for clients without the notification_settings_null capability. */
export function postProcessState(
  state: State,
  user: User,
  capabilities: Record<string, boolean>,
): void {
  for (const key of ['realm_users', 'realm_non_active_users'] as const) {
    const people = state[key] as Person[] | undefined;
    if (!people) continue;
    people.sort((a, b) => a.user_id - b.user_id);
    for (const person of people) delete person.is_active;
  }
  if (capabilities.notification_settings_null !== true) fillNotificationDefaults(state, user);
}

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
      // Zulip's op is delete (a bot handed to another owner leaves its old owner's list).
      else if ((event.op === 'delete' || event.op === 'remove') && index !== -1)
        bots.splice(index, 1);
      return;
    }
    case 'user_settings': {
      const settings = state.user_settings as Record<string, unknown> | undefined;
      if (settings && event.op === 'update') settings[event.property as string] = event.value;
      return;
    }
    case 'presence':
      return applyPresence(state, event, options);
    case 'user_status':
      return applyUserStatusEvent(state, event);
    case 'user_topic':
      return applyUserTopic(state, event, options);
    case 'has_zoom_token':
      if ('has_zoom_token' in state) state.has_zoom_token = event.value;
      return;
    case 'muted_topics':
    case 'muted_users':
    case 'alert_words':
      // These events carry the whole list.
      if (event.type in state) state[event.type] = event[event.type];
      return;
    case 'custom_profile_fields':
      if (state.custom_profile_fields) state.custom_profile_fields = event.fields;
      pruneProfileData(state, event.fields as { id: number }[]);
      return;
    case 'message': {
      const message = event.message as {
        id: number;
        type: string;
        display_recipient: unknown;
      };
      if (typeof state.max_message_id === 'number' && message.id > state.max_message_id)
        state.max_message_id = message.id;
      if (state.unread_msgs) applyUnreadEvent(state.unread_msgs as UnreadState, event, user);
      if (message.type === 'private' && state.recent_private_conversations)
        applyRecentConversationMessage(
          state.recent_private_conversations as RecentConversation[],
          message as { id: number; display_recipient: { id: number }[] },
          user.id,
        );
      return;
    }
    case 'update_message_flags':
      if (state.unread_msgs) applyUnreadEvent(state.unread_msgs as UnreadState, event, user);
      if (event.flag === 'starred' && state.starred_messages)
        state.starred_messages = applyStarred(
          state.starred_messages as number[],
          event.op === 'add',
          event.messages as number[],
        );
      return;
    case 'delete_message':
      if (state.unread_msgs) applyUnreadEvent(state.unread_msgs as UnreadState, event, user);
      if (state.starred_messages) {
        const gone = new Set(
          (event.message_ids as number[] | undefined) ?? [event.message_id as number],
        );
        state.starred_messages = (state.starred_messages as number[]).filter((id) => !gone.has(id));
      }
      return;
    case 'subscription':
    case 'stream':
    case 'default_streams':
      return applyChannelEvent(state, event, options);
    case 'realm_emoji':
      if (state.realm_emoji) state.realm_emoji = event.realm_emoji;
      return;
    case 'realm_user_settings_defaults': {
      const defaults = state.realm_user_settings_defaults as Record<string, unknown> | undefined;
      if (defaults && event.op === 'update') defaults[event.property as string] = event.value;
      return;
    }
    case 'realm_playgrounds':
      if (state.realm_playgrounds) state.realm_playgrounds = event.realm_playgrounds;
      return;
    case 'channel_folder':
      return applyChannelFolderEvent(state, event);
    case 'navigation_view':
      return applyNavigationViewEvent(state, event);
    case 'realm_domains':
      return applyRealmDomainsEvent(state, event);
    case 'default_stream_groups':
      if (state.realm_default_stream_groups)
        state.realm_default_stream_groups = event.default_stream_groups;
      return;
    case 'realm_linkifiers':
      if (state.realm_linkifiers && options.linkifierUrlTemplate)
        state.realm_linkifiers = event.realm_linkifiers;
      return;
    case 'user_group':
      return applyUserGroupEvent(state, event, options.includeDeactivatedGroups);
    case 'realm':
      return applyRealmEvent(state, event);
    case 'drafts':
      return applyDraftsEvent(state, event);
    case 'saved_snippets':
      return applySavedSnippetsEvent(state, event);
    case 'device':
      return applyDeviceEvent(state, event);
    case 'scheduled_messages':
    case 'reminders':
      return applyScheduledMessagesEvent(state, event);
    default:
      return;
  }
}

/** Zulip's apply_event for drafts: added ones go to the end, an edited one is replaced where
 * it stands, a deleted one leaves. */
function applyDraftsEvent(state: State, event: QueuedEvent): void {
  const drafts = state.drafts as { id: number }[] | undefined;
  if (!drafts) return;
  if (event.op === 'add') {
    drafts.push(...(event.drafts as { id: number }[]));
    return;
  }
  const id = event.op === 'update' ? (event.draft as { id: number }).id : event.draft_id;
  const index = drafts.findIndex((draft) => draft.id === id);
  if (index === -1) return;
  if (event.op === 'update') drafts[index] = event.draft as { id: number };
  else if (event.op === 'remove') drafts.splice(index, 1);
}

/** Zulip's apply_event for saved snippets: like drafts, keyed by id. */
function applySavedSnippetsEvent(state: State, event: QueuedEvent): void {
  const snippets = state.saved_snippets as { id: number }[] | undefined;
  if (!snippets) return;
  if (event.op === 'add') {
    snippets.push(event.saved_snippet as { id: number });
    return;
  }
  const id =
    event.op === 'update' ? (event.saved_snippet as { id: number }).id : event.saved_snippet_id;
  const index = snippets.findIndex((snippet) => snippet.id === id);
  if (index === -1) return;
  if (event.op === 'update') snippets[index] = event.saved_snippet as { id: number };
  else if (event.op === 'remove') snippets.splice(index, 1);
}

/** Zulip's apply_event for device: add makes an empty record, update sets the fields the
 * event carries (null included), remove drops it. */
function applyDeviceEvent(state: State, event: QueuedEvent): void {
  const devices = state.devices as Record<string, Record<string, unknown>> | undefined;
  if (!devices) return;
  const key = String(event.device_id);
  if (event.op === 'add')
    devices[key] = {
      push_key_id: null,
      push_token_id: null,
      pending_push_token_id: null,
      push_token_last_updated_timestamp: null,
      push_registration_error_code: null,
    };
  else if (event.op === 'remove') delete devices[key];
  else if (event.op === 'update' && devices[key]) {
    const { type: _type, op: _op, device_id: _id, id: _eventId, ...changes } = event;
    Object.assign(devices[key], changes);
  }
}

/** Zulip's apply_event for channel_folder: add appends, update merges `data`, reorder sets
 * each folder's order and sorts the list by it. */
function applyChannelFolderEvent(state: State, event: QueuedEvent): void {
  const folders = state.channel_folders as ChannelFolderEntry[] | undefined;
  if (!folders) return;
  if (event.op === 'add') {
    const folder = event.channel_folder as ChannelFolderEntry;
    if (!folders.some((entry) => entry.id === folder.id)) folders.push(folder);
  } else if (event.op === 'update') {
    const folder = folders.find((entry) => entry.id === event.channel_folder_id);
    if (folder) Object.assign(folder, event.data);
  } else if (event.op === 'reorder') {
    const positions = orderPositions(event.order as number[]);
    for (const folder of folders) folder.order = positions.get(folder.id) ?? folder.order;
    folders.sort((a, b) => a.order - b.order || a.id - b.id);
  }
}

/** Zulip's apply_event for navigation_view: add appends, update merges `data`, remove drops
 * the view with that fragment. */
function applyNavigationViewEvent(state: State, event: QueuedEvent): void {
  const views = state.navigation_views as NavigationViewEntry[] | undefined;
  if (!views) return;
  if (event.op === 'add') {
    const view = event.navigation_view as NavigationViewEntry;
    if (!views.some((entry) => entry.fragment === view.fragment)) views.push(view);
    return;
  }
  const index = views.findIndex((entry) => entry.fragment === event.fragment);
  if (index === -1) return;
  if (event.op === 'update') Object.assign(views[index]!, event.data);
  else if (event.op === 'remove') views.splice(index, 1);
}

/** Zulip's apply_event for realm_domains: add appends, change sets the domain's
 * allow_subdomains, remove drops it. */
function applyRealmDomainsEvent(state: State, event: QueuedEvent): void {
  const domains = state.realm_domains as RealmDomainEntry[] | undefined;
  if (!domains) return;
  if (event.op === 'add') {
    const added = event.realm_domain as RealmDomainEntry;
    if (!domains.some((d) => d.domain === added.domain)) domains.push(added);
  } else if (event.op === 'change') {
    const changed = event.realm_domain as RealmDomainEntry;
    const entry = domains.find((d) => d.domain === changed.domain);
    if (entry) entry.allow_subdomains = changed.allow_subdomains;
  } else if (event.op === 'remove') {
    const index = domains.findIndex((d) => d.domain === event.domain);
    if (index !== -1) domains.splice(index, 1);
  }
}

/** A deleted field's values leave the users' profile_data (Zulip's apply_event). */
function pruneProfileData(state: State, fields: { id: number }[]): void {
  const ids = new Set(fields.map((field) => String(field.id)));
  for (const list of [state.realm_users, state.realm_non_active_users] as (Person[] | undefined)[])
    for (const person of list ?? []) {
      const profile = person.profile_data as Record<string, unknown> | undefined;
      if (profile) for (const id of Object.keys(profile)) if (!ids.has(id)) delete profile[id];
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
    // Zulip's apply_event replaces the entry: a direct message that lets a guest see someone
    // turns its "Unknown user" placeholder into the person.
    const found = find();
    if (found?.list === active) active[found.index] = person;
    else {
      found?.list.splice(found.index, 1);
      active.push(person);
    }
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
  const {
    custom_profile_field: field,
    new_email: newEmail,
    // The avatar form's source and medium URL belong to the user's own state, not to the
    // user objects (Zulip's apply_event).
    avatar_source: avatarSource,
    avatar_url_medium: avatarUrlMedium,
    ...fields
  } = person;
  if (person.user_id === user.id && avatarSource !== undefined && 'avatar_source' in state)
    Object.assign(state, {
      avatar_source: avatarSource,
      avatar_url: fields.avatar_url,
      avatar_url_medium: avatarUrlMedium,
      avatar_version: fields.avatar_version,
    });
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
  // The permission flags that follow from the role are recomputed by refreshAfterEvents.
  if (person.user_id === user.id && 'role' in fields && 'is_admin' in state) {
    const role = { role: fields.role as number };
    Object.assign(state, {
      is_owner: isOwner(role),
      is_admin: isAdmin(role),
      is_moderator: isModerator(role),
      is_guest: isGuest(role),
    });
  }
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
    if (website.status === 'active')
      presences[key] = { active_timestamp: website.timestamp, idle_timestamp: website.timestamp };
    // An idle status does not say when the user was last active: keep what was read, and
    // leave a user not read yet to the client's next presence poll.
    else if (previous) presences[key] = { ...previous, idle_timestamp: website.timestamp };
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
