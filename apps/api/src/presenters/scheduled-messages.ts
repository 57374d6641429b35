// Scheduled-message rows → Zulip's scheduled message and reminder objects (GET
// /scheduled_messages and /reminders, their events, /register's sections).
import type { Prisma } from '@parley/db';

export type ScheduledMessageRow = Prisma.ScheduledMessageGetPayload<Record<string, never>>;

/** ScheduledMessage.delivery_type: a message the user scheduled, or a reminder. */
export const DeliveryType = { SEND_LATER: 1, REMIND: 2 } as const;

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** Zulip's ScheduledMessage.to_dict: a channel message names its channel and topic, a direct
 * message its other participants (the sender alone for a message to oneself). */
export function presentScheduledMessage(row: ScheduledMessageRow): Record<string, unknown> {
  const common = {
    scheduled_message_id: row.id,
    content: row.content,
    rendered_content: row.renderedContent,
    scheduled_delivery_timestamp: seconds(row.scheduledTimestamp),
    failed: row.failed,
  };
  if (row.type === 'stream')
    return { ...common, type: 'stream', to: row.streamId, topic: row.subject };
  return { ...common, type: 'private', to: row.toIds };
}

/** Zulip's ScheduledMessage.to_reminder_dict. */
export function presentReminder(row: ScheduledMessageRow): Record<string, unknown> {
  return {
    reminder_id: row.id,
    type: 'private',
    to: row.toIds,
    content: row.content,
    rendered_content: row.renderedContent,
    scheduled_delivery_timestamp: seconds(row.scheduledTimestamp),
    failed: row.failed,
    reminder_target_message_id: row.reminderTargetMessageId,
  };
}
