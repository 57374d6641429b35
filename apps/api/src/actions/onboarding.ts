// Welcome Bot's onboarding (Zulip's zerver/lib/onboarding.py): the direct message every new
// human user gets, starred for them, and the bot's answers to what they write back. Clients
// count on it as much as users do: a new account is never without a message (zulip-terminal
// cannot start on an empty message list).
import { realmUrl } from '@parley/auth';
import { flagsToBitmask, getPrisma, type Realm, type User } from '@parley/db';
import { getLogger } from '@parley/logger';
import { isAdmin } from '../lib/users';
import { sendSignupAnnouncement } from './announcements';
import type { PreparedMessage } from './messages';
import { sendBotDirectMessage } from './system-bots';
import { SYSTEM_BOTS } from '../lib/system-bots';

/** What Welcome Bot says it understands, as inline code: all of it, or without `help` when
 * answering `help`. */
function botCommands(withHelp = true): string {
  const commands = [
    'apps',
    'profile',
    'theme',
    'channels',
    'topics',
    'message formatting',
    'keyboard shortcuts',
    ...(withHelp ? ['help'] : []),
  ];
  return `${commands.map((command) => `\`${command}\``).join(', ')}.`;
}

/** Zulip's initial Welcome Bot message; administrators also get the guide to setting up the
 * organization. (Parley has no education organization types or demo organizations, the
 * other two variations of Zulip's text.) */
export function initialDirectMessageContent(realm: Realm, user: User): string {
  const base = realmUrl(realm);
  const setup = isAdmin(user)
    ? ` We also have a guide for [Setting up your organization](${base}/help/getting-your-organization-started-with-zulip).`
    : '';
  return (
    'Hello, and welcome to Zulip!👋 This is a direct message from me, Welcome Bot.\n\n' +
    `If you are new to Zulip, check out our [Getting started guide](${base}/help/getting-started-with-zulip)!` +
    `${setup}\n\n` +
    'I can also help you get set up! Just click anywhere on this message or press `r` to reply.\n\n' +
    `Here are a few messages I understand: ${botCommands()}`
  );
}

/** Sends the initial message to a user whose account has just been committed, and stars it
 * for them as Zulip does (no event: the account has no event queue yet). A failure is
 * logged: the account exists either way. */
export async function sendInitialDirectMessage(realm: Realm, user: User): Promise<void> {
  if (user.isBot) return;
  try {
    const messageId = await sendBotDirectMessage(
      realm,
      'welcome',
      user,
      initialDirectMessageContent(realm, user),
    );
    await getPrisma().$executeRaw`
      UPDATE user_message SET flags = flags | ${flagsToBitmask(['starred'])}
      WHERE user_profile_id = ${user.id} AND message_id = ${messageId}`;
  } catch (error) {
    getLogger().error('welcome message failed', { realm_id: realm.id, user_id: user.id, error });
  }
}

/** What Zulip's process_new_human_user sends once an account is committed: the signup
 * announcement, then the Welcome Bot's direct message. */
export async function sendNewUserMessages(realm: Realm, user: User): Promise<void> {
  await sendSignupAnnouncement(realm, user);
  await sendInitialDirectMessage(realm, user);
}

/** Welcome Bot's answer to a message's raw content (Zulip's select_welcome_bot_response). */
export function welcomeBotReply(content: string): string {
  switch (content.toLowerCase()) {
    case 'app':
    case 'apps':
      return 'You can [download](/apps/) the [mobile and desktop apps](/apps/). Zulip also works great in a browser.';
    case 'profile':
      return 'Go to [Profile settings](#settings/profile) to add a [profile picture](/help/change-your-profile-picture) and edit your [profile information](/help/edit-your-profile).';
    case 'theme':
      return 'Go to [Preferences](#settings/preferences) to [switch between the light and dark themes](/help/dark-theme), [pick your favorite emoji theme](/help/emoji-and-emoticons#change-your-emoji-set), [change your language](/help/change-your-language), and make other tweaks to your Zulip experience.';
    case 'stream':
    case 'streams':
    case 'channel':
    case 'channels':
      return 'In Zulip, channels [determine who gets a message](/help/introduction-to-channels).\n\n[Browse and subscribe to channels](#channels/all).';
    case 'topic':
    case 'topics':
      return 'In Zulip, topics [tell you what a message is about](/help/introduction-to-topics). They are light-weight subjects, very similar to the subject line of an email.\n\nCheck out [Recent conversations](#recent) to see what\'s happening! You can return to this conversation by clicking "Direct messages" in the upper left.';
    case 'keyboard':
    case 'shortcuts':
    case 'keyboard shortcuts':
      return "Zulip's [keyboard shortcuts](#keyboard-shortcuts) let you navigate the app quickly and efficiently.\n\nPress `?` any time to see a [cheat sheet](#keyboard-shortcuts).";
    case 'formatting':
    case 'message formatting':
      return 'Zulip uses [Markdown](/help/format-your-message-using-markdown), an intuitive format for **bold**, *italics*, bulleted lists, and more. Click [here](#message-formatting) for a cheat sheet.\n\nCheck out our [messaging tips](/help/messaging-tips) to learn about emoji reactions, code blocks and much more!';
    case 'help':
    case '?':
      return `Here are a few messages I understand: ${botCommands(false)}\n\nCheck out our [Getting started guide](/help/getting-started-with-zulip), or browse the [Help center](/help/) to learn more!`;
    default:
      return `I’m sorry, I did not understand your message. Please try one of the following commands: ${botCommands()}`;
  }
}

/** Whether a sent message is one Welcome Bot answers: a direct message between it and one
 * other user, who sent it (Zulip's do_send_messages). Read from what the send resolved: no
 * query. */
export function isForWelcomeBot(prepared: PreparedMessage): boolean {
  const { addressee, sender, viewers } = prepared;
  if (addressee.kind !== 'direct' || viewers.length !== 2) return false;
  const bot = addressee.users.find(
    (user) => user.isBot && user.email === SYSTEM_BOTS.welcome.email,
  );
  return bot !== undefined && bot.id !== sender.id;
}

/** Welcome Bot answers `prepared`, once it is sent. A failure is logged: the user's message
 * is sent either way. */
export async function replyFromWelcomeBot(prepared: PreparedMessage): Promise<void> {
  const { realm, sender, content } = prepared;
  try {
    await sendBotDirectMessage(realm, 'welcome', sender, welcomeBotReply(content));
  } catch (error) {
    getLogger().error('welcome bot reply failed', {
      realm_id: realm.id,
      user_id: sender.id,
      error,
    });
  }
}
