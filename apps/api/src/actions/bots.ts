// Managing a bot beyond what every user has (Zulip's zerver/actions/bots.py): its owner and
// its defaults. Each change is audited and reaches whoever sees the bot (lib/bots botAudience)
// as a realm_bot update; a new owner reaches everyone who can see the bot as a realm_user
// update.
import {
  AuditLogEvent,
  lockUserRow,
  type ActionContext,
  type Realm,
  type RoleValue,
  type User,
} from '@parley/db';
import { JsonableError } from '@parley/errors';
import { sendEventOnCommit } from '../lib/events';
import { isAdmin } from '../lib/users';
import { botAudience, botDefaultStreamNames } from '../lib/bots';
import { presentBot } from '../presenters/bots';
import { auditRealmChange } from './audit';
import { doSetBotAvatar } from './avatars';
import {
  checkBotNameAvailable,
  checkChangeRole,
  doChangeFullName,
  doChangeRole,
  doDeactivateUser,
  sendBotUpdate,
  sendPersonUpdate,
} from './users';

/** Zulip's do_change_bot_owner: an owner who is not an administrator (who sees every bot
 * anyway) gains the bot as an add and the previous one loses it as a delete; the other
 * administrators get the new owner as an update. */
/** Zulip's do_reactivate_user: a bot brought back while its owner is deactivated belongs to
 * whoever brought it back. */
export async function doAdoptReactivatedBot(
  ctx: ActionContext,
  realm: Realm,
  bot: User,
  actor: User,
): Promise<void> {
  if (!bot.isBot || bot.botOwnerId === null) return;
  const owner = await ctx.tx.user.findUnique({ where: { id: bot.botOwnerId } });
  if (!owner || owner.isActive) return;
  await doChangeBotOwner(ctx, realm, { ...bot, isActive: true }, actor, actor);
}

export async function doChangeBotOwner(
  ctx: ActionContext,
  realm: Realm,
  bot: User,
  owner: User,
  actor: User,
): Promise<User> {
  if (bot.botOwnerId === owner.id) return bot;
  const previous =
    bot.botOwnerId === null
      ? null
      : await ctx.tx.user.findUnique({ where: { id: bot.botOwnerId } });
  const updated = await ctx.tx.user.update({
    where: { id: bot.id },
    data: { botOwnerId: owner.id },
  });
  await auditRealmChange(
    ctx,
    actor,
    AuditLogEvent.USER_BOT_OWNER_CHANGED,
    { old_value: bot.botOwnerId, new_value: owner.id },
    { modifiedUserId: bot.id },
  );
  const updateFor = await botAudience(updated, ctx.tx);
  if (previous && !isAdmin(previous)) {
    sendEventOnCommit(ctx, { type: 'realm_bot', op: 'delete', bot: { user_id: bot.id } }, [
      previous.id,
    ]);
    updateFor.delete(previous.id);
  }
  if (!isAdmin(owner)) {
    const bot = presentBot(updated, realm, await botDefaultStreamNames([updated], ctx.tx));
    sendEventOnCommit(ctx, { type: 'realm_bot', op: 'add', bot }, [owner.id]);
    updateFor.delete(owner.id);
  }
  sendEventOnCommit(
    ctx,
    { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, owner_id: owner.id } },
    updateFor,
  );
  await sendPersonUpdate(ctx, updated, { bot_owner_id: owner.id });
  return updated;
}

const DEFAULT_STREAM_FIELDS = {
  default_sending_stream: {
    column: 'defaultSendingStreamId',
    auditEvent: AuditLogEvent.USER_DEFAULT_SENDING_STREAM_CHANGED,
  },
  default_events_register_stream: {
    column: 'defaultEventsRegisterStreamId',
    auditEvent: AuditLogEvent.USER_DEFAULT_REGISTER_STREAM_CHANGED,
  },
} as const;

export type BotDefaultStreamField = keyof typeof DEFAULT_STREAM_FIELDS;

/** Zulip's do_change_default_sending_stream and do_change_default_events_register_stream:
 * `stream` null clears the default. */
export async function doChangeBotDefaultStream(
  ctx: ActionContext,
  bot: User,
  field: BotDefaultStreamField,
  stream: { id: number; name: string } | null,
  actor: User,
): Promise<User> {
  const { column, auditEvent } = DEFAULT_STREAM_FIELDS[field];
  const updated = await ctx.tx.user.update({
    where: { id: bot.id },
    data: { [column]: stream?.id ?? null },
  });
  await auditRealmChange(
    ctx,
    actor,
    auditEvent,
    { old_value: bot[column], new_value: stream?.id ?? null },
    { modifiedUserId: bot.id },
  );
  await sendBotUpdate(ctx, updated, { [field]: stream?.name ?? null });
  return updated;
}

/** Zulip's do_change_default_all_public_streams. */
export async function doChangeDefaultAllPublicStreams(
  ctx: ActionContext,
  bot: User,
  value: boolean,
  actor: User,
): Promise<User> {
  const updated = await ctx.tx.user.update({
    where: { id: bot.id },
    data: { defaultAllPublicStreams: value },
  });
  await auditRealmChange(
    ctx,
    actor,
    AuditLogEvent.USER_DEFAULT_ALL_PUBLIC_STREAMS_CHANGED,
    { old_value: bot.defaultAllPublicStreams, new_value: value },
    { modifiedUserId: bot.id },
  );
  await sendBotUpdate(ctx, updated, { default_all_public_streams: value });
  return updated;
}

/** What PATCH /bots/{id} changes, checked by the route: names and roles validated, channels
 * accessed, an avatar prepared (actions/avatars prepareAvatar). */
export interface BotChanges {
  fullName?: string;
  role?: RoleValue;
  ownerId?: number;
  defaultSendingStream?: { id: number; name: string } | null;
  defaultEventsRegisterStream?: { id: number; name: string } | null;
  defaultAllPublicStreams?: boolean;
  avatarHash: string | null;
}

/** Zulip's patch_bot_backend, in order, on the bot's row as each change left it. Returns the
 * bot, its owner, and the upload its new avatar replaced (whose files go once committed). */
export async function doUpdateBot(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  botId: number,
  changes: BotChanges,
): Promise<{ bot: User; owner: User | null; replacedAvatar: string | null }> {
  // One change of the bot at a time: each reads the row the one before left.
  await lockUserRow(ctx, botId);
  const current = () => ctx.tx.user.findUniqueOrThrow({ where: { id: botId } });
  let bot = await current();
  // The web app sends the name unchanged with every save; that is no change.
  if (changes.fullName !== undefined && changes.fullName !== bot.fullName) {
    await checkBotNameAvailable(ctx.tx, realm, changes.fullName);
    await doChangeFullName(ctx, bot, changes.fullName, actor.id);
  }
  if (changes.role !== undefined && changes.role !== bot.role) {
    await checkChangeRole(ctx.tx, actor, bot, changes.role);
    await doChangeRole(ctx, bot, changes.role, actor.id);
  }
  let owner: User | null = null;
  // Zulip checks the owner only when it changes: sending the current one is a no-op.
  if (changes.ownerId !== undefined && changes.ownerId !== bot.botOwnerId) {
    const { ownerId } = changes;
    owner =
      Number.isSafeInteger(ownerId) && ownerId > 0 && ownerId <= 2 ** 31 - 1
        ? await ctx.tx.user.findFirst({ where: { id: ownerId, realmId: realm.id } })
        : null;
    if (!owner) throw new JsonableError('Failed to change owner, no such user');
    if (!owner.isActive) throw new JsonableError('Failed to change owner, user is deactivated');
    if (owner.isBot) throw new JsonableError("Failed to change owner, bots can't own other bots");
    await doChangeBotOwner(ctx, realm, await current(), owner, actor);
  }
  if (changes.defaultSendingStream !== undefined)
    await doChangeBotDefaultStream(
      ctx,
      await current(),
      'default_sending_stream',
      changes.defaultSendingStream,
      actor,
    );
  if (changes.defaultEventsRegisterStream !== undefined)
    await doChangeBotDefaultStream(
      ctx,
      await current(),
      'default_events_register_stream',
      changes.defaultEventsRegisterStream,
      actor,
    );
  if (changes.defaultAllPublicStreams !== undefined)
    await doChangeDefaultAllPublicStreams(
      ctx,
      await current(),
      changes.defaultAllPublicStreams,
      actor,
    );
  const replacedAvatar =
    changes.avatarHash === null
      ? null
      : await doSetBotAvatar(ctx, realm, bot, changes.avatarHash, actor.id);
  bot = await current();
  if (owner === null && bot.botOwnerId !== null)
    owner = await ctx.tx.user.findUnique({ where: { id: bot.botOwnerId } });
  return { bot, owner, replacedAvatar };
}

/** A new bot's address must be free (Zulip's add_bot_backend: "Username already in use"). */
export async function checkBotUsernameAvailable(
  ctx: ActionContext,
  realm: Realm,
  email: string,
): Promise<void> {
  const taken = await ctx.tx.user.findFirst({
    where: { realmId: realm.id, deliveryEmail: { equals: email, mode: 'insensitive' } },
    select: { id: true },
  });
  if (taken) throw new JsonableError('Username already in use');
}

/** DELETE /bots/{id}: Zulip's do_deactivate_user, which leaves a deactivated bot as it is
 * (read locked, so two requests deactivate it once). */
export async function doDeactivateBot(
  ctx: ActionContext,
  bot: User,
  actingUserId: number,
): Promise<void> {
  await lockUserRow(ctx, bot.id);
  const current = await ctx.tx.user.findUniqueOrThrow({ where: { id: bot.id } });
  if (current.isActive) await doDeactivateUser(ctx, current, actingUserId);
}
