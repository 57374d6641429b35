// Changing organization settings (PATCH /realm; Zulip's update_realm with
// do_set_realm_property and do_change_realm_permission_group_setting). Every requested setting
// is checked first, so the request succeeds or fails as a whole; then each setting whose value
// changes is written, audited (REALM_PROPERTY_CHANGED with old and new values) and announced
// to every active user of the organization in a `realm` event of the form Zulip sends for it.
import {
  AuditLogEvent,
  getPrisma,
  Prisma,
  Role,
  runAction,
  type ActionContext,
  type Realm,
  type Stream,
  type User,
  SYSTEM_GROUPS,
} from '@parley/db';
import type { ZulipEvent } from '@parley/events';
import {
  JsonableError,
  OrganizationOwnerRequiredError,
  PreviousSettingValueMismatchedError,
  RequestVariableConversionError,
  SystemGroupRequiredError,
} from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { checkGroupSetting } from './group-settings';
import {
  normalizeGroupSetting,
  presentGroupSettings,
  sameGroupSetting,
  systemGroupIds,
  type GroupSettingChange,
  type GroupSettingValue,
} from '../lib/groups';
import { MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH } from '../lib/invites';
import { codePoints } from '../lib/text';
import { LANGUAGES } from '../lib/languages';
import { REALM_PERMISSION_SETTINGS, type RealmPermissionSetting } from '../lib/permission-settings';
import { authenticationMethods, REALM_GROUP_COLUMNS, realmGroupId } from '../lib/realm-state';
import { accessStreamById, loadPermissions } from '../lib/streams';
import { activeUserIds, isOwner } from '../lib/users';
import { availableVideoChatProviderIds } from '../lib/video-calls';
import { auditRealmChange } from './audit';

export const MAX_REALM_NAME_LENGTH = 40;
export const MAX_REALM_DESCRIPTION_LENGTH = 1000;
const JITSI_SERVER_URL_MAX_LENGTH = 200;

/** Zulip's MessageEditHistoryVisibilityPolicyEnum and RealmTopicsPolicyEnum. */
export const EDIT_HISTORY_POLICIES = { all: 1, moves: 2, none: 3 } as const;
export type EditHistoryPolicy = keyof typeof EDIT_HISTORY_POLICIES;
export const TOPICS_POLICIES = ['allow_empty_topic', 'disable_empty_topic'] as const;
/** RealmTopicsPolicyEnum's numbers, which PATCH /realm answers with. */
const TOPICS_POLICY_NUMBERS = { allow_empty_topic: 2, disable_empty_topic: 3 } as const;

/** Zulip's OrgTypeEnum. */
const ORG_TYPES = new Set([0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000]);
/** Zulip's DigestWeekdayEnum: Monday is 0. */
const DIGEST_WEEKDAYS = new Set([0, 1, 2, 3, 4, 5, 6]);
/** The ids of lib/realm-state.ts's GIF_RATING_OPTIONS. */
const GIPHY_RATINGS = new Set([0, 1, 2, 3, 4]);
/** The login methods authentication_methods may name: Parley's one (email and password). */
const AUTHENTICATION_METHODS = ['Email'];

/** PATCH /realm's parameters as the route parsed them (undefined: not given). Time limits and
 * retention come as a number or a string ("unlimited"); jitsi_server_url as "default" or a
 * URL. */
export interface RealmSettingsRequest {
  name?: string;
  description?: string;
  allow_message_editing?: boolean;
  message_content_edit_limit_seconds?: number | string;
  message_content_delete_limit_seconds?: number | string;
  move_messages_within_stream_limit_seconds?: number | string;
  move_messages_between_streams_limit_seconds?: number | string;
  message_edit_history_visibility_policy?: string;
  invite_required?: boolean;
  emails_restricted_to_domains?: boolean;
  disallow_disposable_email_addresses?: boolean;
  waiting_period_threshold?: number;
  default_language?: string;
  mandatory_topics?: boolean;
  topics_policy?: string;
  message_retention_days?: number | string;
  enable_spectator_access?: boolean;
  avatar_changes_disabled?: boolean;
  name_changes_disabled?: boolean;
  email_changes_disabled?: boolean;
  require_unique_names?: boolean;
  send_welcome_emails?: boolean;
  enable_read_receipts?: boolean;
  video_chat_provider?: number;
  jitsi_server_url?: string;
  welcome_message_custom_text?: string;
  authentication_methods?: Record<string, boolean>;
  org_type?: number;
  default_code_block_language?: string;
  digest_emails_enabled?: boolean;
  digest_weekday?: number;
  enable_guest_user_dm_warning?: boolean;
  enable_guest_user_indicator?: boolean;
  giphy_rating?: number;
  inline_image_preview?: boolean;
  inline_url_embed_preview?: boolean;
  message_content_allowed_in_email_notifications?: boolean;
  require_e2ee_push_notifications?: boolean;
  send_channel_events_messages?: boolean;
  want_advertise_in_communities_directory?: boolean;
  groups: Partial<Record<RealmPermissionSetting, GroupSettingChange>>;
  /** Channel ids; a negative one means none. */
  channels: Partial<Record<RealmChannelSetting, number>>;
}

/** The organization's special channels (Zulip's do_set_realm_stream), in the order Zulip's
 * update_realm changes them, with the realm column each is stored in. */
export const REALM_CHANNEL_SETTINGS = {
  moderation_request_channel_id: 'moderationRequestChannelId',
  new_stream_announcements_stream_id: 'newStreamAnnouncementsStreamId',
  signup_announcements_stream_id: 'signupAnnouncementsStreamId',
  zulip_update_announcements_stream_id: 'zulipUpdateAnnouncementsStreamId',
} as const satisfies Record<string, keyof Realm>;
export type RealmChannelSetting = keyof typeof REALM_CHANNEL_SETTINGS;

/** How a scalar setting is stored and announced. `toApi` turns the column's value into the
 * event's (the same as the request's after parsing); `form` is Zulip's event shape for it. */
interface ScalarSetting {
  column: keyof Realm;
  form: 'update' | 'update_dict' | 'topics';
  toApi?: (stored: unknown) => unknown;
}

const policyName = (stored: unknown): EditHistoryPolicy =>
  stored === 1 ? 'all' : stored === 2 ? 'moves' : 'none';

/** In Zulip's Realm.property_types order, which is the order of the events. */
const SCALAR_SETTINGS: Record<string, ScalarSetting> = {
  allow_message_editing: { column: 'allowMessageEditing', form: 'update_dict' },
  avatar_changes_disabled: { column: 'avatarChangesDisabled', form: 'update' },
  default_code_block_language: { column: 'defaultCodeBlockLanguage', form: 'update' },
  default_language: { column: 'defaultLanguage', form: 'update' },
  description: { column: 'description', form: 'update' },
  digest_emails_enabled: { column: 'digestEmailsEnabled', form: 'update' },
  digest_weekday: { column: 'digestWeekday', form: 'update' },
  disallow_disposable_email_addresses: {
    column: 'disallowDisposableEmailAddresses',
    form: 'update',
  },
  email_changes_disabled: { column: 'emailChangesDisabled', form: 'update' },
  emails_restricted_to_domains: { column: 'emailsRestrictedToDomains', form: 'update' },
  enable_guest_user_dm_warning: { column: 'enableGuestUserDmWarning', form: 'update' },
  enable_guest_user_indicator: { column: 'enableGuestUserIndicator', form: 'update' },
  enable_read_receipts: { column: 'enableReadReceipts', form: 'update' },
  enable_spectator_access: { column: 'webPublicAccessEnabled', form: 'update' },
  giphy_rating: { column: 'giphyRating', form: 'update' },
  inline_image_preview: { column: 'inlineImagePreview', form: 'update' },
  inline_url_embed_preview: { column: 'inlineUrlEmbedPreview', form: 'update' },
  invite_required: { column: 'inviteRequired', form: 'update' },
  jitsi_server_url: { column: 'jitsiServerUrl', form: 'update' },
  message_content_allowed_in_email_notifications: {
    column: 'contentInEmailsAllowed',
    form: 'update',
  },
  message_content_delete_limit_seconds: {
    column: 'messageContentDeleteLimitSeconds',
    form: 'update',
  },
  message_content_edit_limit_seconds: {
    column: 'messageContentEditLimitSeconds',
    form: 'update_dict',
  },
  message_edit_history_visibility_policy: {
    column: 'editHistoryVisibilityPolicy',
    form: 'update',
    toApi: policyName,
  },
  message_retention_days: { column: 'messageRetentionDays', form: 'update' },
  move_messages_between_streams_limit_seconds: {
    column: 'moveMessagesBetweenStreamsLimitSeconds',
    form: 'update',
  },
  move_messages_within_stream_limit_seconds: {
    column: 'moveMessagesWithinStreamLimitSeconds',
    form: 'update',
  },
  name: { column: 'name', form: 'update' },
  name_changes_disabled: { column: 'nameChangesDisabled', form: 'update' },
  require_e2ee_push_notifications: { column: 'requireE2eePushNotifications', form: 'update' },
  require_unique_names: { column: 'requireUniqueNames', form: 'update' },
  send_channel_events_messages: { column: 'sendChannelEventsMessages', form: 'update' },
  send_welcome_emails: { column: 'sendWelcomeEmails', form: 'update' },
  topics_policy: {
    column: 'mandatoryTopics',
    form: 'topics',
    toApi: (stored) => (stored ? 'disable_empty_topic' : 'allow_empty_topic'),
  },
  video_chat_provider: { column: 'videoChatProvider', form: 'update' },
  waiting_period_threshold: { column: 'waitingPeriodThreshold', form: 'update' },
  want_advertise_in_communities_directory: {
    column: 'wantAdvertiseInCommunitiesDirectory',
    form: 'update',
  },
  welcome_message_custom_text: { column: 'welcomeMessageCustomText', form: 'update' },
  // Zulip's do_change_realm_org_type, after the others.
  org_type: { column: 'orgType', form: 'update' },
  // Kept in the realm row; authentication_methods announces the whole dict.
  authentication_methods: {
    column: 'passwordAuthEnabled',
    form: 'update_dict',
    toApi: (enabled) => authenticationMethods(enabled === true),
  },
};

/** Settings only owners may change (Zulip's update_realm), besides the group settings below. */
const OWNER_ONLY = new Set<string>([
  'message_retention_days',
  'invite_required',
  'emails_restricted_to_domains',
  'disallow_disposable_email_addresses',
  'waiting_period_threshold',
]);
const OWNER_ONLY_GROUPS = new Set<RealmPermissionSetting>([
  'create_multiuse_invite_group',
  'can_create_groups',
  'can_invite_users_group',
  'can_manage_all_groups',
  'can_manage_billing_group',
]);

function checkLength(name: string, value: string, limit: number): string {
  if (codePoints(value) > limit)
    throw new JsonableError(`${name} is too long (limit: ${limit} characters)`);
  return value;
}

/** Zulip's parse_message_time_limit_setting: a positive number of seconds, or "unlimited". */
function parseTimeLimit(name: string, value: number | string): number | null {
  if (value === 'unlimited') return null;
  if (typeof value === 'string' || value <= 0)
    throw new RequestVariableConversionError(name, value);
  return value;
}

/** Zulip's parse_message_retention_days: a positive number of days, or "unlimited" (-1). */
function parseRetentionDays(value: number | string): number {
  if (value === 'unlimited') return -1;
  if (typeof value === 'string' || value <= 0)
    throw new RequestVariableConversionError('message_retention_days', value);
  return value;
}

/** Zulip's check_jitsi_url: "default" (the server's) or an http(s) URL of at most 200
 * characters. */
function parseJitsiUrl(value: string): string | null {
  if (value === 'default') return null;
  let valid = codePoints(value) <= JITSI_SERVER_URL_MAX_LENGTH;
  if (valid) {
    try {
      const url = new URL(value);
      valid = (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
    } catch {
      valid = false;
    }
  }
  if (!valid) throw new JsonableError('jitsi_server_url is not an allowed_type');
  return value;
}

/** Zulip's validate_authentication_methods_dict_from_api and its at-least-one rule: the
 * password login's new state. */
function checkAuthenticationMethods(methods: Record<string, boolean>): boolean {
  for (const name of Object.keys(methods))
    if (!AUTHENTICATION_METHODS.includes(name))
      throw new JsonableError(
        `Invalid authentication method: ${name}. Valid methods are: ['${AUTHENTICATION_METHODS.join("', '")}']`,
      );
  if (!Object.values(methods).includes(true))
    throw new JsonableError('At least one authentication method must be enabled.');
  return methods.Email === true;
}

/** The new column values of the scalar settings, validated, with the owner-only rule, in
 * Zulip's order (an administrator asking for an owner's setting hears that before any
 * complaint about its value). */
function checkScalarSettings(actor: User, request: RealmSettingsRequest): Map<string, unknown> {
  const values = new Map<string, unknown>();
  const owner = isOwner(actor);
  if (request.default_language !== undefined && !(request.default_language in LANGUAGES))
    throw new JsonableError(`Invalid language '${request.default_language}'`);
  if (request.authentication_methods !== undefined) {
    if (!owner) throw new OrganizationOwnerRequiredError();
    values.set(
      'authentication_methods',
      checkAuthenticationMethods(request.authentication_methods),
    );
  }
  if (
    request.video_chat_provider !== undefined &&
    // Zulip's check: one of the providers the server is configured for.
    !availableVideoChatProviderIds().includes(request.video_chat_provider)
  )
    throw new JsonableError(`Invalid video_chat_provider ${request.video_chat_provider}`);
  if (request.giphy_rating !== undefined && !GIPHY_RATINGS.has(request.giphy_rating))
    throw new JsonableError(`Invalid giphy_rating ${request.giphy_rating}`);
  if (request.org_type !== undefined && !ORG_TYPES.has(request.org_type))
    throw new JsonableError('Invalid org_type');
  if (request.digest_weekday !== undefined && !DIGEST_WEEKDAYS.has(request.digest_weekday))
    throw new JsonableError('Invalid digest_weekday');
  if (request.message_retention_days !== undefined) {
    if (!owner) throw new OrganizationOwnerRequiredError();
    values.set('message_retention_days', parseRetentionDays(request.message_retention_days));
  }
  if (
    !owner &&
    ([...OWNER_ONLY].some((name) => request[name as keyof RealmSettingsRequest] !== undefined) ||
      Object.keys(request.groups).some((setting) =>
        OWNER_ONLY_GROUPS.has(setting as RealmPermissionSetting),
      ))
  )
    throw new OrganizationOwnerRequiredError();
  for (const name of [
    'message_content_delete_limit_seconds',
    'message_content_edit_limit_seconds',
    'move_messages_within_stream_limit_seconds',
    'move_messages_between_streams_limit_seconds',
  ] as const) {
    const raw = request[name];
    if (raw !== undefined) values.set(name, parseTimeLimit(name, raw));
  }
  if (request.jitsi_server_url !== undefined)
    values.set('jitsi_server_url', parseJitsiUrl(request.jitsi_server_url));
  // Zulip checks only the length: a blank name is allowed.
  if (request.name !== undefined)
    values.set('name', checkLength('name', request.name, MAX_REALM_NAME_LENGTH));
  if (request.description !== undefined)
    values.set(
      'description',
      checkLength('description', request.description, MAX_REALM_DESCRIPTION_LENGTH),
    );
  if (request.welcome_message_custom_text !== undefined)
    values.set(
      'welcome_message_custom_text',
      checkLength(
        'welcome_message_custom_text',
        request.welcome_message_custom_text,
        MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH,
      ),
    );
  if (request.message_edit_history_visibility_policy !== undefined) {
    const policy = request.message_edit_history_visibility_policy;
    if (!Object.hasOwn(EDIT_HISTORY_POLICIES, policy))
      throw new JsonableError('Invalid message_edit_history_visibility_policy');
    values.set(
      'message_edit_history_visibility_policy',
      EDIT_HISTORY_POLICIES[policy as EditHistoryPolicy],
    );
  }
  if (request.topics_policy !== undefined) {
    if (!(TOPICS_POLICIES as readonly string[]).includes(request.topics_policy))
      throw new JsonableError('Invalid topics_policy');
    values.set('topics_policy', request.topics_policy === 'disable_empty_topic');
  } else if (request.mandatory_topics !== undefined) {
    // The setting's name before feature level 392.
    values.set('topics_policy', request.mandatory_topics);
  }
  for (const name of [
    'allow_message_editing',
    'avatar_changes_disabled',
    'default_code_block_language',
    'default_language',
    'digest_emails_enabled',
    'digest_weekday',
    'disallow_disposable_email_addresses',
    'email_changes_disabled',
    'emails_restricted_to_domains',
    'enable_guest_user_dm_warning',
    'enable_guest_user_indicator',
    'enable_read_receipts',
    'enable_spectator_access',
    'giphy_rating',
    'inline_image_preview',
    'inline_url_embed_preview',
    'invite_required',
    'message_content_allowed_in_email_notifications',
    'name_changes_disabled',
    'org_type',
    'require_e2ee_push_notifications',
    'require_unique_names',
    'send_channel_events_messages',
    'send_welcome_emails',
    'video_chat_provider',
    'waiting_period_threshold',
    'want_advertise_in_communities_directory',
  ] as const) {
    if (request[name] !== undefined) values.set(name, request[name]);
  }
  return values;
}

/** The channel each requested channel setting names, checked as Zulip's update_realm checks
 * it: any channel of the organization an administrator can see, not archived (it could not
 * take the messages); the moderation channel private. Returns the column values to store. */
async function checkChannelSettings(
  ctx: ActionContext,
  actor: User,
  realm: Realm,
  requested: RealmSettingsRequest['channels'],
): Promise<Map<RealmChannelSetting, number | null>> {
  const values = new Map<RealmChannelSetting, number | null>();
  const entries = Object.entries(requested) as [RealmChannelSetting, number][];
  if (entries.length === 0) return values;
  const perms = await loadPermissions(actor);
  for (const [setting, id] of entries) {
    if (id < 0) {
      values.set(setting, null);
      continue;
    }
    if (realm[REALM_CHANNEL_SETTINGS[setting]] === id) continue;
    const { stream } = await accessStreamById(perms, id, {
      requireContentAccess: false,
      allowArchived: false,
      db: ctx.tx,
    });
    if (setting === 'moderation_request_channel_id' && !stream.inviteOnly)
      throw new JsonableError('Moderation request channel must be private.');
    values.set(setting, stream.id);
  }
  return values;
}

/** Zulip's maybe_set_moderation_or_announcement_channels_none: an archived channel stops
 * being any of the organization's special channels, and everyone learns it. */
export async function clearRealmChannels(ctx: ActionContext, stream: Stream): Promise<void> {
  // Locked as PATCH /realm locks it: a change naming this channel either commits first (and
  // is cleared here) or waits and then finds the channel archived.
  await ctx.tx.$queryRaw`SELECT id FROM realm WHERE id = ${stream.realmId} FOR UPDATE`;
  const realm = await ctx.tx.realm.findUniqueOrThrow({ where: { id: stream.realmId } });
  const cleared = (
    Object.entries(REALM_CHANNEL_SETTINGS) as [RealmChannelSetting, keyof Realm][]
  ).filter(([, column]) => realm[column] === stream.id);
  if (cleared.length === 0) return;
  await ctx.tx.realm.update({
    where: { id: realm.id },
    data: Object.fromEntries(cleared.map(([, column]) => [column, null])),
  });
  sendEventOnCommit(
    ctx,
    {
      type: 'realm',
      op: 'update_dict',
      property: 'default',
      data: Object.fromEntries(cleared.map(([setting]) => [setting, -1])),
    },
    await activeUserIds(realm.id, ctx.tx),
  );
}

/** Zulip's check_setting_configuration_for_system_groups and the anonymous-group rules of
 * access_user_group_for_setting, then checkGroupSetting (which stores a new anonymous group
 * when one is asked for). Returns the group id to store. */
async function checkRealmGroupSetting(
  ctx: ActionContext,
  realm: Realm,
  setting: RealmPermissionSetting,
  value: GroupSettingValue,
  systemNames: Map<number, string>,
): Promise<number> {
  const rules = REALM_PERMISSION_SETTINGS[setting] as {
    allowNobody: boolean;
    allowEveryone: boolean;
    requireSystemGroup?: boolean;
    allowedSystemGroups?: string[];
  };
  const refuse = (group: string) =>
    new JsonableError(`'${setting}' setting cannot be set to '${group}' group.`);
  if (rules.requireSystemGroup) {
    const systemId = typeof value === 'number' ? value : singleSubgroup(value);
    const name = systemId === null ? undefined : systemNames.get(systemId);
    // Unknown ids get checkGroupSetting's "Invalid user group" below.
    if (systemId === null || (name === undefined && (await isNamedGroup(ctx, realm, systemId))))
      throw new SystemGroupRequiredError(setting);
    if (
      name !== undefined &&
      rules.allowedSystemGroups &&
      !rules.allowedSystemGroups.includes(name)
    )
      throw refuse(name);
  }
  const forbidden: string[] = [SYSTEM_GROUPS.EVERYONE_ON_INTERNET];
  if (!rules.allowNobody) forbidden.push(SYSTEM_GROUPS.NOBODY);
  if (!rules.allowEveryone) forbidden.push(SYSTEM_GROUPS.EVERYONE);
  const id = await checkGroupSetting(ctx.tx, realm.id, setting, value, { forbidden });
  if (!rules.allowNobody && systemNames.get(id) === SYSTEM_GROUPS.NOBODY)
    throw refuse(SYSTEM_GROUPS.NOBODY);
  return id;
}

/** Whether `id` names a group of the organization (a user-defined one, when it is not among
 * the system groups); other ids are left for checkGroupSetting to report as invalid. */
async function isNamedGroup(ctx: ActionContext, realm: Realm, id: number): Promise<boolean> {
  const group = await ctx.tx.userGroup.findFirst({
    where: { id, realmId: realm.id, name: { not: null } },
    select: { id: true },
  });
  return group !== null;
}

/** Zulip's parse_group_setting_value, in part: an anonymous group of one subgroup and no
 * members is that group. */
function singleSubgroup(value: GroupSettingValue): number | null {
  if (typeof value === 'number') return value;
  return value.direct_members.length === 0 && value.direct_subgroups.length === 1
    ? value.direct_subgroups[0]!
    : null;
}

/** Zulip's update_users_in_full_members_system_group: members whose account is at least the
 * waiting period old are (direct) full members, newer members are not. */
async function updateFullMembers(
  ctx: ActionContext,
  realm: Realm,
  fullMembersId: number,
  recipients: number[],
): Promise<number> {
  const cutoff = new Date(Date.now() - realm.waitingPeriodThreshold * 24 * 3600 * 1000);
  const added = await ctx.tx.$queryRaw<{ id: number }[]>`
    INSERT INTO user_group_membership (user_group_id, user_profile_id)
    SELECT ${fullMembersId}, u.id FROM user_profile u
    WHERE u.realm_id = ${realm.id} AND u.role = ${Role.MEMBER} AND u.date_joined <= ${cutoff}
    ON CONFLICT DO NOTHING
    RETURNING user_profile_id AS id`;
  const removed = await ctx.tx.$queryRaw<{ id: number }[]>`
    DELETE FROM user_group_membership m USING user_profile u
    WHERE m.user_group_id = ${fullMembersId} AND u.id = m.user_profile_id
      AND u.role = ${Role.MEMBER} AND u.date_joined > ${cutoff}
    RETURNING m.user_profile_id AS id`;
  for (const [op, rows] of [
    ['add_members', added],
    ['remove_members', removed],
  ] as const)
    if (rows.length > 0)
      sendEventOnCommit(
        ctx,
        {
          type: 'user_group',
          op,
          group_id: fullMembersId,
          user_ids: rows.map((row) => row.id).sort((a, b) => a - b),
        },
        recipients,
      );
  return added.length;
}

/** Zulip's promote_new_full_members (a daily cron there, a periodic job here): in every
 * organization with a waiting period, members whose period has passed since the last run
 * join role:fullmembers, and everyone learns it. Idempotent: only rows it inserts are
 * announced, so overlapping runs announce each promotion once. Returns how many joined. */
export async function promoteFullMembers(): Promise<number> {
  const realms = await getPrisma().realm.findMany({
    where: { deactivated: false, waitingPeriodThreshold: { gt: 0 } },
  });
  let promoted = 0;
  for (const realm of realms)
    promoted += await runAction(async (ctx) => {
      const systemIds = await systemGroupIds(realm.id);
      const recipients = await activeUserIds(realm.id, ctx.tx);
      return updateFullMembers(ctx, realm, systemIds.get(SYSTEM_GROUPS.FULL_MEMBERS)!, recipients);
    });
  return promoted;
}

/** Zulip's update_realm: checks everything, then changes what differs. Returns the response
 * data Zulip sends: each changed setting with its new value ("updated" for text). */
export async function doUpdateRealmSettings(
  ctx: ActionContext,
  actor: User,
  request: RealmSettingsRequest,
): Promise<Record<string, unknown>> {
  const { tx } = ctx;
  // Serializes concurrent changes to the organization and reads it fresh (the request's copy
  // may come from a cache).
  await tx.$queryRaw`SELECT id FROM realm WHERE id = ${actor.realmId} FOR UPDATE`;
  const realm = await tx.realm.findUniqueOrThrow({ where: { id: actor.realmId } });

  const values = checkScalarSettings(actor, request);
  const groupChanges = Object.entries(request.groups) as [
    RealmPermissionSetting,
    GroupSettingChange,
  ][];

  const systemGroups = await tx.userGroup.findMany({
    where: { realmId: realm.id, isSystemGroup: true },
    select: { id: true, name: true },
  });
  const systemIds = new Map(systemGroups.map((group) => [group.name!, group.id]));
  const systemNames = new Map(systemGroups.map((group) => [group.id, group.name!]));
  const nobody = systemIds.get(SYSTEM_GROUPS.NOBODY)!;
  const currentIds = groupChanges.map(
    ([setting]) =>
      realmGroupId(realm, setting) ??
      systemIds.get(REALM_PERMISSION_SETTINGS[setting].default) ??
      nobody,
  );
  const current = await presentGroupSettings(currentIds);

  // Group settings: Zulip's validate_group_setting_value_change, then the group checks.
  const groupUpdates: { setting: RealmPermissionSetting; old: GroupSettingValue; id: number }[] =
    [];
  for (const [index, [setting, change]] of groupChanges.entries()) {
    const oldValue = current.get(currentIds[index]!) ?? currentIds[index]!;
    const currentValue = normalizeGroupSetting(oldValue, nobody);
    const wanted = normalizeGroupSetting(change.new, nobody);
    if (
      change.old !== undefined &&
      change.old !== null &&
      !sameGroupSetting(normalizeGroupSetting(change.old, nobody), currentValue)
    )
      throw new PreviousSettingValueMismatchedError();
    if (sameGroupSetting(wanted, currentValue)) continue;
    // Normalized as Zulip's parse_group_setting_value: an empty group is role:nobody.
    const id = await checkRealmGroupSetting(ctx, realm, setting, wanted, systemNames);
    groupUpdates.push({ setting, old: currentValue, id });
  }

  const channelValues = await checkChannelSettings(ctx, actor, realm, request.channels);

  const recipients = await activeUserIds(realm.id, ctx.tx);
  const data: Record<string, unknown> = {};
  const columns: Partial<Record<keyof Realm, unknown>> = {};
  const changes: { event: ZulipEvent; audit: Record<string, unknown> }[] = [];
  // Zulip answers with the two enum settings whenever they are asked for (its comparison of
  // the stored number with the enum never finds them equal), as the enum's number.
  if (request.message_edit_history_visibility_policy !== undefined)
    data.message_edit_history_visibility_policy = values.get(
      'message_edit_history_visibility_policy',
    );
  if (request.topics_policy !== undefined)
    data.topics_policy =
      TOPICS_POLICY_NUMBERS[request.topics_policy as keyof typeof TOPICS_POLICY_NUMBERS];
  for (const [name, setting] of Object.entries(SCALAR_SETTINGS)) {
    if (!values.has(name)) continue;
    const value = values.get(name);
    const old = realm[setting.column];
    if (old === value) continue;
    columns[setting.column] = value;
    const toApi = setting.toApi ?? ((stored: unknown) => stored);
    const apiValue = toApi(value);
    // Zulip answers "updated" for text, and authentication_methods as asked.
    if (name === 'authentication_methods') data[name] = request.authentication_methods;
    else if (name === 'topics_policy') {
      // The pre-392 mandatory_topics answers with its boolean.
      if (request.topics_policy === undefined) data.mandatory_topics = value;
    } else if (name !== 'message_edit_history_visibility_policy')
      data[name] = typeof apiValue === 'string' ? 'updated' : apiValue;
    const event =
      setting.form === 'update'
        ? { type: 'realm', op: 'update', property: name, value: apiValue }
        : {
            type: 'realm',
            op: 'update_dict',
            property: 'default',
            data:
              setting.form === 'topics'
                ? { topics_policy: apiValue, mandatory_topics: value }
                : { [name]: apiValue },
          };
    changes.push({
      event,
      audit: { old_value: toApi(old), new_value: apiValue, property: name },
    });
  }
  for (const { setting, old, id } of groupUpdates) {
    columns[REALM_GROUP_COLUMNS[setting]] = id;
    const newValue = (await presentGroupSettings([id])).get(id) ?? id;
    data[setting] = newValue;
    changes.push({
      event: {
        type: 'realm',
        op: 'update_dict',
        property: 'default',
        data: { [setting]: newValue },
      },
      audit: { old_value: old, new_value: newValue, property: setting },
    });
  }
  for (const [setting, column] of Object.entries(REALM_CHANNEL_SETTINGS) as [
    RealmChannelSetting,
    keyof Realm,
  ][]) {
    const value = channelValues.get(setting);
    if (value === undefined || value === realm[column]) continue;
    columns[column] = value;
    data[setting] = value ?? -1;
    changes.push({
      event: { type: 'realm', op: 'update', property: setting, value: value ?? -1 },
      audit: {
        old_value: realm[column],
        new_value: value ?? -1,
        property: setting.replace(/_id$/, ''),
      },
    });
  }
  if (changes.length === 0) return data;

  const updated = await tx.realm.update({
    where: { id: realm.id },
    data: columns as Prisma.RealmUncheckedUpdateInput,
  });
  for (const change of changes) {
    sendEventOnCommit(ctx, change.event, recipients);
    await auditRealmChange(ctx, actor, AuditLogEvent.REALM_PROPERTY_CHANGED, change.audit);
  }
  if ('waitingPeriodThreshold' in columns)
    await updateFullMembers(ctx, updated, systemIds.get(SYSTEM_GROUPS.FULL_MEMBERS)!, recipients);
  return data;
}
