// Saved snippets (spec 2.11, 4.19): GET and POST /saved_snippets (feature level 297), PATCH
// (feature level 368) and DELETE /saved_snippets/{saved_snippet_id}.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p, Param } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  doCreateSavedSnippet,
  doDeleteSavedSnippet,
  doEditSavedSnippet,
} from '../actions/saved-snippets';
import {
  MAX_SNIPPET_CONTENT_LENGTH,
  MAX_SNIPPET_TITLE_LENGTH,
  savedSnippetsOf,
} from '../lib/saved-snippets';
import { codePoints } from '../lib/text';
import { presentSavedSnippet } from '../presenters/saved-snippets';

export const savedSnippetRoutes = Router();

/** Zulip's StringConstraints(min_length=1, max_length, strip_whitespace=True): stripped, then
 * "… cannot be blank" or "… is too long (limit: N characters)", counted in code points. */
function strippedText(maxLength: number): Param<string> {
  const schema = z
    .string()
    .trim()
    .min(1)
    .superRefine((value, ctx) => {
      if (codePoints(value) > maxLength)
        ctx.addIssue({ code: 'too_big', origin: 'string', maximum: maxLength, input: value });
    });
  return new Param<string>(schema, 'text');
}

const title = strippedText(MAX_SNIPPET_TITLE_LENGTH);
const content = strippedText(MAX_SNIPPET_CONTENT_LENGTH);

defineRoute(savedSnippetRoutes, '/saved_snippets', {
  GET: userEndpoint(
    { response: z.object({ saved_snippets: z.array(schema.savedSnippet) }) },
    async ({ user }) => ({
      saved_snippets: (await savedSnippetsOf(user.id)).map(presentSavedSnippet),
    }),
  ),
  POST: userEndpoint(
    { params: { title, content }, response: z.object({ saved_snippet_id: schema.id }) },
    async ({ user, params }) => ({
      saved_snippet_id: await runAction((ctx) =>
        doCreateSavedSnippet(ctx, user, params.title, params.content),
      ),
    }),
  ),
});

const snippetPath = { saved_snippet_id: p.int() };

defineRoute(savedSnippetRoutes, '/saved_snippets/:saved_snippet_id', {
  PATCH: userEndpoint(
    {
      path: snippetPath,
      params: { title: title.optional(), content: content.optional() },
      response: schema.empty,
    },
    async ({ user, path, params }) => {
      // Nothing to change: Zulip answers at once, without an event.
      if (params.title === undefined && params.content === undefined) return {};
      const changes = {
        ...(params.title !== undefined && { title: params.title }),
        ...(params.content !== undefined && { content: params.content }),
      };
      await runAction((ctx) => doEditSavedSnippet(ctx, user, path.saved_snippet_id, changes));
      return {};
    },
  ),
  DELETE: userEndpoint({ path: snippetPath, response: schema.empty }, async ({ user, path }) => {
    await runAction((ctx) => doDeleteSavedSnippet(ctx, user, path.saved_snippet_id));
    return {};
  }),
});
