// GET, PUT and DELETE /bot_storage: a bot's own key-value storage.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint, type UserEndpointInput } from '@parley/auth';
import { runAction } from '@parley/db';
import { ApiParamValidationError, JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import { doRemoveBotStorage, doSetBotStorage } from '../actions/bot-storage';
import { botStorageEntries } from '../lib/bot-storage';

export const botStorageRoutes = Router();

const MAX_KEYS_PER_REQUEST = 10_000;
const keysParam = p.json(z.array(z.string()).max(MAX_KEYS_PER_REQUEST).nullable()).optional();

/** A JSON object of strings, kept as parsed: copying it into a plain object (as a zod record
 * does) would turn a "__proto__" key into a prototype and lose it. */
function checkStorage(value: unknown): Map<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ApiParamValidationError('storage is not a dict');
  const entries = new Map<string, string>();
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string')
      throw new ApiParamValidationError(`storage["${key}"] is not a string`);
    entries.set(key, entry);
  }
  return entries;
}

function requireBot({ user }: Pick<UserEndpointInput<never, never>, 'user'>): void {
  if (!user.isBot) throw new JsonableError('Must be a bot user');
}

defineRoute(botStorageRoutes, '/bot_storage', {
  GET: userEndpoint(
    {
      params: { keys: keysParam },
      response: z.object({ storage: z.record(z.string(), z.string()) }),
    },
    async (input) => {
      requireBot(input);
      return { storage: await botStorageEntries(input.user.id, input.params.keys ?? null) };
    },
  ),
  PUT: userEndpoint(
    { params: { storage: p.json(z.unknown()) }, response: schema.empty },
    async (input) => {
      requireBot(input);
      const storage = checkStorage(input.params.storage);
      await runAction((ctx) => doSetBotStorage(ctx, input.user, storage));
      return {};
    },
  ),
  DELETE: userEndpoint({ params: { keys: keysParam }, response: schema.empty }, async (input) => {
    requireBot(input);
    const keys = input.params.keys ?? null;
    await runAction((ctx) => doRemoveBotStorage(ctx, input.user, keys));
    return {};
  }),
});
