// An organization's custom emoji (Zulip's RealmEmoji): the dict of GET /realm/emoji and the
// realm_emoji event, and the lookups rendering and reactions need.
import { columnsOf, getPrisma, query, statement, type RealmEmoji, type Tx } from '@parley/db';
import { emojiSourceUrl, presentRealmEmoji } from '../presenters/realm-emoji';

/** The store path of an emoji image (see lib/upload-store). */
export function emojiStorePath(realmId: number, fileName: string): string {
  return `user_avatars/${realmId}/emoji/images/${fileName}`;
}

/** Every custom emoji of the organization, deactivated ones too, keyed by id (as text). */
const realmEmojiRows = statement<RealmEmoji, [number]>(
  `SELECT ${columnsOf('RealmEmoji', 'e')} FROM realm_emoji e WHERE e.realm_id = $1 ORDER BY e.id`,
);

/** Every custom emoji of the organization by id, in the caller's transaction if any. */
export async function realmEmojiDict(
  realmId: number,
): Promise<Record<string, Record<string, unknown>>> {
  const rows = await query(realmEmojiRows, [realmId]);
  return Object.fromEntries(rows.map((row) => [String(row.id), presentRealmEmoji(row)]));
}

/** Active custom emoji by name, for rendering. */
export async function activeRealmEmoji(
  realmId: number,
  db: Tx = getPrisma(),
): Promise<Map<string, { sourceUrl: string }>> {
  const rows = await db.realmEmoji.findMany({ where: { realmId, deactivated: false } });
  return new Map(rows.map((row) => [row.name, { sourceUrl: emojiSourceUrl(row) }]));
}

/** The custom emoji a reaction request can mean: the one named (Zulip looks names up among
 * active emoji) or the one whose id is the code. */
export function customEmojiFor(
  realmId: number,
  name: string | undefined,
  code: string | undefined,
  db: Tx = getPrisma(),
) {
  const id = code !== undefined && /^\d{1,9}$/.test(code) ? Number(code) : undefined;
  return db.realmEmoji.findMany({
    where: {
      realmId,
      OR: [...(name !== undefined ? [{ name }] : []), ...(id !== undefined ? [{ id }] : [])],
    },
    select: { id: true, name: true, deactivated: true },
  });
}
