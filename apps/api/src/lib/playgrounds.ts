// The organization's code playgrounds (Zulip's get_realm_playgrounds), as /register's
// realm_playgrounds and the realm_playgrounds events list them.
import { getPrisma, type Tx } from '@parley/db';

export interface PlaygroundEntry {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

export async function playgroundsOf(
  realmId: number,
  db: Tx = getPrisma(),
): Promise<PlaygroundEntry[]> {
  const rows = await db.realmPlayground.findMany({ where: { realmId }, orderBy: { id: 'asc' } });
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    pygments_language: row.pygmentsLanguage,
    url_template: row.urlTemplate,
  }));
}
