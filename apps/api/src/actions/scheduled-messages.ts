// Scheduled messages and reminders (spec 2.6, 4.3; Zulip's zerver/actions/scheduled_messages.py
// and reminders.py). Scheduling checks the message as POST /messages would (prepareMessage),
// stores it, and queues a delayed `deliver-scheduled-message` job once committed. The job
// sends through the same send action, in a transaction that first locks the row and marks it
// delivered: however many times the job runs, the message goes out once
// (docs/scheduled-messages.md).
import {
  getPrisma,
  query,
  runAction,
  statement,
  type ActionContext,
  type Realm,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError, RealmDeactivatedError, UserDeactivatedError } from '@parley/errors';
import { enqueueJob, removeIfFailed, type JobData } from '@parley/jobs';
import { getLogger } from '@parley/logger';
import { sendEventOnCommit } from '../lib/events';
import { globalTimeSyntax } from '../lib/quoting';
import { accessMessage } from '../lib/messages';
import {
  accessScheduledMessage,
  checkReminderNote,
  LATE_CUTOFF_MS,
  readTarget,
  reminderContent,
  type ScheduledTarget,
} from '../lib/scheduled-messages';
import {
  DeliveryType,
  presentReminder,
  presentScheduledMessage,
  type ScheduledMessageRow,
} from '../presenters/scheduled-messages';
import {
  checkContent,
  checkTopic,
  doSendMessage,
  MAX_MESSAGE_LENGTH,
  prepareMessage,
  type PreparedMessage,
  type SendTarget,
} from './messages';
import { isForWelcomeBot, replyFromWelcomeBot } from './onboarding';
import { ensureSystemBot } from './system-bots';

/** A scheduled message as the client sent it, `to` already read (lib's readTarget). */
export interface ScheduleInput {
  target: ScheduledTarget;
  content: string;
  deliverAt: Date;
  readBySender?: boolean;
  client: string;
}

/** What a row stores about the message, checked. */
interface CheckedMessage {
  type: 'stream' | 'private';
  streamId: number | null;
  toIds: number[];
  subject: string;
  content: string;
  renderedContent: string;
  readBySender: boolean;
  sendingClient: string;
}

/** Zulip's DeliveryTimeNotInFutureError. */
export function checkDeliveryTime(seconds: number, now = Date.now()): Date {
  const deliverAt = new Date(seconds * 1000);
  if (deliverAt.getTime() <= now)
    throw new JsonableError('Scheduled delivery time must be in the future.');
  return deliverAt;
}

function sendTarget(target: ScheduledTarget): SendTarget {
  return target.type === 'stream'
    ? { kind: 'channel', to: String(target.streamId), topic: target.topic }
    : { kind: 'direct', to: JSON.stringify(target.userIds) };
}

/** Zulip's check_message for a scheduled message: every check of a send, now; the rendering
 * is kept for the scheduled-message objects. */
async function checkMessage(
  realm: Realm,
  sender: User,
  target: ScheduledTarget,
  rawContent: string,
  client: string,
  readBySender: boolean | undefined,
  humanClient: boolean,
): Promise<CheckedMessage> {
  const content = checkContent(rawContent);
  const resolved: ScheduledTarget =
    target.type === 'stream' ? { ...target, topic: checkTopic(target.topic) } : target;
  const prepared = await prepareMessage(realm, sender, sendTarget(resolved), content, {
    client,
    readBySender: readBySender ?? false,
  });
  const { addressee } = prepared;
  if (addressee.kind === 'channel')
    return {
      type: 'stream',
      streamId: addressee.stream.id,
      toIds: [],
      subject: addressee.topic,
      content,
      renderedContent: prepared.rendered.html,
      readBySender: readBySender ?? humanClient,
      sendingClient: client,
    };
  // Zulip's get_recipient_ids: the other participants, or the sender alone.
  const others = addressee.users.map((u) => u.id).filter((id) => id !== sender.id);
  const toSelf = others.length === 0;
  return {
    type: 'private',
    streamId: null,
    toIds: toSelf ? [sender.id] : others.sort((a, b) => a - b),
    subject: '',
    content,
    renderedContent: prepared.rendered.html,
    // Zulip's default: read by the sender when sent from a person's client, unless to oneself.
    readBySender: readBySender ?? (humanClient && !toSelf),
    sendingClient: client,
  };
}

const jobId = (row: Pick<ScheduledMessageRow, 'id' | 'version'>) =>
  `scheduled-message-${row.id}-${row.version}`;

/** Queues the delivery of the row's current version at its time. Adding the same version again
 * does nothing while BullMQ knows the job, so the sweep may call it freely. */
export async function enqueueDelivery(
  row: Pick<ScheduledMessageRow, 'id' | 'version' | 'scheduledTimestamp'>,
): Promise<void> {
  const data: JobData['deliver-scheduled-message'] = {
    scheduledMessageId: row.id,
    version: row.version,
  };
  await enqueueJob('deliver-scheduled-message', data, jobId(row), {
    delayMs: row.scheduledTimestamp.getTime() - Date.now(),
  });
}

function scheduleDeliveryOnCommit(ctx: ActionContext, row: ScheduledMessageRow): void {
  // A lost enqueue (Redis down, a crash right after COMMIT) is made good by the sweep.
  ctx.onCommit(async () => {
    try {
      await enqueueDelivery(row);
    } catch (error) {
      getLogger().warn('queueing a scheduled message failed', { id: row.id, error });
    }
  });
}

/** Zulip's check_schedule_message. */
export async function checkScheduleMessage(
  realm: Realm,
  user: User,
  input: ScheduleInput,
  humanClient: boolean,
): Promise<number> {
  const checked = await checkMessage(
    realm,
    user,
    input.target,
    input.content,
    input.client,
    input.readBySender,
    humanClient,
  );
  return runAction((ctx) => doScheduleMessage(ctx, user, checked, input.deliverAt));
}

/** Zulip's do_schedule_messages for one message: the row, the `add` event, the job. */
async function doScheduleMessage(
  ctx: ActionContext,
  user: User,
  checked: CheckedMessage,
  deliverAt: Date,
  reminder?: { targetMessageId: number; note: string | null },
): Promise<number> {
  const row = await ctx.tx.scheduledMessage.create({
    data: {
      realmId: user.realmId,
      senderId: user.id,
      ...checked,
      scheduledTimestamp: deliverAt,
      ...(reminder
        ? {
            deliveryType: DeliveryType.REMIND,
            reminderTargetMessageId: reminder.targetMessageId,
            reminderNote: reminder.note,
          }
        : {}),
    },
  });
  sendEventOnCommit(
    ctx,
    reminder
      ? { type: 'reminders', op: 'add', reminders: [presentReminder(row)] }
      : {
          type: 'scheduled_messages',
          op: 'add',
          scheduled_messages: [presentScheduledMessage(row)],
        },
    [user.id],
  );
  scheduleDeliveryOnCommit(ctx, row);
  return row.id;
}

/** A PATCH /scheduled_messages/{id}, its parameters read: each field given replaces the old. */
export interface ScheduleEdit {
  type?: 'stream' | 'private';
  /** The raw `to`: read once the type (new or kept) is known. */
  to?: string;
  topic?: string;
  content?: string;
  deliverAt?: Date;
  client: string;
}

/** Zulip's edit_scheduled_message: locks the row (a delivery running now has committed or
 * waits), checks the edited message again as a send would, and queues the new version. */
export async function checkEditScheduledMessage(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  id: number,
  edit: ScheduleEdit,
  humanClient: boolean,
): Promise<void> {
  const row = await accessScheduledMessage(ctx.tx, user, id);
  if (row.delivered) throw new JsonableError('Scheduled message was already sent');
  if (row.failed && edit.deliverAt === undefined)
    throw new JsonableError('Scheduled delivery time must be in the future.');
  const type = edit.type ?? (row.type as 'stream' | 'private');
  let message: Partial<CheckedMessage> = {};
  const retarget = edit.type !== undefined || edit.to !== undefined;
  if (retarget || edit.content !== undefined) {
    const target = retarget
      ? readTarget(type, edit.to!, edit.topic ?? row.subject)
      : row.type === 'stream'
        ? { type: 'stream' as const, streamId: row.streamId!, topic: edit.topic ?? row.subject }
        : { type: 'private' as const, userIds: row.toIds };
    const checked = await checkMessage(
      realm,
      user,
      target,
      edit.content ?? row.content,
      edit.client,
      row.readBySender,
      humanClient,
    );
    message = checked;
  } else if (edit.topic !== undefined && type === 'stream') {
    // A new topic alone is only checked for its characters and truncated (Zulip's
    // edit_scheduled_message): the channel's rules apply at delivery.
    message = { subject: checkTopic(edit.topic) };
  }
  const updated = await ctx.tx.scheduledMessage.update({
    where: { id },
    data: {
      ...message,
      sendingClient: edit.client,
      ...(edit.deliverAt ? { scheduledTimestamp: edit.deliverAt } : {}),
      failed: false,
      failureMessage: null,
      version: { increment: 1 },
    },
  });
  sendEventOnCommit(
    ctx,
    {
      type: 'scheduled_messages',
      op: 'update',
      scheduled_message: presentScheduledMessage(updated),
    },
    [user.id],
  );
  scheduleDeliveryOnCommit(ctx, updated);
}

/** Zulip's delete_scheduled_message: the job, when it runs, finds nothing to send. */
export async function doDeleteScheduledMessage(
  ctx: ActionContext,
  user: User,
  id: number,
): Promise<void> {
  await accessScheduledMessage(ctx.tx, user, id);
  await ctx.tx.scheduledMessage.delete({ where: { id } });
  sendEventOnCommit(ctx, { type: 'scheduled_messages', op: 'remove', scheduled_message_id: id }, [
    user.id,
  ]);
}

/** Zulip's schedule_reminder_for_message: the message must be one the user can read; the
 * reminder's text, quoting it, is checked as a direct message to oneself. */
export async function checkCreateReminder(
  realm: Realm,
  user: User,
  input: { messageId: number; deliverAt: Date; note?: string; client: string },
): Promise<number> {
  const { message, stream } = await accessMessage(user, input.messageId);
  const note = input.note === undefined ? null : checkReminderNote(input.note);
  const content = await reminderContent(realm, message, stream, note, MAX_MESSAGE_LENGTH);
  const checked = await checkMessage(
    realm,
    user,
    { type: 'private', userIds: [user.id] },
    content,
    input.client,
    false,
    false,
  );
  return runAction((ctx) =>
    doScheduleMessage(ctx, user, checked, input.deliverAt, {
      targetMessageId: message.id,
      note,
    }),
  );
}

/** Zulip's do_delete_reminder. */
export async function doDeleteReminder(ctx: ActionContext, user: User, id: number): Promise<void> {
  await accessScheduledMessage(ctx.tx, user, id, DeliveryType.REMIND);
  await ctx.tx.scheduledMessage.delete({ where: { id } });
  sendEventOnCommit(ctx, { type: 'reminders', op: 'remove', reminder_id: id }, [user.id]);
}

// ---- Delivery (the `deliver-scheduled-message` job) ----

/** Locks the row and answers whether this job version may still act on it: not deleted, not
 * edited since (version), neither delivered nor failed yet. */
async function claim(
  tx: Tx,
  row: Pick<ScheduledMessageRow, 'id' | 'version'>,
): Promise<{ due: boolean } | null> {
  const [claimed] = await tx.$queryRaw<{ due: boolean }[]>`
    SELECT scheduled_timestamp <= now() AS due FROM scheduled_message
    WHERE id = ${row.id} AND version = ${row.version} AND NOT delivered AND NOT failed
    FOR UPDATE`;
  return claimed ?? null;
}

const removeEvent = (row: ScheduledMessageRow) =>
  row.deliveryType === DeliveryType.REMIND
    ? { type: 'reminders', op: 'remove', reminder_id: row.id }
    : { type: 'scheduled_messages', op: 'remove', scheduled_message_id: row.id };

/** The message as it is to be sent now: Zulip's send_scheduled_message repeats every check,
 * since permissions may have changed since it was scheduled. A reminder is sent by the
 * Notification Bot, quoting the message as it reads now when the user can still read it. */
async function prepareDelivery(
  realm: Realm,
  sender: User,
  row: ScheduledMessageRow,
): Promise<PreparedMessage> {
  if (realm.deactivated) throw new RealmDeactivatedError();
  if (!sender.isActive) throw new UserDeactivatedError();
  if (row.deliveryType === DeliveryType.REMIND) {
    let content = row.content;
    try {
      const { message, stream } = await accessMessage(sender, row.reminderTargetMessageId!);
      content = checkContent(
        await reminderContent(realm, message, stream, row.reminderNote, MAX_MESSAGE_LENGTH),
      );
    } catch (error) {
      if (!(error instanceof JsonableError)) throw error;
    }
    const bot = await ensureSystemBot(realm, 'notification');
    return prepareMessage(
      realm,
      bot,
      { kind: 'direct', to: JSON.stringify([sender.id]) },
      content,
      { client: 'Internal', readBySender: true, bySystemBot: true },
    );
  }
  // Reminders only concern their user, so only messages to others have a cutoff.
  if (Date.now() > row.scheduledTimestamp.getTime() + LATE_CUTOFF_MS)
    throw new JsonableError('Message could not be sent at the scheduled time.');
  const target: ScheduledTarget =
    row.type === 'stream'
      ? { type: 'stream', streamId: row.streamId!, topic: row.subject }
      : { type: 'private', userIds: row.toIds };
  return prepareMessage(realm, sender, sendTarget(target), row.content, {
    client: row.sendingClient,
    readBySender: row.readBySender,
  });
}

/** Thrown when a job runs before its message is due (a clock ahead of the database's): BullMQ
 * retries it later. */
export class NotDueYetError extends Error {}

/** The `deliver-scheduled-message` job (Zulip's try_deliver_one_scheduled_message). Sends in
 * one transaction that locks the row, checks it is still this version and undelivered, and
 * marks it delivered with the message's id: a second run (a retry, another worker, an old
 * version's job) finds it delivered or changed and does nothing. When the message can no
 * longer be sent, the row is marked failed instead, and the user told. Returns what happened
 * (for tests and logs). */
export async function deliverScheduledMessage({
  scheduledMessageId,
  version,
}: JobData['deliver-scheduled-message']): Promise<'sent' | 'failed' | 'skipped'> {
  const prisma = getPrisma();
  const row = await prisma.scheduledMessage.findUnique({ where: { id: scheduledMessageId } });
  if (!row || row.version !== version || row.delivered || row.failed) return 'skipped';
  if (row.scheduledTimestamp.getTime() > Date.now())
    throw new NotDueYetError(`scheduled message ${row.id} is not due yet`);
  const realm = await prisma.realm.findUniqueOrThrow({ where: { id: row.realmId } });
  const sender = await prisma.user.findUniqueOrThrow({ where: { id: row.senderId } });
  let prepared: PreparedMessage;
  try {
    prepared = await prepareDelivery(realm, sender, row);
  } catch (error) {
    if (!(error instanceof JsonableError)) throw error;
    return failDelivery(realm, sender, row, error);
  }
  const outcome = await runAction(async (ctx) => {
    const claimed = await claim(ctx.tx, row);
    if (!claimed) return 'skipped' as const;
    if (!claimed.due) return 'early' as const;
    const { message } = await doSendMessage(ctx, prepared);
    await ctx.tx.scheduledMessage.update({
      where: { id: row.id },
      data: { delivered: true, deliveredMessageId: message.id },
    });
    sendEventOnCommit(ctx, removeEvent(row), [row.senderId]);
    return 'sent' as const;
  });
  if (outcome === 'early') throw new NotDueYetError(`scheduled message ${row.id} is not due yet`);
  // Zulip's Welcome Bot answers whatever sent the message, a delivery too.
  if (outcome === 'sent' && isForWelcomeBot(prepared)) await replyFromWelcomeBot(prepared);
  return outcome;
}

/** Zulip's send_failed_scheduled_message_notification text. */
function failureNotice(row: ScheduledMessageRow, reason: string): string {
  const time = globalTimeSyntax(row.scheduledTimestamp);
  return (
    `The message you scheduled for ${time} was not sent because of the following error:` +
    `\n\n> ${reason}\n\n[View scheduled messages](#scheduled)`
  );
}

/** Marks the row failed, once (same lock and checks as a delivery). The user's clients get
 * the updated scheduled message and the Notification Bot explains, in the same transaction;
 * not for reminders, nor when the user or the organization was deactivated (nobody to tell),
 * as in Zulip. */
async function failDelivery(
  realm: Realm,
  sender: User,
  row: ScheduledMessageRow,
  error: JsonableError,
): Promise<'failed' | 'skipped'> {
  const tell =
    row.deliveryType === DeliveryType.SEND_LATER &&
    !(error instanceof UserDeactivatedError) &&
    !(error instanceof RealmDeactivatedError);
  let notice: PreparedMessage | null = null;
  if (tell) {
    try {
      const bot = await ensureSystemBot(realm, 'notification');
      notice = await prepareMessage(
        realm,
        bot,
        { kind: 'direct', to: JSON.stringify([sender.id]) },
        checkContent(failureNotice(row, error.message)),
        { client: 'Internal', readBySender: true, bySystemBot: true },
      );
    } catch (noticeError) {
      if (!(noticeError instanceof JsonableError)) throw noticeError;
      getLogger().warn('scheduled message failure notice not sendable', { id: row.id });
    }
  }
  getLogger().info('scheduled message failed', { id: row.id, reason: error.message });
  return runAction(async (ctx) => {
    if (!(await claim(ctx.tx, row))) return 'skipped' as const;
    const failed = await ctx.tx.scheduledMessage.update({
      where: { id: row.id },
      data: { failed: true, failureMessage: error.message },
    });
    if (tell) {
      sendEventOnCommit(
        ctx,
        {
          type: 'scheduled_messages',
          op: 'update',
          scheduled_message: presentScheduledMessage(failed),
        },
        [row.senderId],
      );
      if (notice) await doSendMessage(ctx, notice);
    }
    return 'failed' as const;
  });
}

const pendingSoon = statement<
  Pick<ScheduledMessageRow, 'id' | 'version' | 'scheduledTimestamp'>,
  [number, number]
>(
  `SELECT id, version, scheduled_timestamp AS "scheduledTimestamp" FROM scheduled_message
   WHERE NOT delivered AND NOT failed
     AND scheduled_timestamp <= now() + make_interval(secs => $1)
   ORDER BY scheduled_timestamp, id LIMIT $2`,
);

/** The sweep: queues again the delivery of every undelivered message due within `horizonMs`
 * (or overdue). A job BullMQ still knows is left as it is; one that was lost (a Redis that
 * lost its data, an enqueue lost between COMMIT and Redis) is added again. Later messages wait
 * for a later sweep. Returns how many rows it looked at. */
export async function requeueScheduledMessages({
  horizonMs = 3600_000,
  limit = 1000,
}: { horizonMs?: number; limit?: number } = {}): Promise<number> {
  const rows = await query(pendingSoon, [horizonMs / 1000, limit]);
  const now = Date.now();
  for (const row of rows) {
    // Overdue and still pending: a job that used up its attempts (e.g. while the database was
    // away) sits failed under the same id; it is replaced rather than left to stall the row.
    if (row.scheduledTimestamp.getTime() <= now)
      await removeIfFailed('deliver-scheduled-message', jobId(row));
    await enqueueDelivery(row);
  }
  return rows.length;
}
