// The Notification Bot's messages when POST /users/me/subscriptions subscribes people (Zulip's
// send_messages_for_new_subscribers, in zerver/views/streams.py): a direct message to each
// person someone else subscribed to existing channels, the announcement of new channels when
// the request asks for it, and the first message of each channel the request created. Like
// the channel notices (channel-notices.ts), they go out right after the subscriptions commit,
// before the response; a failure is logged.
import type { Realm, Stream, User } from '@parley/db';
import { getLogger } from '@parley/logger';
import { silentMentionSyntax } from '@parley/markdown';
import { MAX_BULK_NEW_SUBSCRIPTION_MESSAGES } from '../lib/subscriptions';
import { sendNewChannelsAnnouncement } from './announcements';
import { createdNotice, sendChannelNotices } from './channel-notices';
import type { SubscriptionPair } from './subscriptions';
import { sendBotMessage } from './system-bots';

/** Whether the people a request subscribed get direct messages about it: they asked
 * (send_new_subscription_messages) and there are few enough of them. Clients read it as
 * new_subscription_messages_sent. */
export function sendsSubscriptionMessages(asked: boolean, subscribedUsers: number): boolean {
  return asked && subscribedUsers <= MAX_BULK_NEW_SUBSCRIPTION_MESSAGES;
}

/** Zulip's you_were_just_subscribed_message. */
export function youWereSubscribedMessage(actor: User, channelNames: string[]): string {
  const names = [...channelNames].sort();
  const who = silentMentionSyntax(actor);
  if (names.length === 1) return `${who} subscribed you to #**${names[0]}**.`;
  return (
    `${who} subscribed you to the following channels:\n\n` +
    names.map((name) => `* #**${name}**\n`).join('')
  );
}

/** After the subscriptions committed, in Zulip's order: the direct messages (when
 * `directMessages`) to everyone but `actor` and bots who joined channels that existed before,
 * the announcement of the created channels (when `announce`), and each created channel's first
 * message, the last two read for `actor`. A failed message is logged, and the rest still go. */
export async function sendNewSubscriptionNotices(
  realm: Realm,
  actor: User,
  {
    subscribed,
    created,
    bots,
    directMessages,
    announce,
  }: {
    subscribed: SubscriptionPair[];
    created: Stream[];
    /** Who among the subscribed users is a bot. */
    bots: ReadonlySet<number>;
    directMessages: boolean;
    announce: boolean;
  },
): Promise<void> {
  if (directMessages) {
    const createdIds = new Set(created.map((stream) => stream.id));
    const namesByUser = new Map<number, string[]>();
    for (const { user, stream } of subscribed) {
      if (user.id === actor.id || bots.has(user.id) || createdIds.has(stream.id)) continue;
      namesByUser.set(user.id, [...(namesByUser.get(user.id) ?? []), stream.name]);
    }
    for (const [userId, names] of namesByUser) {
      const target = { kind: 'direct', to: JSON.stringify([userId]) } as const;
      try {
        await sendBotMessage(realm, 'notification', target, youWereSubscribedMessage(actor, names));
      } catch (error) {
        getLogger().error('subscription notice failed', {
          realm_id: realm.id,
          user_id: userId,
          error,
        });
      }
    }
  }
  if (announce) await sendNewChannelsAnnouncement(realm, actor, created);
  await sendChannelNotices(
    realm,
    created.map((stream) => createdNotice(actor, stream)),
  );
}
