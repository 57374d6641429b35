// GET /messages (Zulip's get_messages_backend): a window of messages around an anchor within
// a narrow, or a list of ids, each with the viewer's flags.
import { getPrisma, Prisma, queryDynamic, type Realm, type User } from '@parley/db';
import { IncompatibleParametersError, JsonableError } from '@parley/errors';
import { presentMessageRows, type PresentOptions } from './messages';
import { buildNarrow, highlight, type BuiltNarrow, type NarrowTerm } from './narrow';
import { hasContentAccess, loadPermissions, type Permissions } from './streams';
import { isGuest } from './users';
import { mutedCondition } from './user-topics';
import { topicName } from '../presenters/messages';
import { escapeHtml } from '../presenters/realm';

export const LARGER_THAN_MAX_MESSAGE_ID = 10_000_000_000_000_000;
const MAX_MESSAGES_PER_FETCH = 5000;

export interface FetchRequest extends PresentOptions {
  anchor: string | undefined;
  useFirstUnreadAnchor: boolean;
  includeAnchor: boolean;
  numBefore: number;
  numAfter: number;
  narrow: NarrowTerm[];
  messageIds: number[] | undefined;
  /** Whether range parameters were sent at all (they exclude message_ids). */
  rangeGiven: boolean;
}

interface Row {
  id: number;
  flags: bigint | null;
}

/** The views clients open most (everything, a channel, a topic of a channel): their windows'
 * statements come in a few dozen shapes at most, so they are prepared once per connection
 * instead of planned at every request. Other narrows stay unnamed: their shapes are many. */
function isCommonView(narrow: readonly NarrowTerm[]): boolean {
  const operators = narrow.map((term) => (term.negated ? '-' : '') + term.operator).join(',');
  return operators === '' || operators === 'channel' || operators === 'channel,topic';
}

export async function fetchMessages(
  viewer: User,
  realm: Realm,
  request: FetchRequest,
): Promise<Record<string, unknown>> {
  if (request.messageIds !== undefined && request.rangeGiven)
    throw new IncompatibleParametersError([
      'num_before',
      'num_after',
      'anchor',
      'message_ids',
      'include_anchor',
      'use_first_unread_anchor',
    ]);
  // Zulip's order: the anchor is checked before the window's size.
  const anchorValue = request.messageIds === undefined ? parseAnchor(request) : null;
  const requested = request.messageIds?.length ?? request.numBefore + request.numAfter;
  if (requested > MAX_MESSAGES_PER_FETCH)
    throw new JsonableError(`Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`);
  if (
    request.messageIds === undefined &&
    request.numBefore > 0 &&
    request.numAfter > 0 &&
    !request.includeAnchor
  )
    throw new JsonableError('The anchor can only be excluded at an end of the range');

  const db = getPrisma();
  const perms = await loadPermissions(viewer);
  const narrow = await buildNarrow(viewer, realm, perms, request.narrow, db);
  const kept = keptAccess(perms, Prisma.raw('m.recipient_id'));
  const joined = {
    id: Prisma.raw('m.id'),
    from: narrow.includeHistory
      ? Prisma.sql`FROM message m
        LEFT JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${viewer.id}
        WHERE m.realm_id = ${realm.id} AND ${narrow.condition}`
      : Prisma.sql`FROM user_message um JOIN message m ON m.id = um.message_id
        WHERE um.user_profile_id = ${viewer.id} AND ${narrow.condition} AND ${kept}`,
  };
  // A window that asks nothing of the message (the whole feed, or the viewer's flags: starred,
  // mentions, unread) is read from the viewer's rows alone, as Zulip reads it: joined with
  // message, the generic plan could merge the two along message's primary key from the anchor
  // down, through every newer message of every organization until the viewer's newest (26 ms
  // at the newest anchor with 107,000 messages above it).
  const rowsOnly = !narrow.includeHistory && !narrow.readsMessage;
  const window = rowsOnly
    ? {
        id: Prisma.raw('um.message_id'),
        from: Prisma.sql`FROM user_message um
          WHERE um.user_profile_id = ${viewer.id} AND ${narrow.condition}
            AND ${keptAccess(
              perms,
              Prisma.sql`(SELECT mr.recipient_id FROM message mr WHERE mr.id = um.message_id)`,
            )}`,
      }
    : joined;
  // The window is ordered on the side the scan starts from, and bounded on both sides of the
  // join: on a user's own messages, bounding on m.id alone made PostgreSQL walk the user's
  // rows from the newest down to the anchor, and bounding on um.message_id alone made it walk
  // message's primary key the same way (131 ms and 87 ms mid-history of 1M rows; 0.08 ms
  // bounded on both). Zulip bounds on user_message.message_id too.
  // One channel's history is read through message's (recipient_id, id) index, positioned at
  // the anchor: ordered and bounded on both columns, which that index alone provides (see
  // buildNarrow's channelRecipientId).
  const channel = narrow.includeHistory ? narrow.channelRecipientId : null;
  const key = (direction: 'ASC' | 'DESC') =>
    channel !== null
      ? Prisma.raw(`m.recipient_id ${direction}, m.id ${direction}`)
      : Prisma.raw(`${narrow.includeHistory ? 'm.id' : 'um.message_id'} ${direction}`);
  const compare = (op: '<' | '>', bound: bigint) =>
    channel !== null
      ? Prisma.sql`(m.recipient_id, m.id) ${Prisma.raw(op)} (${channel}, ${bound}::bigint)`
      : narrow.includeHistory
        ? Prisma.sql`m.id ${Prisma.raw(op)} ${bound}::bigint`
        : rowsOnly
          ? Prisma.sql`um.message_id ${Prisma.raw(op)} ${bound}::bigint`
          : Prisma.sql`um.message_id ${Prisma.raw(op)} ${bound}::bigint
            AND m.id ${Prisma.raw(op)} ${bound}::bigint`;
  // The anchor itself, and the first unread message (found from the viewer's unread rows,
  // whose index gives the id's order, not the channel's).
  const idKey = narrow.includeHistory ? Prisma.raw('m.id') : Prisma.raw('um.message_id');
  const part = (side: number, extra: Prisma.Sql, { id, from } = window) =>
    Prisma.sql`(SELECT ${id} AS id, um.flags::text AS flags, ${side}::int AS side ${from} ${extra})`;

  let rows: Row[];
  let response: Record<string, unknown>;
  if (request.messageIds !== undefined) {
    rows = await byIds(viewer, realm, perms, request.messageIds, narrow, kept);
    response = {
      found_anchor: false,
      found_oldest: false,
      found_newest: false,
      history_limited: false,
    };
  } else {
    const anchor = await resolveAnchor(anchorValue!, async () => {
      const [first] = await queryDynamic<{ id: number }>(
        part(
          0,
          Prisma.sql`AND um.flags IS NOT NULL AND (um.flags & 1) = 0
            AND ${firstUnreadMuting(viewer.id, request.narrow)} ORDER BY ${idKey} ASC LIMIT 1`,
          // Muting reads the message's channel and topic.
          joined,
        ),
      );
      return first?.id ?? null;
    });
    const bound = BigInt(anchor);
    // "newest" has nothing after it: everything counts as before.
    const numAfter = anchor >= LARGER_THAN_MAX_MESSAGE_ID ? 0 : request.numAfter;
    // Before, at and after the anchor in one statement.
    const parts = [
      ...(request.numBefore > 0
        ? [
            part(
              -1,
              Prisma.sql`AND ${compare('<', bound)} ORDER BY ${key('DESC')} LIMIT ${request.numBefore}`,
            ),
          ]
        : []),
      ...(request.includeAnchor ? [part(0, Prisma.sql`AND ${idKey} = ${bound}::bigint`)] : []),
      ...(numAfter > 0
        ? [part(1, Prisma.sql`AND ${compare('>', bound)} ORDER BY ${key('ASC')} LIMIT ${numAfter}`)]
        : []),
    ];
    const found =
      parts.length > 0
        ? (
            await queryDynamic<Row & { side: number }>(Prisma.join(parts, ' UNION ALL '), {
              prepare: isCommonView(request.narrow),
            })
          ).map((row) => ({ ...row, flags: row.flags === null ? null : BigInt(row.flags) }))
        : [];
    const before = found.filter((row) => row.side < 0).sort((a, b) => a.id - b.id);
    const at = found.filter((row) => row.side === 0);
    const after = found.filter((row) => row.side > 0).sort((a, b) => a.id - b.id);
    rows = [...before, ...at, ...after];
    response = {
      anchor,
      found_anchor: at.length > 0,
      found_oldest: anchor === 0 || before.length < request.numBefore,
      found_newest: anchor >= LARGER_THAN_MAX_MESSAGE_ID || after.length < numAfter,
      history_limited: false,
    };
  }

  const presented = await presentMessageRows(viewer, realm, rows, request);
  if (narrow.search !== null) {
    for (const { object, message } of presented) {
      object.match_content = highlight(String(message.renderedContent ?? ''), narrow.search);
      object.match_subject = highlight(
        escapeSubject(
          message.isChannelMessage ? topicName(message.subject, request.allowEmptyTopicName) : '',
        ),
        narrow.search,
      );
    }
  }
  return { ...response, messages: presented.map((entry) => entry.object) };
}

/** The topic as Zulip's SQL escape_html gives it in search results (an apostrophe is &#39;). */
function escapeSubject(topic: string): string {
  return escapeHtml(topic).replace(/&#x27;/g, '&#39;');
}

/** Zulip's parse_anchor_value: an id (clamped to the ids there can be), or "first_unread". */
function parseAnchor(request: FetchRequest): number | 'first_unread' {
  const anchor = request.useFirstUnreadAnchor ? 'first_unread' : request.anchor;
  if (anchor === undefined) throw new JsonableError("Missing 'anchor' argument.");
  if (anchor === 'newest') return LARGER_THAN_MAX_MESSAGE_ID;
  if (anchor === 'oldest') return 0;
  if (anchor === 'first_unread') return anchor;
  if (!/^-?\d+$/.test(anchor.trim())) throw new JsonableError('Invalid anchor');
  const value = Number(anchor.trim());
  return Math.min(Math.max(value, 0), LARGER_THAN_MAX_MESSAGE_ID);
}

/** The anchor's id: the first unread message's, when that is what was asked for. */
async function resolveAnchor(
  anchor: number | 'first_unread',
  firstUnread: () => Promise<number | null>,
): Promise<number> {
  return anchor === 'first_unread' ? ((await firstUnread()) ?? LARGER_THAN_MAX_MESSAGE_ID) : anchor;
}

/** message_ids: the viewer's own rows, and, when the narrow names a channel whose history
 * they may read (Zulip's ok_to_include_history), that channel's messages. */
async function byIds(
  viewer: User,
  realm: Realm,
  perms: Permissions,
  ids: number[],
  { condition, includeHistory }: Pick<BuiltNarrow, 'condition' | 'includeHistory'>,
  kept: Prisma.Sql,
): Promise<Row[]> {
  const readable = includeHistory ? await readableHistoryRecipients(realm, perms) : [];
  const rows = await queryDynamic<{ id: number; flags: string | null }>(Prisma.sql`
    SELECT m.id, um.flags::text AS flags FROM message m
      LEFT JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${viewer.id}
    WHERE m.realm_id = ${realm.id} AND m.id = ANY(${ids}::int[])
      AND ((um.message_id IS NOT NULL AND ${kept}) OR m.recipient_id = ANY(${readable}::int[]))
      AND ${condition}
    ORDER BY m.id ASC`);
  return rows.map((row) => ({ id: row.id, flags: row.flags === null ? null : BigInt(row.flags) }));
}

/** Zulip's guard in get_base_query_for_search: the viewer's rows of a channel they can no
 * longer read (removed from a private one; a guest who left one) grant nothing. Those are
 * channels with an inactive subscription and no content access (hasContentAccess, in SQL).
 * The lost channels are read once per statement: when there are none, which is nearly always,
 * the EXISTS decides before any row's `recipient` is looked at. */
function keptAccess(perms: Permissions, recipient: Prisma.Sql): Prisma.Sql {
  const guest = isGuest(perms.user);
  const groups = [...perms.groups];
  const lost = Prisma.sql`SELECT ls.recipient_id FROM subscription ls
    JOIN stream lst ON lst.recipient_id = ls.recipient_id
    WHERE ls.user_profile_id = ${perms.user.id} AND NOT ls.active AND NOT lst.is_web_public
      AND (${guest}::boolean OR (lst.invite_only
        AND lst.can_subscribe_group_id <> ALL(${groups}::int[])
        AND lst.can_add_subscribers_group_id <> ALL(${groups}::int[])))`;
  return Prisma.sql`(NOT EXISTS (${lost}) OR ${recipient} NOT IN (${lost}))`;
}

/** Recipient ids of the channels whose shared history the viewer may read. */
async function readableHistoryRecipients(realm: Realm, perms: Permissions): Promise<number[]> {
  const db = getPrisma();
  const streams = await db.stream.findMany({
    where: { realmId: realm.id, historyPublicToSubscribers: true },
  });
  const subscribed = new Set(
    (
      await db.subscription.findMany({
        where: { userId: perms.user.id, active: true },
        select: { recipientId: true },
      })
    ).map((row) => row.recipientId),
  );
  return streams
    .filter((stream) => hasContentAccess(perms, stream, subscribed.has(stream.recipientId!)))
    .map((stream) => stream.recipientId!);
}

/** Zulip's first_unread skips muted conversations, except in a direct-message narrow; a
 * narrow to one channel ignores that the channel itself is muted. */
function firstUnreadMuting(viewerId: number, narrow: NarrowTerm[]): Prisma.Sql {
  const positive = narrow.filter((term) => !term.negated);
  if (
    positive.some(
      (t) =>
        t.operator === 'dm' ||
        (t.operator === 'is' && ['dm', 'private'].includes(String(t.operand))),
    )
  )
    return Prisma.sql`TRUE`;
  return Prisma.sql`NOT ${mutedCondition(
    viewerId,
    positive.some((t) => t.operator === 'channel'),
  )}`;
}

/** Zulip's messages_in_narrow_backend (GET /messages/matches_narrow): which of `ids`, among
 * the messages the viewer received, match the narrow, each with its content and topic as a
 * search result shows them (the search's words highlighted; unchanged for other narrows). */
export async function messagesMatchingNarrow(
  viewer: User,
  realm: Realm,
  ids: number[],
  terms: NarrowTerm[],
): Promise<Record<string, { match_content: string; match_subject: string }>> {
  const db = getPrisma();
  const perms = await loadPermissions(viewer);
  const narrow = await buildNarrow(viewer, realm, perms, terms, db);
  const rows = await queryDynamic<{ id: number; subject: string; rendered: string | null }>(
    Prisma.sql`
      SELECT m.id, m.subject, m.rendered_content AS rendered
      FROM user_message um JOIN message m ON m.id = um.message_id
      WHERE um.user_profile_id = ${viewer.id} AND um.message_id = ANY(${ids}::int[])
        AND ${narrow.condition} AND ${keptAccess(perms, Prisma.raw('m.recipient_id'))}
      ORDER BY m.id`,
  );
  const mark = (html: string) => (narrow.search === null ? html : highlight(html, narrow.search));
  return Object.fromEntries(
    rows.map((row) => [
      String(row.id),
      // The topic as stored, as Zulip gives it here (a direct message's is empty).
      { match_content: mark(row.rendered ?? ''), match_subject: mark(escapeSubject(row.subject)) },
    ]),
  );
}
