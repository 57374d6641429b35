// Channels: creating, changing settings, default channels, archiving and unarchiving (Zulip's
// zerver/actions/streams.py and create_stream_if_needed). Each do* writes in the caller's
// transaction and queues its events for after the commit.
import {
  getPrisma,
  AuditLogEvent,
  idsByLowerEquals,
  isUniqueViolation,
  RecipientType,
  type ActionContext,
  type Realm,
  type Stream,
  type Tx,
  SYSTEM_GROUPS,
} from '@parley/db';
import {
  ChannelExistsError,
  IncompatibleParametersError,
  InsufficientPermissionError,
  JsonableError,
  OrganizationOwnerRequiredError,
  PreviousSettingValueMismatchedError,
} from '@parley/errors';
import { renderDescriptionForRealm } from '../lib/rendering';
import { codePoints, unprintablePosition } from '../lib/text';
import { sendEventOnCommit } from '../lib/events';
import { systemGroupIds, type GroupSettingChange, type GroupSettingValue } from '../lib/groups';
import { checkGroupSetting } from './group-settings';
import { removeStreamFromDefaultStreamGroups } from './default-stream-groups';
import { clearRealmChannels } from './realm-settings';
import {
  loadStreamDetails,
  metadataAudience,
  subscribersOf,
  type Permissions,
} from '../lib/streams';
import { activeNonGuestIds, isAdmin, isOwner } from '../lib/users';
import {
  presentStream,
  STREAM_GROUP_SETTINGS,
  streamDeleteEvent,
  streamUpdateEvent,
  streamPostPolicy,
  type StreamGroupSetting,
} from '../presenters/streams';

export const MAX_NAME_LENGTH = 60;
export const MAX_DESCRIPTION_LENGTH = 1024;
export const TOPICS_POLICIES = [
  'inherit',
  'allow_empty_topic',
  'disable_empty_topic',
  'empty_topic_only',
] as const;
export type TopicsPolicy = (typeof TOPICS_POLICIES)[number];

/** Defaults of new channels' group settings (Zulip's stream_permission_group_settings);
 * can_administer_channel_group defaults to the channel's creator. */
const GROUP_DEFAULTS: Record<
  Exclude<StreamGroupSetting, 'can_administer_channel_group'>,
  string
> = {
  can_add_subscribers_group: SYSTEM_GROUPS.NOBODY,
  can_remove_subscribers_group: SYSTEM_GROUPS.ADMINISTRATORS,
  can_delete_any_message_group: SYSTEM_GROUPS.NOBODY,
  can_delete_own_message_group: SYSTEM_GROUPS.NOBODY,
  can_move_messages_out_of_channel_group: SYSTEM_GROUPS.NOBODY,
  can_move_messages_within_channel_group: SYSTEM_GROUPS.NOBODY,
  can_send_message_group: SYSTEM_GROUPS.EVERYONE,
  can_subscribe_group: SYSTEM_GROUPS.NOBODY,
  can_resolve_topics_group: SYSTEM_GROUPS.NOBODY,
  can_create_topic_group: SYSTEM_GROUPS.EVERYONE,
};

/** Settings guests may never be given through "everyone" (Zulip's allow_everyone_group). */
const NO_EVERYONE: StreamGroupSetting[] = [
  'can_add_subscribers_group',
  'can_administer_channel_group',
  'can_subscribe_group',
];

/** Zulip's check_stream_name: stripped, 1–60 characters, no control characters, surrogates
 * or Unicode noncharacters. */
export function checkStreamName(raw: string): string {
  const name = raw.trim();
  if (name === '') throw new JsonableError("Channel name can't be empty.");
  if (codePoints(name) > MAX_NAME_LENGTH)
    throw new JsonableError(`Channel name too long (limit: ${MAX_NAME_LENGTH} characters).`);
  const bad = unprintablePosition(name);
  if (bad !== null)
    throw new JsonableError(`Invalid character in channel name, at position ${bad}.`);
  return name;
}

/** Descriptions are one line: Zulip turns newlines into spaces. */
export function checkDescription(raw: string): string {
  return raw.replace(/\r?\n|\r/g, ' ');
}

export interface ChannelSettings {
  inviteOnly: boolean;
  isWebPublic: boolean;
  /** null: private channels protect history, public ones share it. */
  historyPublicToSubscribers: boolean | null;
  /** undefined: the organization's setting (stored as null); -1 keeps forever. */
  messageRetentionDays: number | undefined;
  topicsPolicy: TopicsPolicy;
  isDefaultStream: boolean;
  groups: Partial<Record<StreamGroupSetting, GroupSettingValue>>;
  /** The channel folder to put it in (checked by the caller), or null. */
  folderId: number | null;
}

/** A public channel with shared history and the organization's defaults for the rest. */
export const PUBLIC_CHANNEL_SETTINGS: Readonly<ChannelSettings> = {
  inviteOnly: false,
  isWebPublic: false,
  historyPublicToSubscribers: null,
  messageRetentionDays: undefined,
  topicsPolicy: 'inherit',
  isDefaultStream: false,
  groups: {},
  folderId: null,
};

/** Zulip's check_channel_creation_permissions plus the privacy combination rules. */
export async function checkChannelCreation(
  tx: Tx,
  perms: Permissions,
  realm: Realm,
  settings: ChannelSettings,
): Promise<void> {
  const inGroup = (id: number | null) => id !== null && perms.groups.has(id);
  if (settings.isWebPublic) {
    if (!realm.webPublicAccessEnabled)
      throw new JsonableError('Web-public channels are not enabled.');
    if (settings.inviteOnly || settings.historyPublicToSubscribers === false)
      throw new JsonableError('Invalid parameters');
    if (!inGroup(realm.canCreateWebPublicChannelGroupId)) throw new InsufficientPermissionError();
  } else if (settings.inviteOnly) {
    if (!inGroup(realm.canCreatePrivateChannelGroupId)) throw new InsufficientPermissionError();
  } else {
    // Public channels always share their history (Zulip ignores a request not to).
    if (!inGroup(realm.canCreatePublicChannelGroupId)) throw new InsufficientPermissionError();
  }
  if (settings.isDefaultStream) {
    if (!isAdmin(perms.user)) throw new InsufficientPermissionError();
    if (settings.inviteOnly) throw new JsonableError('A default channel cannot be private.');
  }
  if (settings.messageRetentionDays !== undefined && !isOwner(perms.user))
    throw new OrganizationOwnerRequiredError();
  await checkPolicyPermissions(tx, perms, settings.topicsPolicy, settings.groups);
  const topicGroup = settings.groups.can_create_topic_group;
  if (topicGroup !== undefined)
    await checkProtectedHistoryTopicGroup(
      realm.id,
      settings.inviteOnly && settings.historyPublicToSubscribers !== true,
      topicGroup,
    );
}

/** Zulip's validate_can_create_topic_group_setting_for_protected_history_streams: where new
 * subscribers cannot read earlier messages, everyone (that group alone) may start topics. */
export async function checkProtectedHistoryTopicGroup(
  realmId: number,
  protectedHistory: boolean,
  topicGroup: GroupSettingValue,
): Promise<void> {
  if (
    protectedHistory &&
    topicGroup !== (await systemGroupIds(realmId)).get(SYSTEM_GROUPS.EVERYONE)
  )
    throw new IncompatibleParametersError([
      'history_public_to_subscribers',
      'can_create_topic_group',
    ]);
}

/** Realm-level gates on some channel settings: the organization's can_set_topics_policy_group
 * and can_set_delete_message_policy_group (Zulip's defaults: members, moderators). */
async function checkPolicyPermissions(
  tx: Tx,
  perms: Permissions,
  topicsPolicy: TopicsPolicy | undefined,
  groups: Partial<Record<StreamGroupSetting, GroupSettingValue>>,
): Promise<void> {
  const deleteSettings = (
    ['can_delete_any_message_group', 'can_delete_own_message_group'] as const
  ).filter((setting) => groups[setting] !== undefined);
  const topics = topicsPolicy !== undefined && topicsPolicy !== 'inherit';
  if (!topics && deleteSettings.length === 0) return;
  const realm = await tx.realm.findUniqueOrThrow({
    where: { id: perms.user.realmId },
    select: { canSetTopicsPolicyGroupId: true, canSetDeleteMessagePolicyGroupId: true },
  });
  const inGroup = (id: number | null) => id !== null && perms.groups.has(id);
  if (topics && !inGroup(realm.canSetTopicsPolicyGroupId)) throw new InsufficientPermissionError();
  if (deleteSettings.length === 0) return;
  const nobody = (await systemGroupIds(perms.user.realmId)).get(SYSTEM_GROUPS.NOBODY);
  for (const setting of deleteSettings) {
    if (groups[setting] !== nobody && !inGroup(realm.canSetDeleteMessagePolicyGroupId))
      throw new InsufficientPermissionError();
  }
}

/** The group id to store for each setting: the requested value, validated, or the default. */
async function resolveGroupSettings(
  tx: Tx,
  realmId: number,
  creatorId: number,
  requested: Partial<Record<StreamGroupSetting, GroupSettingValue>>,
): Promise<Record<(typeof STREAM_GROUP_SETTINGS)[StreamGroupSetting], number>> {
  const system = await systemGroupIds(realmId);
  const columns: Partial<Record<(typeof STREAM_GROUP_SETTINGS)[StreamGroupSetting], number>> = {};
  // One at a time: the queries share the transaction's connection.
  for (const setting of Object.keys(STREAM_GROUP_SETTINGS) as StreamGroupSetting[]) {
    const value: GroupSettingValue =
      requested[setting] ??
      (setting === 'can_administer_channel_group'
        ? { direct_members: [creatorId], direct_subgroups: [] }
        : system.get(GROUP_DEFAULTS[setting])!);
    columns[STREAM_GROUP_SETTINGS[setting]] = await checkStreamGroupSetting(
      tx,
      realmId,
      setting,
      value,
    );
  }
  return columns as Record<(typeof STREAM_GROUP_SETTINGS)[StreamGroupSetting], number>;
}

export function checkStreamGroupSetting(
  tx: Tx,
  realmId: number,
  setting: StreamGroupSetting,
  value: GroupSettingValue,
): Promise<number> {
  return checkGroupSetting(tx, realmId, setting, value, {
    forbidden: [
      SYSTEM_GROUPS.EVERYONE_ON_INTERNET,
      ...(NO_EVERYONE.includes(setting) ? [SYSTEM_GROUPS.EVERYONE] : []),
    ],
  });
}

export interface NewChannel {
  name: string;
  description: string;
}

/** Creates channels the caller may create (checkChannelCreation first), each with its
 * recipient row, and announces them to everyone who can see them. */
export async function doCreateStreams(
  ctx: ActionContext,
  realm: Realm,
  creatorId: number,
  channels: NewChannel[],
  settings: ChannelSettings,
): Promise<Stream[]> {
  const { tx } = ctx;
  const created: Stream[] = [];
  for (const channel of channels) {
    const groups = await resolveGroupSettings(tx, realm.id, creatorId, settings.groups);
    // ON CONFLICT DO NOTHING: when a concurrent request creates the same name first, nothing
    // is created here and the caller finds that channel as an existing one.
    const [stream] = await tx.stream.createManyAndReturn({
      skipDuplicates: true,
      data: [
        {
          realmId: realm.id,
          name: channel.name,
          description: channel.description,
          renderedDescription: await renderDescriptionForRealm(realm.id, channel.description, tx),
          creatorId,
          inviteOnly: settings.inviteOnly,
          isWebPublic: settings.isWebPublic,
          historyPublicToSubscribers: settings.inviteOnly
            ? (settings.historyPublicToSubscribers ?? false)
            : true,
          messageRetentionDays: settings.messageRetentionDays ?? null,
          topicsPolicy: settings.topicsPolicy,
          folderId: settings.folderId,
          ...groups,
        },
      ],
    });
    if (!stream) continue;
    const recipient = await tx.recipient.create({
      data: { type: RecipientType.STREAM, typeId: stream.id },
    });
    const withRecipient = await tx.stream.update({
      where: { id: stream.id },
      data: { recipientId: recipient.id },
    });
    if (settings.isDefaultStream)
      await tx.defaultStream.create({ data: { realmId: realm.id, streamId: stream.id } });
    await auditStream(ctx, withRecipient, AuditLogEvent.CHANNEL_CREATED, creatorId);
    created.push(withRecipient);
  }
  const details = await loadStreamDetails(realm.id, created);
  for (const stream of created) {
    sendEventOnCommit(
      ctx,
      { type: 'stream', op: 'create', streams: [presentStream(stream, details.context(stream))] },
      await metadataAudience(stream, [], tx),
    );
  }
  if (settings.isDefaultStream) await sendDefaultStreams(ctx, realm.id);
  return created;
}

async function auditStream(
  ctx: ActionContext,
  stream: Stream,
  eventType: number,
  actingUserId: number | null,
  extraData: Record<string, unknown> = {},
): Promise<void> {
  await ctx.tx.auditLog.create({
    data: {
      realmId: stream.realmId,
      actingUserId,
      modifiedStreamId: stream.id,
      eventType,
      extraData: extraData as object,
    },
  });
}

// ---- Channel settings (PATCH /streams/{id}) -----------------------------------------------------

/** Writes and audits `data`, and tells the channel's audience: one `stream` update event per
 * property. When the change alters who can see the channel, those who lose sight of it get a
 * delete and those who gain it a create instead. */
async function updateStream(
  ctx: ActionContext,
  stream: Stream,
  data: Partial<Stream>,
  events: { property: string; value: unknown; extra?: Record<string, unknown> }[],
  audit: { eventType: number; actingUserId: number; extra: Record<string, unknown> },
): Promise<Stream> {
  const { tx } = ctx;
  await auditStream(ctx, stream, audit.eventType, audit.actingUserId, audit.extra);
  const subscribers = await subscribersOf(stream);
  const before = new Set(await metadataAudience(stream, subscribers, tx));
  const updated = await tx.stream.update({ where: { id: stream.id }, data });
  const after = new Set(await metadataAudience(updated, subscribers, tx));
  const kept = [...after].filter((id) => before.has(id));
  for (const { property, value, extra } of events) {
    sendEventOnCommit(ctx, streamUpdateEvent(stream, property, value, extra), kept);
  }
  await announceAudienceChange(ctx, updated, subscribers, before, after);
  return updated;
}

/** Who may see a channel's metadata changed from `before` to `after`: those who lost it get
 * the channel deleted, those who gained it get it created with its subscribers, as Zulip
 * does after granting or revoking metadata access. */
export async function announceAudienceChange(
  ctx: ActionContext,
  stream: Stream,
  subscribers: number[],
  before: Set<number>,
  after: Set<number>,
): Promise<void> {
  const lost = [...before].filter((id) => !after.has(id));
  const gained = [...after].filter((id) => !before.has(id));
  if (lost.length > 0) sendEventOnCommit(ctx, streamDeleteEvent([stream.id]), lost);
  if (gained.length === 0) return;
  const details = await loadStreamDetails(stream.realmId, [stream]);
  sendEventOnCommit(
    ctx,
    { type: 'stream', op: 'create', streams: [presentStream(stream, details.context(stream))] },
    gained,
  );
  if (subscribers.length > 0)
    sendEventOnCommit(
      ctx,
      { type: 'subscription', op: 'peer_add', stream_ids: [stream.id], user_ids: subscribers },
      gained,
    );
}

export async function checkRenameStream(tx: Tx, stream: Stream, rawName: string): Promise<string> {
  const name = rawName.trim();
  if (name === stream.name) throw new JsonableError('Channel already has that name.');
  const checked = checkStreamName(name);
  if (checked.toLowerCase() !== stream.name.toLowerCase()) {
    const taken = await idsByLowerEquals(tx, 'stream', 'name', stream.realmId, [checked]);
    if (taken.length > 0) throw new ChannelExistsError(checked);
  }
  return checked;
}

export async function doRenameStream(
  ctx: ActionContext,
  stream: Stream,
  name: string,
  actingUserId: number,
): Promise<Stream> {
  const updated = await updateStream(ctx, stream, { name }, [{ property: 'name', value: name }], {
    eventType: AuditLogEvent.CHANNEL_NAME_CHANGED,
    actingUserId,
    extra: { old_value: stream.name, new_value: name },
  }).catch((error: unknown) => {
    throw isUniqueViolation(error) ? new ChannelExistsError(name) : error;
  });
  return updated;
}

export async function doChangeStreamDescription(
  ctx: ActionContext,
  stream: Stream,
  description: string,
  actingUserId: number,
): Promise<Stream> {
  const rendered = await renderDescriptionForRealm(stream.realmId, description, ctx.tx);
  return updateStream(
    ctx,
    stream,
    { description, renderedDescription: rendered },
    [{ property: 'description', value: description, extra: { rendered_description: rendered } }],
    {
      eventType: AuditLogEvent.CHANNEL_PROPERTY_CHANGED,
      actingUserId,
      extra: { property: 'description', old_value: stream.description, new_value: description },
    },
  );
}

/** Zulip's do_change_stream_folder: the folder (checked by the caller) or null for none. */
export async function doChangeStreamFolder(
  ctx: ActionContext,
  stream: Stream,
  folderId: number | null,
  actingUserId: number,
): Promise<Stream> {
  return updateStream(ctx, stream, { folderId }, [{ property: 'folder_id', value: folderId }], {
    eventType: AuditLogEvent.CHANNEL_FOLDER_CHANGED,
    actingUserId,
    extra: { old_value: stream.folderId, new_value: folderId },
  });
}

export interface Privacy {
  inviteOnly: boolean;
  historyPublicToSubscribers: boolean;
  isWebPublic: boolean;
}

/** Zulip's privacy rules for PATCH: the requested parts over the current ones; history is
 * shared when going public, protected by default when going private. */
export async function checkChangePrivacy(
  tx: Tx,
  perms: Permissions,
  realm: Realm,
  stream: Stream,
  requested: { isPrivate?: boolean; isWebPublic?: boolean; historyPublicToSubscribers?: boolean },
  isDefault: boolean,
): Promise<Privacy> {
  const inviteOnly = requested.isPrivate ?? stream.inviteOnly;
  const isWebPublic = requested.isWebPublic ?? stream.isWebPublic;
  const historyPublicToSubscribers =
    requested.historyPublicToSubscribers ??
    (requested.isPrivate !== undefined ? !requested.isPrivate : stream.historyPublicToSubscribers);
  if ((isWebPublic && inviteOnly) || (!inviteOnly && !historyPublicToSubscribers))
    throw new JsonableError('Invalid parameters');
  if (inviteOnly && isDefault) throw new JsonableError('A default channel cannot be private.');
  if (!inviteOnly && realm.moderationRequestChannelId === stream.id)
    throw new JsonableError('Moderation request channel must be private.');
  // As Zulip's update_stream_backend, the creation permissions are checked whenever the
  // parameter is given, changed or not.
  const inGroup = (id: number | null) => id !== null && perms.groups.has(id);
  if (requested.isWebPublic === true) {
    if (!realm.webPublicAccessEnabled)
      throw new JsonableError('Web-public channels are not enabled.');
    if (!inGroup(realm.canCreateWebPublicChannelGroupId)) throw new InsufficientPermissionError();
  }
  if (requested.isPrivate !== undefined) {
    const gate = requested.isPrivate
      ? realm.canCreatePrivateChannelGroupId
      : realm.canCreatePublicChannelGroupId;
    if (!inGroup(gate)) throw new InsufficientPermissionError();
  }
  return { inviteOnly, historyPublicToSubscribers, isWebPublic };
}

export async function doChangeStreamPrivacy(
  ctx: ActionContext,
  stream: Stream,
  privacy: Privacy,
  actingUserId: number,
): Promise<Stream> {
  if (
    privacy.inviteOnly === stream.inviteOnly &&
    privacy.isWebPublic === stream.isWebPublic &&
    privacy.historyPublicToSubscribers === stream.historyPublicToSubscribers
  )
    return stream;
  const extra = {
    history_public_to_subscribers: privacy.historyPublicToSubscribers,
    is_web_public: privacy.isWebPublic,
  };
  return updateStream(
    ctx,
    stream,
    privacy,
    [{ property: 'invite_only', value: privacy.inviteOnly, extra }],
    {
      eventType: AuditLogEvent.CHANNEL_PROPERTY_CHANGED,
      actingUserId,
      extra: {
        property: 'invite_only',
        old_value: {
          invite_only: stream.inviteOnly,
          is_web_public: stream.isWebPublic,
          history_public_to_subscribers: stream.historyPublicToSubscribers,
        },
        new_value: { invite_only: privacy.inviteOnly, ...extra },
      },
    },
  );
}

export async function doChangeStreamMessageRetention(
  ctx: ActionContext,
  stream: Stream,
  days: number | null,
  actingUserId: number,
): Promise<Stream> {
  if (days === stream.messageRetentionDays) return stream;
  return updateStream(
    ctx,
    stream,
    { messageRetentionDays: days },
    [{ property: 'message_retention_days', value: days }],
    {
      eventType: AuditLogEvent.CHANNEL_MESSAGE_RETENTION_DAYS_CHANGED,
      actingUserId,
      extra: { old_value: stream.messageRetentionDays, new_value: days },
    },
  );
}

export async function checkTopicsPolicy(
  tx: Tx,
  perms: Permissions,
  policy: TopicsPolicy,
): Promise<void> {
  await checkPolicyPermissions(tx, perms, policy, {});
}

export async function doChangeStreamTopicsPolicy(
  ctx: ActionContext,
  stream: Stream,
  policy: TopicsPolicy,
  actingUserId: number,
): Promise<Stream> {
  if (policy === stream.topicsPolicy) return stream;
  if (policy === 'empty_topic_only') {
    const named = await ctx.tx.message.findFirst({
      where: { recipientId: stream.recipientId!, NOT: { subject: '' } },
      select: { id: true },
    });
    if (named)
      throw new JsonableError(
        'To enable this configuration, all messages in this channel must be in the general chat topic. Consider renaming or deleting other topics.',
      );
  }
  return updateStream(
    ctx,
    stream,
    { topicsPolicy: policy },
    [{ property: 'topics_policy', value: policy }],
    {
      eventType: AuditLogEvent.CHANNEL_PROPERTY_CHANGED,
      actingUserId,
      extra: { property: 'topics_policy', old_value: stream.topicsPolicy, new_value: policy },
    },
  );
}

/** Validates a `{new, old}` group-setting change; returns null when nothing would change. */
export async function checkChangeStreamGroupSetting(
  tx: Tx,
  perms: Permissions,
  stream: Stream,
  setting: StreamGroupSetting,
  change: GroupSettingChange,
): Promise<number | null> {
  const column = STREAM_GROUP_SETTINGS[setting];
  const details = await loadStreamDetails(stream.realmId, [stream]);
  const current = details.context(stream).groups.get(stream[column]) ?? stream[column];
  if (change.old != null && !sameGroupSetting(change.old, current))
    throw new PreviousSettingValueMismatchedError();
  if (sameGroupSetting(change.new, current)) return null;
  await checkPolicyPermissions(tx, perms, undefined, { [setting]: change.new });
  return checkStreamGroupSetting(tx, stream.realmId, setting, change.new);
}

function sameGroupSetting(a: GroupSettingValue, b: GroupSettingValue): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  const sorted = (ids: number[]) => [...new Set(ids)].sort((x, y) => x - y).join(',');
  return (
    sorted(a.direct_members) === sorted(b.direct_members) &&
    sorted(a.direct_subgroups) === sorted(b.direct_subgroups)
  );
}

export async function doChangeStreamGroupSetting(
  ctx: ActionContext,
  stream: Stream,
  setting: StreamGroupSetting,
  groupId: number,
  actingUserId: number,
): Promise<Stream> {
  const column = STREAM_GROUP_SETTINGS[setting];
  const system = await systemGroupIds(stream.realmId);
  const oldPolicy = streamPostPolicy(stream, system);
  const values = await loadStreamDetails(stream.realmId, [{ ...stream, [column]: groupId }]);
  const value = values.context(stream).groups.get(groupId) ?? groupId;
  const events: { property: string; value: unknown }[] = [{ property: setting, value }];
  const newPolicy = streamPostPolicy({ ...stream, [column]: groupId }, system);
  if (setting === 'can_send_message_group' && newPolicy !== oldPolicy) {
    events.push({ property: 'stream_post_policy', value: newPolicy });
    events.push({ property: 'is_announcement_only', value: newPolicy === 2 });
  }
  return updateStream(ctx, stream, { [column]: groupId }, events, {
    eventType: AuditLogEvent.CHANNEL_GROUP_BASED_SETTING_CHANGED,
    actingUserId,
    extra: { property: setting, old_value: stream[column], new_value: groupId },
  });
}

// ---- Default channels -------------------------------------------------------------------------

export async function doSetDefaultStream(
  ctx: ActionContext,
  stream: Stream,
  isDefault: boolean,
): Promise<void> {
  const { tx } = ctx;
  const key = { realmId_streamId: { realmId: stream.realmId, streamId: stream.id } };
  const existing = await tx.defaultStream.findUnique({ where: key });
  if (isDefault === (existing !== null)) return;
  if (isDefault) {
    if (stream.inviteOnly) throw new JsonableError('A default channel cannot be private.');
    await tx.defaultStream.createMany({
      data: [{ realmId: stream.realmId, streamId: stream.id }],
      skipDuplicates: true,
    });
  } else {
    // A concurrent request may have removed it already: nothing left to announce.
    const removed = await tx.defaultStream.deleteMany({
      where: { realmId: stream.realmId, streamId: stream.id },
    });
    if (removed.count === 0) return;
  }
  await sendDefaultStreams(ctx, stream.realmId);
}

export async function defaultStreamIds(realmId: number, tx: Tx = getPrisma()): Promise<number[]> {
  const rows = await tx.defaultStream.findMany({
    where: { realmId },
    select: { streamId: true },
    orderBy: { streamId: 'asc' },
  });
  return rows.map((row) => row.streamId);
}

/** default_streams (ids since feature level 330) to every active member; guests do not see
 * default channels. */
async function sendDefaultStreams(ctx: ActionContext, realmId: number): Promise<void> {
  sendEventOnCommit(
    ctx,
    { type: 'default_streams', default_streams: await defaultStreamIds(realmId, ctx.tx) },
    await activeNonGuestIds(realmId, ctx.tx),
  );
}

// ---- Archiving ---------------------------------------------------------------------------------

/** Zulip's do_deactivate_stream: the channel keeps its name and subscriptions. Clients with
 * the archived_channels capability get an is_archived update; the others a delete. */
export async function doArchiveStream(
  ctx: ActionContext,
  stream: Stream,
  actingUserId: number,
): Promise<void> {
  const { tx } = ctx;
  // The organization before the channel, in the order of every change that locks both (a
  // default channel group's, PATCH /realm's): clearRealmChannels below needs it anyway, and
  // taking it only after the channel's row could deadlock with them.
  await tx.$executeRaw`SELECT 1 FROM realm WHERE id = ${stream.realmId} FOR UPDATE`;
  const subscribers = await subscribersOf(stream);
  const audience = await metadataAudience(stream, subscribers, tx);
  // Conditional, so of concurrent archivals exactly one succeeds and announces it.
  const archived = await tx.stream.updateMany({
    where: { id: stream.id, deactivated: false },
    data: { deactivated: true },
  });
  if (archived.count === 0) throw new JsonableError('Channel is already deactivated');
  await clearRealmChannels(ctx, stream);
  const wasDefault = await tx.defaultStream.deleteMany({
    where: { realmId: stream.realmId, streamId: stream.id },
  });
  await auditStream(ctx, stream, AuditLogEvent.CHANNEL_DEACTIVATED, actingUserId);
  sendArchivalEvents(ctx, stream, true, audience);
  if (wasDefault.count > 0) await sendDefaultStreams(ctx, stream.realmId);
  await removeStreamFromDefaultStreamGroups(ctx, stream);
}

/** PATCH is_archived=false (feature level 388). */
export async function doUnarchiveStream(
  ctx: ActionContext,
  stream: Stream,
  actingUserId: number,
): Promise<Stream> {
  const { tx } = ctx;
  const subscribers = await subscribersOf(stream);
  // Subscriptions of deactivated users count here, as in Zulip.
  const anySubscriber = await tx.subscription.count({
    where: { recipientId: stream.recipientId!, active: true },
  });
  if (stream.inviteOnly && anySubscriber === 0)
    throw new JsonableError('Channel is private and have no subscribers');
  const unarchived = await tx.stream.updateMany({
    where: { id: stream.id, deactivated: true },
    data: { deactivated: false },
  });
  if (unarchived.count === 0) throw new JsonableError('Channel is not currently deactivated');
  const updated = { ...stream, deactivated: false };
  await auditStream(ctx, stream, AuditLogEvent.CHANNEL_REACTIVATED, actingUserId);
  const audience = await metadataAudience(updated, subscribers, tx);
  sendArchivalEvents(ctx, updated, false, audience);
  const details = await loadStreamDetails(stream.realmId, [updated]);
  sendEventOnCommit(
    ctx,
    {
      type: 'stream',
      op: 'create',
      streams: [presentStream(updated, details.context(updated))],
      internal_data: { archived_channels: false },
    },
    audience,
  );
  return updated;
}

function sendArchivalEvents(
  ctx: ActionContext,
  stream: Stream,
  archived: boolean,
  audience: number[],
): void {
  sendEventOnCommit(
    ctx,
    streamUpdateEvent(stream, 'is_archived', archived, {
      internal_data: { archived_channels: true },
    }),
    audience,
  );
  if (archived)
    sendEventOnCommit(
      ctx,
      { ...streamDeleteEvent([stream.id]), internal_data: { archived_channels: false } },
      audience,
    );
}
