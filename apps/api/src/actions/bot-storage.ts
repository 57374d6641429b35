// Writing a bot's storage (Zulip's set_bot_storage / remove_bot_storage). Nothing is written
// when a request would exceed the limit or names a missing key. There are no events.
import { lockUserRow, type ActionContext, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { BOT_STORAGE_LIMIT, KeyDoesNotExistError, storageSizeAfter } from '../lib/bot-storage';

export async function doSetBotStorage(
  ctx: ActionContext,
  bot: User,
  entries: Map<string, string>,
): Promise<void> {
  // Serializes concurrent writes of one bot, so the size check holds.
  await lockUserRow(ctx, bot.id);
  const size = await storageSizeAfter(bot.id, entries, ctx.tx);
  if (size > BOT_STORAGE_LIMIT)
    throw new JsonableError(
      `Request exceeds storage limit by ${size - BOT_STORAGE_LIMIT} characters. The limit is ${BOT_STORAGE_LIMIT} characters.`,
    );
  if (entries.size === 0) return;
  await ctx.tx.$executeRaw`
    INSERT INTO bot_storage_data (bot_profile_id, key, value)
    SELECT ${bot.id}, k, v
    FROM unnest(${[...entries.keys()]}::text[], ${[...entries.values()]}::text[]) AS t(k, v)
    ON CONFLICT (bot_profile_id, key) DO UPDATE SET value = EXCLUDED.value`;
}

/** Removes the given keys (all of them when null); a missing key removes nothing. */
export async function doRemoveBotStorage(
  ctx: ActionContext,
  bot: User,
  keys: string[] | null,
): Promise<void> {
  if (keys === null) {
    await ctx.tx.botStorageData.deleteMany({ where: { botId: bot.id } });
    return;
  }
  const removed = await ctx.tx.botStorageData.deleteMany({
    where: { botId: bot.id, key: { in: keys } },
  });
  // Zulip counts rows against the keys given, so a repeated key also fails.
  if (removed.count < keys.length) throw new KeyDoesNotExistError();
}
