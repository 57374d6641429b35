// Linkifiers: GET/PATCH /realm/linkifiers (list, reorder), POST /realm/filters (spec 4.18),
// PATCH and DELETE /realm/filters/{filter_id} (spec 4.13). Changes are for administrators.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  doAddLinkifier,
  doRemoveLinkifier,
  doReorderLinkifiers,
  doUpdateLinkifier,
} from '../actions/linkifiers';
import { linkifierRows } from '../lib/linkifiers';
import { presentLinkifier } from '../presenters/linkifiers';

export const linkifierRoutes = Router();

// Patterns are stored under a unique index, whose entries Postgres limits to about 2.7 kB.
const MAX_PATTERN_LENGTH = 500;
const MAX_TEMPLATE_LENGTH = 1024;
const MAX_ALTERNATIVES = 20;

const linkifierParams = {
  pattern: p.string({ maxLength: MAX_PATTERN_LENGTH }),
  url_template: p.string({ maxLength: MAX_TEMPLATE_LENGTH }),
  example_input: p.string({ maxLength: MAX_TEMPLATE_LENGTH }).optional(),
  reverse_template: p.string({ maxLength: MAX_TEMPLATE_LENGTH }).optional(),
  alternative_url_templates: p
    .json(z.array(z.string().max(MAX_TEMPLATE_LENGTH)).max(MAX_ALTERNATIVES))
    .optional(),
};

type LinkifierParams = {
  pattern: string;
  url_template: string;
  example_input?: string;
  reverse_template?: string;
  alternative_url_templates?: string[];
};

const toInput = (params: LinkifierParams) => ({
  pattern: params.pattern,
  urlTemplate: params.url_template,
  exampleInput: params.example_input,
  reverseTemplate: params.reverse_template,
  alternativeUrlTemplates: params.alternative_url_templates,
});

defineRoute(linkifierRoutes, '/realm/linkifiers', {
  GET: userEndpoint(
    { response: z.object({ linkifiers: z.array(schema.linkifier) }) },
    async ({ realm }) => ({
      linkifiers: (await linkifierRows(realm.id)).map(presentLinkifier),
    }),
  ),
  PATCH: userEndpoint(
    {
      adminOnly: true,
      params: { ordered_linkifier_ids: p.json(z.array(z.number().int()).max(10_000)) },
      response: schema.empty,
    },
    async ({ user, params }) => {
      await runAction((ctx) => doReorderLinkifiers(ctx, user, params.ordered_linkifier_ids));
      return {};
    },
  ),
});

defineRoute(linkifierRoutes, '/realm/filters', {
  POST: userEndpoint(
    { adminOnly: true, params: linkifierParams, response: z.object({ id: schema.id }) },
    async ({ user, params }) => ({
      id: await runAction((ctx) => doAddLinkifier(ctx, user, toInput(params))),
    }),
  ),
});

const filterPath = { filter_id: p.int({ min: 0 }) };

defineRoute(linkifierRoutes, '/realm/filters/:filter_id', {
  PATCH: userEndpoint(
    { adminOnly: true, path: filterPath, params: linkifierParams, response: schema.empty },
    async ({ user, path, params }) => {
      await runAction((ctx) => doUpdateLinkifier(ctx, user, path.filter_id, toInput(params)));
      return {};
    },
  ),
  DELETE: userEndpoint(
    { adminOnly: true, path: filterPath, response: schema.empty },
    async ({ user, path }) => {
      await runAction((ctx) => doRemoveLinkifier(ctx, user, path.filter_id));
      return {};
    },
  ),
});
