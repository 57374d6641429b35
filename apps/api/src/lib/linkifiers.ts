// Reading an organization's linkifiers (spec 2.10): in their order, for rendering, topic_links
// and GET /realm/linkifiers.
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

/** Zulip's LinkifierDict, with the reverse-linkification fields of feature level 471. */
export function presentLinkifier(row: LinkifierRow): Record<string, unknown> {
  return {
    id: row.id,
    pattern: row.pattern,
    url_template: row.urlTemplate,
    example_input: row.exampleInput,
    reverse_template: row.reverseTemplate,
    alternative_url_templates: row.alternativeUrlTemplates,
  };
}
