// Muting and unmuting users (Zulip's do_mute_user / do_unmute_user). Muting marks the muted
// user's unread messages read, so they never count; later ones arrive read (actions/messages).
import { isUniqueViolation, Prisma, type ActionContext, type Realm, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { mutedUsersOf } from '../lib/muted-users';
import { doMarkAsRead } from './flags';

export async function doMuteUser(
  ctx: ActionContext,
  realm: Realm,
  user: User,
  muted: User,
  now = new Date(),
): Promise<void> {
  await ctx.tx.mutedUser
    .create({ data: { userId: user.id, mutedUserId: muted.id, dateMuted: now } })
    .catch((error: unknown) => {
      throw isUniqueViolation(error) ? new JsonableError('User already muted') : error;
    });
  await doMarkAsRead(
    ctx,
    user,
    realm,
    Prisma.sql`message_id IN (SELECT id FROM message WHERE sender_id = ${muted.id})`,
  );
  await sendMutedUsers(ctx, user);
}

export async function doUnmuteUser(ctx: ActionContext, user: User, muted: User): Promise<void> {
  const removed = await ctx.tx.mutedUser.deleteMany({
    where: { userId: user.id, mutedUserId: muted.id },
  });
  if (removed.count === 0) throw new JsonableError('User is not muted');
  await sendMutedUsers(ctx, user);
}

async function sendMutedUsers(ctx: ActionContext, user: User): Promise<void> {
  sendEventOnCommit(ctx, { type: 'muted_users', muted_users: await mutedUsersOf(user.id) }, [
    user.id,
  ]);
}
