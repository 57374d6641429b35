// PATCH /settings: the caller's own settings; each change sends a user_settings event (and a
// realm_user event where others see it).
import { Router } from 'express';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import {
  checkFullName,
  doChangeEmailVisibility,
  doChangeFullName,
  doChangeSetting,
  doChangeTimezone,
  doSetPassword,
  passwordHashFor,
  SIMPLE_SETTINGS,
  type SimpleSetting,
} from '../actions/users';
import { verifyPassword } from '../lib/credentials';
import { userEndpoint } from '@parley/auth';
import { isValidTimezone, LANGUAGES } from '../lib/languages';

export const settingsRoutes = Router();

const booleanSettings = Object.fromEntries(
  Object.keys(SIMPLE_SETTINGS)
    .filter((name) => name !== 'default_language')
    .map((name) => [name, p.bool().optional()]),
) as Record<Exclude<SimpleSetting, 'default_language'>, ReturnType<typeof p.bool>>;

defineRoute(settingsRoutes, '/settings', {
  PATCH: userEndpoint(
    {
      humansOnly: true,
      params: {
        full_name: p.string().optional(),
        old_password: p.string().optional(),
        new_password: p.string().optional(),
        email_address_visibility: p.int().optional(),
        timezone: p.string({ maxLength: 40 }).optional(),
        default_language: p.string({ maxLength: 50 }).optional(),
        ...booleanSettings,
      },
    },
    async ({ user, realm, params }) => {
      const fullName = params.full_name === undefined ? undefined : checkFullName(params.full_name);
      if (
        params.email_address_visibility !== undefined &&
        ![1, 2, 3, 4, 5].includes(params.email_address_visibility)
      ) {
        throw new JsonableError('Invalid email_address_visibility');
      }
      if (params.timezone !== undefined && !isValidTimezone(params.timezone))
        throw new JsonableError('Not a recognized time zone');
      if (params.default_language !== undefined && !(params.default_language in LANGUAGES)) {
        throw new JsonableError('Invalid default_language');
      }
      let passwordHash: string | null = null;
      if (params.new_password !== undefined) {
        if (params.old_password === undefined)
          throw new JsonableError('Please fill out all fields.');
        if (!(await verifyPassword(params.old_password, user.passwordHash)))
          throw new JsonableError('Wrong password!');
        passwordHash = await passwordHashFor(params.new_password);
      }
      await runAction(async (ctx) => {
        if (fullName !== undefined) await doChangeFullName(ctx, user, fullName, user.id);
        if (passwordHash !== null) await doSetPassword(ctx, user, passwordHash, user.id);
        if (params.email_address_visibility !== undefined)
          await doChangeEmailVisibility(ctx, user, params.email_address_visibility);
        if (params.timezone !== undefined)
          await doChangeTimezone(ctx, realm, user, params.timezone);
        if (params.default_language !== undefined) {
          await doChangeSetting(ctx, user, 'default_language', params.default_language, {
            language_name: LANGUAGES[params.default_language],
          });
        }
        for (const name of Object.keys(booleanSettings) as (keyof typeof booleanSettings)[]) {
          const value = params[name];
          if (value !== undefined) await doChangeSetting(ctx, user, name, value);
        }
      });
      return {};
    },
  ),
});
