// Editing, moving and deleting messages (Zulip's check_update_message / do_update_message and
// do_delete_messages): who may change what, the edit-history entries, and the update_message
// and delete_message events to everyone who can see the messages.
import { createHash } from 'node:crypto';
import {
  flagBit,
  flagsToBitmask,
  Prisma,
  Role,
  type ActionContext,
  type Message,
  type Realm,
  type Stream,
  type Tx,
  type User,
  type UserMessageFlag,
} from '@parley/db';
import {
  JsonableError,
  MessageMoveError,
  PreviousMessageContentMismatchedError,
} from '@parley/errors';
import { topicLinks, type Rendered } from '@parley/markdown';
import { linkifiersForRealm } from '../lib/linkifiers';
import { usersAlertedBy } from '../lib/alert-words';
import { sendEventOnCommit } from '../lib/events';
import { RESOLVED_TOPIC_PREFIX } from '../lib/text';
import { activeMemberIds } from '../lib/groups';
import {
  accessMessage,
  canReadChannelHistory,
  flagNames,
  hasVisibleTopicMessage,
  InvalidMessageError,
  topicHasMessages,
} from '../lib/messages';
import { inRealmGroups } from '../lib/realm-state';
import {
  accessStreamById,
  canAdministerChannel,
  loadPermissions,
  metadataAudience,
  subscribersOf,
  type Permissions,
} from '../lib/streams';
import { isModerator } from '../lib/users';
import {
  EMPTY_TOPIC_DISPLAY_NAME,
  isMeMessage,
  type EditHistoryEntry,
} from '../presenters/messages';
import { streamUpdateEvent } from '../presenters/streams';
import {
  checkCanCreateTopic,
  checkContent,
  checkEmptyTopicOnly,
  checkTopic,
  checkTopicPolicy,
  topicParticipantIds,
} from './messages';
import type { Attachment } from '../lib/attachments';
import { queueAddedMentionNotifications } from './added-mention-notifications';
import { queuePushRemovalsOnCommit } from './push-notifications';
import { doUpdateAttachmentLinks } from './uploads';
import { isWidgetMessage } from '../lib/widgets';
import { doAutoFollowOnMove, doMoveTopicPolicies } from './user-topics';

export const PROPAGATE_MODES = ['change_one', 'change_later', 'change_all'] as const;
export type PropagateMode = (typeof PROPAGATE_MODES)[number];

/** Zulip's grace period on the edit time limit. */
const EDIT_LIMIT_BUFFER_SECONDS = 20;

export interface EditRequest {
  content?: string;
  topic?: string;
  streamId?: number;
  propagateMode: PropagateMode;
  /** The SHA-256 (hex) of the content the client edited; the edit is refused when the
   * message's content has changed since (another client's edit won the race). */
  prevContentSha256?: string;
}

export interface CheckedEdit {
  message: Message;
  stream: Stream | null;
  target: Stream | null;
  content: string | undefined;
  topic: string | undefined;
  propagateMode: PropagateMode;
  /** A topic change that only adds the resolved prefix, or only removes it (Zulip's
   * topic_resolved and topic_unresolved). */
  resolution: 'resolved' | 'unresolved' | null;
  /** Whether `resolution` is set: resolving has its own permission, and is not a move. */
  resolving: boolean;
}

/** Zulip's validate_user_can_edit_message for content: the organization allows editing, the
 * user sent the message, and the time limit (plus a grace period for edits already typed,
 * none for typing notifications) has not passed. */
export function checkCanEditContent(
  realm: Realm,
  user: User,
  message: Message,
  bufferSeconds = EDIT_LIMIT_BUFFER_SECONDS,
): void {
  if (!realm.allowMessageEditing)
    throw new JsonableError('Your organization has turned off message editing');
  if (message.senderId !== user.id)
    throw new JsonableError("You don't have permission to edit this message");
  const age = Date.now() / 1000 - message.dateSent.getTime() / 1000;
  const limit = realm.messageContentEditLimitSeconds;
  if (limit !== null && age > limit + bufferSeconds)
    throw new JsonableError('The time limit for editing this message has passed');
}

/** Zulip's check_update_message: access, what may be changed, and by whom. */
export async function checkUpdateMessage(
  tx: Tx,
  user: User,
  realm: Realm,
  message: Message,
  stream: Stream | null,
  request: EditRequest,
): Promise<CheckedEdit> {
  if (stream?.deactivated) throw new InvalidMessageError();
  const now = Date.now() / 1000;
  const age = now - message.dateSent.getTime() / 1000;
  if (request.content !== undefined) checkCanEditContent(realm, user, message);
  let topic = request.topic?.trim();
  if (topic === EMPTY_TOPIC_DISPLAY_NAME) topic = '';
  if (topic !== undefined && topic === message.subject) topic = undefined;
  const streamId =
    request.streamId !== undefined && request.streamId !== stream?.id
      ? request.streamId
      : undefined;
  if (request.content === undefined && topic === undefined && streamId === undefined)
    throw new JsonableError('Nothing to change');
  if (!message.isChannelMessage) {
    if (streamId !== undefined)
      throw new JsonableError('Direct messages cannot be moved to channels.');
    if (topic !== undefined) throw new JsonableError('Direct messages cannot have topics.');
  }
  if (request.propagateMode !== 'change_one' && topic === undefined && streamId === undefined)
    throw new JsonableError('Invalid propagate_mode without topic edit');
  if (topic === '✔' || topic === `${RESOLVED_TOPIC_PREFIX}${EMPTY_TOPIC_DISPLAY_NAME}`)
    throw new JsonableError('General chat cannot be marked as resolved');
  if (request.content !== undefined && streamId !== undefined)
    throw new JsonableError('Cannot change message content while changing channel');
  if (request.content !== undefined && (await isWidgetMessage(message.id)))
    throw new JsonableError('Widgets cannot be edited.');
  // Zulip checks it for any edit, moves included, so that the parameter means one thing.
  if (
    request.prevContentSha256 !== undefined &&
    request.prevContentSha256 !== createHash('sha256').update(message.content).digest('hex')
  )
    throw new PreviousMessageContentMismatchedError();
  const checkedTopic = topic === undefined ? undefined : checkTopic(topic);
  const content =
    request.content === undefined
      ? undefined
      : request.content.trimEnd() === ''
        ? '(deleted)'
        : checkContent(request.content);

  const perms = await loadPermissions(user);
  const resolution = checkedTopic === undefined ? null : resolutionOf(message.subject, topic!);
  const resolving = resolution !== null;
  let target: Stream | null = null;
  if (streamId !== undefined)
    ({ stream: target } = await accessStreamById(perms, streamId, {
      db: tx,
      allowArchived: false,
    }));
  // Zulip's check_update_message: the topic's permission first, then the channel's.
  if (checkedTopic !== undefined) {
    // Resolving has no time limit.
    if (resolving) checkCanResolveTopic(perms, realm, stream!, target);
    else checkCanMoveWithinChannel(perms, realm, stream!, target, age);
  }
  if (target !== null) {
    checkCanMoveBetweenChannels(perms, realm, stream!, age);
    if (!perms.groups.has(target.canSendMessageGroupId))
      throw new JsonableError('You do not have permission to post in this channel.');
  }
  if (checkedTopic === undefined && target === null && stream)
    checkEmptyTopicOnly(realm, stream, message.subject);
  if (checkedTopic !== undefined || target !== null) {
    const newStream = target ?? stream!;
    const newTopic = checkedTopic ?? message.subject;
    checkTopicPolicy(realm, newStream, newTopic);
    if (!resolving) {
      if (request.propagateMode === 'change_all' && !isModerator(user))
        await checkMoveTimeLimits(tx, perms, realm, message, stream!, {
          topic: checkedTopic !== undefined,
          channel: target !== null,
        });
      if (!(await topicHasMessages(newStream, newTopic)))
        await checkCanCreateTopic(user, perms.groups, newStream);
    }
  }
  return {
    message,
    stream,
    target,
    content,
    topic: checkedTopic,
    propagateMode: request.propagateMode,
    resolution,
    resolving,
  };
}

/** The grace on moving time limits (Zulip's message_move_limit_buffer). */
const MOVE_LIMIT_BUFFER_SECONDS = 20;

/** Zulip's check_time_limit_for_change_all_propagate_mode: moving a whole topic reaches only
 * messages within the organization's limits for what changes (the stricter of the two when
 * both do), counted among the messages the user can see; otherwise the error says which of
 * the most recent they may move. */
async function checkMoveTimeLimits(
  tx: Tx,
  perms: Permissions,
  realm: Realm,
  message: Message,
  stream: Stream,
  changes: { topic: boolean; channel: boolean },
): Promise<void> {
  const limits = [
    changes.topic ? realm.moveMessagesWithinStreamLimitSeconds : null,
    changes.channel ? realm.moveMessagesBetweenStreamsLimitSeconds : null,
  ].filter((limit): limit is number => limit !== null);
  if (limits.length === 0) return;
  const seconds = Math.min(...limits) + MOVE_LIMIT_BUFFER_SECONDS;
  const onlyReceived = !(await canReadChannelHistory(perms, stream, tx));
  const [counted] = await tx.$queryRaw<{ total: number; allowed: number; first: number | null }[]>`
    SELECT count(*)::int AS total,
      count(*) FILTER (WHERE m.date_sent > now() - ${seconds}::int * interval '1 second')::int
        AS allowed,
      (array_agg(m.id ORDER BY m.date_sent, m.id)
        FILTER (WHERE m.date_sent > now() - ${seconds}::int * interval '1 second'))[1] AS first
    FROM message m
    WHERE m.recipient_id = ${message.recipientId} AND upper(m.subject) = upper(${message.subject})
      AND (NOT ${onlyReceived} OR EXISTS (SELECT 1 FROM user_message um
        WHERE um.user_profile_id = ${perms.user.id} AND um.message_id = m.id))`;
  const { total, allowed, first } = counted!;
  if (allowed < total) throw new MessageMoveError(first, total, allowed);
}

/** Zulip's topic_resolved and topic_unresolved (build_message_edit_request): `topic` is the new
 * name as requested, before truncation. */
function resolutionOf(old: string, topic: string): 'resolved' | 'unresolved' | null {
  const wasResolved = old.startsWith(RESOLVED_TOPIC_PREFIX);
  const isResolved = topic.startsWith(RESOLVED_TOPIC_PREFIX);
  if (isResolved && !wasResolved && topic.slice(RESOLVED_TOPIC_PREFIX.length) === old)
    return 'resolved';
  // Python's lstrip: every leading character of the prefix goes, however many.
  if (wasResolved && !isResolved && old.replace(/^[✔ ]+/u, '') === topic) return 'unresolved';
  return null;
}

/** Renaming topics (Zulip's can_edit_topic): the organization's
 * can_move_messages_between_topics_group (Zulip's default: everyone), or, in the original
 * channel or the one moved to, its can_move_messages_within_channel_group or its
 * administrators; within the organization's move_messages_within_stream_limit_seconds unless
 * moderator (Zulip exempts nobody else). */
function checkCanMoveWithinChannel(
  perms: Permissions,
  realm: Realm,
  stream: Stream,
  target: Stream | null,
  age: number,
): void {
  const canMoveWithin = (s: Stream) =>
    canAdministerChannel(perms, s) || perms.groups.has(s.canMoveMessagesWithinChannelGroupId);
  if (
    !inRealmGroups(realm, 'can_move_messages_between_topics_group', perms.groups) &&
    !canMoveWithin(stream) &&
    !(target !== null && target.id !== stream.id && canMoveWithin(target))
  )
    throw new JsonableError("You don't have permission to edit this message");
  const limit = realm.moveMessagesWithinStreamLimitSeconds;
  if (!isModerator(perms.user) && limit !== null && age > limit + EDIT_LIMIT_BUFFER_SECONDS)
    throw new JsonableError("The time limit for editing this message's topic has passed.");
}

/** Zulip's can_resolve_topics: the organization's can_resolve_topics_group (everyone by
 * default), or the can_resolve_topics_group of the original channel or the one moved to. */
function checkCanResolveTopic(
  perms: Permissions,
  realm: Realm,
  stream: Stream,
  target: Stream | null,
): void {
  if (
    !inRealmGroups(realm, 'can_resolve_topics_group', perms.groups) &&
    !perms.groups.has(stream.canResolveTopicsGroupId) &&
    !(
      target !== null &&
      target.id !== stream.id &&
      perms.groups.has(target.canResolveTopicsGroupId)
    )
  )
    throw new JsonableError("You don't have permission to resolve topics in this channel.");
}

/** Moving between channels: the organization's can_move_messages_between_channels_group
 * (members by default), the channel's own group or its administrators; within the
 * organization's move_messages_between_streams_limit_seconds unless moderator. */
function checkCanMoveBetweenChannels(
  perms: Permissions,
  realm: Realm,
  stream: Stream,
  age: number,
): void {
  const allowed =
    inRealmGroups(realm, 'can_move_messages_between_channels_group', perms.groups) ||
    perms.groups.has(stream.canMoveMessagesOutOfChannelGroupId) ||
    canAdministerChannel(perms, stream);
  if (!allowed) throw new JsonableError("You don't have permission to move this message");
  const limit = realm.moveMessagesBetweenStreamsLimitSeconds;
  if (!isModerator(perms.user) && limit !== null && age > limit + EDIT_LIMIT_BUFFER_SECONDS)
    throw new JsonableError("The time limit for editing this message's channel has passed");
}

export interface UpdatedMessages {
  /** The messages changed, ascending: the edited one and those moved along. */
  ids: number[];
  /** A move (resolving included) took all of the topic the user could see. */
  movedAll: boolean;
  detached: Attachment[];
}

/** Applies a checked edit: the message (and, for moves, the rest of its topic as
 * propagate_mode says), the edit history, the flags a content edit changes, the topic's
 * visibility policies when all of it moved, and the events. */
export async function doUpdateMessage(
  ctx: ActionContext,
  user: User,
  edit: CheckedEdit,
  rendered: Rendered | null,
): Promise<UpdatedMessages> {
  const { tx } = ctx;
  const { message, stream, target } = edit;
  const now = new Date();
  let detached: Attachment[] = [];
  const timestamp = Math.floor(now.getTime() / 1000);
  const moved = (edit.topic !== undefined && !edit.resolving) || target !== null;
  const others = await topicMessagesToMove(tx, user, edit);

  const entryFor = (m: Message, withContent: boolean): EditHistoryEntry => ({
    user_id: user.id,
    timestamp,
    ...(withContent && edit.content !== undefined
      ? { prev_content: m.content, prev_rendered_content: m.renderedContent ?? '' }
      : {}),
    ...(edit.topic !== undefined ? { prev_topic: m.subject, topic: edit.topic } : {}),
    ...(target ? { prev_stream: stream!.id, stream: target.id } : {}),
  });
  const update = async (m: Message, withContent: boolean) => {
    const history = [
      entryFor(m, withContent),
      ...((m.editHistory as EditHistoryEntry[] | null) ?? []),
    ];
    await tx.message.update({
      where: { id: m.id },
      data: {
        editHistory: history as unknown as Prisma.InputJsonValue,
        lastEditTime: now,
        ...(moved ? { lastMovedTime: now } : {}),
        ...(withContent && edit.content !== undefined
          ? {
              content: edit.content,
              renderedContent: rendered!.html,
              hasLink: /<a /.test(rendered!.html),
              hasImage: rendered!.hasImage,
            }
          : {}),
        ...(edit.topic !== undefined ? { subject: edit.topic } : {}),
        ...(target ? { recipientId: target.recipientId! } : {}),
      },
    });
  };
  // @topic reaches the topic's participants and the message's sender, as on send (Zulip's
  // get_recipient_info): read before a move takes the topic's messages elsewhere.
  const topicParticipants =
    rendered?.mentions.wildcard === 'topic' && message.isChannelMessage
      ? [...(await topicParticipantIds(message.recipientId, message.subject)), message.senderId]
      : null;
  await update(message, true);
  if (others.length > 0) await moveAlong(tx, user, others, edit, { now, timestamp, moved });
  const ids = [message.id, ...others].sort((a, b) => a - b);

  if (edit.content !== undefined && rendered) {
    const newlyMentioned = (
      await updateMentionFlags(tx, message, rendered, topicParticipants)
    ).filter((id) => id !== message.senderId);
    // Zulip notifies of mentions an edit adds, in channels only (a direct message's recipients
    // were notified of it already).
    if (message.isChannelMessage && newlyMentioned.length > 0)
      queueAddedMentionNotifications(ctx, message.id, newlyMentioned, now);
    await updateAlertWordFlags(tx, message, edit.content);
    const links = await doUpdateAttachmentLinks(ctx, user, message, edit.content);
    detached = links.detached;
    if (links.linked !== message.hasAttachment)
      await tx.message.update({ where: { id: message.id }, data: { hasAttachment: links.linked } });
  }
  const { leaving, lostAccess } = target
    ? await moveUserMessages(tx, ids, stream!, target)
    : { leaving: [], lostAccess: [] };
  await sendUpdateEvents(ctx, user, edit, rendered, ids, timestamp, { leaving, lostAccess });
  const movedAll = await movedAllVisible(user, edit);
  const newStream = target ?? stream!;
  const newTopic = edit.topic ?? message.subject;
  // Users' follow and mute choices go with the topic (Zulip does this after the event too).
  if (movedAll)
    await doMoveTopicPolicies(
      ctx,
      { stream: stream!, topic: message.subject },
      { stream: newStream, topic: newTopic },
      { except: ids, lostAccess: new Set(lostAccess) },
    );
  else if (edit.topic !== undefined || target !== null) {
    // Part of a topic moved: if the edited message now starts its new topic, as its sender
    // sees it, the sender's settings for starting topics apply.
    const sender = await tx.user.findUniqueOrThrow({ where: { id: message.senderId } });
    if (
      !sender.isBot &&
      !lostAccess.includes(sender.id) &&
      !(await hasVisibleTopicMessage(sender, newStream, newTopic, ids, { before: message.id }))
    )
      await doAutoFollowOnMove(ctx, sender, newStream, newTopic);
  }
  return { ids, detached, movedAll };
}

/** Whether a move took all of the topic the user can see (Zulip's moved_all_visible_messages):
 * with change_all, or when none of it they could see is left. What is said about a move, and
 * whether users' policies move, must not depend on messages the user cannot read. */
async function movedAllVisible(user: User, edit: CheckedEdit): Promise<boolean> {
  if (edit.topic === undefined && edit.target === null) return false;
  if (edit.propagateMode === 'change_all') return true;
  return !(await hasVisibleTopicMessage(user, edit.stream!, edit.message.subject, []));
}

/** The messages moved along with the edited one, in one statement whatever their number:
 * each gets a history entry with its own previous topic. */
async function moveAlong(
  tx: Tx,
  user: User,
  ids: number[],
  edit: CheckedEdit,
  { now, timestamp, moved }: { now: Date; timestamp: number; moved: boolean },
): Promise<void> {
  const topicEntry =
    edit.topic === undefined
      ? Prisma.sql`'{}'::jsonb`
      : Prisma.sql`jsonb_build_object('prev_topic', subject, 'topic', ${edit.topic}::text)`;
  const streamEntry = edit.target
    ? Prisma.sql`jsonb_build_object('prev_stream', ${edit.stream!.id}::int, 'stream', ${edit.target.id}::int)`
    : Prisma.sql`'{}'::jsonb`;
  const changes: Prisma.Sql[] = [Prisma.sql`last_edit_time = ${now}`];
  if (moved) changes.push(Prisma.sql`last_moved_time = ${now}`);
  if (edit.topic !== undefined) changes.push(Prisma.sql`subject = ${edit.topic}`);
  if (edit.target) changes.push(Prisma.sql`recipient_id = ${edit.target.recipientId}`);
  await tx.$executeRaw`
    UPDATE message SET
      edit_history = jsonb_build_array(
        jsonb_build_object('user_id', ${user.id}::int, 'timestamp', ${timestamp}::int)
          || ${topicEntry} || ${streamEntry}
      ) || COALESCE(edit_history, '[]'::jsonb),
      ${Prisma.join(changes, ', ')}
    WHERE id = ANY(${ids}::int[])`;
}

/** change_later / change_all: ids of the topic's other messages that move along (all of them,
 * unless they change channel: see `visible`). */
async function topicMessagesToMove(tx: Tx, user: User, edit: CheckedEdit): Promise<number[]> {
  if (edit.propagateMode === 'change_one' || !edit.message.isChannelMessage) return [];
  const { message, stream } = edit;
  const later =
    edit.propagateMode === 'change_later' ? Prisma.sql`AND id > ${message.id}` : Prisma.empty;
  // Only a move to another channel is limited to what the user can see (Zulip's
  // update_messages_for_topic_edit: nobody gains access to messages by moving them); a rename
  // within the channel takes the whole topic along.
  const visible =
    edit.target === null || stream!.historyPublicToSubscribers
      ? Prisma.empty
      : Prisma.sql`AND id IN (SELECT message_id FROM user_message WHERE user_profile_id = ${user.id})`;
  const rows = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM message
    WHERE recipient_id = ${message.recipientId} AND upper(subject) = upper(${message.subject})
      AND id <> ${message.id} ${later} ${visible}`;
  return rows.map((r) => r.id);
}

/** A content edit re-renders mentions: mentioned and wildcard flags follow the new text.
 * Returns who is mentioned now and was not before (Zulip's prior_mention_user_ids: wildcard
 * mentions count), read from the statements that set the flags. */
async function updateMentionFlags(
  tx: Tx,
  message: Message,
  rendered: Rendered,
  topicParticipants: number[] | null,
): Promise<number[]> {
  const mentionBits =
    flagBit('mentioned') |
    flagBit('stream_wildcard_mentioned') |
    flagBit('topic_wildcard_mentioned');
  type Holder = { user_profile_id: number };
  const setFlag = (flag: UserMessageFlag, only: Prisma.Sql) =>
    tx.$queryRaw<Holder[]>`UPDATE user_message SET flags = flags | ${flagBit(flag)}
      WHERE message_id = ${message.id} ${only} RETURNING user_profile_id`;
  const heldBefore = await tx.$queryRaw<Holder[]>`
    UPDATE user_message SET flags = flags & ${~mentionBits}
    WHERE message_id = ${message.id} AND (flags & ${mentionBits}) <> 0
    RETURNING user_profile_id`;
  const heldAfter: Holder[] = [];
  const { mentions } = rendered;
  const mentioned = new Set(mentions.userIds);
  if (mentions.groupIds.size > 0)
    for (const id of await activeMemberIds([...mentions.groupIds])) mentioned.add(id);
  if (mentioned.size > 0)
    heldAfter.push(
      ...(await setFlag(
        'mentioned',
        Prisma.sql`AND user_profile_id = ANY(${[...mentioned]}::int[])`,
      )),
    );
  if (mentions.wildcard === 'channel')
    heldAfter.push(...(await setFlag('stream_wildcard_mentioned', Prisma.empty)));
  // In a channel, those who posted in the topic (read by the caller); in a conversation, all.
  if (mentions.wildcard === 'topic')
    heldAfter.push(
      ...(await setFlag(
        'topic_wildcard_mentioned',
        topicParticipants
          ? Prisma.sql`AND user_profile_id = ANY(${topicParticipants}::int[])`
          : Prisma.empty,
      )),
    );
  const before = new Set(heldBefore.map((row) => row.user_profile_id));
  return [...new Set(heldAfter.map((row) => row.user_profile_id))].filter((id) => !before.has(id));
}

/** A content edit sets or clears has_alert_word for everyone with a copy, by the new text. */
async function updateAlertWordFlags(tx: Tx, message: Message, content: string): Promise<void> {
  const holders = await tx.userMessage.findMany({
    where: { messageId: message.id },
    select: { userId: true },
  });
  const alerted = [
    ...(await usersAlertedBy(
      content,
      holders.map((row) => row.userId),
      tx,
    )),
  ];
  const bit = flagBit('has_alert_word');
  // Only the rows whose flag changes are written (usually none).
  await tx.$executeRaw`UPDATE user_message
    SET flags = flags # ${bit}
    WHERE message_id = ${message.id}
      AND (user_profile_id = ANY(${alerted}::int[])) <> ((flags & ${bit}) <> 0)`;
}

/** A channel move: users not subscribed to the new channel lose their copies; in a channel
 * with protected history every subscriber gets a read copy, as Zulip does. Returns who could
 * read the messages and is not subscribed to the new channel (`leaving`: whose copies went, and
 * the old channel's subscribers if its history is shared) and, of them, who can no longer read
 * them (`lostAccess`: a delete_message instead of the update). */
async function moveUserMessages(
  tx: Tx,
  ids: number[],
  original: Stream,
  target: Stream,
): Promise<{ leaving: number[]; lostAccess: number[] }> {
  const subscribers = (
    await tx.subscription.findMany({
      where: { recipientId: target.recipientId!, active: true },
      select: { userId: true },
    })
  ).map((s) => s.userId);
  const removed = await tx.$queryRaw<{ user_profile_id: number }[]>`
    DELETE FROM user_message
    WHERE message_id = ANY(${ids}::int[]) AND NOT (user_profile_id = ANY(${subscribers}::int[]))
    RETURNING user_profile_id`;
  if (!target.historyPublicToSubscribers && subscribers.length > 0)
    await tx.userMessage.createMany({
      data: ids.flatMap((messageId) =>
        subscribers.map((userId) => ({ userId, messageId, flags: flagsToBitmask(['read']) })),
      ),
      skipDuplicates: true,
    });
  const staying = new Set(subscribers);
  const leaving = new Set(removed.map((r) => r.user_profile_id));
  if (original.historyPublicToSubscribers)
    for (const sub of await subscribersWithRoles(tx, original))
      if (!staying.has(sub.userId)) leaving.add(sub.userId);
  // In a public channel with shared history members keep reading the messages: only guests
  // (who see only their own channels) lose them.
  if (target.inviteOnly || !target.historyPublicToSubscribers)
    return { leaving: [...leaving], lostAccess: [...leaving] };
  const guests = await tx.user.findMany({
    where: { id: { in: [...leaving] }, role: Role.GUEST },
    select: { id: true },
  });
  return { leaving: [...leaving], lostAccess: guests.map((guest) => guest.id) };
}

async function sendUpdateEvents(
  ctx: ActionContext,
  user: User,
  edit: CheckedEdit,
  rendered: Rendered | null,
  ids: number[],
  timestamp: number,
  { leaving, lostAccess }: { leaving: number[]; lostAccess: number[] },
): Promise<void> {
  const { tx } = ctx;
  const { message, stream, target } = edit;
  const event: Record<string, unknown> & { type: string } = {
    type: 'update_message',
    user_id: user.id,
    edit_timestamp: timestamp,
    message_id: message.id,
    message_ids: ids,
    rendering_only: false,
  };
  if (stream) Object.assign(event, { stream_name: stream.name, stream_id: stream.id });
  if (edit.topic !== undefined || target) {
    Object.assign(event, { propagate_mode: edit.propagateMode, orig_subject: message.subject });
    if (edit.topic !== undefined)
      Object.assign(event, {
        subject: edit.topic,
        topic_links: topicLinks(edit.topic, await linkifiersForRealm(message.realmId)),
      });
    if (target) event.new_stream_id = target.id;
  }
  if (edit.content !== undefined && rendered)
    Object.assign(event, {
      orig_content: message.content,
      orig_rendered_content: message.renderedContent ?? '',
      content: edit.content,
      rendered_content: rendered.html,
      is_me_message: isMeMessage(edit.content),
    });

  // Everyone with a copy, with their own flags; without one (flags ["read"]), as Zulip's
  // do_update_message: the subscribers of the channel the messages were in, if its history is
  // shared (their clients show the messages there), and after a move whoever could read them
  // and still can, subscribed to the new channel or not. Parley also tells the new channel's subscribers when
  // its history is shared, except guests new to the messages (Zulip leaves them out: their
  // clients never saw the topic). Who lost access gets a delete_message instead.
  const rows = await tx.userMessage.findMany({
    where: { messageId: message.id },
    select: { userId: true, flags: true },
  });
  const byFlags = new Map<string, number[]>();
  const add = (flags: string[], userId: number) => {
    const key = JSON.stringify(flags);
    byFlags.set(key, [...(byFlags.get(key) ?? []), userId]);
  };
  for (const row of rows) add(flagNames(row.flags), row.userId);
  const withoutCopy = new Set(leaving);
  const original = stream?.historyPublicToSubscribers ? await subscribersWithRoles(tx, stream) : [];
  for (const sub of original) withoutCopy.add(sub.userId);
  if (target?.historyPublicToSubscribers) {
    const before = new Set(original.map((sub) => sub.userId));
    for (const sub of await subscribersWithRoles(tx, target))
      if (sub.role !== Role.GUEST || before.has(sub.userId)) withoutCopy.add(sub.userId);
  }
  const holders = new Set(rows.map((r) => r.userId));
  const lost = new Set(lostAccess);
  for (const userId of withoutCopy)
    if (!holders.has(userId) && !lost.has(userId)) add(['read'], userId);
  for (const [flags, users] of byFlags)
    sendEventOnCommit(ctx, { ...event, flags: JSON.parse(flags) as string[] }, users);
  if (lostAccess.length > 0)
    sendEventOnCommit(
      ctx,
      {
        type: 'delete_message',
        message_ids: ids,
        message_type: 'stream',
        stream_id: stream!.id,
        topic: message.subject,
      },
      lostAccess,
    );
}

/** A channel's active subscribers whose accounts are active, with their roles. */
async function subscribersWithRoles(
  tx: Tx,
  stream: Stream,
): Promise<{ userId: number; role: number }[]> {
  const subs = await tx.subscription.findMany({
    where: { recipientId: stream.recipientId!, active: true, isUserActive: true },
    select: { userId: true, user: { select: { role: true } } },
  });
  return subs.map((sub) => ({ userId: sub.userId, role: sub.user.role }));
}

// ---- Deleting -----------------------------------------------------------------------------------

/** Zulip's validate_can_delete_message. */
export function checkDeleteMessage(
  perms: Permissions,
  realm: Realm,
  message: Message,
  stream: Stream | null,
  sender: Pick<User, 'id' | 'botOwnerId'>,
): void {
  if (stream?.deactivated) throw new InvalidMessageError();
  // The organization's can_delete_any_message_group (administrators by default).
  if (inRealmGroups(realm, 'can_delete_any_message_group', perms.groups)) return;
  if (stream && perms.groups.has(stream.canDeleteAnyMessageGroupId)) return;
  const own = sender.id === perms.user.id || sender.botOwnerId === perms.user.id;
  // Own messages: the organization's can_delete_own_message_group (everyone by default) or
  // the channel's.
  if (
    !own ||
    !(
      inRealmGroups(realm, 'can_delete_own_message_group', perms.groups) ||
      (stream !== null && perms.groups.has(stream.canDeleteOwnMessageGroupId))
    )
  )
    throw new JsonableError("You don't have permission to delete this message");
  const limit = realm.messageContentDeleteLimitSeconds;
  if (limit !== null && Date.now() / 1000 - message.dateSent.getTime() / 1000 > limit)
    throw new JsonableError('The time limit for deleting this message has passed');
}

/** DELETE /messages/{id}: the message, locked, once the user may delete it. */
export async function checkDeleteMessageById(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  messageId: number,
): Promise<{ message: Message; stream: Stream | null }> {
  const { message, stream } = await accessMessage(user, messageId, ctx.tx, { lock: true });
  const sender = await ctx.tx.user.findUniqueOrThrow({ where: { id: message.senderId } });
  checkDeleteMessage(await loadPermissions(user), realm, message, stream, sender);
  return { message, stream };
}

/** Deletes the message and tells everyone who could see it, and the actor. */
export async function doDeleteMessage(
  ctx: ActionContext,
  actor: User,
  message: Message,
  stream: Stream | null,
): Promise<void> {
  const { tx } = ctx;
  const copies = await tx.userMessage.findMany({
    where: { messageId: message.id },
    select: { userId: true, flags: true },
  });
  const holders = copies.map((row) => row.userId);
  // Phones still showing its notification remove it (Zulip does on deletion too).
  const showing = copies
    .filter((row) => (row.flags & flagBit('active_mobile_push_notification')) !== 0n)
    .map((row) => row.userId);
  const audience = stream
    ? channelDeletionAudience(stream, holders, await activeSubscriberIds(tx, stream))
    : new Set(holders);
  audience.add(actor.id);
  const deleted = await tx.message.deleteMany({ where: { id: message.id } });
  if (deleted.count === 0) throw new JsonableError('Message already deleted');
  queuePushRemovalsOnCommit(ctx, showing, [message.id]);
  sendEventOnCommit(
    ctx,
    {
      type: 'delete_message',
      message_ids: [message.id],
      message_type: stream ? 'stream' : 'private',
      ...(stream ? { stream_id: stream.id, topic: message.subject } : {}),
    },
    audience,
  );
  if (stream && stream.firstMessageId === message.id) await refreshFirstMessageId(ctx, stream);
}

async function activeSubscriberIds(tx: Tx, stream: Stream): Promise<number[]> {
  const rows = await tx.subscription.findMany({
    where: { recipientId: stream.recipientId!, active: true, isUserActive: true },
    select: { userId: true },
  });
  return rows.map((row) => row.userId);
}

/** Who hears that channel messages were deleted: those who could see them. With protected
 * history, the subscribers who had them; in a private channel sharing its history, every
 * subscriber; in a public one, the subscribers and anyone else who had them. */
export function channelDeletionAudience(
  stream: Pick<Stream, 'inviteOnly' | 'historyPublicToSubscribers'>,
  holders: number[],
  subscribers: number[],
): Set<number> {
  if (!stream.historyPublicToSubscribers) {
    const subscribed = new Set(subscribers);
    return new Set(holders.filter((id) => subscribed.has(id)));
  }
  if (stream.inviteOnly) return new Set(subscribers);
  return new Set([...subscribers, ...holders]);
}

/** After a channel's first message was deleted: the oldest left becomes its first_message_id,
 * and those who see the channel are told. */
export async function refreshFirstMessageId(ctx: ActionContext, stream: Stream): Promise<void> {
  const { tx } = ctx;
  const first = await tx.message.findFirst({
    where: { recipientId: stream.recipientId! },
    orderBy: { id: 'asc' },
    select: { id: true },
  });
  await tx.stream.update({
    where: { id: stream.id },
    data: { firstMessageId: first?.id ?? null },
  });
  sendEventOnCommit(
    ctx,
    streamUpdateEvent(stream, 'first_message_id', first?.id ?? null),
    await metadataAudience(stream, await subscribersOf(stream), tx),
  );
}
