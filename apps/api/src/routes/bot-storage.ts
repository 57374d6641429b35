// GET, PUT and DELETE /bot_storage: a bot's own key-value storage.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint, type UserEndpointInput } from '@parley/auth';
import { runAction } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { defineRoute, p } from '@parley/http';
import { doRemoveBotStorage, doSetBotStorage } from '../actions/bot-storage';
import { botStorageEntries } from '../lib/bot-storage';

export const botStorageRoutes = Router();

const MAX_KEYS_PER_REQUEST = 10_000;
const keysParam = p.json(z.array(z.string()).max(MAX_KEYS_PER_REQUEST).nullable()).optional();

function requireBot({ user }: Pick<UserEndpointInput<never, never>, 'user'>): void {
  if (!user.isBot) throw new JsonableError('Must be a bot user');
}

defineRoute(botStorageRoutes, '/bot_storage', {
  GET: userEndpoint({ params: { keys: keysParam } }, async (input) => {
    requireBot(input);
    return { storage: await botStorageEntries(input.user.id, input.params.keys ?? null) };
  }),
  PUT: userEndpoint(
    { params: { storage: p.json(z.record(z.string(), z.string())) } },
    async (input) => {
      requireBot(input);
      await runAction((ctx) => doSetBotStorage(ctx, input.user, input.params.storage));
      return {};
    },
  ),
  DELETE: userEndpoint({ params: { keys: keysParam } }, async (input) => {
    requireBot(input);
    const keys = input.params.keys ?? null;
    await runAction((ctx) => doRemoveBotStorage(ctx, input.user, keys));
    return {};
  }),
});
