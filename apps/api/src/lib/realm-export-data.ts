// What a data export holds (Zulip's zerver/lib/export.py, in its layout): a gzipped tarball of
// one directory with realm.json (the organization's tables, by Zulip's table names),
// messages-NNNNNN.json (1,000 messages each, with their copies), attachment.json, the files of
// those attachments under uploads/, the custom emoji images under emoji/, the uploaded avatars
// under avatars/, and stats.json.
// Rows are PostgreSQL's JSON of Parley's own rows, whose columns mostly carry Zulip's names;
// passwords, API keys, OAuth tokens and the organization's JWT key are never exported (nor the
// full-text search column, which an import rebuilds).
//
// Which data goes (Zulip's rules): a public export holds the messages of public channels and
// every user's copies of them; a full export with member consent adds what the consenting users
// (consentingUserIds) can see: their private channels (those with protected history only for
// messages a consenting user received), their direct messages and group conversations, and
// only their own copies of messages. Users who did not consent are exported deactivated, and
// users whose address nobody may see (but consenting ones in a consent export) keep only their
// dummy address (user{id}@{organization's email domain}, as the API shows it).
import { realmEmailDomain } from '@parley/auth';
import { getPrisma, Prisma, RecipientType, type Realm } from '@parley/db';
import { avatarStorePath } from './avatars';
import { emojiStorePath } from './realm-emoji';
import { consentingUserIds, ExportType, type ExportTypeValue } from './realm-exports';
import { GzippedTarball } from './tarball';
import { readUpload } from './upload-store';
import { EmailVisibility } from './users';

/** Zulip's MESSAGE_BATCH_CHUNK_SIZE. */
const MESSAGES_PER_FILE = 1000;

/** Columns no export carries: secrets, and the search index's column (derived from the
 * message's content, and larger than it). */
const OMITTED_COLUMNS = ['api_key', 'password_hash', 'zoom_token', 'jwt_key', 'search_tsvector'];

export interface BuiltExport {
  tarball: Buffer;
  sha256: string;
  /** Rows per table, as Zulip's stats.json counts them. */
  stats: Record<string, number>;
}

/** A table of the export: its name, the query of its rows, their order (column names of the
 * query), and columns replaced (a jsonb object computed from the row `t`). */
type Table = [name: string, query: Prisma.Sql, order: string, replaced?: Prisma.Sql];

/** Rows of a table as a JSON array (text, written as PostgreSQL made it), without the omitted
 * columns. */
async function jsonRows([, query, order, replaced]: Table): Promise<{
  json: string;
  count: number;
}> {
  const [row] = await getPrisma().$queryRaw<{ json: string; count: number }[]>`
    SELECT coalesce(jsonb_agg(
      (to_jsonb(t) - ${OMITTED_COLUMNS}::text[]) || ${replaced ?? Prisma.sql`'{}'::jsonb`}
      ORDER BY ${Prisma.raw(
        order
          .split(',')
          .map((column) => `t.${column.trim()}`)
          .join(', '),
      )}), '[]')::text AS json, count(*)::int AS count
    FROM (${query}) t`;
  return row!;
}

/** The ids of the messages the export holds (see the header). */
async function exportedMessageIds(
  realmId: number,
  type: ExportTypeValue,
  consenting: number[],
): Promise<number[]> {
  const publicRecipients = Prisma.sql`
    SELECT recipient_id FROM stream
    WHERE realm_id = ${realmId} AND NOT invite_only AND recipient_id IS NOT NULL`;
  if (type === ExportType.PUBLIC) {
    const rows = await getPrisma().$queryRaw<{ id: number }[]>`
      SELECT id FROM message
      WHERE realm_id = ${realmId} AND recipient_id IN (${publicRecipients})
      ORDER BY id`;
    return rows.map((row) => row.id);
  }
  const rows = await getPrisma().$queryRaw<{ id: number }[]>`
    WITH consenting AS (SELECT unnest(${consenting}::int[]) AS id),
    protected AS (
      SELECT recipient_id FROM stream
      WHERE realm_id = ${realmId} AND NOT history_public_to_subscribers
        AND recipient_id IS NOT NULL),
    -- What consenting users receive: their channels and group conversations, and their own
    -- direct messages (Parley keeps no subscription to a personal recipient).
    theirs AS (
      SELECT recipient_id FROM subscription WHERE user_profile_id IN (SELECT id FROM consenting)
      UNION
      SELECT id FROM recipient
      WHERE type = ${RecipientType.PERSONAL} AND type_id IN (SELECT id FROM consenting)),
    open AS (
      ${publicRecipients}
      UNION (SELECT recipient_id FROM theirs EXCEPT SELECT recipient_id FROM protected))
    SELECT id FROM message WHERE realm_id = ${realmId} AND recipient_id IN (SELECT * FROM open)
    UNION
    -- Channels with protected history: only what a consenting user received.
    SELECT m.id FROM message m
    WHERE m.realm_id = ${realmId}
      AND m.recipient_id IN (SELECT recipient_id FROM theirs INTERSECT SELECT * FROM protected)
      AND EXISTS (
        SELECT FROM user_message um
        WHERE um.message_id = m.id AND um.user_profile_id IN (SELECT id FROM consenting))
    UNION
    -- Direct messages consenting users sent to users who did not consent.
    SELECT m.id FROM message m JOIN recipient r ON r.id = m.recipient_id
    WHERE m.realm_id = ${realmId} AND m.sender_id IN (SELECT id FROM consenting)
      AND r.type = ${RecipientType.PERSONAL} AND r.type_id NOT IN (SELECT id FROM consenting)
    ORDER BY id`;
  return rows.map((row) => row.id);
}

/** Builds the export of `realm` as `name`.tar.gz's bytes. */
export async function buildRealmExport(
  realm: Realm,
  type: ExportTypeValue,
  name: string,
): Promise<BuiltExport> {
  const realmId = realm.id;
  const consenting = type === ExportType.FULL_WITH_CONSENT ? await consentingUserIds(realmId) : [];
  const stats: Record<string, number> = {};
  const tarball = new GzippedTarball(name);
  const addTables = async (file: string, tables: Table[]) => {
    const parts: string[] = [];
    for (const table of tables) {
      const { json, count } = await jsonRows(table);
      stats[table[0]] = (stats[table[0]] ?? 0) + count;
      parts.push(`${JSON.stringify(table[0])}:${json}`);
    }
    await tarball.add(file, Buffer.from(`{${parts.join(',')}}`));
  };

  // The address nobody may see is exported as the dummy one (in a consent export, but for the
  // consenting users); a consent export deactivates whoever did not consent.
  const dummyDomain = realmEmailDomain(realm);
  const hiddenAddress = Prisma.sql`CASE
    WHEN t.email_address_visibility = ${EmailVisibility.NOBODY}
      AND NOT t.id = ANY(${consenting}::int[])
    THEN jsonb_build_object(
      'email', 'user' || t.id || '@' || ${dummyDomain}::text,
      'delivery_email', 'user' || t.id || '@' || ${dummyDomain}::text)
    ELSE '{}'::jsonb END`;
  const usersReplaced =
    type === ExportType.PUBLIC
      ? hiddenAddress
      : Prisma.sql`${hiddenAddress}
          || jsonb_build_object('is_active', t.is_active AND t.id = ANY(${consenting}::int[]))`;
  const subscriptions =
    type === ExportType.PUBLIC
      ? Prisma.sql`
          SELECT s.* FROM subscription s
          JOIN stream c ON c.recipient_id = s.recipient_id
          WHERE c.realm_id = ${realmId} AND NOT c.invite_only`
      : Prisma.sql`
          SELECT s.* FROM subscription s
          JOIN stream c ON c.recipient_id = s.recipient_id
          WHERE c.realm_id = ${realmId} AND NOT c.invite_only
          UNION
          SELECT s.* FROM subscription s WHERE s.user_profile_id = ANY(${consenting}::int[])`;
  await addTables('realm.json', [
    ['zerver_realm', Prisma.sql`SELECT * FROM realm WHERE id = ${realmId}`, 'id'],
    [
      'zerver_userprofile',
      Prisma.sql`SELECT * FROM user_profile WHERE realm_id = ${realmId}`,
      'id',
      usersReplaced,
    ],
    ['zerver_stream', Prisma.sql`SELECT * FROM stream WHERE realm_id = ${realmId}`, 'id'],
    ['zerver_subscription', subscriptions, 'id'],
    [
      'zerver_recipient',
      Prisma.sql`
        SELECT r.* FROM recipient r WHERE
          (r.type = ${RecipientType.PERSONAL}
            AND r.type_id IN (SELECT id FROM user_profile WHERE realm_id = ${realmId}))
          OR (r.type = ${RecipientType.STREAM}
            AND r.type_id IN (SELECT id FROM stream WHERE realm_id = ${realmId}))
          OR (r.type = ${RecipientType.DIRECT_MESSAGE_GROUP}
            AND r.type_id IN (SELECT id FROM direct_message_group WHERE realm_id = ${realmId}))`,
      'id',
    ],
    [
      'zerver_directmessagegroup',
      Prisma.sql`SELECT * FROM direct_message_group WHERE realm_id = ${realmId}`,
      'id',
    ],
    [
      'zerver_defaultstream',
      Prisma.sql`SELECT * FROM default_stream WHERE realm_id = ${realmId}`,
      'stream_id',
    ],
    ['zerver_usergroup', Prisma.sql`SELECT * FROM user_group WHERE realm_id = ${realmId}`, 'id'],
    [
      'zerver_usergroupmembership',
      Prisma.sql`
        SELECT m.* FROM user_group_membership m JOIN user_group g ON g.id = m.user_group_id
        WHERE g.realm_id = ${realmId}`,
      'user_group_id, user_profile_id',
    ],
    ['zerver_realmemoji', Prisma.sql`SELECT * FROM realm_emoji WHERE realm_id = ${realmId}`, 'id'],
    [
      'zerver_realmdomain',
      Prisma.sql`SELECT * FROM realm_domain WHERE realm_id = ${realmId}`,
      'id',
    ],
    [
      'zerver_realmfilter',
      Prisma.sql`SELECT * FROM realm_filter WHERE realm_id = ${realmId}`,
      'id',
    ],
    [
      'zerver_realmplayground',
      Prisma.sql`SELECT * FROM realm_playground WHERE realm_id = ${realmId}`,
      'id',
    ],
    [
      'zerver_customprofilefield',
      Prisma.sql`SELECT * FROM custom_profile_field WHERE realm_id = ${realmId}`,
      'id',
    ],
    [
      'zerver_customprofilefieldvalue',
      Prisma.sql`
        SELECT v.* FROM custom_profile_field_value v JOIN custom_profile_field f ON f.id = v.field_id
        WHERE f.realm_id = ${realmId}`,
      'id',
    ],
  ]);

  const messageIds = await exportedMessageIds(realmId, type, consenting);
  // Copies: every user's in a public export, only the consenting users' in the other.
  const copiesOf = (ids: number[]) =>
    type === ExportType.PUBLIC
      ? Prisma.sql`SELECT * FROM user_message WHERE message_id = ANY(${ids}::int[])`
      : Prisma.sql`
          SELECT * FROM user_message
          WHERE message_id = ANY(${ids}::int[]) AND user_profile_id = ANY(${consenting}::int[])`;
  for (let start = 0, file = 1; start < messageIds.length; start += MESSAGES_PER_FILE, file++) {
    const ids = messageIds.slice(start, start + MESSAGES_PER_FILE);
    await addTables(`messages-${String(file).padStart(6, '0')}.json`, [
      ['zerver_message', Prisma.sql`SELECT * FROM message WHERE id = ANY(${ids}::int[])`, 'id'],
      ['zerver_usermessage', copiesOf(ids), 'message_id, user_profile_id'],
      [
        'zerver_reaction',
        Prisma.sql`SELECT * FROM reaction WHERE message_id = ANY(${ids}::int[])`,
        'id',
      ],
      [
        'zerver_submessage',
        Prisma.sql`SELECT * FROM submessage WHERE message_id = ANY(${ids}::int[])`,
        'id',
      ],
    ]);
  }

  // Attachments of the exported messages, with their files.
  const attachments = await getPrisma().$queryRaw<{ id: number; path_id: string }[]>`
    SELECT DISTINCT a.id, a.path_id FROM attachment a
    JOIN attachment_messages am ON am.attachment_id = a.id
    WHERE a.realm_id = ${realmId} AND am.message_id = ANY(${messageIds}::int[])
    ORDER BY a.id`;
  const attachmentIds = attachments.map((row) => row.id);
  await addTables('attachment.json', [
    [
      'zerver_attachment',
      Prisma.sql`SELECT * FROM attachment WHERE id = ANY(${attachmentIds}::int[])`,
      'id',
    ],
    [
      'zerver_attachment_messages',
      Prisma.sql`
        SELECT * FROM attachment_messages
        WHERE attachment_id = ANY(${attachmentIds}::int[]) AND message_id = ANY(${messageIds}::int[])`,
      'attachment_id, message_id',
    ],
  ]);
  const records: { path: string; path_id: string; size: number }[] = [];
  for (const { path_id: pathId } of attachments) {
    const data = await readUpload(pathId);
    if (!data) continue;
    await tarball.add(`uploads/${pathId}`, data);
    records.push({ path: pathId, path_id: pathId, size: data.length });
  }
  await tarball.add('uploads/records.json', Buffer.from(JSON.stringify(records)));

  const emoji = await getPrisma().realmEmoji.findMany({
    where: { realmId },
    orderBy: { id: 'asc' },
  });
  const emojiRecords: { path: string; file_name: string; name: string }[] = [];
  for (const row of emoji) {
    if (!row.fileName) continue;
    const data = await readUpload(emojiStorePath(realmId, row.fileName));
    if (!data) continue;
    await tarball.add(`emoji/${row.fileName}`, data);
    emojiRecords.push({ path: row.fileName, file_name: row.fileName, name: row.name });
  }
  await tarball.add('emoji/records.json', Buffer.from(JSON.stringify(emojiRecords)));

  // Uploaded avatars (public images, as in Zulip's export): both sizes of each.
  const uploaded = await getPrisma().user.findMany({
    where: { realmId, avatarSource: 'U', avatarHash: { not: null } },
    select: { id: true, avatarHash: true },
    orderBy: { id: 'asc' },
  });
  const avatarRecords: { path: string; user_profile_id: number }[] = [];
  for (const user of uploaded)
    for (const size of ['small', 'medium'] as const) {
      const path = avatarStorePath(realmId, user.avatarHash!, size);
      const data = await readUpload(path);
      if (!data) continue;
      const name = path.slice(path.lastIndexOf('/') + 1);
      await tarball.add(`avatars/${name}`, data);
      avatarRecords.push({ path: name, user_profile_id: user.id });
    }
  await tarball.add('avatars/records.json', Buffer.from(JSON.stringify(avatarRecords)));
  await tarball.add('stats.json', Buffer.from(JSON.stringify(stats, null, 2)));

  const { bytes, sha256 } = await tarball.finish();
  return { tarball: bytes, sha256, stats };
}
