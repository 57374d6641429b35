// Reading bots (Zulip's get_owned_bot_dicts): the caller's own, or all of the organization's
// for administrators; and reaching one bot to manage it (Zulip's access_bot_by_id).
import { getPrisma, type Realm, type Tx, type User } from '@parley/db';
import {
  InsufficientPermissionError,
  JsonableError,
  OrganizationOwnerRequiredError,
} from '@parley/errors';
import { canAdminUser, isAdmin, isOwner } from './users';

export async function getBotsVisibleTo(user: User, realm: Pick<Realm, 'id'>): Promise<User[]> {
  return getPrisma().user.findMany({
    where: { realmId: realm.id, isBot: true, ...(isAdmin(user) ? {} : { botOwnerId: user.id }) },
    orderBy: { id: 'asc' },
  });
}

/** A bot of the actor's organization that the actor administers (its owner, or an
 * administrator); deactivated bots included. A bot that may create users is an owner's to
 * manage. */
export async function accessBotById(
  actor: User,
  botId: number,
  db: Tx = getPrisma(),
): Promise<User> {
  const target =
    Number.isSafeInteger(botId) && botId >= 0 && botId <= 2 ** 31 - 1
      ? await db.user.findFirst({ where: { id: botId, realmId: actor.realmId } })
      : null;
  if (!target || !target.isBot) throw new JsonableError('No such bot');
  if (!canAdminUser(actor, target)) throw new InsufficientPermissionError();
  if (target.canCreateUsers && !isOwner(actor)) throw new OrganizationOwnerRequiredError();
  return target;
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
