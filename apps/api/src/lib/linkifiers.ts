// Reading an organization's linkifiers (spec 2.10): in their order, for rendering, topic_links
// and GET /realm/linkifiers (shaped by presenters/linkifiers).
import { getPrisma, query, statement, type Linkifier as LinkifierRow, type Tx } from '@parley/db';
import type { Linkifier } from '@parley/markdown';
import { linkifierCache } from './linkifier-cache';

export function linkifierRows(realmId: number, db: Tx = getPrisma()): Promise<LinkifierRow[]> {
  return db.linkifier.findMany({ where: { realmId }, orderBy: [{ order: 'asc' }, { id: 'asc' }] });
}

const realmLinkifiers = statement<Linkifier, [number]>(`
  SELECT pattern, url_template AS "urlTemplate" FROM realm_filter
  WHERE realm_id = $1 ORDER BY "order", id`);

/** What rendering and topic_links need, on every send and every message fetch: from memory
 * (linkifier-cache.ts), else one typed statement. */
export function linkifiersForRealm(realmId: number): Promise<readonly Linkifier[]> {
  return linkifierCache().get(realmId, () => query(realmLinkifiers, [realmId]));
}
