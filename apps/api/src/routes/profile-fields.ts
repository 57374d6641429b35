// Custom profile fields (spec 2.8, 4.7): GET /realm/profile_fields (everyone), POST (create)
// and PATCH (reorder) /realm/profile_fields, PATCH and DELETE /realm/profile_fields/{field_id}
// (administrators); a user's own values: PATCH and DELETE /users/me/profile_data.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkProfileData,
  checkRemoveProfileData,
  doCreateProfileField,
  doRemoveProfileField,
  doReorderProfileFields,
  doUpdateProfileData,
  doUpdateProfileField,
  type ProfileFieldInput,
} from '../actions/profile-fields';
import {
  MAX_PROFILE_DATA_ENTRIES,
  profileDataSchema,
  profileFieldRows,
} from '../lib/profile-fields';
import { presentProfileField } from '../presenters/profile-fields';

export const profileFieldRoutes = Router();

const MAX_ORDER_ENTRIES = 10_000;

// Lengths are checked by the action, with Zulip's wording, after `name` is stripped.
const fieldParams = {
  name: p.string().optional(),
  hint: p.string().optional(),
  field_data: p.json(z.record(z.string(), z.unknown())).optional(),
  display_in_profile_summary: p.bool().optional(),
  required: p.bool().optional(),
  editable_by_user: p.bool().optional(),
  use_for_user_matching: p.bool().optional(),
};

type FieldParams = {
  name?: string;
  hint?: string;
  field_data?: Record<string, unknown>;
  display_in_profile_summary?: boolean;
  required?: boolean;
  editable_by_user?: boolean;
  use_for_user_matching?: boolean;
};

const toInput = (params: FieldParams): ProfileFieldInput => ({
  name: params.name,
  hint: params.hint,
  fieldData: params.field_data,
  displayInProfileSummary: params.display_in_profile_summary,
  required: params.required,
  editableByUser: params.editable_by_user,
  useForUserMatching: params.use_for_user_matching,
});

defineRoute(profileFieldRoutes, '/realm/profile_fields', {
  GET: userEndpoint(
    { response: z.object({ custom_fields: z.array(schema.profileField) }) },
    async ({ realm }) => ({
      custom_fields: (await profileFieldRows(realm.id)).map(presentProfileField),
    }),
  ),
  POST: userEndpoint(
    {
      adminOnly: true,
      params: { ...fieldParams, field_type: p.int() },
      response: z.object({ id: schema.id }),
    },
    async ({ user, params }) => ({
      id: await runAction((ctx) =>
        doCreateProfileField(ctx, user, params.field_type, toInput(params)),
      ),
    }),
  ),
  PATCH: userEndpoint(
    {
      adminOnly: true,
      params: { order: p.json(z.array(z.number().int()).max(MAX_ORDER_ENTRIES)) },
      response: schema.empty,
    },
    async ({ user, params }) => {
      await runAction((ctx) => doReorderProfileFields(ctx, user, params.order));
      return {};
    },
  ),
});

const fieldPath = { field_id: p.int({ min: 0 }) };

defineRoute(profileFieldRoutes, '/realm/profile_fields/:field_id', {
  PATCH: userEndpoint(
    { adminOnly: true, path: fieldPath, params: fieldParams, response: schema.empty },
    async ({ user, path, params }) => {
      await runAction((ctx) => doUpdateProfileField(ctx, user, path.field_id, toInput(params)));
      return {};
    },
  ),
  DELETE: userEndpoint(
    { adminOnly: true, path: fieldPath, response: schema.empty },
    async ({ user, path }) => {
      await runAction((ctx) => doRemoveProfileField(ctx, user, path.field_id));
      return {};
    },
  ),
});

defineRoute(profileFieldRoutes, '/users/me/profile_data', {
  PATCH: userEndpoint(
    {
      humansOnly: true,
      params: { data: p.json(profileDataSchema(false)) },
      response: schema.empty,
    },
    async ({ user, params }) => {
      await runAction(async (ctx) => {
        const changes = await checkProfileData(ctx, user, user, params.data, {
          emptyClears: false,
        });
        await doUpdateProfileData(ctx, user, changes);
      });
      return {};
    },
  ),
  DELETE: userEndpoint(
    {
      humansOnly: true,
      params: { data: p.json(z.array(z.number().int()).max(MAX_PROFILE_DATA_ENTRIES)) },
      response: schema.empty,
    },
    async ({ user, params }) => {
      await runAction(async (ctx) => {
        const changes = await checkRemoveProfileData(ctx, user, user, params.data);
        await doUpdateProfileData(ctx, user, changes);
      });
      return {};
    },
  ),
});
