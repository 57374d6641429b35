// Bots: POST /bots creates one owned by the caller; GET /bots lists the caller's bots (all of
// the organization's for administrators, as in Zulip).
import { Router } from 'express';
import { z } from 'zod';
import { Role, runAction } from '@parley/db';
import { InsufficientPermissionError, JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { checkBotNameAvailable, checkCreateUser, doCreateUser } from '../actions/users';
import { userEndpoint } from '@parley/auth';
import { realmBotDomain } from '@parley/auth';
import { getBotsVisibleTo } from '../lib/bots';
import { inRealmSetting } from '../lib/realm-state';
import { membershipOf } from '../lib/user-groups-state';
import { isGuest } from '../lib/users';
import { presentBot } from '../presenters/bots';

export const botRoutes = Router();

const BotType = { GENERIC: 1, INCOMING_WEBHOOK: 2, OUTGOING_WEBHOOK: 3, EMBEDDED: 4 } as const;

defineRoute(botRoutes, '/bots', {
  GET: userEndpoint(
    { response: z.object({ bots: z.array(schema.bot) }) },
    async ({ user, realm }) => {
      const bots = await getBotsVisibleTo(user, realm);
      return { bots: bots.map((bot) => presentBot(bot, realm)) };
    },
  ),
  POST: userEndpoint(
    {
      humansOnly: true,
      params: {
        full_name: p.string({ maxLength: 100 }),
        short_name: p.string({ maxLength: 60 }),
        bot_type: p.int().default(BotType.GENERIC),
      },
      response: z.object({
        user_id: schema.id,
        api_key: z.string(),
        avatar_url: z.string(),
        default_sending_stream: z.string().nullable(),
        default_events_register_stream: z.string().nullable(),
        default_all_public_streams: z.boolean(),
      }),
    },
    async ({ user, realm, params }) => {
      if (isGuest(user)) throw new InsufficientPermissionError();
      // Zulip's check_bot_creation_policy: can_create_bots_group for any bot, or
      // can_create_write_only_bots_group for incoming webhooks.
      const membership = await membershipOf(user.id);
      if (
        !inRealmSetting(realm, 'can_create_bots_group', membership) &&
        !(
          params.bot_type === BotType.INCOMING_WEBHOOK &&
          inRealmSetting(realm, 'can_create_write_only_bots_group', membership)
        )
      )
        throw new InsufficientPermissionError();
      // Outgoing-webhook and embedded bots need a service configuration this server does not
      // keep yet; refusing them is clearer than creating bots that never answer.
      if (params.bot_type !== BotType.GENERIC && params.bot_type !== BotType.INCOMING_WEBHOOK) {
        throw new JsonableError('Invalid bot_type');
      }
      const shortName = params.short_name.trim().toLowerCase().replace(/-bot$/, '');
      // A local part Django's validator accepts: no leading, trailing or doubled dots.
      if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(shortName))
        throw new JsonableError('Bad name or username');
      const email = `${shortName}-bot@${realmBotDomain(realm)}`;
      const bot = await runAction(async (ctx) => {
        const fields = await checkCreateUser(ctx.tx, realm, {
          email,
          fullName: params.full_name,
          password: null,
          role: Role.MEMBER,
          isBot: true,
          botType: params.bot_type,
          botOwnerId: user.id,
        });
        await checkBotNameAvailable(ctx.tx, realm, fields.fullName);
        return doCreateUser(ctx, realm, fields, null, user.id);
      });
      const presented = presentBot(bot, realm);
      return {
        user_id: bot.id,
        api_key: bot.apiKey,
        avatar_url: presented.avatar_url,
        default_sending_stream: null,
        default_events_register_stream: null,
        default_all_public_streams: false,
      };
    },
  ),
});
