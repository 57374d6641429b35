// Reading scheduled messages and reminders (spec 2.6; Zulip's zerver/lib/scheduled_messages.py
// and zerver/lib/reminders.py): the lists GET /scheduled_messages, GET /reminders and
// /register return, the one an edit or a deletion names, the text of a reminder, and how the
// sections of /register follow their events.
import { realmUrl } from '@parley/auth';
import {
  columnsOf,
  query,
  statement,
  type Message,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError, ResourceNotFoundError } from '@parley/errors';
import type { QueuedEvent } from '@parley/events';
import { channelMessageUrl, messageLinkSyntax, silentMentionSyntax } from '@parley/markdown';
import { directMessageLink, unusedFence } from './quoting';
import { truncateText } from './text';
import { DeliveryType, type ScheduledMessageRow } from '../presenters/scheduled-messages';

/** Zulip's MAX_REMINDER_NOTE_LENGTH (also /register's max_reminder_note_length). */
export const MAX_REMINDER_NOTE_LENGTH = 1000;

/** Zulip's SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES: a scheduled message (not a reminder) found
 * due more than this late is not sent but marked failed, so that nobody is surprised by an
 * old message arriving after an outage. */
export const LATE_CUTOFF_MS = 10 * 60_000;

/** The last second a timestamp column (and Python's datetime) can hold: 9999-12-31. */
export const MAX_TIMESTAMP = 253_402_300_799;

const pendingOfUser = statement<ScheduledMessageRow, [number, number]>(
  `SELECT ${columnsOf('ScheduledMessage', 'm')} FROM scheduled_message m
   WHERE m.sender_id = $1 AND m.delivery_type = $2 AND NOT m.delivered
   ORDER BY m.scheduled_timestamp, m.id`,
);

/** The user's undelivered scheduled messages (failed ones included), soonest first: GET
 * /scheduled_messages and /register (a prepared statement, as every registration reads it). */
export function scheduledMessagesOf(userId: number): Promise<ScheduledMessageRow[]> {
  return query(pendingOfUser, [userId, DeliveryType.SEND_LATER]);
}

/** The same for reminders (GET /reminders, /register's reminders). */
export function remindersOf(userId: number): Promise<ScheduledMessageRow[]> {
  return query(pendingOfUser, [userId, DeliveryType.REMIND]);
}

/** The user's own scheduled message of `deliveryType`, locked for the rest of the transaction
 * (a concurrent delivery has then either committed or waits for us); else "Scheduled message
 * does not exist" (HTTP 404), whoever it belongs to. */
export async function accessScheduledMessage(
  tx: Tx,
  user: Pick<User, 'id'>,
  id: number,
  deliveryType: number = DeliveryType.SEND_LATER,
): Promise<ScheduledMessageRow> {
  const [row] = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM scheduled_message
    WHERE id = ${id} AND sender_id = ${user.id} AND delivery_type = ${deliveryType}
    FOR UPDATE`;
  if (!row)
    throw new ResourceNotFoundError(
      deliveryType === DeliveryType.REMIND
        ? 'Reminder does not exist'
        : 'Scheduled message does not exist',
    );
  return tx.scheduledMessage.findUniqueOrThrow({ where: { id } });
}

/** Where a scheduled message goes, as the client named it, read (not yet checked). */
export type ScheduledTarget =
  { type: 'stream'; streamId: number; topic: string } | { type: 'private'; userIds: number[] };

/** Zulip's extract_stream_id: a channel message's `to` is one channel id. */
export function extractStreamId(to: unknown): number {
  const value = Array.isArray(to) && to.length === 1 ? (to[0] as unknown) : to;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new JsonableError('Invalid data type for channel ID');
  return value;
}

/** Zulip's extract_direct_message_recipient_ids: a list of user ids, each once. */
export function extractRecipientIds(to: unknown): number[] {
  if (!Array.isArray(to)) throw new JsonableError('Invalid data type for recipients');
  for (const id of to)
    if (typeof id !== 'number' || !Number.isInteger(id))
      throw new JsonableError('Recipient list may only contain user IDs');
  return [...new Set(to as number[])];
}

/** `to` as Zulip reads it (Json[int | list[int]]): JSON, one channel id (alone or in a list)
 * or a list of user ids. */
export function readTarget(type: 'stream' | 'private', to: string, topic: string): ScheduledTarget {
  let value: unknown;
  try {
    value = JSON.parse(to);
  } catch {
    throw new JsonableError('to is not valid JSON');
  }
  if (type === 'stream') return { type, streamId: extractStreamId(value), topic };
  return { type, userIds: extractRecipientIds(value) };
}

/** Zulip's normalize_note_text. */
export function checkReminderNote(raw: string): string {
  const note = raw.trimEnd().replace(/^\n+/, '');
  if ([...note].length > MAX_REMINDER_NOTE_LENGTH)
    throw new JsonableError(`Maximum reminder note length: ${MAX_REMINDER_NOTE_LENGTH} characters`);
  return note;
}

function mentionList(users: Pick<User, 'id' | 'fullName'>[]): string {
  const mentions = users.map(silentMentionSyntax);
  if (mentions.length <= 1) return mentions.join('');
  return `${mentions.slice(0, -1).join(', ')} and ${mentions.at(-1)!}`;
}

const senderOf = statement<{ id: number; fullName: string }, [number]>(
  `SELECT id, full_name AS "fullName" FROM user_profile WHERE id = $1`,
);

/** Zulip's get_reminder_formatted_content: what the Notification Bot sends, a quote of the
 * message with a link to it (a poll or a to-do list only named), after the user's note; the
 * quote is cut to keep the whole within `maxLength` (max_message_length). */
export async function reminderContent(
  realm: Pick<Realm, 'stringId'>,
  message: Message,
  stream: Pick<Stream, 'id' | 'name'> | null,
  note: string | null,
  maxLength: number,
): Promise<string> {
  const [sender] = await query(senderOf, [message.senderId]);
  const author = silentMentionSyntax(sender ?? { id: message.senderId, fullName: 'Unknown user' });
  let content: string;
  let said: string;
  let sent: (widget: string) => string;
  if (stream) {
    const url = channelMessageUrl(realmUrl(realm), {
      id: message.id,
      channelId: stream.id,
      channelName: stream.name,
      topic: message.subject,
    });
    const link = messageLinkSyntax(stream.id, stream.name, message.subject, message.id);
    content = note
      ? `You requested a reminder for the following message. Note:\n > ${note}`
      : 'You requested a reminder for the following message.';
    said = `${author} [said](${url}) in ${link}:`;
    sent = (widget) => `${author} [sent](${url}) a ${widget} in ${link}.`;
  } else {
    const { participants, url } = await directMessageLink(realm, message);
    const others = participants.filter((user) => user.id !== message.senderId);
    const recipients = mentionList(others.length > 0 ? others : participants);
    content = note
      ? `You requested a reminder for the following direct message. Note:\n > ${note}`
      : 'You requested a reminder for the following direct message.';
    said = `${author} [said](${url}) to ${recipients}:`;
    sent = (widget) => `${author} [sent](${url}) a ${widget} to ${recipients}.`;
  }
  content += '\n\n';
  if (message.content.startsWith('/poll')) return content + sent('poll');
  if (message.content.startsWith('/todo')) return content + sent('todo list');
  content += `${said}\n`;
  const fence = unusedFence(message.content);
  const frame = (body: string) => `${fence}quote\n${body}\n${fence}`;
  const room = maxLength - [...(content + frame(''))].length;
  return content + frame(truncateText(message.content, room, '\n[message truncated]'));
}

type State = Record<string, unknown>;
type Keyed = Record<string, unknown>;

function byTime(list: Keyed[], idKey: string): void {
  list.sort(
    (a, b) =>
      (a.scheduled_delivery_timestamp as number) - (b.scheduled_delivery_timestamp as number) ||
      (a[idKey] as number) - (b[idKey] as number),
  );
}

/** Zulip's apply_event for scheduled_messages and reminders: the lists stay soonest first. */
export function applyScheduledMessagesEvent(state: State, event: QueuedEvent): void {
  const reminders = event.type === 'reminders';
  const key = reminders ? 'reminders' : 'scheduled_messages';
  const idKey = reminders ? 'reminder_id' : 'scheduled_message_id';
  const list = state[key] as Keyed[] | undefined;
  if (!list) return;
  if (event.op === 'add') {
    list.push(...((event[key] as Keyed[] | undefined) ?? []));
    byTime(list, idKey);
    return;
  }
  const changed = event.op === 'update' ? (event.scheduled_message as Keyed) : null;
  const id = changed ? changed[idKey] : event[idKey];
  const index = list.findIndex((entry) => entry[idKey] === id);
  if (index === -1) return;
  if (changed) {
    list[index] = changed;
    byTime(list, idKey);
  } else if (event.op === 'remove') list.splice(index, 1);
}
