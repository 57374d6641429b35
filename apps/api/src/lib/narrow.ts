// Narrows for GET /messages (Zulip's NarrowBuilder): each term becomes a SQL condition over
// `m` (message) and `um` (the viewer's user_message row, null for messages only in their
// history through channel access). The builder also decides whether the query may reach
// beyond the viewer's own rows (Zulip's include_history).
import { z } from 'zod';
import {
  flagsToBitmask,
  getPrisma,
  Prisma,
  query,
  RecipientType,
  statement,
  type Realm,
  type Tx,
  type User,
  type UserMessageFlag,
} from '@parley/db';
import { BadNarrowError, JsonableError } from '@parley/errors';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../presenters/messages';
import { accessMessage, channelHistoryReadable } from './messages';
import { subscribedSql, type ContentAccessStream, type Permissions } from './streams';
import { escapeRegExp } from './text';
import { accessUserByEmail, accessUserById, isGuest } from './users';
import { mutedCondition, topicPolicyIn, VisibilityPolicy } from './user-topics';

// Bounds keep any narrow within what one query can take.
const MAX_TERMS = 50;
const MAX_OPERAND_LENGTH = 1000;
const MAX_OPERAND_ITEMS = 100;
const text = z.string().max(MAX_OPERAND_LENGTH);
const operand = z.union([
  text,
  z.number(),
  z.array(z.union([text, z.number()])).max(MAX_OPERAND_ITEMS),
]);

/** The narrow parameter: a list of {operator, operand, negated} or legacy [operator, operand]. */
export const narrowSchema = z
  .array(
    z.union([
      z.tuple([z.string().max(50), text]),
      // Other keys are ignored, as pydantic ignores them.
      z.object({ operator: z.string().max(50), operand, negated: z.boolean().optional() }),
    ]),
  )
  .max(MAX_TERMS);

export interface NarrowTerm {
  operator: string;
  operand: string | number | (string | number)[];
  negated: boolean;
}

const ALIASES: Record<string, string> = {
  stream: 'channel',
  streams: 'channels',
  subject: 'topic',
  'pm-with': 'dm',
  pm_with: 'dm',
  group_pm_with: 'group-pm-with',
  'dm-with': 'dm-including',
};

/** Operators whose operand may be an id (Zulip's operators_supporting_id), or a list of ids
 * (operators_supporting_ids); a search needs words; every other operand is a string. */
const ID_OPERATORS = new Set(['channel', 'id', 'sender', 'group-pm-with', 'dm-including', 'with']);
const ID_LIST_OPERATORS = new Set(['dm']);

/** Zulip's NarrowParameter.validate_terms: the operand's type for its operator, with Zulip's
 * messages (plain errors, not BAD_NARROW). */
function checkOperand(operator: string, value: NarrowTerm['operand']): void {
  const fail = (msg: string): never => {
    throw new JsonableError(msg);
  };
  if (ID_OPERATORS.has(operator)) {
    if (typeof value !== 'string' && !Number.isInteger(value))
      fail('operand is not a string or integer');
  } else if (ID_LIST_OPERATORS.has(operator)) {
    if (typeof value === 'string') return;
    if (!Array.isArray(value)) fail('operand is not a string or an integer list');
    const index = (value as unknown[]).findIndex((item) => !Number.isInteger(item));
    if (index >= 0) fail(`operand[${index}] is not an integer`);
  } else if (typeof value !== 'string') fail('operand is not a string');
  else if (operator === 'search' && value.trim() === '') fail('operand cannot be blank.');
}

export function normalizeNarrow(raw: z.infer<typeof narrowSchema>): NarrowTerm[] {
  return raw.map((term) => {
    const {
      operator,
      operand: value,
      negated,
    } = Array.isArray(term)
      ? { operator: term[0], operand: term[1], negated: false }
      : { ...term, negated: term.negated ?? false };
    const name = ALIASES[operator] ?? operator;
    checkOperand(name, value);
    return { operator: name, operand: value, negated };
  });
}

export interface BuiltNarrow {
  condition: Prisma.Sql;
  /** Query all of the organization's messages (shared channel history), not only the
   * viewer's rows. */
  includeHistory: boolean;
  /** The joined search text, for highlighting. */
  search: string | null;
  /** With includeHistory, the channel of a narrow to one channel alone: its window is read
   * through message's (recipient_id, id) index (see message-fetch.ts). */
  channelRecipientId: number | null;
  /** Whether `condition` reads the message's columns: not for an empty narrow, nor for one on
   * the viewer's flags alone (`is:starred`, `is:unread`, `in:all`, …), whose windows read the
   * viewer's rows alone (message-fetch.ts). */
  readsMessage: boolean;
}

const TRUE = Prisma.sql`TRUE`;
const FALSE = Prisma.sql`FALSE`;

function bad(desc: string): never {
  throw new BadNarrowError(`Invalid narrow operator: ${desc}`, desc);
}

/** The terms that name a conversation, which `with` replaces. */
const CONVERSATION_OPERATORS = new Set(['channel', 'topic', 'dm']);

/** Zulip's can_narrow_define_conversation: a direct-message term, or a channel and a topic. */
function definesConversation(terms: NarrowTerm[]): boolean {
  const has = (operator: string) => terms.some((term) => term.operator === operator);
  return has('dm') || (has('channel') && has('topic'));
}

/** Zulip's update_narrow_terms_containing_with_operator: `with` (the web app's permalinks)
 * means the conversation its message is in now, which may have moved since the link was made.
 * For a message the viewer can read, the narrow's own conversation terms give way to it (a
 * channel message's channel and topic, so its history is read as any channel's); for one they
 * cannot (deleted, or out of reach), the rest of the narrow stands if it names a
 * conversation. */
async function withTermsResolved(viewer: User, terms: NarrowTerm[], db: Tx): Promise<NarrowTerm[]> {
  const withs = terms.filter((term) => term.operator === 'with');
  if (withs.length === 0) return terms;
  if (withs.length > 1)
    throw new BadNarrowError(
      "Invalid narrow operator combination: Duplicate 'with' operators.",
      "Duplicate 'with' operators.",
    );
  const [withTerm] = withs;
  const rest = terms.filter((term) => term !== withTerm);
  const raw = withTerm!.operand;
  const id =
    typeof raw === 'number' ? raw : /^\s*[-+]?\d+\s*$/.test(String(raw)) ? Number(raw) : NaN;
  if (Array.isArray(raw) || !Number.isInteger(id)) bad("Invalid 'with' operator");
  let accessed: Awaited<ReturnType<typeof accessMessage>> | null = null;
  if (id >= 1 && id <= 2 ** 31 - 1)
    accessed = await accessMessage(viewer, id, db).catch((error: unknown) => {
      if (error instanceof JsonableError) return null;
      throw error;
    });
  if (accessed === null) {
    if (definesConversation(rest)) return rest;
    bad("Invalid 'with' operator");
  }
  const others = rest.filter((term) => !CONVERSATION_OPERATORS.has(term.operator));
  const { message, stream } = accessed;
  if (message.isChannelMessage && stream)
    return [
      { operator: 'channel', operand: stream.id, negated: false },
      { operator: 'topic', operand: message.subject, negated: false },
      ...others,
    ];
  // A direct message's conversation: `with` itself selects it (withCondition).
  return [withTerm!, ...others];
}

/** Builds the narrow's condition, resolving channel and user operands in the organization. */
export async function buildNarrow(
  viewer: User,
  realm: Realm,
  perms: Permissions,
  terms: NarrowTerm[],
  db: Tx = getPrisma(),
): Promise<BuiltNarrow> {
  terms = await withTermsResolved(viewer, terms, db);
  const conditions: Prisma.Sql[] = [];
  let readsMessage = false;
  let includeHistory = false;
  let blocksHistory = false;
  const searches: string[] = [];
  // A positive channel term's recipient (see channelRecipientId).
  let channelRecipientId: number | null = null;
  const positive = (term: NarrowTerm) => !term.negated;
  // Zulip's check_not_both_channel_and_dm_narrow: what only channel messages match (a channel,
  // channels, a topic, not is:dm) with what only direct messages match.
  const isDm = (t: NarrowTerm) =>
    t.operator === 'is' && ['dm', 'private'].includes(String(t.operand));
  if (
    terms.some(
      (t) =>
        (positive(t) && ['channel', 'channels', 'topic'].includes(t.operator)) ||
        (t.negated && isDm(t)),
    ) &&
    terms.some(
      (t) =>
        positive(t) && (['dm', 'dm-including', 'group-pm-with'].includes(t.operator) || isDm(t)),
    )
  )
    bad('No message can be both a channel message and direct message');

  for (const term of terms) {
    let condition: Prisma.Sql;
    switch (term.operator) {
      case 'channel': {
        const stream = await channelOperand(viewer, term.operand);
        condition = Prisma.sql`m.recipient_id = ${stream.recipientId}`;
        if (positive(term)) {
          channelRecipientId = stream.recipientId;
          if (channelHistoryReadable(perms, stream, stream.subscribed)) includeHistory = true;
        }
        break;
      }
      case 'channels': {
        const kind = String(term.operand);
        if (kind !== 'public' && kind !== 'web-public') bad(`unknown channels operand ${kind}`);
        const publicOnly = kind === 'web-public' ? Prisma.sql`AND s.is_web_public` : Prisma.empty;
        condition = Prisma.sql`m.recipient_id IN (SELECT s.recipient_id FROM stream s
          WHERE s.realm_id = ${realm.id} AND NOT s.invite_only
            AND s.history_public_to_subscribers ${publicOnly})`;
        if (positive(term) && !isGuest(viewer)) includeHistory = true;
        break;
      }
      case 'topic': {
        let topic = String(term.operand).trim();
        if (topic === EMPTY_TOPIC_DISPLAY_NAME) topic = '';
        condition = Prisma.sql`(m.is_channel_message AND upper(m.subject) = upper(${topic}))`;
        break;
      }
      case 'sender': {
        const sender = await userOperand(viewer, realm, term.operand, db);
        condition = Prisma.sql`m.sender_id = ${sender.id}`;
        break;
      }
      case 'dm':
        condition = await dmCondition(viewer, realm, term.operand, db);
        break;
      case 'dm-including':
      case 'group-pm-with': {
        const other = await userOperand(viewer, realm, term.operand, db);
        condition = await dmIncludingCondition(
          viewer,
          other.id,
          term.operator === 'group-pm-with',
          db,
        );
        break;
      }
      case 'is':
        condition = isCondition(viewer.id, String(term.operand));
        if (String(term.operand) !== 'resolved') blocksHistory = true;
        break;
      case 'in': {
        const where = String(term.operand);
        if (where !== 'home' && where !== 'all') bad(`unknown 'in' operand ${where}`);
        // Zulip's by_in: exclude_muting_conditions for the narrow [in:home] alone, so muted
        // channels stay out even beside a channel term (which only the first-unread anchor
        // lets through).
        condition = where === 'all' ? TRUE : Prisma.sql`NOT ${mutedCondition(viewer.id, false)}`;
        break;
      }
      case 'has':
        condition = hasCondition(String(term.operand));
        break;
      case 'id': {
        const id = Number(term.operand);
        if (!Number.isInteger(id) || id < 0 || id > 2 ** 31 - 1 || /\D/.test(String(term.operand)))
          // Zulip's by_id: BadNarrowOperatorError.
          bad('Invalid message ID');
        condition = Prisma.sql`m.id = ${id}`;
        break;
      }
      case 'near':
        // The client puts the message in `anchor`; on the server it selects nothing more.
        condition = TRUE;
        break;
      case 'with':
        condition = await withCondition(viewer, realm, term.operand, db);
        break;
      case 'search': {
        const text = String(term.operand).trim();
        if (text === '') bad('search operand cannot be blank');
        searches.push(text);
        condition = searchCondition(text);
        break;
      }
      default:
        bad(`unknown operator ${term.operator}`);
    }
    const operand = String(term.operand);
    // Zulip's by_in (in:all) and by_near leave the query as it is, negated or not.
    const selectsNothing =
      term.operator === 'near' || (term.operator === 'in' && operand === 'all');
    conditions.push(term.negated && !selectsNothing ? Prisma.sql`NOT (${condition})` : condition);
    const flagsOnly =
      (term.operator === 'is' && FLAG_OPERANDS.has(operand)) ||
      (term.operator === 'in' && operand === 'all') ||
      term.operator === 'near';
    if (!flagsOnly) readsMessage = true;
  }
  const history = includeHistory && !blocksHistory;
  const channel = history && terms.length === 1 ? channelRecipientId : null;
  // A narrow to one channel and nothing else: the same rows as `m.recipient_id = X`, but not an
  // equality. With one, PostgreSQL takes the column for a constant and message's primary key
  // for an equally good source of the window's order, and its generic plan walked the key down
  // from the anchor, through every newer message of every other channel, until it found the
  // window (9 ms past 21,000 of them). As a range, only the channel's own index gives the order
  // (recipient_id, id) the window asks for (message-fetch.ts). Not with other terms: a topic
  // needs the equality to reach its own index (recipient_id, upper(subject), id), which a
  // range on recipient_id would scan through the whole channel (0.5 ms -> 620 ms, checked).
  if (channel !== null)
    conditions[0] = Prisma.sql`m.recipient_id >= ${channel} AND m.recipient_id <= ${channel}`;
  return {
    condition: conditions.length > 0 ? Prisma.join(conditions, ' AND ') : TRUE,
    includeHistory: history,
    search: searches.length > 0 ? searches.join(' ') : null,
    channelRecipientId: channel,
    readsMessage,
  };
}

interface ChannelOperand extends ContentAccessStream {
  recipientId: number;
  historyPublicToSubscribers: boolean;
  subscribed: boolean;
}

const CHANNEL_OPERAND_COLUMNS = `s.recipient_id AS "recipientId", s.invite_only AS "inviteOnly",
  s.is_web_public AS "isWebPublic", s.history_public_to_subscribers AS "historyPublicToSubscribers",
  s.can_subscribe_group_id AS "canSubscribeGroupId",
  s.can_add_subscribers_group_id AS "canAddSubscribersGroupId",
  ${subscribedSql('$2', 's.recipient_id')} AS subscribed`;

const channelById = statement<ChannelOperand, [number, number, number]>(`
  SELECT ${CHANNEL_OPERAND_COLUMNS} FROM stream s WHERE s.realm_id = $1 AND s.id = $3`);

// lower(name) uses the (realm_id, lower(name)) unique index, and compares exactly (see
// packages/db/src/lookup.ts).
const channelByName = statement<ChannelOperand, [number, number, string]>(`
  SELECT ${CHANNEL_OPERAND_COLUMNS} FROM stream s
  WHERE s.realm_id = $1 AND lower(s.name) = lower($3)`);

/** A channel operand with what deciding on its history needs, in one statement. */
async function channelOperand(viewer: User, value: NarrowTerm['operand']): Promise<ChannelOperand> {
  if (Array.isArray(value)) bad('operand is not a string or integer');
  const [stream] =
    typeof value === 'number'
      ? Number.isInteger(value) && value > 0 && value <= 2 ** 31 - 1
        ? await query(channelById, [viewer.realmId, viewer.id, value])
        : []
      : await query(channelByName, [viewer.realmId, viewer.id, value.trim()]);
  if (!stream || stream.recipientId === null) bad(`unknown channel ${String(value)}`);
  return stream;
}

async function userOperand(
  viewer: User,
  realm: Realm,
  value: NarrowTerm['operand'],
  db: Tx,
): Promise<User> {
  if (Array.isArray(value)) bad('operand is not a string or integer');
  // Only "no such user" means unknown: a database outage stays an outage. accessUserById
  // refuses numbers no user id can be (1.5, -3000000000) as missing ids.
  const missing = (error: unknown) => {
    if (error instanceof JsonableError) return null;
    throw error;
  };
  const user =
    typeof value === 'number' || /^\d+$/.test(value)
      ? await accessUserById(viewer, Number(value), { db }).catch(missing)
      : await accessUserByEmail(viewer, realm, value.trim(), { db }).catch(missing);
  if (!user) bad(`unknown user ${String(value)}`);
  return user;
}

/** The exact conversation with these users (the viewer is implied). */
async function dmCondition(
  viewer: User,
  realm: Realm,
  value: NarrowTerm['operand'],
  db: Tx,
): Promise<Prisma.Sql> {
  // As Zulip's by_dm: a list of nobody matches nothing; an address list is split on commas,
  // and an empty address is an unknown user.
  const items = Array.isArray(value)
    ? value
    : typeof value === 'number'
      ? [value]
      : value.split(',').map((email) => email.trim());
  if (items.length === 0) return FALSE;
  const ids = new Set<number>();
  for (const item of items) {
    const user = await userOperand(viewer, realm, item, db).catch(() =>
      bad(`unknown user in ${Array.isArray(value) ? JSON.stringify(value) : String(value)}`),
    );
    ids.add(user.id);
  }
  ids.delete(viewer.id);
  const others = [...ids];
  if (others.length <= 1) {
    const other = others[0] ?? viewer.id;
    const personal = await db.recipient.findMany({
      where: { type: RecipientType.PERSONAL, typeId: { in: [viewer.id, other] } },
    });
    const recipientOf = (userId: number) => personal.find((r) => r.typeId === userId)!.id;
    if (other === viewer.id)
      return Prisma.sql`(m.recipient_id = ${recipientOf(viewer.id)} AND m.sender_id = ${viewer.id})`;
    return Prisma.sql`((m.sender_id = ${other} AND m.recipient_id = ${recipientOf(viewer.id)})
      OR (m.sender_id = ${viewer.id} AND m.recipient_id = ${recipientOf(other)}))`;
  }
  const members = [...others, viewer.id].sort((a, b) => a - b);
  const { createHash } = await import('node:crypto');
  const hash = createHash('sha1').update(members.join(',')).digest('hex');
  const group = await db.directMessageGroup.findUnique({
    where: { realmId_hash: { realmId: realm.id, hash } },
  });
  return group?.recipientId ? Prisma.sql`m.recipient_id = ${group.recipientId}` : FALSE;
}

/** Direct messages (1:1 and groups, or groups only) that include the viewer and `otherId`. */
async function dmIncludingCondition(
  viewer: User,
  otherId: number,
  groupsOnly: boolean,
  db: Tx,
): Promise<Prisma.Sql> {
  const shared = Prisma.sql`m.recipient_id IN (
    SELECT a.recipient_id FROM subscription a
      JOIN subscription b ON a.recipient_id = b.recipient_id
      JOIN recipient r ON r.id = a.recipient_id
    WHERE a.user_profile_id = ${viewer.id} AND b.user_profile_id = ${otherId}
      AND r.type = ${RecipientType.DIRECT_MESSAGE_GROUP})`;
  if (groupsOnly) return shared;
  if (otherId === viewer.id) return Prisma.sql`NOT m.is_channel_message`;
  const personal = await db.recipient.findMany({
    where: { type: RecipientType.PERSONAL, typeId: { in: [viewer.id, otherId] } },
  });
  const recipientOf = (userId: number) => personal.find((r) => r.typeId === userId)!.id;
  return Prisma.sql`(${shared}
    OR (m.sender_id = ${otherId} AND m.recipient_id = ${recipientOf(viewer.id)})
    OR (m.sender_id = ${viewer.id} AND m.recipient_id = ${recipientOf(otherId)}))`;
}

/** `flags` as a bigint literal for a flag test. It is written as the partial indexes of
 * user_message state theirs (`(flags & 2::bigint) <> 0` for starred messages, 56 for any
 * mention): with a parameter, or a COALESCE around the column, PostgreSQL cannot prove that
 * the index covers the rows, and reads every row of the viewer's instead (80-100 ms for a
 * reader of a million messages). */
function mask(...flags: UserMessageFlag[]): Prisma.Sql {
  return Prisma.raw(`${flagsToBitmask(flags)}::bigint`);
}

/** The viewer has a copy with one of `flags` (false, not NULL, without a copy: a message of
 * `message_ids` read from shared history). */
function flagSet(...flags: UserMessageFlag[]): Prisma.Sql {
  return Prisma.sql`(um.flags IS NOT NULL AND (um.flags & ${mask(...flags)}) <> 0)`;
}

/** `is` operands that read only the viewer's flags. */
const FLAG_OPERANDS = new Set(['starred', 'mentioned', 'alerted', 'unread']);

function isCondition(viewerId: number, value: string): Prisma.Sql {
  switch (value) {
    case 'dm':
    case 'private':
      return Prisma.sql`NOT m.is_channel_message`;
    case 'starred':
      return flagSet('starred');
    case 'mentioned':
      return flagSet('mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned');
    case 'alerted':
      return flagSet('has_alert_word');
    case 'unread':
      // Messages only in the viewer's history count as read.
      return Prisma.sql`(um.flags IS NOT NULL AND (um.flags & ${mask('read')}) = 0)`;
    case 'resolved':
      return Prisma.sql`(m.is_channel_message AND m.subject LIKE ${'✔ %'})`;
    case 'followed':
      return topicPolicyIn(viewerId, [VisibilityPolicy.FOLLOWED]);
    case 'muted':
      return mutedCondition(viewerId);
    default:
      return bad(`unknown 'is' operand ${value}`);
  }
}

function hasCondition(value: string): Prisma.Sql {
  switch (value) {
    case 'link':
      return Prisma.sql`m.has_link`;
    case 'attachment':
      return Prisma.sql`m.has_attachment`;
    case 'image':
      return Prisma.sql`m.has_image`;
    case 'reaction':
      return Prisma.sql`EXISTS (SELECT 1 FROM reaction r WHERE r.message_id = m.id)`;
    default:
      return bad(`unknown 'has' operand ${value}`);
  }
}

/** `with`: the conversation the message is in now (it may have moved). */
async function withCondition(
  viewer: User,
  realm: Realm,
  value: NarrowTerm['operand'],
  db: Tx,
): Promise<Prisma.Sql> {
  const id = Number(value);
  if (Array.isArray(value) || !Number.isInteger(id) || id < 1 || id > 2 ** 31 - 1)
    bad("Invalid 'with' operator");
  const message = await db.message.findFirst({ where: { id, realmId: realm.id } });
  if (!message) bad("Invalid 'with' operator");
  if (message.isChannelMessage)
    return Prisma.sql`(m.recipient_id = ${message.recipientId}
      AND upper(m.subject) = upper(${message.subject}))`;
  // A 1:1 conversation spans two recipient rows (one per direction): narrow by its people.
  const recipient = await db.recipient.findUniqueOrThrow({ where: { id: message.recipientId } });
  if (recipient.type !== RecipientType.PERSONAL)
    return Prisma.sql`m.recipient_id = ${message.recipientId}`;
  const people = [...new Set([recipient.typeId, message.senderId])];
  return dmCondition(viewer, realm, people, db);
}

/** Full-text match (English stemming, every word required), plus a substring match for each
 * quoted phrase, as Zulip's tsearch backend does. */
function searchCondition(text: string): Prisma.Sql {
  // Zulip's _by_search_tsearch: the whole operand, quoted words included, is the full-text
  // query; each quoted token ("…" between spaces) must also appear as written.
  const phrases = (text.match(/"[^"]+"|\S+/g) ?? [])
    .filter((token) => token.length > 1 && token.startsWith('"') && token.endsWith('"'))
    .map((token) => token.slice(1, -1));
  const parts = [Prisma.sql`m.search_tsvector @@ plainto_tsquery('english', ${text})`];
  for (const phrase of phrases) {
    const like = `%${phrase.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    parts.push(Prisma.sql`(m.content ILIKE ${like} OR m.subject ILIKE ${like})`);
  }
  return Prisma.join(parts, ' AND ');
}

/** Zulip's match_content / match_subject: the search words wrapped in
 * `<span class="highlight">` within text, never inside tags. */
export function highlight(html: string, search: string): string {
  const words = [...new Set(search.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [])];
  if (words.length === 0) return html;
  const pattern = new RegExp(
    `(?<![\\p{L}\\p{N}_])(${words.map(escapeRegExp).join('|')})[\\p{L}\\p{N}_]*`,
    'giu',
  );
  return (
    html
      // Tags and character references are never split.
      .split(/(<[^>]*>|&#?\w+;)/)
      .map((part) =>
        part.startsWith('<') || part.startsWith('&')
          ? part
          : part.replace(pattern, '<span class="highlight">$&</span>'),
      )
      .join('')
  );
}
