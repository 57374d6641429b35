// Saved snippet rows → Zulip's saved snippet objects (GET /saved_snippets, saved_snippets
// events, /register's saved_snippets).
import type { Prisma } from '@parley/db';

export type SavedSnippetRow = Prisma.SavedSnippetGetPayload<Record<string, never>>;

/** Zulip's SavedSnippet.to_api_dict: date_created in whole UNIX seconds. */
export function presentSavedSnippet(row: SavedSnippetRow): Record<string, unknown> {
  return {
    id: row.id,
    title: row.title,
    content: row.content,
    date_created: Math.floor(row.dateCreated.getTime() / 1000),
  };
}
