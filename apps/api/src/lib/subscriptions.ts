// Reading subscriptions for the subscription endpoints: the caller's list with its channels'
// details, the users a request names as principals, subscription checks in bulk.
import {
  getPrisma,
  idsByLowerEquals,
  type Realm,
  type Stream,
  type Tx,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { presentSubscription } from '../presenters/streams';
import { loadStreamDetails } from './streams';
import { canSeeDeliveryEmail, dummyEmailUserId } from './users';

/** Zulip's MAX_BULK_NEW_SUBSCRIPTION_MESSAGES (POST /register's
 * max_bulk_new_subscription_messages): a request that subscribes more people than this sends
 * them no Notification Bot messages. */
export const MAX_BULK_NEW_SUBSCRIPTION_MESSAGES = 100;

/** The caller's active subscriptions to unarchived channels, sorted by name. */
export async function subscriptionsOf(
  user: User,
  realm: Realm,
  withSubscribers: boolean,
  { includeArchived = false, db = getPrisma() as Tx } = {},
): Promise<Record<string, unknown>[]> {
  const rows = await db.subscription.findMany({
    where: { userId: user.id, active: true, recipient: { type: 2 } },
  });
  const streams = await db.stream.findMany({
    where: {
      recipientId: { in: rows.map((row) => row.recipientId) },
      ...(includeArchived ? {} : { deactivated: false }),
    },
    orderBy: { name: 'asc' },
  });
  const details = await loadStreamDetails(realm.id, streams, { withSubscribers });
  return streams.map((stream) =>
    presentSubscription(
      stream,
      rows.find((row) => row.recipientId === stream.recipientId)!,
      details.context(stream),
      withSubscribers ? { subscribers: details.subscribers.get(stream.id) ?? [] } : null,
    ),
  );
}

/** Zulip's bulk_principals_to_user_profiles: all ids or all emails; unknown users (and users
 * whose address the caller may not see) are "No such user", deactivated ones refused. */
export async function resolvePrincipals(
  tx: Tx,
  actor: User,
  realm: Realm,
  principals: number[] | string[],
): Promise<User[]> {
  const wanted = new Set<number>();
  const emails: string[] = [];
  for (const principal of principals) {
    if (typeof principal === 'number') wanted.add(principal);
    else {
      // The dummy form user{id}@{realm host} names users whose address is hidden.
      const dummy = dummyEmailUserId(realm, principal);
      if (dummy === null) emails.push(principal.trim());
      else wanted.add(dummy);
    }
  }
  const byEmail = await tx.user.findMany({
    where: {
      id: { in: await idsByLowerEquals(tx, 'user_profile', 'delivery_email', realm.id, emails) },
    },
  });
  // An address the caller may not see does not find its user.
  const visibleByEmail = byEmail.filter((target) => canSeeDeliveryEmail(actor, target));
  if (
    new Set(visibleByEmail.map((u) => u.deliveryEmail.toLowerCase())).size !==
    new Set(emails.map((e) => e.toLowerCase())).size
  )
    throw new JsonableError('No such user');
  const byId = await tx.user.findMany({ where: { id: { in: [...wanted] }, realmId: realm.id } });
  if (byId.length !== wanted.size) throw new JsonableError('No such user');
  const users = [...new Map([...byId, ...visibleByEmail].map((u) => [u.id, u])).values()];
  if (users.some((target) => !target.isActive)) throw new JsonableError('User is deactivated');
  return users;
}

/** The user a path names, as Zulip's access_user_by_id (for_admin false): a person, active. */
export async function userByPathSegment(actor: User, realm: Realm, segment: string): Promise<User> {
  if (segment === 'me') return actor;
  if (!/^\d{1,10}$/.test(segment) || Number(segment) > 2 ** 31 - 1)
    throw new JsonableError('No such user');
  const target = await getPrisma().user.findFirst({
    where: { id: Number(segment), realmId: realm.id },
  });
  if (!target || target.isBot) throw new JsonableError('No such user');
  if (!target.isActive) throw new JsonableError('User is deactivated');
  return target;
}

/** Recipient ids of `streams` the user is subscribed to, in one query. */
export async function subscribedRecipients(
  tx: Tx,
  userId: number,
  streams: Stream[],
): Promise<Set<number>> {
  const rows = await tx.subscription.findMany({
    where: { userId, active: true, recipientId: { in: streams.map((s) => s.recipientId!) } },
    select: { recipientId: true },
  });
  return new Set(rows.map((row) => row.recipientId));
}
