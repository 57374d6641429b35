// Bot rows → the bot objects of GET /bots and realm_bot events.
import type { Realm, User } from '@parley/db';
import { avatarUrl } from './users';

export function presentBot(
  bot: User,
  realm: Pick<Realm, 'id' | 'stringId'>,
): Record<string, unknown> {
  return {
    user_id: bot.id,
    email: bot.deliveryEmail,
    full_name: bot.fullName,
    bot_type: bot.botType,
    is_active: bot.isActive,
    api_key: bot.apiKey,
    avatar_url: avatarUrl(bot, true, realm),
    default_sending_stream: null,
    default_events_register_stream: null,
    default_all_public_streams: false,
    owner_id: bot.botOwnerId,
    services: [],
  };
}
