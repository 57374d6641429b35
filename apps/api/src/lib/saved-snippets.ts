// Reading a user's saved snippets (spec 2.11): the list GET /saved_snippets and /register
// return.
import { columnsOf, query, statement } from '@parley/db';
import type { SavedSnippetRow } from '../presenters/saved-snippets';

/** Zulip's SavedSnippet.MAX_TITLE_LENGTH; content is limited like a message. */
export const MAX_SNIPPET_TITLE_LENGTH = 60;
export const MAX_SNIPPET_CONTENT_LENGTH = 10000;

const snippetsOfUser = statement<SavedSnippetRow, [number]>(
  `SELECT ${columnsOf('SavedSnippet', 's')} FROM saved_snippet s WHERE s.user_profile_id = $1
   ORDER BY s.id`,
);

/** Oldest first (Zulip lists them in id order); a prepared statement, as every client's
 * registration reads them. */
export function savedSnippetsOf(userId: number): Promise<SavedSnippetRow[]> {
  return query(snippetsOfUser, [userId]);
}
