// Linkifier administration (spec 4.13, 4.18; Zulip's do_add_linkifier, do_update_linkifier,
// do_remove_linkifier, check_reorder_linkifiers). Every change tells the whole organization
// the complete ordered list in a `realm_linkifiers` event (the events tier passes it only to
// clients with the linkifier_url_template capability).
import { AuditLogEvent, isUniqueViolation, type ActionContext, type User } from '@parley/db';
import { JsonableError, ValidationFailureError } from '@parley/errors';
import {
  fillReverseTemplate,
  linkifierErrors,
  matchWhole,
  templateVariables,
} from '@parley/markdown';
import { sendEventOnCommit } from '../lib/events';
import { auditRealmChange } from './audit';
import { linkifierRows } from '../lib/linkifiers';
import { presentLinkifier } from '../presenters/linkifiers';
import { activeUserIds } from '../lib/users';

export interface LinkifierInput {
  pattern: string;
  urlTemplate: string;
  /** undefined: unchanged (new linkifiers: none); '' or null: none. */
  exampleInput?: string | null;
  reverseTemplate?: string | null;
  alternativeUrlTemplates?: string[];
}

interface CheckedLinkifier {
  pattern: string;
  urlTemplate: string;
  exampleInput: string | null;
  reverseTemplate: string | null;
  alternativeUrlTemplates: string[];
}

const blankToNull = (value: string | null | undefined) =>
  value === '' || value === undefined ? null : value;

/** Zulip's RealmFilter.clean plus the reverse-linkifier checks of spec 4.13. `current` gives
 * the stored values of fields an update leaves out. */
export function checkLinkifierInput(
  input: LinkifierInput,
  current?: Omit<CheckedLinkifier, 'pattern' | 'urlTemplate'>,
): CheckedLinkifier {
  // Zulip's do_add_linkifier and do_update_linkifier strip both before validating.
  const pattern = input.pattern.trim();
  const urlTemplate = input.urlTemplate.trim();
  const errors = linkifierErrors(pattern, urlTemplate);
  if (errors) throw new ValidationFailureError(errors);
  const exampleInput =
    input.exampleInput === undefined
      ? (current?.exampleInput ?? null)
      : blankToNull(input.exampleInput);
  const reverseTemplate =
    input.reverseTemplate === undefined
      ? (current?.reverseTemplate ?? null)
      : blankToNull(input.reverseTemplate);
  const alternativeUrlTemplates =
    input.alternativeUrlTemplates ?? current?.alternativeUrlTemplates ?? [];
  for (const template of alternativeUrlTemplates)
    if (templateVariables(template) === null) throw new JsonableError('Invalid URL template.');
  if (exampleInput !== null && matchWhole(pattern, exampleInput) === null)
    throw new JsonableError('Example input does not match the linkifier pattern.');
  if (reverseTemplate !== null) {
    if (exampleInput === null)
      throw new JsonableError('An example input is required for a reverse template.');
    const values = matchWhole(pattern, exampleInput)!;
    if (fillReverseTemplate(reverseTemplate, values) !== exampleInput)
      throw new JsonableError('Reverse template does not reproduce the example input.');
  }
  return {
    pattern,
    urlTemplate,
    exampleInput,
    reverseTemplate,
    alternativeUrlTemplates,
  };
}

async function notifyLinkifiers(ctx: ActionContext, realmId: number): Promise<unknown[]> {
  const list = (await linkifierRows(realmId, ctx.tx)).map(presentLinkifier);
  sendEventOnCommit(
    ctx,
    { type: 'realm_linkifiers', realm_linkifiers: list },
    await activeUserIds(realmId, ctx.tx),
  );
  return list;
}

/** Django's unique_together message for RealmFilter (realm, pattern), as full_clean words it. */
function duplicate(error: unknown): never {
  if (isUniqueViolation(error))
    throw new ValidationFailureError({
      __all__: ['Realm filter with this Realm and Pattern already exists.'],
    });
  throw error;
}

export async function doAddLinkifier(
  ctx: ActionContext,
  actor: User,
  input: LinkifierInput,
): Promise<number> {
  const checked = checkLinkifierInput(input);
  const last = await ctx.tx.linkifier.aggregate({
    where: { realmId: actor.realmId },
    _max: { order: true },
  });
  const row = await ctx.tx.linkifier
    .create({
      data: { realmId: actor.realmId, order: (last._max.order ?? -1) + 1, ...checked },
    })
    .catch(duplicate);
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_LINKIFIER_ADDED, {
    id: row.id,
    ...checked,
  });
  await notifyLinkifiers(ctx, actor.realmId);
  return row.id;
}

async function accessLinkifier(ctx: ActionContext, actor: User, id: number) {
  const row = await ctx.tx.linkifier.findFirst({ where: { id, realmId: actor.realmId } });
  if (!row) throw new JsonableError('Linkifier not found.');
  return row;
}

export async function doUpdateLinkifier(
  ctx: ActionContext,
  actor: User,
  id: number,
  input: LinkifierInput,
): Promise<void> {
  const current = await accessLinkifier(ctx, actor, id);
  const checked = checkLinkifierInput(input, current);
  await ctx.tx.linkifier.update({ where: { id }, data: checked }).catch(duplicate);
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_LINKIFIER_CHANGED, { id, ...checked });
  await notifyLinkifiers(ctx, actor.realmId);
}

export async function doRemoveLinkifier(
  ctx: ActionContext,
  actor: User,
  id: number,
): Promise<void> {
  const row = await accessLinkifier(ctx, actor, id);
  await ctx.tx.linkifier.delete({ where: { id } });
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_LINKIFIER_REMOVED, {
    id,
    pattern: row.pattern,
    url_template: row.urlTemplate,
  });
  await notifyLinkifiers(ctx, actor.realmId);
}

/** Zulip's check_reorder_linkifiers: the list must name every linkifier exactly once. */
export async function doReorderLinkifiers(
  ctx: ActionContext,
  actor: User,
  orderedIds: number[],
): Promise<void> {
  if (new Set(orderedIds).size !== orderedIds.length)
    throw new JsonableError('The ordered list must not contain duplicated linkifiers');
  // Locks the rows so two concurrent reorders cannot interleave.
  const existing = await ctx.tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM realm_filter WHERE realm_id = ${actor.realmId} FOR UPDATE`;
  const ids = new Set(existing.map((row) => row.id));
  if (orderedIds.length !== ids.size || orderedIds.some((id) => !ids.has(id)))
    throw new JsonableError('The ordered list must enumerate all existing linkifiers exactly once');
  if (orderedIds.length === 0) return;
  await ctx.tx.$executeRaw`
    UPDATE realm_filter SET "order" = ordered.position - 1
    FROM unnest(${orderedIds}::int[]) WITH ORDINALITY AS ordered(id, position)
    WHERE realm_filter.id = ordered.id`;
  const list = await notifyLinkifiers(ctx, actor.realmId);
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_LINKIFIERS_REORDERED, {
    realm_linkifiers: list,
  });
}
