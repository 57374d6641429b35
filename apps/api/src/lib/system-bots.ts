// Which bots are the organization's system bots (Zulip's Notification Bot, Welcome Bot and
// Email Gateway): their addresses, and the test that keeps them out of bot management and of
// the bot lists, as Zulip's cross-organization bots are.
import type { User } from '@parley/db';

export const SYSTEM_BOTS = {
  notification: { email: 'notification-bot@zulip.com', fullName: 'Notification Bot' },
  welcome: { email: 'welcome-bot@zulip.com', fullName: 'Welcome Bot' },
  // The default sender of mail to a channel's address (Zulip's EMAIL_GATEWAY_BOT).
  emailGateway: { email: 'emailgateway@zulip.com', fullName: 'Email Gateway' },
} as const;

export type SystemBot = keyof typeof SYSTEM_BOTS;

/** Whether `user` is one of the organization's system bots (owned by nobody). */
export function isSystemBot(user: Pick<User, 'isBot' | 'botOwnerId' | 'email'>): boolean {
  return (
    user.isBot &&
    user.botOwnerId === null &&
    Object.values(SYSTEM_BOTS).some((bot) => bot.email === user.email)
  );
}
