// An organization's custom emoji (Zulip's RealmEmoji): the dict of GET /realm/emoji and the
// realm_emoji event, and the lookups rendering and reactions need.
import { getPrisma, type Tx } from '@parley/db';

export type RealmEmoji = NonNullable<Awaited<ReturnType<Tx['realmEmoji']['findUnique']>>>;

/** Where the image is served, without authentication, as Zulip serves avatars and emoji. */
export function emojiSourceUrl(emoji: Pick<RealmEmoji, 'realmId' | 'fileName'>): string {
  return `/user_avatars/${emoji.realmId}/emoji/images/${encodeURIComponent(emoji.fileName ?? '')}`;
}

/** The store path of an emoji image (see lib/upload-store). */
export function emojiStorePath(realmId: number, fileName: string): string {
  return `user_avatars/${realmId}/emoji/images/${fileName}`;
}

export function presentRealmEmoji(emoji: RealmEmoji): Record<string, unknown> {
  return {
    id: String(emoji.id),
    name: emoji.name,
    source_url: emojiSourceUrl(emoji),
    deactivated: emoji.deactivated,
    author_id: emoji.authorId,
  };
}

/** Every custom emoji of the organization, deactivated ones too, keyed by id (as text). */
export async function realmEmojiDict(
  realmId: number,
  db: Tx = getPrisma(),
): Promise<Record<string, Record<string, unknown>>> {
  const rows = await db.realmEmoji.findMany({ where: { realmId }, orderBy: { id: 'asc' } });
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

/** Every custom emoji of the organization, for reaction checks. */
export function customEmojiOf(realmId: number, db: Tx = getPrisma()) {
  return db.realmEmoji.findMany({
    where: { realmId },
    select: { id: true, name: true, deactivated: true },
  });
}
