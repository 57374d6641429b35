// The Notification Bot's messages in a channel's "channel events" topic when the channel is
// created, renamed, described, made public or private, archived or unarchived, or its
// retention, topics or posting settings change (Zulip's maybe_send_channel_events_notice and
// its callers in zerver/actions/streams.py), with Zulip's texts.
//
// Zulip writes them in the change's transaction. Parley resolves a message's channel and
// recipients outside the transaction (actions/messages.ts), so a route collects its notices
// while it changes the channel and posts them once the change has committed, before it
// answers; their events follow the change's, as Zulip's do. A failed notice is logged: the
// change stands either way.
import { getPrisma, SYSTEM_GROUPS, type Realm, type Stream, type User } from '@parley/db';
import { getLogger } from '@parley/logger';
import { silentMentionSyntax } from '@parley/markdown';
import { presentGroupSettings, type GroupSettingValue } from '../lib/groups';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import type { TopicsPolicy } from './streams';
import { sendBotMessage } from './system-bots';

/** Zulip's Realm.STREAM_EVENTS_NOTIFICATION_TOPIC_NAME. */
const CHANNEL_EVENTS_TOPIC = 'channel events';

/** Zulip's channel_events_topic_name: where the Notification Bot reports on a channel. */
export function channelEventsTopic(stream: Pick<Stream, 'topicsPolicy'>): string {
  return stream.topicsPolicy === 'empty_topic_only' ? '' : CHANNEL_EVENTS_TOPIC;
}

export interface ChannelNotice {
  stream: Stream;
  content: string;
  /** Every copy arrives read (Zulip's limit_unread_user_ids=set(), for archiving). */
  allRead?: boolean;
  /** Read for the user whose action it reports (a new channel's first message). */
  readFor?: number;
}

/** Posts committed changes' notices in order (null: a change Zulip reports with none); a
 * failure is logged, and the rest still go. */
export async function sendChannelNotices(
  realm: Realm,
  notices: (ChannelNotice | null)[],
): Promise<void> {
  for (const notice of notices) {
    if (notice === null) continue;
    const { stream, content, allRead, readFor } = notice;
    const target = {
      kind: 'channel',
      to: JSON.stringify(stream.id),
      topic: channelEventsTopic(stream),
    } as const;
    try {
      await sendBotMessage(realm, 'notification', target, content, {
        ...(allRead ? { unreadOnlyFor: new Set<number>() } : {}),
        ...(readFor !== undefined ? { readFor: new Set([readFor]) } : {}),
      });
    } catch (error) {
      getLogger().error('channel notice failed', {
        realm_id: realm.id,
        stream_id: stream.id,
        error,
      });
    }
  }
}

/** Zulip's Stream.PERMISSION_POLICIES names, or null for a public channel with protected
 * history, which has none. */
function permissionPolicyName(
  stream: Pick<Stream, 'inviteOnly' | 'isWebPublic' | 'historyPublicToSubscribers'>,
): string | null {
  if (stream.isWebPublic) return 'Web-public';
  if (!stream.inviteOnly) return stream.historyPublicToSubscribers ? 'Public' : null;
  return stream.historyPublicToSubscribers
    ? 'Private, shared history'
    : 'Private, protected history';
}

/** Quoted as Zulip quotes descriptions, an empty one as "No description.". */
function quotedDescription(description: string): string {
  return `\`\`\`\` quote\n${description === '' ? '*No description.*' : description}\n\`\`\`\``;
}

/** The first message of a channel `actor` created, or null for a public channel with protected
 * history, which Zulip leaves without one. */
export function createdNotice(actor: User, stream: Stream): ChannelNotice | null {
  const kind = permissionPolicyName(stream);
  if (kind === null) return null;
  return {
    stream,
    content:
      `**${kind}** channel created by ${silentMentionSyntax(actor)}. **Description:**\n` +
      quotedDescription(stream.description),
    readFor: actor.id,
  };
}

export function renamedNotice(actor: User, before: Stream, after: Stream): ChannelNotice {
  return {
    stream: after,
    content: `${silentMentionSyntax(actor)} renamed channel **${before.name}** to **${after.name}**.`,
  };
}

export function describedNotice(actor: User, before: Stream, after: Stream): ChannelNotice {
  return {
    stream: after,
    content:
      `${silentMentionSyntax(actor)} changed the description for this channel.\n\n` +
      `* **Old description:**\n${quotedDescription(before.description)}\n` +
      `* **New description:**\n${quotedDescription(after.description)}`,
  };
}

/** A change of who can read the channel. A public channel with protected history has no
 * policy name in Zulip's table; it can only be reached through the API, which Zulip then
 * fails to describe, so it gets no notice. */
export function privacyNotice(actor: User, before: Stream, after: Stream): ChannelNotice | null {
  const from = permissionPolicyName(before);
  const to = permissionPolicyName(after);
  if (from === null || to === null) return null;
  return {
    stream: after,
    content:
      `${silentMentionSyntax(actor)} changed the [access permissions](/help/channel-permissions) ` +
      `for this channel from **${from}** to **${to}**.`,
  };
}

export function retentionNotice(
  actor: User,
  realm: Realm,
  before: Stream,
  after: Stream,
): ChannelNotice {
  // Null is the organization's setting; -1 keeps messages forever.
  const from = before.messageRetentionDays ?? realm.messageRetentionDays;
  const to = after.messageRetentionDays ?? realm.messageRetentionDays;
  const period = (days: number) => (days === -1 ? 'Forever' : `${days} days`);
  const summary =
    to === -1 && from !== -1
      ? 'Messages in this channel will now be retained forever.'
      : `Messages in this channel will now be automatically deleted ${to} days after they are sent.`;
  return {
    stream: after,
    content:
      `${silentMentionSyntax(actor)} has changed the ` +
      '[message retention period](/help/message-retention-policy) for this channel:\n' +
      `* **Old retention period**: ${period(from)}\n` +
      `* **New retention period**: ${period(to)}\n\n${summary}`,
  };
}

const TOPICS_POLICY_NAMES: Record<TopicsPolicy, string> = {
  inherit: 'Automatic',
  allow_empty_topic: `*${EMPTY_TOPIC_DISPLAY_NAME}* topic allowed`,
  disable_empty_topic: `No *${EMPTY_TOPIC_DISPLAY_NAME}* topic`,
  empty_topic_only: `Only *${EMPTY_TOPIC_DISPLAY_NAME}* topic allowed`,
};

/** Null for an archived channel: Zulip's notice there fails its send checks and is dropped. */
export function topicsPolicyNotice(
  actor: User,
  before: Stream,
  after: Stream,
): ChannelNotice | null {
  if (after.deactivated) return null;
  return {
    stream: after,
    content:
      `${silentMentionSyntax(actor)} changed the "Allow posting to the *general chat* topic?" ` +
      `setting from **${TOPICS_POLICY_NAMES[before.topicsPolicy as TopicsPolicy]}** to ` +
      `**${TOPICS_POLICY_NAMES[after.topicsPolicy as TopicsPolicy]}**.`,
  };
}

/** A change of can_send_message_group, the only group setting Zulip reports, to `value` (as
 * requested). Called in the change's transaction, before the old value's group is replaced;
 * it reads committed users and groups. */
export async function postingPermissionNotice(
  actor: User,
  before: Stream,
  after: Stream,
  value: GroupSettingValue,
): Promise<ChannelNotice> {
  const id = before.canSendMessageGroupId;
  const from = (await presentGroupSettings([id])).get(id) ?? id;
  return {
    stream: after,
    content:
      `${silentMentionSyntax(actor)} changed the [posting permissions](/help/channel-posting-policy) ` +
      `for this channel:\n\n* **Old**: ${await whoHasPermission(after.realmId, from)}\n` +
      `* **New**: ${await whoHasPermission(after.realmId, value)}`,
  };
}

/** Zulip's get_users_string_with_permission: a named group, or an anonymous group's subgroups
 * by id and then its active members by id, as silent mentions. Nobody is the "role:nobody"
 * group, as Zulip stores an empty value. */
async function whoHasPermission(realmId: number, value: GroupSettingValue): Promise<string> {
  const prisma = getPrisma();
  if (
    typeof value !== 'number' &&
    value.direct_members.length + value.direct_subgroups.length === 0
  )
    return `@_*${SYSTEM_GROUPS.NOBODY}*`;
  const groupIds = typeof value === 'number' ? [value] : value.direct_subgroups;
  const userIds = typeof value === 'number' ? [] : value.direct_members;
  const [groups, users] = await Promise.all([
    prisma.userGroup.findMany({
      where: { id: { in: groupIds }, realmId },
      select: { name: true },
      orderBy: { id: 'asc' },
    }),
    prisma.user.findMany({
      where: { id: { in: userIds }, realmId, isActive: true },
      select: { id: true, fullName: true },
      orderBy: { id: 'asc' },
    }),
  ]);
  return [
    ...groups.map((group) => `@_*${group.name}*`),
    ...users.map((user) => silentMentionSyntax(user)),
  ].join(', ');
}

export function archivedNotice(stream: Stream): ChannelNotice {
  return { stream, content: `Channel #**${stream.name}** has been archived.`, allRead: true };
}

export function unarchivedNotice(stream: Stream): ChannelNotice {
  return { stream, content: `Channel #**${stream.name}** has been unarchived.` };
}
