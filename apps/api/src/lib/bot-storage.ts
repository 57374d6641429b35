// A bot's key-value storage (Zulip's zerver/lib/bot_storage.py): reads and the size rule.
import { getPrisma, type Tx } from '@parley/db';
import { JsonableError } from '@parley/errors';

/** Zulip's USER_STATE_SIZE_LIMIT: keys and values together, in characters. */
export const BOT_STORAGE_LIMIT = 10_000_000;

export class KeyDoesNotExistError extends JsonableError {
  constructor() {
    super('Key does not exist.');
  }
}

/** Characters as Python counts them (code points), like Postgres's char_length. */
export const characters = (text: string) => {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
};

/** The bot's entries for `keys` (all of them when null); every key must exist. */
export async function botStorageEntries(
  botId: number,
  keys: string[] | null,
  db: Tx = getPrisma(),
): Promise<Record<string, string>> {
  const rows = await db.botStorageData.findMany({
    where: { botId, ...(keys === null ? {} : { key: { in: keys } }) },
    orderBy: { id: 'asc' },
  });
  if (keys !== null && new Set(rows.map((row) => row.key)).size < new Set(keys).size)
    throw new KeyDoesNotExistError();
  return Object.fromEntries(rows.map((row) => [row.key, row.value]));
}

/** The storage size after replacing the given entries. */
export async function storageSizeAfter(
  botId: number,
  entries: Map<string, string>,
  db: Tx,
): Promise<number> {
  const keys = [...entries.keys()];
  const [totals] = await db.$queryRaw<{ total: bigint | null; replaced: bigint | null }[]>`
    SELECT sum(char_length(key) + char_length(value)) AS total,
           sum(char_length(key) + char_length(value))
             FILTER (WHERE key = ANY(${keys}::text[])) AS replaced
    FROM bot_storage_data WHERE bot_profile_id = ${botId}`;
  const added = [...entries].reduce(
    (sum, [key, value]) => sum + characters(key) + characters(value),
    0,
  );
  return Number(totals?.total ?? 0n) - Number(totals?.replaced ?? 0n) + added;
}
