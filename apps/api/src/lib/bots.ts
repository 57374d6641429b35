// Reading bots: the caller's own (GET /bots); who hears of a bot's changes; its default
// channels' names.
import { getPrisma, type Tx, type User } from '@parley/db';
import { humanAdminIds } from './users';
import { isSystemBot } from './system-bots';

/** GET /bots (Zulip's get_bots_backend): the caller's own active bots, oldest first, whatever
 * the caller's role (administrators see every bot in /register's realm_bots). */
export async function getOwnedActiveBots(user: User): Promise<User[]> {
  return getPrisma().user.findMany({
    where: { realmId: user.realmId, isBot: true, isActive: true, botOwnerId: user.id },
    orderBy: [{ dateJoined: 'asc' }, { id: 'asc' }],
  });
}

/** Who is told of changes to a bot (Zulip's bot_owner_user_ids): its owner and the human
 * administrators, or only its owner when one of its default channels is private. */
export async function botAudience(
  bot: Pick<
    User,
    | 'realmId'
    | 'isBot'
    | 'botOwnerId'
    | 'email'
    | 'defaultSendingStreamId'
    | 'defaultEventsRegisterStreamId'
  >,
  db: Tx = getPrisma(),
): Promise<Set<number>> {
  // No bot list shows the system bots (/register's realm_bots).
  if (isSystemBot(bot)) return new Set();
  const defaults = [bot.defaultSendingStreamId, bot.defaultEventsRegisterStreamId].filter(
    (id): id is number => id !== null,
  );
  const isPrivate =
    defaults.length > 0 &&
    (await db.stream.count({ where: { id: { in: defaults }, inviteOnly: true } })) > 0;
  const audience = new Set(isPrivate ? [] : await humanAdminIds(bot.realmId, db));
  if (bot.botOwnerId !== null) audience.add(bot.botOwnerId);
  return audience;
}

/** The names of the bots' default channels, by id (bot objects carry names, as Zulip's). */
export async function botDefaultStreamNames(
  bots: Pick<User, 'defaultSendingStreamId' | 'defaultEventsRegisterStreamId'>[],
  db: Tx = getPrisma(),
): Promise<Map<number, string>> {
  const ids = new Set<number>();
  for (const bot of bots) {
    if (bot.defaultSendingStreamId !== null) ids.add(bot.defaultSendingStreamId);
    if (bot.defaultEventsRegisterStreamId !== null) ids.add(bot.defaultEventsRegisterStreamId);
  }
  if (ids.size === 0) return new Map();
  const streams = await db.stream.findMany({
    where: { id: { in: [...ids] } },
    select: { id: true, name: true },
  });
  return new Map(streams.map((stream) => [stream.id, stream.name]));
}
