// Bots (Zulip's add_bot_backend, get_bots_backend, patch_bot_backend, deactivate_bot_backend
// and regenerate_bot_api_key): POST /bots creates one owned by the caller; GET /bots lists the
// caller's own active bots (administrators too; /register's realm_bots has every bot for
// them); PATCH and DELETE /bots/{id} and POST /bots/{id}/api_key/regenerate manage one, for its
// owner or an administrator. POST and PATCH take an avatar as a file (multipart), so they are
// parsed with the uploads.
import { Router } from 'express';
import { z } from 'zod';
import { Role, runAction, type Realm, type User } from '@parley/db';
import {
  InsufficientPermissionError,
  JsonableError,
  OrganizationAdministratorRequiredError,
  OrganizationOwnerRequiredError,
} from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import { realmBotDomain, userEndpoint } from '@parley/auth';
import * as schema from '../presenters/schemas';
import {
  checkBotNameAvailable,
  checkCreateUser,
  checkFullName,
  checkRole,
  doCreateUser,
  doRegenerateApiKey,
} from '../actions/users';
import { checkBotUsernameAvailable, doDeactivateBot, doUpdateBot } from '../actions/bots';
import { MAX_AVATAR_FILE_BYTES, prepareAvatar } from '../actions/avatars';
import { removeAvatarFiles } from '../lib/avatars';
import { botDefaultStreamNames, getOwnedActiveBots } from '../lib/bots';
import { inRealmSetting } from '../lib/realm-state';
import { accessStreamByName, loadPermissions } from '../lib/streams';
import { membershipOf } from '../lib/user-groups-state';
import { accessBotById, apiEmailFor, isAdmin, isOwner, requireMemberOrAdmin } from '../lib/users';
import { isSystemBot } from '../lib/system-bots';
import { presentBot, streamNameOf } from '../presenters/bots';
import { avatarUrl } from '../presenters/users';
import { uploadedFiles, uploadLimits } from './uploads';

/** GET /bots and the bot's management without a file: mounted after the body parsers. */
export const botRoutes = Router();
/** POST /bots and PATCH /bots/{id}, which may carry an avatar: mounted before them. */
export const botUploadRoutes = Router();

const ATOM = "[-!#$%&'*+/=?^_`{}|~0-9A-Za-z]+";
const BOT_LOCAL_PART = new RegExp(`^${ATOM}(\\.${ATOM})*$`);

const BotType = { GENERIC: 1, INCOMING_WEBHOOK: 2, OUTGOING_WEBHOOK: 3, EMBEDDED: 4 } as const;

const botPath = { bot: p.string({ maxLength: 20 }) };

/** Zulip's access_bot_by_id for the path's bot: the organization's system bots are not
 * there (Zulip keeps them in an organization of their own), nor is a deleted bot (Zulip's
 * placeholder for it is no bot). */
function accessBot(actor: User, raw: string): Promise<User> {
  if (!/^\d{1,10}$/.test(raw)) throw new JsonableError('No such bot');
  return accessBotById(actor, Number(raw), {
    hidden: (bot) => isSystemBot(bot) || bot.isDeleted,
  });
}

/** The one avatar file of a bot request, if any (Zulip: "You may only upload one file at a
 * time"), resized and stored before anything changes: its name. */
async function preparedBotAvatar(req: Parameters<typeof uploadedFiles>[0], realm: Realm) {
  const files = uploadedFiles(req);
  if (files.length > 1) throw new JsonableError('You may only upload one file at a time');
  return files.length === 1 ? prepareAvatar(realm, files[0]!) : null;
}

/** A default channel by name (Zulip's access_stream_by_name); '' clears it. */
async function defaultStreamOf(
  actor: User,
  name: string | undefined,
): Promise<{ id: number; name: string } | null | undefined> {
  if (name === undefined) return undefined;
  if (name === '') return null;
  const { stream } = await accessStreamByName(await loadPermissions(actor), name);
  return { id: stream.id, name: stream.name };
}

const defaultParams = {
  default_sending_stream: p.string({ maxLength: 60 }).optional(),
  default_events_register_stream: p.string({ maxLength: 60 }).optional(),
  default_all_public_streams: p.json(z.boolean()).optional(),
};

defineRoute(botRoutes, '/bots', {
  GET: userEndpoint(
    { response: z.object({ bots: z.array(schema.bot.extend({ username: z.string() })) }) },
    async ({ user, realm }) => {
      requireMemberOrAdmin(user);
      const bots = await getOwnedActiveBots(user);
      const streamNames = await botDefaultStreamNames(bots);
      // Zulip's keys (username is the bot's address) with those of realm_bot's objects.
      return {
        bots: bots.map((bot) => ({
          username: bot.deliveryEmail,
          ...presentBot(bot, realm, streamNames),
        })),
      };
    },
  ),
});

defineRoute(
  botUploadRoutes,
  '/bots',
  {
    POST: userEndpoint(
      {
        uploads: () => uploadLimits(MAX_AVATAR_FILE_BYTES),
        params: {
          // checkFullName bounds it, with Zulip's "Name too long!".
          full_name: p.string(),
          short_name: p.string({ maxLength: 60 }),
          bot_type: p.int().default(BotType.GENERIC),
          ...defaultParams,
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
      async ({ user, realm, params, req }) => {
        requireMemberOrAdmin(user);
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
        // keep yet; refusing them is clearer than creating bots that never answer. Zulip's
        // answers: embedded bots disabled (its default), other types not allowed here.
        if (params.bot_type === BotType.EMBEDDED)
          throw new JsonableError('Embedded bots are not enabled.');
        if (params.bot_type !== BotType.GENERIC && params.bot_type !== BotType.INCOMING_WEBHOOK) {
          throw new JsonableError('Invalid bot type');
        }
        // Zulip's check_short_name trims; "-bot" always follows, in the case typed.
        const shortName = params.short_name.trim();
        // A local part Django's EmailValidator accepts (dot-atom): no leading, trailing or
        // doubled dots.
        if (shortName === '' || !BOT_LOCAL_PART.test(`${shortName}-bot`))
          throw new JsonableError('Bad name or username');
        const email = `${shortName}-bot@${realmBotDomain(realm)}`;
        const sending = await defaultStreamOf(user, params.default_sending_stream);
        const registering = await defaultStreamOf(user, params.default_events_register_stream);
        const avatarHash = await preparedBotAvatar(req, realm);
        let bot: User;
        try {
          bot = await runAction(async (ctx) => {
            await checkBotUsernameAvailable(ctx, realm, email);
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
            return doCreateUser(
              ctx,
              realm,
              {
                ...fields,
                avatarHash,
                botDefaults: {
                  sendingStreamId: sending?.id ?? null,
                  eventsRegisterStreamId: registering?.id ?? null,
                  allPublicStreams: params.default_all_public_streams ?? false,
                },
              },
              null,
              user.id,
            );
          });
        } catch (error) {
          if (avatarHash !== null) await removeAvatarFiles(realm.id, avatarHash);
          throw error;
        }
        return {
          user_id: bot.id,
          api_key: bot.apiKey,
          avatar_url: avatarUrl(bot, true, realm),
          default_sending_stream: sending?.name ?? null,
          default_events_register_stream: registering?.name ?? null,
          default_all_public_streams: bot.defaultAllPublicStreams,
        };
      },
    ),
  },
  { otherMethods: 'pass' },
);

defineRoute(
  botUploadRoutes,
  '/bots/:bot',
  {
    PATCH: userEndpoint(
      {
        uploads: () => uploadLimits(MAX_AVATAR_FILE_BYTES),
        path: botPath,
        params: {
          full_name: p.string().optional(),
          role: p.json(z.number().int()).optional(),
          bot_owner_id: p.json(z.number().int()).optional(),
          ...defaultParams,
        },
        response: z.object({
          full_name: z.string(),
          avatar_url: z.string(),
          service_interface: z.number().int(),
          service_payload_url: z.string().nullable(),
          config_data: z.record(z.string(), z.string()).nullable(),
          default_sending_stream: z.string().nullable(),
          default_events_register_stream: z.string().nullable(),
          default_all_public_streams: z.boolean(),
          bot_owner: z.string().optional(),
        }),
      },
      async ({ user, realm, path, params, req }) => {
        requireMemberOrAdmin(user);
        const bot = await accessBot(user, path.bot);
        const fullName =
          params.full_name === undefined ? undefined : checkFullName(params.full_name);
        const role = params.role === undefined ? undefined : checkRole(params.role);
        // As Zulip's patch_bot_backend: the owner role is an owner's to give or take, any other
        // an administrator's.
        if (role !== undefined && role !== bot.role) {
          if ((role === Role.OWNER || bot.role === Role.OWNER) && !isOwner(user))
            throw new OrganizationOwnerRequiredError();
          if (!isAdmin(user)) throw new OrganizationAdministratorRequiredError();
        }
        const sending = await defaultStreamOf(user, params.default_sending_stream);
        const registering = await defaultStreamOf(user, params.default_events_register_stream);
        const avatarHash = await preparedBotAvatar(req, realm);
        let updated: Awaited<ReturnType<typeof doUpdateBot>>;
        try {
          updated = await runAction((ctx) =>
            doUpdateBot(ctx, realm, user, bot.id, {
              fullName,
              role,
              ownerId: params.bot_owner_id,
              defaultSendingStream: sending,
              defaultEventsRegisterStream: registering,
              defaultAllPublicStreams: params.default_all_public_streams,
              avatarHash,
            }),
          );
        } catch (error) {
          if (avatarHash !== null) await removeAvatarFiles(realm.id, avatarHash);
          throw error;
        }
        await removeAvatarFiles(realm.id, updated.replacedAvatar);
        const { bot: changed, owner } = updated;
        const streamNames = await botDefaultStreamNames([changed]);
        return {
          full_name: changed.fullName,
          avatar_url: avatarUrl(changed, true, realm),
          // Outgoing-webhook services are not kept here (see POST /bots): these are what Zulip
          // answers when none is given.
          service_interface: 1,
          service_payload_url: null,
          config_data: null,
          default_sending_stream: streamNameOf(changed.defaultSendingStreamId, streamNames),
          default_events_register_stream: streamNameOf(
            changed.defaultEventsRegisterStreamId,
            streamNames,
          ),
          default_all_public_streams: changed.defaultAllPublicStreams,
          ...(owner ? { bot_owner: apiEmailFor(user, owner, realm) } : {}),
        };
      },
    ),
  },
  { otherMethods: 'pass' },
);

defineRoute(botRoutes, '/bots/:bot', {
  DELETE: userEndpoint({ path: botPath, response: schema.empty }, async ({ user, path }) => {
    const bot = await accessBot(user, path.bot);
    await runAction((ctx) => doDeactivateBot(ctx, bot, user.id));
    return {};
  }),
});

defineRoute(botRoutes, '/bots/:bot/api_key/regenerate', {
  POST: userEndpoint(
    { path: botPath, response: z.object({ api_key: z.string() }) },
    async ({ user, path }) => {
      requireMemberOrAdmin(user);
      const bot = await accessBot(user, path.bot);
      const apiKey = await runAction((ctx) => doRegenerateApiKey(ctx, bot, user.id));
      return { api_key: apiKey };
    },
  ),
});
