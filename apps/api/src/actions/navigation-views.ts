// Navigation views (Zulip's zerver/actions/navigation_views.py and the checks of its view):
// each person pins, hides and names the views of their left sidebar; every change is audited
// and reaches only that person's clients as a navigation_view event.
import {
  AuditLogEvent,
  isUniqueViolation,
  type ActionContext,
  type NavigationView,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { BUILT_IN_VIEW_FRAGMENTS, presentNavigationView } from '../lib/navigation-views';
import { auditRealmChange } from './audit';

const EXISTS = 'Navigation view already exists.';
const BUILT_IN_NAMED = 'Built-in views cannot have a custom name.';

/** Both unique indexes (fragment, name) mean the same refusal to a concurrent request. */
function refuseDuplicate(error: unknown): never {
  if (isUniqueViolation(error)) throw new JsonableError(EXISTS);
  throw error;
}

/** `renamed`: the fragment of the view being renamed, which may keep its own name. Zulip
 * refuses a PATCH that sends a view's current name again, as a client sending every field of
 * its edit form does. */
async function checkNameFree(tx: Tx, user: User, name: string | undefined, renamed?: string) {
  if (name === undefined) return;
  const holder = await tx.navigationView.findFirst({ where: { userId: user.id, name } });
  if (holder && holder.fragment !== renamed) throw new JsonableError(EXISTS);
}

export interface NewNavigationView {
  fragment: string;
  isPinned: boolean;
  name: string | undefined;
}

/** Zulip's add_navigation_view checks: settings for a built-in view (no name) or a custom view
 * (a name), each fragment and name once per person. */
export async function checkNewNavigationView(
  tx: Tx,
  user: User,
  view: NewNavigationView,
): Promise<void> {
  if (BUILT_IN_VIEW_FRAGMENTS.has(view.fragment)) {
    if (view.name !== undefined) throw new JsonableError(BUILT_IN_NAMED);
  } else if (!view.name) {
    throw new JsonableError('Custom views must have a valid name.');
  }
  if (
    await tx.navigationView.findUnique({
      where: { userId_fragment: { userId: user.id, fragment: view.fragment } },
    })
  )
    throw new JsonableError(EXISTS);
  await checkNameFree(tx, user, view.name);
}

export async function doAddNavigationView(
  ctx: ActionContext,
  user: User,
  view: NewNavigationView,
): Promise<void> {
  const created = await ctx.tx.navigationView
    .create({
      data: {
        userId: user.id,
        fragment: view.fragment,
        isPinned: view.isPinned,
        name: view.name ?? null,
      },
    })
    .catch(refuseDuplicate);
  await auditRealmChange(
    ctx,
    user,
    AuditLogEvent.NAVIGATION_VIEW_CREATED,
    { fragment: view.fragment },
    { modifiedUserId: user.id },
  );
  sendEventOnCommit(
    ctx,
    { type: 'navigation_view', op: 'add', navigation_view: presentNavigationView(created) },
    [user.id],
  );
}

export interface NavigationViewChanges {
  isPinned: boolean | undefined;
  name: string | undefined;
}

/** Zulip's update_navigation_view checks, for `view` (accessNavigationView). */
export async function checkNavigationViewChanges(
  tx: Tx,
  user: User,
  view: NavigationView,
  changes: NavigationViewChanges,
): Promise<void> {
  if (BUILT_IN_VIEW_FRAGMENTS.has(view.fragment) && changes.name !== undefined)
    throw new JsonableError(BUILT_IN_NAMED);
  await checkNameFree(tx, user, changes.name, view.fragment);
}

/** Zulip's do_update_navigation_view: each requested change audited, one event with what was
 * asked for (even what was already so, as Zulip sends it). */
export async function doUpdateNavigationView(
  ctx: ActionContext,
  user: User,
  view: NavigationView,
  changes: NavigationViewChanges,
): Promise<void> {
  const { fragment } = view;
  const data: Record<string, string | boolean> = {};
  const audits: Record<string, unknown>[] = [];
  if (changes.name !== undefined) {
    data.name = changes.name;
    audits.push({ fragment, old_value: view.name, new_value: changes.name, property: 'name' });
  }
  if (changes.isPinned !== undefined) {
    data.is_pinned = changes.isPinned;
    audits.push({
      fragment,
      old_value: view.isPinned,
      new_value: changes.isPinned,
      property: 'is_pinned',
    });
  }
  await ctx.tx.navigationView
    .update({
      where: { id: view.id },
      data: { name: changes.name ?? view.name, isPinned: changes.isPinned ?? view.isPinned },
    })
    .catch(refuseDuplicate);
  for (const extra of audits)
    await auditRealmChange(ctx, user, AuditLogEvent.NAVIGATION_VIEW_UPDATED, extra, {
      modifiedUserId: user.id,
    });
  sendEventOnCommit(ctx, { type: 'navigation_view', op: 'update', fragment, data }, [user.id]);
}

/** Zulip's do_remove_navigation_view, for `view` (accessNavigationView). */
export async function doRemoveNavigationView(
  ctx: ActionContext,
  user: User,
  view: NavigationView,
): Promise<void> {
  await ctx.tx.navigationView.delete({ where: { id: view.id } });
  await auditRealmChange(
    ctx,
    user,
    AuditLogEvent.NAVIGATION_VIEW_DELETED,
    { fragment: view.fragment },
    { modifiedUserId: user.id },
  );
  sendEventOnCommit(ctx, { type: 'navigation_view', op: 'remove', fragment: view.fragment }, [
    user.id,
  ]);
}
