// Code playgrounds (POST and DELETE /realm/playgrounds; Zulip's check_add_realm_playground and
// do_remove_realm_playground): administrators add and remove them, each change is audited and
// the whole list goes to everyone in a realm_playgrounds event.
import { AuditLogEvent, isUniqueViolation, type ActionContext, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { templateVariables } from '@parley/markdown';
import { sendEventOnCommit } from '../lib/events';
import { playgroundsOf, type PlaygroundEntry } from '../lib/playgrounds';
import { codePoints } from '../lib/text';
import { activeUserIds } from '../lib/users';
import { auditRealmChange } from './audit';

/** Zulip's RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH. */
export const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;

export interface PlaygroundInput {
  name: string;
  pygmentsLanguage: string;
  urlTemplate: string;
}

/** Zulip's checks in its order: the language (length, then characters) as the view parses
 * it, then the model's full_clean (the template, a name, then the template's variables). */
export function checkPlayground(raw: PlaygroundInput): PlaygroundInput {
  if (codePoints(raw.pygmentsLanguage) > MAX_PYGMENTS_LANGUAGE_LENGTH)
    throw new JsonableError(
      `pygments_language is too long (limit: ${MAX_PYGMENTS_LANGUAGE_LENGTH} characters)`,
    );
  if (!/^[ a-zA-Z0-9_+\-./#]*$/.test(raw.pygmentsLanguage))
    throw new JsonableError('Invalid characters in pygments language');
  const input = {
    name: raw.name.trim(),
    pygmentsLanguage: raw.pygmentsLanguage.trim(),
    urlTemplate: raw.urlTemplate.trim(),
  };
  const variables = templateVariables(input.urlTemplate);
  if (variables === null) throw new JsonableError('Invalid URL template.');
  if (input.name === '' || input.pygmentsLanguage === '')
    throw new JsonableError('This field cannot be blank.');
  if (!variables.has('code'))
    throw new JsonableError('Missing the required variable "code" in the URL template');
  if (variables.size !== 1)
    throw new JsonableError('"code" should be the only variable present in the URL template');
  return input;
}

async function notifyPlaygrounds(ctx: ActionContext, realmId: number): Promise<PlaygroundEntry[]> {
  const list = await playgroundsOf(realmId);
  sendEventOnCommit(
    ctx,
    { type: 'realm_playgrounds', realm_playgrounds: list },
    await activeUserIds(realmId, ctx.tx),
  );
  return list;
}

export async function doAddPlayground(
  ctx: ActionContext,
  actor: User,
  input: PlaygroundInput,
): Promise<number> {
  const row = await ctx.tx.realmPlayground
    .create({ data: { realmId: actor.realmId, ...input } })
    .catch((error: unknown) => {
      if (isUniqueViolation(error))
        throw new JsonableError(
          'Realm playground with this Realm, Pygments language and Name already exists.',
        );
      throw error;
    });
  const list = await notifyPlaygrounds(ctx, actor.realmId);
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_PLAYGROUND_ADDED, {
    realm_playgrounds: list,
    added_playground: list.find((entry) => entry.id === row.id),
  });
  return row.id;
}

export async function doRemovePlayground(
  ctx: ActionContext,
  actor: User,
  playgroundId: number,
): Promise<void> {
  const row = await ctx.tx.realmPlayground.findFirst({
    where: { id: playgroundId, realmId: actor.realmId },
  });
  if (!row) throw new JsonableError('Invalid playground');
  await ctx.tx.realmPlayground.delete({ where: { id: row.id } });
  const list = await notifyPlaygrounds(ctx, actor.realmId);
  await auditRealmChange(ctx, actor, AuditLogEvent.REALM_PLAYGROUND_REMOVED, {
    realm_playgrounds: list,
    removed_playground: {
      name: row.name,
      pygments_language: row.pygmentsLanguage,
      url_template: row.urlTemplate,
    },
  });
}
