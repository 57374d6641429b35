// The organization's code playgrounds (Zulip's get_realm_playgrounds), as /register's
// realm_playgrounds and the realm_playgrounds events list them: one prepared statement, since
// every /register reads them.
import { query, statement } from '@parley/db';

export interface PlaygroundEntry {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

const playgroundsOfRealm = statement<PlaygroundEntry, [number]>(
  `SELECT id, name, pygments_language, url_template FROM realm_playground
   WHERE realm_id = $1 ORDER BY id`,
);

/** In the current action's transaction when there is one (typed SQL follows runAction). */
export function playgroundsOf(realmId: number): Promise<PlaygroundEntry[]> {
  return query(playgroundsOfRealm, [realmId]);
}
