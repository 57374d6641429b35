// Reading a user's drafts (spec 2.5): the list GET /drafts and /register return, and the one
// draft an edit or a deletion names.
import { columnsOf, getPrisma, query, statement, type Tx, type User } from '@parley/db';
import { JsonableError, ResourceNotFoundError } from '@parley/errors';
import type { DraftRow } from '../presenters/drafts';

/** Zulip's MAX_DRAFTS_IN_REGISTER_RESPONSE. */
export const MAX_DRAFTS_IN_REGISTER_RESPONSE = 1000;

/** Zulip's draft_endpoint: every drafts endpoint is refused while the user does not sync. */
export function checkDraftsSynchronized(user: Pick<User, 'enableDraftsSynchronization'>): void {
  if (!user.enableDraftsSynchronization)
    throw new JsonableError('User has disabled synchronizing drafts.');
}

/** GET /drafts: oldest edit first. */
export function draftsOf(userId: number, db: Tx = getPrisma()): Promise<DraftRow[]> {
  return db.draft.findMany({
    where: { userId },
    orderBy: [{ lastEditTime: 'asc' }, { id: 'asc' }],
  });
}

const newestDrafts = statement<DraftRow, [number, number]>(
  `SELECT ${columnsOf('Draft', 'd')} FROM draft d WHERE d.user_profile_id = $1
   ORDER BY d.last_edit_time DESC, d.id DESC LIMIT $2`,
);

/** /register's drafts: the newest edits first, at most MAX_DRAFTS_IN_REGISTER_RESPONSE (a
 * prepared statement: every client's registration reads them). */
export function newestDraftsOf(userId: number): Promise<DraftRow[]> {
  return query(newestDrafts, [userId, MAX_DRAFTS_IN_REGISTER_RESPONSE]);
}

/** The user's own draft, else "Draft does not exist" (HTTP 404), whether it belongs to
 * someone else or to nobody. */
export async function accessDraft(userId: number, draftId: number, db: Tx): Promise<DraftRow> {
  const row = await db.draft.findFirst({ where: { id: draftId, userId } });
  if (!row) throw new ResourceNotFoundError('Draft does not exist');
  return row;
}
