// Saved snippets (spec 2.11, 4.19; Zulip's zerver/actions/saved_snippets.py): each change
// tells the user's clients with a `saved_snippets` event.
import { type ActionContext, type User } from '@parley/db';
import { ResourceNotFoundError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { presentSavedSnippet } from '../presenters/saved-snippets';

const notFound = () => new ResourceNotFoundError('Saved snippet does not exist.');

/** Zulip's do_create_saved_snippet; title and content come checked (stripped, not blank,
 * within their limits). */
export async function doCreateSavedSnippet(
  ctx: ActionContext,
  user: User,
  title: string,
  content: string,
): Promise<number> {
  const row = await ctx.tx.savedSnippet.create({
    data: { realmId: user.realmId, userId: user.id, title, content },
  });
  sendEventOnCommit(
    ctx,
    { type: 'saved_snippets', op: 'add', saved_snippet: presentSavedSnippet(row) },
    [user.id],
  );
  return row.id;
}

/** Zulip's do_edit_saved_snippet (feature level 368): what is given changes. */
export async function doEditSavedSnippet(
  ctx: ActionContext,
  user: User,
  snippetId: number,
  changes: { title?: string; content?: string },
): Promise<void> {
  const { count } = await ctx.tx.savedSnippet.updateMany({
    where: { id: snippetId, userId: user.id },
    data: changes,
  });
  if (count === 0) throw notFound();
  const row = await ctx.tx.savedSnippet.findUniqueOrThrow({ where: { id: snippetId } });
  sendEventOnCommit(
    ctx,
    { type: 'saved_snippets', op: 'update', saved_snippet: presentSavedSnippet(row) },
    [user.id],
  );
}

/** Zulip's do_delete_saved_snippet. */
export async function doDeleteSavedSnippet(
  ctx: ActionContext,
  user: User,
  snippetId: number,
): Promise<void> {
  const { count } = await ctx.tx.savedSnippet.deleteMany({
    where: { id: snippetId, userId: user.id },
  });
  if (count === 0) throw notFound();
  sendEventOnCommit(ctx, { type: 'saved_snippets', op: 'remove', saved_snippet_id: snippetId }, [
    user.id,
  ]);
}
