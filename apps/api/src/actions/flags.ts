// Personal message flags (spec 4.17, Zulip's do_update_message_flags and the mark-as-read
// endpoints): only read, starred and collapsed change at the user's request; messages only in
// the user's history by channel access get a "historical" row first; the user's clients hear
// of every change through update_message_flags.
import {
  flagBit,
  flagsToBitmask,
  Prisma,
  USER_MESSAGE_FLAGS,
  type ActionContext,
  type Realm,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { doClearMobilePushNotifications } from './push-notifications';
import { canReadChannelHistory, displayRecipients, InvalidMessageError } from '../lib/messages';
import { accessStreamById, loadPermissions, subscriptionOf } from '../lib/streams';
import { isTopicMuted, loadMuting } from '../lib/user-topics';

export const EDITABLE_FLAGS = ['read', 'starred', 'collapsed'] as const;
export type EditableFlag = (typeof EDITABLE_FLAGS)[number];

/** Flags the API never shows (Zulip's NON_API_FLAGS): unknown to clients, so invalid. */
const NON_API_FLAGS: readonly string[] = ['is_private', 'active_mobile_push_notification'];

/** Zulip's checks, in its order: the flag, whether it is editable, then the operation. */
export function checkFlagRequest(flag: string, op: string): [EditableFlag, 'add' | 'remove'] {
  if (
    NON_API_FLAGS.includes(flag) ||
    !((USER_MESSAGE_FLAGS as readonly string[]).includes(flag) || flag === 'wildcard_mentioned')
  )
    throw new JsonableError(`Invalid flag: '${flag}'`);
  if (!(EDITABLE_FLAGS as readonly string[]).includes(flag))
    throw new JsonableError(`Flag not editable: '${flag}'`);
  if (op !== 'add' && op !== 'remove')
    throw new JsonableError(`Invalid message flag operation: '${op}'`);
  return [flag as EditableFlag, op];
}

export interface FlagResult {
  messages: number[];
  /** Channels whose messages stayed read: unread messages must be in subscribed channels. */
  ignoredChannels?: number[];
}

/** Zulip's do_update_message_flags. A message the user has no row for counts as read and
 * historical: ids already in the wanted state are dropped unchecked (marking read never
 * writes a row), the others must be readable and get a historical row. Marking unread skips
 * channels the user is not subscribed to. The event goes out even when nothing changed. */
export async function doUpdateMessageFlags(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  op: 'add' | 'remove',
  flag: EditableFlag,
  messageIds: number[],
): Promise<FlagResult> {
  const { tx } = ctx;
  let ids = [...new Set(messageIds)];
  let ignoredChannels: number[] | undefined;
  if (flag === 'read' && op === 'remove')
    ({ target: ids, ignoredChannels } = await withoutUnsubscribedChannels(tx, user, ids));
  const rows = await tx.userMessage.findMany({
    where: { userId: user.id, messageId: { in: ids } },
    select: { messageId: true },
  });
  const held = new Set(rows.map((row) => row.messageId));
  const bit = flagBit(flag);
  const rowless = (HISTORICAL_FLAGS & bit) !== 0n;
  const created: number[] = [];
  if (rowless !== (op === 'add')) {
    const missing = ids.filter((m) => !held.has(m));
    await readableHistory(tx, user, missing);
    if (missing.length > 0)
      await tx.userMessage.createMany({
        data: missing.map((messageId) => ({
          userId: user.id,
          messageId,
          flags: op === 'add' ? HISTORICAL_FLAGS | bit : HISTORICAL_FLAGS & ~bit,
        })),
        skipDuplicates: true,
      });
    created.push(...missing);
  }
  const updated = await applyFlag(
    tx,
    user.id,
    op,
    flag,
    ids.filter((m) => held.has(m)),
  );
  const changed = [...updated, ...created].sort((a, b) => a - b);
  // Read elsewhere: the phone's notification goes away (Zulip's
  // do_clear_mobile_push_notifications_for_ids).
  if (flag === 'read' && op === 'add') await doClearMobilePushNotifications(ctx, user.id, changed);
  await sendFlagsEvent(ctx, user, realm, op, flag, changed, { evenIfNone: true });
  return { messages: changed, ...(ignoredChannels ? { ignoredChannels } : {}) };
}

/** The flags Zulip assumes for a message the user may read but has no row for. */
const HISTORICAL_FLAGS = flagsToBitmask(['read', 'historical']);

/** Messages the user never received but may read through channel history, checked per
 * channel rather than per message; any other id makes the whole request invalid. */
async function readableHistory(tx: Tx, user: User, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const messages = await tx.message.findMany({
    where: { id: { in: ids }, realmId: user.realmId, isChannelMessage: true },
    select: { id: true, recipientId: true },
  });
  if (messages.length !== ids.length) throw new InvalidMessageError();
  const streams = await tx.stream.findMany({
    where: { recipientId: { in: [...new Set(messages.map((m) => m.recipientId))] } },
  });
  const perms = await loadPermissions(user);
  for (const stream of streams)
    if (!(await canReadChannelHistory(perms, stream, tx))) throw new InvalidMessageError();
  return ids;
}

/** Sets or clears the flag on the user's rows; the ids whose flag actually changed. */
export async function applyFlag(
  tx: Tx,
  userId: number,
  op: 'add' | 'remove',
  flag: EditableFlag,
  ids: number[] | Prisma.Sql,
): Promise<number[]> {
  if (Array.isArray(ids) && ids.length === 0) return [];
  const bit = flagBit(flag);
  const which = Array.isArray(ids) ? Prisma.sql`message_id = ANY(${ids}::int[])` : ids;
  const rows =
    op === 'add'
      ? await tx.$queryRaw<{ message_id: number }[]>`
          UPDATE user_message SET flags = flags | ${bit}
          WHERE user_profile_id = ${userId} AND ${which} AND (flags & ${bit}) = 0
          RETURNING message_id`
      : await tx.$queryRaw<{ message_id: number }[]>`
          UPDATE user_message SET flags = flags & ${~bit}
          WHERE user_profile_id = ${userId} AND ${which} AND (flags & ${bit}) <> 0
          RETURNING message_id`;
  return rows.map((row) => row.message_id).sort((a, b) => a - b);
}

async function withoutUnsubscribedChannels(
  tx: Tx,
  user: User,
  ids: number[],
): Promise<{ target: number[]; ignoredChannels: number[] }> {
  const messages = await tx.message.findMany({
    where: { id: { in: ids }, realmId: user.realmId, isChannelMessage: true },
    select: { id: true, recipientId: true },
  });
  const streams = await tx.stream.findMany({
    where: { recipientId: { in: [...new Set(messages.map((m) => m.recipientId))] } },
  });
  const ignored = new Set<number>();
  const skip = new Set<number>();
  for (const stream of streams) {
    if ((await subscriptionOf(user.id, stream, tx)) !== null) continue;
    ignored.add(stream.id);
    for (const m of messages) if (m.recipientId === stream.recipientId) skip.add(m.id);
  }
  return {
    target: ids.filter((id) => !skip.has(id)),
    ignoredChannels: [...ignored].sort((a, b) => a - b),
  };
}

/** Marks the user's messages matching `which` (a condition on user_message) as read, and
 * tells the user's clients (mark_*_as_read, and muting a user). */
export async function doMarkAsRead(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  which: Prisma.Sql,
): Promise<void> {
  const changed = await applyFlag(ctx.tx, user.id, 'add', 'read', which);
  await doClearMobilePushNotifications(ctx, user.id, changed);
  await sendFlagsEvent(ctx, user, realm, 'add', 'read', changed);
}

/** POST /mark_all_as_read: the event names no messages and says `all` (Zulip's
 * do_mark_all_as_read: clients reload their unread state). */
export async function doMarkAllAsRead(ctx: ActionContext, user: User): Promise<void> {
  const changed = await applyFlag(ctx.tx, user.id, 'add', 'read', Prisma.sql`TRUE`);
  await doClearMobilePushNotifications(ctx, user.id, changed);
  sendEventOnCommit(
    ctx,
    {
      type: 'update_message_flags',
      op: 'add',
      operation: 'add',
      flag: 'read',
      messages: [],
      all: true,
    },
    [user.id],
  );
}

/** POST /mark_stream_as_read: every message of a channel the user may access. */
export async function doMarkChannelAsRead(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  streamId: number,
): Promise<void> {
  const { stream } = await accessStreamById(await loadPermissions(user), streamId, { db: ctx.tx });
  await doMarkAsRead(
    ctx,
    user,
    realm,
    Prisma.sql`message_id IN (SELECT id FROM message WHERE recipient_id = ${stream.recipientId})`,
  );
}

/** POST /mark_topic_as_read: `topic` as stored ('' for the empty topic); `topicName` as the
 * client wrote it, for the error when the channel has no such topic (Zulip's words). */
export async function doMarkTopicAsRead(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  streamId: number,
  topic: string,
  topicName: string,
): Promise<void> {
  const { stream } = await accessStreamById(await loadPermissions(user), streamId, { db: ctx.tx });
  // Zulip's user_message_exists_for_topic: the topic as the user received it.
  const [exists] = await ctx.tx.$queryRaw<{ id: number }[]>`
    SELECT m.id FROM user_message um JOIN message m ON m.id = um.message_id
    WHERE um.user_profile_id = ${user.id} AND m.recipient_id = ${stream.recipientId}
      AND upper(m.subject) = upper(${topic}) LIMIT 1`;
  if (!exists) throw new JsonableError(`No such topic '${topicName}'`);
  await doMarkAsRead(
    ctx,
    user,
    realm,
    Prisma.sql`message_id IN (SELECT id FROM message WHERE recipient_id = ${stream.recipientId}
      AND upper(subject) = upper(${topic}))`,
  );
}

/** update_message_flags to the user's clients; marking unread carries message_details so
 * clients can rebuild their unread state for messages they may not have loaded. */
export async function sendFlagsEvent(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  op: 'add' | 'remove',
  flag: EditableFlag,
  changed: number[],
  { evenIfNone = false }: { evenIfNone?: boolean } = {},
): Promise<void> {
  if (changed.length === 0 && !evenIfNone) return;
  const event: Record<string, unknown> & { type: string } = {
    type: 'update_message_flags',
    op,
    operation: op,
    flag,
    messages: changed,
    all: false,
  };
  if (op === 'remove' && flag === 'read')
    event.message_details = await messageDetails(ctx.tx, user, realm, changed);
  sendEventOnCommit(ctx, event, [user.id]);
}

async function messageDetails(
  tx: Tx,
  user: User,
  realm: Realm,
  ids: number[],
): Promise<Record<string, Record<string, unknown>>> {
  const messages = await tx.message.findMany({ where: { id: { in: ids } } });
  const rows = await tx.userMessage.findMany({
    where: { userId: user.id, messageId: { in: ids } },
    select: { messageId: true, flags: true },
  });
  const mentionBits =
    flagBit('mentioned') |
    flagBit('stream_wildcard_mentioned') |
    flagBit('topic_wildcard_mentioned');
  const displayFor = await displayRecipients(user, realm, messages, tx);
  const muting = await loadMuting(user);
  const details: Record<string, Record<string, unknown>> = {};
  for (const message of messages) {
    const display = displayFor(message);
    const flags = rows.find((row) => row.messageId === message.id)?.flags ?? 0n;
    details[String(message.id)] = {
      type: message.isChannelMessage ? 'stream' : 'private',
      ...(message.isChannelMessage
        ? {
            stream_id: display.streamId,
            topic: message.subject,
            unmuted_stream_msg: !isTopicMuted(muting, display.streamId!, message.subject),
          }
        : {
            user_ids: (display.display as { id: number }[])
              .map((u) => u.id)
              .filter((id) => id !== user.id),
          }),
      ...((flags & mentionBits) !== 0n ? { mentioned: true } : {}),
    };
  }
  return details;
}
