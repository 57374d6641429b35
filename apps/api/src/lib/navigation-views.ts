// A person's navigation views (Zulip's NavigationViewDict): GET /navigation_views,
// /register's navigation_views and the navigation_view add event. One prepared statement,
// since every /register reads them.
import { columnsOf, query, statement, type NavigationView, type Tx } from '@parley/db';
import { ResourceNotFoundError } from '@parley/errors';

/** Longest fragment and name. Zulip sets none, but both are in unique B-tree indexes, whose
 * entries PostgreSQL caps at about 2.7 kB: 500 characters of up to 4 bytes stay below it. */
export const MAX_NAVIGATION_VIEW_TEXT_LENGTH = 500;

export interface NavigationViewEntry {
  fragment: string;
  is_pinned: boolean;
  name: string | null;
}

export function presentNavigationView(view: NavigationView): NavigationViewEntry {
  return { fragment: view.fragment, is_pinned: view.isPinned, name: view.name };
}

const viewsOfUser = statement<NavigationView, [number]>(
  `SELECT ${columnsOf('NavigationView', 'v')} FROM navigation_view v
   WHERE v.user_profile_id = $1 ORDER BY v.id`,
);

/** In the current action's transaction when there is one (typed SQL follows runAction). */
export async function navigationViewsOf(userId: number): Promise<NavigationViewEntry[]> {
  return (await query(viewsOfUser, [userId])).map(presentNavigationView);
}

/** Zulip's get_navigation_view, locked until the transaction ends: two requests changing or
 * removing the same view at once (a double click) take turns, and the second finds it gone
 * with a 404 rather than failing on a row deleted under it. */
export async function accessNavigationView(
  tx: Tx,
  userId: number,
  fragment: string,
): Promise<NavigationView> {
  const [view] = await tx.$queryRaw<NavigationView[]>`
    SELECT id, user_profile_id AS "userId", fragment, is_pinned AS "isPinned", name
    FROM navigation_view WHERE user_profile_id = ${userId} AND fragment = ${fragment}
    FOR UPDATE`;
  if (!view) throw new ResourceNotFoundError('Navigation view does not exist.');
  return view;
}

/** Zulip's BUILT_IN_VIEW_FRAGMENTS: the views every client has, which take no custom name. */
export const BUILT_IN_VIEW_FRAGMENTS: ReadonlySet<string> = new Set([
  'inbox',
  'recent',
  'feed',
  'drafts',
  'narrow/has/reaction/sender/me',
  'narrow/is/mentioned',
  'narrow/is/starred',
  'scheduled',
  'reminders',
]);
