// Reading an organization's linkifiers (spec 2.10): in their order, for rendering, topic_links
// and GET /realm/linkifiers (shaped by presenters/linkifiers).
import { getPrisma, type Linkifier as LinkifierRow, type Tx } from '@parley/db';
import type { Linkifier } from '@parley/markdown';

export function linkifierRows(realmId: number, db: Tx = getPrisma()): Promise<LinkifierRow[]> {
  return db.linkifier.findMany({ where: { realmId }, orderBy: [{ order: 'asc' }, { id: 'asc' }] });
}

/** What rendering and topic_links need. */
export async function linkifiersForRealm(
  realmId: number,
  db: Tx = getPrisma(),
): Promise<Linkifier[]> {
  return (await linkifierRows(realmId, db)).map((row) => ({
    pattern: row.pattern,
    urlTemplate: row.urlTemplate,
  }));
}
