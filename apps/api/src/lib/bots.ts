// Reading bots (Zulip's get_owned_bot_dicts): the caller's own, or all of the organization's
// for administrators.
import { getPrisma, type Realm, type User } from '@parley/db';
import { isAdmin } from './users';

export async function getBotsVisibleTo(user: User, realm: Pick<Realm, 'id'>): Promise<User[]> {
  return getPrisma().user.findMany({
    where: { realmId: realm.id, isBot: true, ...(isAdmin(user) ? {} : { botOwnerId: user.id }) },
    orderBy: { id: 'asc' },
  });
}
