// Draft rows → Zulip's draft objects (GET /drafts, drafts events, /register's drafts).
import type { Prisma } from '@parley/db';

export type DraftRow = Prisma.DraftGetPayload<Record<string, never>>;

/** Zulip's Draft.to_dict: the time of the last edit in whole UNIX seconds. */
export function presentDraft(row: DraftRow): Record<string, unknown> {
  return {
    id: row.id,
    type: row.type,
    to: row.toIds,
    topic: row.topic,
    content: row.content,
    timestamp: Math.floor(row.lastEditTime.getTime() / 1000),
  };
}
