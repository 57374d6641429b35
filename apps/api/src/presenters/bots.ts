// Bot rows → the bot objects of GET /bots and realm_bot events.
import type { Realm, User } from '@parley/db';
import { avatarUrl } from './users';

/** `streamNames`: the names of the bots' default channels (lib/bots botDefaultStreamNames). */
export function presentBot(
  bot: User,
  realm: Pick<Realm, 'id' | 'stringId'>,
  streamNames: ReadonlyMap<number, string>,
): Record<string, unknown> {
  return {
    user_id: bot.id,
    email: bot.deliveryEmail,
    full_name: bot.fullName,
    bot_type: bot.botType,
    is_active: bot.isActive,
    api_key: bot.apiKey,
    avatar_url: avatarUrl(bot, true, realm),
    default_sending_stream: streamNameOf(bot.defaultSendingStreamId, streamNames),
    default_events_register_stream: streamNameOf(bot.defaultEventsRegisterStreamId, streamNames),
    default_all_public_streams: bot.defaultAllPublicStreams,
    owner_id: bot.botOwnerId,
    services: [],
  };
}

export function streamNameOf(
  id: number | null,
  streamNames: ReadonlyMap<number, string>,
): string | null {
  return id === null ? null : (streamNames.get(id) ?? null);
}
