// PATCH /settings: the caller's own settings; each change sends a user_settings event (and a
// realm_user event where others see it). Every setting of Zulip's catalogue is accepted
// (lib/user-settings.ts). A new `email` is only asked for (actions/email-change.ts).
import { Router } from 'express';
import { rateLimitEmailChange, userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p, type Param } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doStartEmailChange } from '../actions/email-change';
import { doSetPresenceEnabled } from '../actions/presence';
import {
  checkFullName,
  doChangeEmailVisibility,
  doChangeFullName,
  doChangeSetting,
  doChangeTimezone,
  doSetPassword,
  passwordHashFor,
} from '../actions/users';
import { verifyPassword } from '../lib/credentials';
import { isValidTimezone, LANGUAGES } from '../lib/languages';
import { isAdmin } from '../lib/users';
import {
  checkedSettingChanges,
  SETTING_NAMES,
  USER_SETTINGS,
  type SettingName,
} from '../lib/user-settings';

export const settingsRoutes = Router();

type SettingValue = string | number | boolean | undefined;

const settingParams = Object.fromEntries(
  SETTING_NAMES.map((name) => [name, USER_SETTINGS[name].param]),
) as Record<SettingName, Param<SettingValue>>;

const changeSettings = userEndpoint(
  {
    humansOnly: true,
    params: {
      full_name: p.string().optional(),
      // No length limit here: a longer address is "Invalid address.", as in Zulip.
      email: p.string().optional(),
      old_password: p.string().optional(),
      new_password: p.string().optional(),
      ...settingParams,
    },
    response: schema.empty,
  },
  async ({ user, realm, params }) => {
    const fullName = params.full_name === undefined ? undefined : checkFullName(params.full_name);
    const changes = checkedSettingChanges(SETTING_NAMES, params);
    if (params.timezone !== undefined && !isValidTimezone(params.timezone as string))
      throw new JsonableError('Not a recognized time zone');
    let passwordHash: string | null = null;
    if (params.new_password !== undefined) {
      if (params.old_password === undefined) throw new JsonableError('Please fill out all fields.');
      if (!(await verifyPassword(params.old_password, user.passwordHash)))
        throw new JsonableError('Wrong password!');
      passwordHash = await passwordHashFor(params.new_password);
    }
    // Zulip's: a new address is only asked for (a link is mailed to it), counted per user.
    const newEmail = params.email?.trim();
    const changingEmail = newEmail !== undefined && newEmail !== user.deliveryEmail;
    await runAction(async (ctx) => {
      if (changingEmail) {
        await doStartEmailChange(ctx, user, realm, newEmail);
        await rateLimitEmailChange(user.id);
      }
      // The organization's name_changes_disabled: like Zulip, the request is silently not
      // applied (clients hide the field); administrators may still rename themselves.
      if (fullName !== undefined && !(realm.nameChangesDisabled && !isAdmin(user)))
        await doChangeFullName(ctx, user, fullName, user.id);
      if (passwordHash !== null) await doSetPassword(ctx, user, passwordHash, user.id);
      for (const [name, value] of changes) {
        switch (name) {
          case 'email_address_visibility':
            await doChangeEmailVisibility(ctx, realm, user, value as number);
            break;
          case 'timezone':
            await doChangeTimezone(ctx, realm, user, value as string);
            break;
          case 'default_language':
            await doChangeSetting(ctx, user, name, value, {
              language_name: LANGUAGES[value as string],
            });
            break;
          case 'presence_enabled':
            await doSetPresenceEnabled(ctx, realm, user, value as boolean);
            break;
          default:
            await doChangeSetting(ctx, user, name, value);
        }
      }
    });
    return {};
  },
);

defineRoute(settingsRoutes, '/settings', { PATCH: changeSettings });
// Zulip's aliases from before it merged the endpoints (feature level 80), which it still serves
// and the official Python client's update_notification_settings still calls.
defineRoute(settingsRoutes, '/settings/display', { PATCH: changeSettings });
defineRoute(settingsRoutes, '/settings/notifications', { PATCH: changeSettings });
