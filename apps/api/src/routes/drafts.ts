// Drafts (spec 2.5, 4.9): GET and POST /drafts, PATCH and DELETE /drafts/{draft_id}, for
// users who synchronize their drafts (enable_drafts_synchronization).
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkDraft,
  checkEditDraft,
  doCreateDrafts,
  doDeleteDraft,
  type CheckedDraft,
} from '../actions/drafts';
import { checkDraftsSynchronized, draftsOf } from '../lib/drafts';
import { presentDraft } from '../presenters/drafts';

export const draftRoutes = Router();

/** The last second a timestamp column (and Python's datetime) can hold: 9999-12-31. */
const MAX_TIMESTAMP = 253_402_300_799;

/** Zulip's DraftData: no other keys; content stripped and not blank. */
const draftSchema = z.strictObject({
  type: z.enum(['', 'stream', 'private']),
  to: z.array(z.number().int()),
  topic: z.string(),
  content: z.string().trim().min(1),
  timestamp: z.number().max(MAX_TIMESTAMP).nullable().optional(),
});

defineRoute(draftRoutes, '/drafts', {
  GET: userEndpoint(
    { response: z.object({ count: z.int(), drafts: z.array(schema.draft) }) },
    async ({ user }) => {
      checkDraftsSynchronized(user);
      const drafts = (await draftsOf(user.id)).map(presentDraft);
      return { count: drafts.length, drafts };
    },
  ),
  POST: userEndpoint(
    { params: { drafts: p.json(z.array(draftSchema)) }, response: z.object({ ids: schema.ids }) },
    async ({ user, realm, params }) => {
      checkDraftsSynchronized(user);
      const now = Date.now();
      const checked: CheckedDraft[] = [];
      for (const draft of params.drafts) checked.push(await checkDraft(user, realm, draft, now));
      return { ids: await runAction((ctx) => doCreateDrafts(ctx, user, checked)) };
    },
  ),
});

const draftPath = { draft_id: p.int() };

defineRoute(draftRoutes, '/drafts/:draft_id', {
  PATCH: userEndpoint(
    { path: draftPath, params: { draft: p.json(draftSchema) }, response: schema.empty },
    async ({ user, realm, path, params }) => {
      checkDraftsSynchronized(user);
      await runAction((ctx) => checkEditDraft(ctx, user, realm, path.draft_id, params.draft));
      return {};
    },
  ),
  DELETE: userEndpoint({ path: draftPath, response: schema.empty }, async ({ user, path }) => {
    checkDraftsSynchronized(user);
    await runAction((ctx) => doDeleteDraft(ctx, user, path.draft_id));
    return {};
  }),
});
