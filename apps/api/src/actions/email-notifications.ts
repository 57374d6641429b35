// Missed-message emails (Zulip's maybe_enqueue_notifications, MissedMessageWorker and
// handle_missedmessage_emails; docs/email-notifications.md). The send path names the
// recipients who could be emailed (every human in a direct message; in a channel those
// mentioned, the topic's followers and those who asked for the channel's emails) and queues
// one `email-notifications` job per message after its commit. That job reads their settings,
// picks Zulip's trigger (lib/push-notifications.ts emailTrigger) and keeps the users who are
// idle: no client open that takes messages, or none active for OFFLINE_THRESHOLD_SECS; the
// others' messages are set aside in Redis, and emailed if their last client goes without
// reading them (the events tier's `last-queue-gone` job, Zulip's missedmessage_hook). Each
// such message joins the user's waiting batch in scheduled_message_notification_email, or
// starts one that waits the user's batching period; the batch's delayed `missed-message-email`
// job mails its messages that are still unread and readable, one email per conversation, with
// a reply address when the server has an email gateway.
import { randomUUID } from 'node:crypto';
import { realmUrl } from '@parley/auth';
import { getConfig } from '@parley/config';
import {
  bitmaskToFlags,
  flagBit,
  getPrisma,
  RecipientType,
  Prisma,
  Role,
  type ActionContext,
} from '@parley/db';
import { getRedis, RELEASE_IF_HELD } from '@parley/events';
import { enqueueJob, sendMail, type JobData } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { topicNarrowUrl } from '@parley/markdown';
import {
  missedMessageEmail,
  type MissedConversation,
  type MissedMessage,
} from '../lib/missed-message-email';
import { groupConversationMembers } from '../lib/conversations';
import { missedMessageAddress, newMissedMessageToken } from '../lib/email-gateway';
import { emailTrigger, EmailTrigger, mentionsPersonally } from '../lib/push-notifications';
import { inaccessibleUsersByGuest } from '../lib/user-access';
import { INACCESSIBLE_USER_NAME } from '../presenters/users';
import { mentionedGroups, smallestGroupOf } from './push-notifications';
import { emailSettingsOf, notificationSettings } from './notification-settings';
import { forgetSetAside, presentSettingAside, setAsideAmong } from './set-aside-notifications';

/** Queues the decision once the send commits; the job id is the message's, so queuing it again
 * does nothing. */
export function queueEmailNotifications(
  ctx: Pick<ActionContext, 'onCommit'>,
  messageId: number,
  userIds: number[],
): void {
  ctx.onCommit(() =>
    enqueueJob('email-notifications', { messageId, userIds }, `email-notifications-${messageId}`),
  );
}

/** The `email-notifications` job: each candidate's trigger, for the idle ones a waiting row and
 * its delayed job; the others are set aside. Returns how many users will be emailed. Run again
 * (a retry), it schedules nobody twice: a row is one per user and message, and its job's id is
 * the row's. */
export function scheduleEmailNotifications({
  messageId,
  userIds,
  editedAt,
}: JobData['email-notifications']): Promise<number> {
  return schedule(messageId, userIds, { clientsGone: false, editedAt });
}

/** The `last-queue-gone` job (Zulip's missedmessage_hook): the user's last client went, its
 * queue holding these unread messages. Those the send's job set aside because that client was
 * open are decided again, the user idle now (by their settings and the messages' flags as they
 * are now). Returns how many will be emailed. */
export async function emailAfterLastQueueGone({
  userId,
  messageIds,
}: JobData['last-queue-gone']): Promise<number> {
  const setAsideIds = await setAsideAmong('email', userId, messageIds);
  let scheduled = 0;
  for (const messageId of setAsideIds)
    scheduled += await schedule(messageId, [userId], { clientsGone: true });
  await forgetSetAside('email', userId, setAsideIds);
  return scheduled;
}

async function schedule(
  messageId: number,
  userIds: number[],
  { clientsGone, editedAt }: { clientsGone: boolean; editedAt?: number },
): Promise<number> {
  const prisma = getPrisma();
  if (userIds.length === 0) return 0;
  const message = await prisma.message.findUnique({
    where: { id: messageId },
    select: {
      id: true,
      isChannelMessage: true,
      senderId: true,
      renderedContent: true,
      dateSent: true,
    },
  });
  if (!message) return 0;
  const candidates = await notificationSettings(messageId, userIds);
  const triggered = candidates.flatMap((row) => {
    const trigger = emailTrigger(
      bitmaskToFlags(row.flags),
      emailSettingsOf(row),
      message.isChannelMessage,
    );
    return trigger ? [{ row, trigger }] : [];
  });
  // Zulip's idle: off Zulip (no queue takes messages), or present but inactive. Those present
  // are set aside, for when their last client goes.
  const present = clientsGone
    ? new Set<number>()
    : await presentSettingAside(
        'email',
        triggered.map(({ row }) => row.id),
        { id: messageId, at: editedAt ?? message.dateSent.getTime() },
        new Set(triggered.filter(({ row }) => row.active_recently).map(({ row }) => row.id)),
      );
  const notified = triggered
    .filter(({ row }) => !present.has(row.id))
    .map(({ row, trigger }) => ({ userId: row.id, trigger, period: row.period }));
  if (notified.length === 0) return 0;
  const html = message.renderedContent ?? '';
  const groups = notified.some((n) => n.trigger === EmailTrigger.MENTION)
    ? await mentionedGroups(html)
    : [];
  const values = notified.map(({ userId, trigger, period }) => {
    const group =
      trigger === EmailTrigger.MENTION && !mentionsPersonally(html, userId)
        ? smallestGroupOf(userId, groups)
        : null;
    return waitingRow(userId, messageId, trigger, group?.id ?? null, period);
  });
  // A message joins the user's batch if one is waiting (Zulip's MissedMessageWorker): its
  // time is the batch's, and so is its job, whose id names the user and the time. A retry
  // finds its rows again (the no-op update returns them) and queues their job again, which
  // its id makes harmless.
  const rows = await prisma.$queryRaw<{ user_id: number; due_ms: string; delay_ms: number }[]>`
    INSERT INTO scheduled_message_notification_email
      (user_profile_id, message_id, trigger, mentioned_user_group_id, scheduled_timestamp)
    VALUES ${Prisma.join(values)}
    ON CONFLICT (user_profile_id, message_id)
      DO UPDATE SET trigger = scheduled_message_notification_email.trigger
    RETURNING user_profile_id AS user_id,
      floor(extract(epoch FROM scheduled_timestamp) * 1000)::int8::text AS due_ms,
      greatest(0, extract(epoch FROM scheduled_timestamp - now()) * 1000)::float8 AS delay_ms`;
  await Promise.all(rows.map((row) => queueMailing(row.user_id, `${row.due_ms}`, row.delay_ms)));
  return rows.length;
}

/** The job that mails a user's batch due at `dueMs`; queuing it again does nothing. */
function queueMailing(userId: number, dueMs: string, delayMs: number): Promise<void> {
  return enqueueJob('missed-message-email', { userId }, `missed-message-email-${userId}-${dueMs}`, {
    delayMs,
  });
}

function waitingRow(
  userId: number,
  messageId: number,
  trigger: string,
  groupId: number | null,
  periodSeconds: number,
): Prisma.Sql {
  return Prisma.sql`(${userId}, ${messageId}, ${trigger}, ${groupId}::int,
    COALESCE((SELECT min(w.scheduled_timestamp) FROM scheduled_message_notification_email w
      WHERE w.user_profile_id = ${userId}), now() + make_interval(secs => ${periodSeconds})))`;
}

interface WaitingRow {
  id: number;
  message_id: number;
  trigger: string;
  mentioned_user_group_id: number | null;
  due: boolean;
  delay_ms: number;
}

interface MailedMessage {
  id: number;
  sender_id: number;
  sender_name: string;
  sender_role: number;
  recipient_id: number;
  recipient_type: number;
  type_id: number;
  subject: string;
  content: string;
  rendered_content: string | null;
  date_sent: Date;
  /** The user's copy carries a mention flag (Zulip's UserMessage.has_any_mentions). */
  mentioned: boolean;
}

const ANY_MENTION =
  flagBit('mentioned') | flagBit('stream_wildcard_mentioned') | flagBit('topic_wildcard_mentioned');

/** Zulip's context for a mention's email (get_context_for_message, then bulk_access_messages):
 * up to ten earlier messages of the topic sent within 15 minutes before `first`, the bucket's
 * earliest message; of those, the ones the user may read (all, where the channel shares its
 * history; else those they received). The user reads the channel already: `first` passed the
 * access check of mailWaiting. */
async function contextOf(userId: number, first: MailedMessage): Promise<MailedMessage[]> {
  return getPrisma().$queryRaw<MailedMessage[]>`
    SELECT m.id, m.sender_id, su.full_name AS sender_name, su.role AS sender_role,
      m.recipient_id, ${RecipientType.STREAM}::int AS recipient_type, st.id AS type_id, m.subject,
      m.content, m.rendered_content, m.date_sent, false AS mentioned
    FROM (
      SELECT * FROM message
      WHERE recipient_id = ${first.recipient_id} AND upper(subject) = upper(${first.subject})
        AND id < ${first.id} AND date_sent > ${first.date_sent}::timestamptz - interval '15 minutes'
      ORDER BY id DESC LIMIT 10
    ) m
    JOIN user_profile su ON su.id = m.sender_id
    JOIN stream st ON st.recipient_id = m.recipient_id
    WHERE st.history_public_to_subscribers OR EXISTS (
      SELECT 1 FROM user_message um WHERE um.user_profile_id = ${userId} AND um.message_id = m.id)
    ORDER BY m.id`;
}

/** A job run early is queued again for its batch's time, never sooner than this (ms): clocks
 * a little apart must not make it run again and again. */
const EARLY_RETRY_MIN_MS = 1_000;

/** How long a user's mailing may take before another job may mail for them (a crashed job's
 * lock lapses). */
const MAILING_LOCK_MS = 5 * 60_000;

/** Another job is mailing this user's messages: BullMQ retries this one later. */
class MailingInProgressError extends Error {
  constructor(userId: number) {
    super(`missed-message emails of user ${userId} are being sent by another job`);
    this.name = 'MailingInProgressError';
  }
}

/** The `missed-message-email` job: when the user's earliest waiting message is due, mails
 * every one of them still unread and still readable, one email per conversation (least
 * recently active first, as Zulip orders them). One job per user at a time (a lock in Redis);
 * no transaction is held while mailing. A conversation's rows go once its email is sent, so a
 * failure or a crash leaves the rest for the retry, which may mail one conversation twice
 * rather than none. Returns how many emails were sent. */
export async function sendMissedMessageEmails({
  userId,
}: JobData['missed-message-email']): Promise<number> {
  const redis = getRedis();
  const lock = `missed-message-email:lock:${userId}`;
  const token = randomUUID();
  if ((await redis.set(lock, token, 'PX', MAILING_LOCK_MS, 'NX')) !== 'OK')
    throw new MailingInProgressError(userId);
  try {
    return await mailWaiting(userId);
  } finally {
    await RELEASE_IF_HELD.run(redis, 1, lock, token).catch(() => 0);
  }
}

async function mailWaiting(userId: number): Promise<number> {
  const prisma = getPrisma();
  const waiting = await prisma.$queryRaw<WaitingRow[]>`
    SELECT id, message_id, trigger, mentioned_user_group_id, scheduled_timestamp <= now() AS due,
      greatest(0, extract(epoch FROM scheduled_timestamp - now()) * 1000)::float8 AS delay_ms
    FROM scheduled_message_notification_email WHERE user_profile_id = ${userId}
    ORDER BY scheduled_timestamp, id`;
  if (waiting.length === 0) return 0;
  const first = waiting[0]!;
  if (!first.due) {
    // Run early (a retry of an earlier batch's job, or clocks apart): queued again for the
    // batch's time. Waiting here instead held a worker, and its shutdown, for up to a minute.
    await queueMailing(
      userId,
      `${Math.ceil(Date.now() + first.delay_ms)}-again`,
      Math.max(first.delay_ms, EARLY_RETRY_MIN_MS),
    );
    return 0;
  }
  const forget = (rows: WaitingRow[]) =>
    prisma.$executeRaw`DELETE FROM scheduled_message_notification_email
      WHERE id = ANY(${rows.map((row) => row.id)}::int[])`;
  const user = await prisma.user.findUnique({ where: { id: userId }, include: { realm: true } });
  if (!user || !user.isActive || user.isBot || user.realm.deactivated) {
    await forget(waiting);
    return 0;
  }
  // Unread, and readable now (Zulip's has_message_access: a channel message needs a
  // subscription, unless the channel is public and the user no guest).
  const messages = await prisma.$queryRaw<MailedMessage[]>`
    SELECT m.id, m.sender_id, su.full_name AS sender_name, su.role AS sender_role,
      m.recipient_id, r.type AS recipient_type, r.type_id, m.subject, m.content, m.rendered_content,
      m.date_sent, (um.flags & ${ANY_MENTION}) <> 0 AS mentioned
    FROM message m
    JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${userId}
    JOIN user_profile su ON su.id = m.sender_id
    JOIN recipient r ON r.id = m.recipient_id
    LEFT JOIN stream st ON r.type = ${RecipientType.STREAM} AND st.id = r.type_id
    WHERE m.id = ANY(${waiting.map((row) => row.message_id)}::int[])
      AND (um.flags & ${flagBit('read')}) = 0
      AND (st.id IS NULL
        OR (NOT st.invite_only AND ${user.role} <> ${Role.GUEST})
        OR EXISTS (SELECT 1 FROM subscription s WHERE s.user_profile_id = ${userId}
          AND s.recipient_id = m.recipient_id AND s.active))
    ORDER BY m.id`;
  const byMessage = new Map(waiting.map((row) => [row.message_id, row]));
  const mailed = new Set(messages.map((m) => m.id));
  // Read meanwhile, deleted, or no longer readable: nothing to mail for them.
  await forget(waiting.filter((row) => !mailed.has(row.message_id)));
  if (messages.length === 0) return 0;
  const groupNames = await groupNamesOf(
    waiting.flatMap((row) =>
      row.mentioned_user_group_id === null ? [] : [row.mentioned_user_group_id],
    ),
  );
  // Zulip's buckets: a channel's topic (case-insensitively), a 1:1 conversation's sender, a
  // group conversation.
  const buckets = new Map<string, MailedMessage[]>();
  for (const message of messages) {
    const key =
      message.recipient_type === RecipientType.STREAM
        ? `${message.recipient_id}:${message.subject.toLowerCase()}`
        : message.recipient_type === RecipientType.PERSONAL
          ? `${message.recipient_id}:${message.sender_id}`
          : `${message.recipient_id}`;
    const bucket = buckets.get(key);
    if (bucket) bucket.push(message);
    else buckets.set(key, [message]);
  }
  // A mention's email also shows what led up to it (Zulip: when the bucket's earliest message
  // mentions the user). Context rows are shown only: they carry no trigger and are not
  // forgotten, counted or replied to.
  const context = new Map<MailedMessage[], MailedMessage[]>();
  for (const bucket of buckets.values()) {
    const first = bucket.reduce((a, b) => (b.date_sent < a.date_sent ? b : a));
    if (first.recipient_type !== RecipientType.STREAM || !first.mentioned) continue;
    const earlier = (await contextOf(user.id, first)).filter((m) => !mailed.has(m.id));
    if (earlier.length > 0) context.set(bucket, earlier);
  }
  // Guests limited by can_access_all_users_group see a sender they may not access as
  // "Unknown user", as in their clients.
  const hidden =
    (
      await inaccessibleUsersByGuest(
        user.realm,
        [user],
        [...messages, ...[...context.values()].flat()].map((m) => m.sender_id),
      )
    ).get(user.id) ?? new Set<number>();
  const nameOf = (m: MailedMessage) =>
    hidden.has(m.sender_id) ? INACCESSIBLE_USER_NAME : m.sender_name;
  const url = realmUrl(user.realm);
  const includeRealmName = await includesRealmName(user);
  let sent = 0;
  let failure: unknown = null;
  for (const bucket of [...buckets.values()].sort(
    (a, b) => a[a.length - 1]!.id - b[b.length - 1]!.id,
  )) {
    const { conversation, narrowUrl } = await conversationOf(user.id, bucket[0]!, url, nameOf);
    const rows = bucket.map((m) => byMessage.get(m.id)!);
    // Zulip's create_missed_message_address: with a gateway, replies post to the conversation.
    // Not when the content is left out: there is nothing shown to reply to.
    const replyTo = user.messageContentInEmailNotifications
      ? await replyAddressFor(user.id, bucket[0]!.id)
      : null;
    let mail: ReturnType<typeof missedMessageEmail>;
    try {
      mail = missedMessageEmail({
        replyByEmail: replyTo !== null,
        conversation,
        narrowUrl,
        messages: [...(context.get(bucket) ?? []), ...bucket].map((m): MissedMessage => {
          const row = byMessage.get(m.id);
          const groupId = row?.mentioned_user_group_id ?? null;
          return {
            senderName: nameOf(m),
            content: m.content,
            html: m.rendered_content ?? '',
            trigger: row?.trigger ?? null,
            mentionedGroupName: groupId === null ? null : (groupNames.get(groupId) ?? null),
          };
        }),
        realm: { name: user.realm.name, url },
        showContent: user.messageContentInEmailNotifications,
        includeRealmName,
      });
    } catch (error) {
      // A message this cannot render would stop every later email of the user: it is dropped.
      getLogger().error('a missed-message email could not be built; its messages are dropped', {
        user_id: user.id,
        message_ids: bucket.map((m) => m.id),
        error,
      });
      await forget(rows);
      continue;
    }
    try {
      await sendMail({
        to: user.deliveryEmail,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        fromName: `${user.realm.name} notifications`,
        ...(replyTo ? { replyTo: { name: 'Zulip', address: replyTo } } : {}),
      });
    } catch (error) {
      // The other conversations are still mailed; the job fails afterwards and its retry
      // mails this one.
      failure ??= error;
      continue;
    }
    await forget(rows);
    sent += 1;
  }
  getLogger().info('missed-message emails sent', { user_id: user.id, emails: sent });
  if (failure) throw failure;
  // Messages that joined the batch while it was mailed: their job is this one, so another.
  const [left] = await prisma.$queryRaw<{ due_ms: string; delay_ms: number }[]>`
    SELECT floor(extract(epoch FROM min(scheduled_timestamp)) * 1000)::int8::text AS due_ms,
      greatest(0, extract(epoch FROM min(scheduled_timestamp) - now()) * 1000)::float8 AS delay_ms
    FROM scheduled_message_notification_email WHERE user_profile_id = ${userId}
    HAVING count(*) > 0`;
  if (left) await queueMailing(userId, `${left.due_ms}-after`, left.delay_ms);
  return sent;
}

/** A reply address for the user's email about `messageId`, or null without a gateway. */
async function replyAddressFor(userId: number, messageId: number): Promise<string | null> {
  if (getConfig().EMAIL_GATEWAY_PATTERN === '') return null;
  const row = await getPrisma().missedMessageEmailAddress.create({
    data: { userId, messageId, emailToken: newMissedMessageToken() },
  });
  return missedMessageAddress(row.emailToken);
}

async function groupNamesOf(ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const groups = await getPrisma().userGroup.findMany({ where: { id: { in: [...new Set(ids)] } } });
  return new Map(groups.map((group) => [group.id, group.name ?? '']));
}

/** Zulip's include_realm_name_in_missedmessage_emails_subject: policy 1 (automatic) names the
 * organization when the address belongs to active users of more than one. */
async function includesRealmName(user: {
  deliveryEmail: string;
  realmNameInEmailNotificationsPolicy: number;
}): Promise<boolean> {
  const policy = user.realmNameInEmailNotificationsPolicy;
  if (policy === 2) return true;
  if (policy !== 1) return false;
  // Compared as Zulip compares delivery emails here: the same address, whatever its case.
  const [{ realms }] = await getPrisma().$queryRaw<[{ realms: number }]>`
    SELECT count(*)::int AS realms FROM user_profile u JOIN realm r ON r.id = u.realm_id
    WHERE lower(u.delivery_email) = lower(${user.deliveryEmail})
      AND u.is_active AND NOT u.is_bot AND NOT r.deactivated`;
  return realms > 1;
}

async function conversationOf(
  userId: number,
  message: MailedMessage,
  url: string,
  nameOf: (m: MailedMessage) => string,
): Promise<{ conversation: MissedConversation; narrowUrl: string }> {
  if (message.recipient_type === RecipientType.STREAM) {
    const stream = await getPrisma().stream.findUniqueOrThrow({ where: { id: message.type_id } });
    return {
      conversation: { kind: 'channel', channelName: stream.name, topic: message.subject },
      narrowUrl: topicNarrowUrl(url, {
        channelId: stream.id,
        channelName: stream.name,
        topic: message.subject,
      }),
    };
  }
  if (message.recipient_type === RecipientType.PERSONAL)
    return {
      conversation: { kind: 'direct', senderName: nameOf(message) },
      narrowUrl: `${url}/#narrow/dm/${message.sender_id}-dm`,
    };
  // The others, as Zulip's huddle_narrow_url names the conversation.
  const others = (await groupConversationMembers(message.recipient_id)).filter(
    (member) => member.id !== userId,
  );
  return {
    conversation: { kind: 'group', otherNames: others.map((member) => member.fullName) },
    narrowUrl: `${url}/#narrow/dm/${others.map((member) => member.id).join(',')}-group`,
  };
}
