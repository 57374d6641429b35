// The organization's automated senders (Zulip's Notification Bot and Welcome Bot). Zulip keeps
// them as cross-organization system bots; Parley gives each organization its own, created on
// first use, so they are ordinary bots to every query and client.
import { getPrisma, Role, runAction, type ActionContext, type Realm, type User } from '@parley/db';
import { JsonableError } from '@parley/errors';
import { MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH } from '../lib/invites';
import { codePoints, truncateText } from '../lib/text';
import {
  doSendMessage,
  MAX_TOPIC_LENGTH,
  prepareMessage,
  sendPreparedMessage,
  type SendOptions,
  type SendTarget,
} from './messages';
import { checkCreateUser, doCreateUser } from './users';
import { SYSTEM_BOTS, type SystemBot } from '../lib/system-bots';

/** The organization's `kind` bot, created the first time it is needed. */
export async function ensureSystemBot(realm: Realm, kind: SystemBot): Promise<User> {
  const { email, fullName } = SYSTEM_BOTS[kind];
  const find = () =>
    getPrisma().user.findFirst({ where: { realmId: realm.id, isBot: true, email } });
  const existing = await find();
  if (existing) return existing;
  try {
    return await runAction(async (ctx) => {
      const bot = await checkCreateUser(ctx.tx, realm, {
        email,
        fullName,
        password: null,
        role: Role.MEMBER,
        isBot: true,
        botType: 1,
        botOwnerId: null,
      });
      return doCreateUser(ctx, realm, bot, null);
    });
  } catch (error) {
    // Another request created it at the same moment.
    const raced = await find();
    if (raced) return raced;
    throw error;
  }
}

/** A message from the organization's `kind` bot in its own transaction (Zulip's
 * internal_send_stream_message and internal_send_private_message): call it after the change
 * it tells about has committed. The bot may post in any channel. Returns its id. */
export async function sendBotMessage(
  realm: Realm,
  kind: SystemBot,
  target: SendTarget,
  content: string,
  options: BotSendOptions = {},
): Promise<number> {
  const bot = await ensureSystemBot(realm, kind);
  const prepared = await prepareMessage(
    realm,
    bot,
    fittedTarget(target),
    content,
    botOptions(kind, options),
  );
  return (await sendPreparedMessage(prepared)).message.id;
}

/** A direct message from the organization's `kind` bot to `recipient`, in its own
 * transaction; returns its id. */
export async function sendBotDirectMessage(
  realm: Realm,
  kind: SystemBot,
  recipient: Pick<User, 'id'>,
  content: string,
): Promise<number> {
  const target = { kind: 'direct', to: JSON.stringify([recipient.id]) } as const;
  return sendBotMessage(realm, kind, target, content);
}

/** A message from the organization's `kind` bot (Zulip's internal_send_stream_message and
 * internal_send_private_message), written in the caller's transaction: it commits, and its
 * events go out, with the change it reports. The bot may post in any channel. Returns its id. */
export async function sendBotMessageIn(
  ctx: ActionContext,
  realm: Realm,
  kind: SystemBot,
  target: SendTarget,
  content: string,
  options: BotSendOptions = {},
): Promise<number> {
  const bot = await ensureSystemBot(realm, kind);
  const prepared = await prepareMessage(
    realm,
    bot,
    fittedTarget(target),
    content,
    botOptions(kind, options),
  );
  return (await doSendMessage(ctx, prepared)).message.id;
}

/** A topic made of names (a report's "{name} moderation") may be longer than a topic may be:
 * cut as Zulip's internal sends cut it. */
function fittedTarget(target: SendTarget): SendTarget {
  if (target.kind !== 'channel') return target;
  return { ...target, topic: truncateText(target.topic, MAX_TOPIC_LENGTH, '...') };
}

/** What a caller may choose about a system bot's message; the rest is fixed. */
export type BotSendOptions = Omit<Partial<SendOptions>, 'client' | 'readBySender' | 'bySystemBot'>;

/** The Welcome Bot's messages are meant to be read in the app: they notify no phone and
 * email nobody (Zulip's disable_external_notifications on its sends). */
function botOptions(kind: SystemBot, options: BotSendOptions): SendOptions {
  return {
    ...options,
    client: 'Internal',
    readBySender: true,
    bySystemBot: true,
    ...(kind === 'welcome' ? { disableExternalNotifications: true } : {}),
  };
}

/** Zulip's send_test_welcome_bot_custom_message: the Welcome Bot sends `text` to the
 * administrator trying it, as it would to a new user; returns the message id. */
export async function sendTestWelcomeText(
  realm: Realm,
  admin: User,
  text: string,
): Promise<number> {
  const content = text.trim();
  if (content === '') throw new JsonableError('Message must not be empty');
  if (codePoints(content) > MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH)
    throw new JsonableError(
      `welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH} characters)`,
    );
  return sendBotDirectMessage(realm, 'welcome', admin, content);
}
