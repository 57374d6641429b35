// unread_msgs in POST /register (Zulip's get_raw_unread_data / aggregate_unread_data): the
// user's unread messages grouped by channel and topic, 1:1 conversation and group, plus the
// unread mentions; and how message and flag events that raced the registration fold in.
import { flagBit, query, RecipientType, statement, type User } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { isTopicMuted, loadMuting, type Muting } from './user-topics';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';

/** Zulip's MAX_UNREAD_MESSAGES: beyond it old_unreads_missing is set. */
const MAX_UNREAD_MESSAGES = 50_000;

interface UnreadRow {
  message_id: number;
  /** Mentioned by name or through a group. */
  mentioned: boolean;
  /** Through @**all** or @**topic** and the like. */
  wildcard_mentioned: boolean;
  sender_id: number;
  recipient_id: number;
  subject: string;
  is_channel_message: boolean;
  recipient_type: number;
  recipient_type_id: number;
}

export interface UnreadState {
  count: number;
  pms: { other_user_id: number; sender_id: number; unread_message_ids: number[] }[];
  streams: { stream_id: number; topic: string; unread_message_ids: number[] }[];
  huddles: { user_ids_string: string; unread_message_ids: number[] }[];
  mentions: number[];
  old_unreads_missing: boolean;
}

/** What count and mentions must leave out: muted conversations (Zulip counts them in
 * `streams` but not in `count`); and whether the client shows the empty topic by its own
 * name. Kept beside the state for folding raced events in. */
interface MutedUnread {
  muting: Muting;
  ids: Set<number>;
  emptyTopicName: boolean;
}
const mutedUnread = new WeakMap<UnreadState, MutedUnread>();

const countOf = (state: UnreadState) => {
  const muted = mutedUnread.get(state)?.ids;
  return [...allIds(state)].filter((id) => !muted?.has(id)).length;
};

const WILDCARD_BITS = flagBit('stream_wildcard_mentioned') | flagBit('topic_wildcard_mentioned');
const unreadRowsOf = statement<UnreadRow, [number]>(`
  SELECT um.message_id,
         (um.flags & ${flagBit('mentioned')}) <> 0 AS mentioned,
         (um.flags & ${WILDCARD_BITS}) <> 0 AS wildcard_mentioned,
         m.sender_id, m.recipient_id, m.subject,
         m.is_channel_message, r.type AS recipient_type, r.type_id AS recipient_type_id
  FROM user_message um
    JOIN message m ON m.id = um.message_id
    JOIN recipient r ON r.id = m.recipient_id
  WHERE um.user_profile_id = $1 AND (um.flags & ${flagBit('read')}) = 0
    AND NOT EXISTS (SELECT FROM subscription s WHERE s.user_profile_id = $1
      AND s.recipient_id = m.recipient_id AND NOT s.active)
  ORDER BY um.message_id DESC
  LIMIT ${MAX_UNREAD_MESSAGES + 1}`);
const groupMembersOf = statement<{ recipient_id: number; ids: number[] }, [number[]]>(`
  SELECT recipient_id, array_agg(user_profile_id ORDER BY user_profile_id) AS ids
  FROM subscription WHERE recipient_id = ANY($1::int[]) GROUP BY recipient_id`);

/** Zulip's get_raw_unread_data and aggregate_unread_data: channels the user left are left
 * out; buckets sorted by channel and topic, conversation, group; the empty topic under its
 * display name for clients without the empty_topic_name capability. */
export async function fetchUnreadMsgs(
  user: User,
  { emptyTopicName }: { emptyTopicName: boolean },
): Promise<UnreadState> {
  const muting = await loadMuting(user);
  const rows = await query(unreadRowsOf, [user.id]);
  const missing = rows.length > MAX_UNREAD_MESSAGES;
  const kept = rows.slice(0, MAX_UNREAD_MESSAGES).reverse();
  const groupRecipients = [
    ...new Set(
      kept
        .filter((r) => r.recipient_type === RecipientType.DIRECT_MESSAGE_GROUP)
        .map((r) => r.recipient_id),
    ),
  ];
  const members = new Map<number, number[]>();
  if (groupRecipients.length > 0)
    for (const row of await query(groupMembersOf, [groupRecipients]))
      members.set(row.recipient_id, row.ids);

  const state: UnreadState = {
    count: 0,
    pms: [],
    streams: [],
    huddles: [],
    mentions: [],
    old_unreads_missing: missing,
  };
  const mutedIds = new Set<number>();
  mutedUnread.set(state, { muting, ids: mutedIds, emptyTopicName });
  for (const row of kept) {
    const muted =
      row.recipient_type === RecipientType.STREAM &&
      isTopicMuted(muting, row.recipient_type_id, row.subject);
    if (muted) mutedIds.add(row.message_id);
    // Direct mentions count even in muted conversations; wildcard mentions do not.
    if (row.mentioned || (row.wildcard_mentioned && !muted)) state.mentions.push(row.message_id);
    if (row.recipient_type === RecipientType.STREAM) {
      addStream(state, row.recipient_type_id, row.subject, row.message_id);
    } else if (row.recipient_type === RecipientType.PERSONAL) {
      const other = row.sender_id === user.id ? row.recipient_type_id : row.sender_id;
      addPrivate(state, other, row.message_id);
    } else {
      const ids = members.get(row.recipient_id) ?? [];
      addHuddle(state, ids.join(','), row.message_id);
    }
  }
  arrange(state);
  return state;
}

/** A topic's bucket takes its newest message's spelling (messages come oldest first). */
function addStream(state: UnreadState, streamId: number, stored: string, id: number): void {
  const topic =
    stored === '' && !mutedUnread.get(state)?.emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : stored;
  const entry = state.streams.find(
    (s) => s.stream_id === streamId && s.topic.toLowerCase() === topic.toLowerCase(),
  );
  if (entry) {
    entry.unread_message_ids.push(id);
    entry.topic = topic;
  } else state.streams.push({ stream_id: streamId, topic, unread_message_ids: [id] });
}

/** Zulip's order: ids ascending in each bucket; buckets by channel and lowercased topic, by
 * the other user, by the group's ids. */
function arrange(state: UnreadState): void {
  for (const list of [state.streams, state.pms, state.huddles])
    for (const entry of list) entry.unread_message_ids.sort((a, b) => a - b);
  const byKey =
    <T>(key: (entry: T) => string | number) =>
    (a: T, b: T) => {
      const [x, y] = [key(a), key(b)];
      return x < y ? -1 : x > y ? 1 : 0;
    };
  state.streams.sort(
    (a, b) => a.stream_id - b.stream_id || byKey<typeof a>((e) => e.topic.toLowerCase())(a, b),
  );
  state.pms.sort((a, b) => a.other_user_id - b.other_user_id);
  state.huddles.sort(byKey((entry) => entry.user_ids_string));
  state.mentions.sort((a, b) => a - b);
  state.count = countOf(state);
}

function addPrivate(state: UnreadState, other: number, id: number): void {
  const entry = state.pms.find((p) => p.other_user_id === other);
  if (entry) entry.unread_message_ids.push(id);
  else state.pms.push({ other_user_id: other, sender_id: other, unread_message_ids: [id] });
}

function addHuddle(state: UnreadState, key: string, id: number): void {
  const entry = state.huddles.find((h) => h.user_ids_string === key);
  if (entry) entry.unread_message_ids.push(id);
  else state.huddles.push({ user_ids_string: key, unread_message_ids: [id] });
}

function allIds(state: UnreadState): Set<number> {
  return new Set([
    ...state.streams.flatMap((s) => s.unread_message_ids),
    ...state.pms.flatMap((p) => p.unread_message_ids),
    ...state.huddles.flatMap((h) => h.unread_message_ids),
  ]);
}

/** Folds a raced message or flag event into unread_msgs (idempotently: an event may predate
 * the state). */
export function applyUnreadEvent(state: UnreadState, event: QueuedEvent, user: User): void {
  if (event.type === 'message') {
    const flags = (event.flags as string[] | undefined) ?? [];
    const message = event.message as {
      id: number;
      type: string;
      stream_id?: number;
      subject: string;
      sender_id: number;
      display_recipient: string | { id: number }[];
    };
    if (flags.includes('read') || allIds(state).has(message.id)) return;
    const tracked = mutedUnread.get(state);
    const muted =
      message.type === 'stream' &&
      tracked !== undefined &&
      isTopicMuted(tracked.muting, message.stream_id!, message.subject);
    if (muted) tracked!.ids.add(message.id);
    if (message.type === 'stream')
      addStream(state, message.stream_id!, message.subject, message.id);
    else {
      const ids = (message.display_recipient as { id: number }[]).map((u) => u.id);
      const others = ids.filter((id) => id !== user.id);
      if (ids.length <= 2) addPrivate(state, others[0] ?? user.id, message.id);
      else addHuddle(state, [...ids].sort((a, b) => a - b).join(','), message.id);
    }
    if (
      flags.includes('mentioned') ||
      (!muted && flags.some((f) => f.endsWith('wildcard_mentioned')))
    )
      state.mentions.push(message.id);
    arrange(state);
    return;
  }
  if (event.type === 'update_message_flags' && event.flag === 'read' && event.op === 'remove') {
    markUnread(state, event, user);
    return;
  }
  // POST /mark_all_as_read names no messages: everything is read.
  if (event.type === 'update_message_flags' && event.flag === 'read' && event.all === true) {
    Object.assign(state, { streams: [], pms: [], huddles: [], mentions: [], count: 0 });
    return;
  }
  const removed =
    event.type === 'delete_message'
      ? ((event.message_ids as number[] | undefined) ?? [event.message_id as number])
      : event.type === 'update_message_flags' && event.flag === 'read' && event.op === 'add'
        ? (event.messages as number[])
        : null;
  if (removed) {
    const read = new Set(removed);
    const drop = <T extends { unread_message_ids: number[] }>(list: T[]) =>
      list
        .map((entry) => ({
          ...entry,
          unread_message_ids: entry.unread_message_ids.filter((id) => !read.has(id)),
        }))
        .filter((entry) => entry.unread_message_ids.length > 0);
    state.streams = drop(state.streams);
    state.pms = drop(state.pms);
    state.huddles = drop(state.huddles);
    state.mentions = state.mentions.filter((id) => !read.has(id));
    state.count = countOf(state);
  }
}

interface MessageDetails {
  type: 'stream' | 'private';
  stream_id?: number;
  topic?: string;
  user_ids?: number[];
  mentioned?: boolean;
  unmuted_stream_msg?: boolean;
}

/** A raced mark-as-unread: its message_details say where each message belongs (Zulip's
 * apply_unread_message_event for flag removal). */
function markUnread(state: UnreadState, event: QueuedEvent, user: User): void {
  const details = (event.message_details ?? {}) as Record<string, MessageDetails>;
  const present = allIds(state);
  const tracked = mutedUnread.get(state);
  for (const id of event.messages as number[]) {
    const detail = details[String(id)];
    if (!detail || present.has(id)) continue;
    if (detail.type === 'stream') {
      addStream(state, detail.stream_id!, detail.topic ?? '', id);
      if (detail.unmuted_stream_msg === false) tracked?.ids.add(id);
    } else {
      const others = detail.user_ids ?? [];
      if (others.length <= 1) addPrivate(state, others[0] ?? user.id, id);
      else addHuddle(state, [...others, user.id].sort((a, b) => a - b).join(','), id);
    }
    if (detail.mentioned) state.mentions.push(id);
  }
  arrange(state);
}
