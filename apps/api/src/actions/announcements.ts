// The Notification Bot's announcements in the organization's announcement channels (Zulip's
// send_messages_for_new_subscribers with `announce`, and notify_new_user): new channels in the
// new-channel announcements channel's "new channels" topic, new members in the signup
// announcements channel's "signups" topic. Like the other notices, they are posted once the
// change has committed; a failure is logged and the change stands.
import { getPrisma, type Realm, type Stream, type User } from '@parley/db';
import { getLogger } from '@parley/logger';
import { channelLinkSyntax, silentMentionSyntax } from '@parley/markdown';
import { currentRealm } from '../lib/realm-state';
import { sendBotMessage } from './system-bots';

/** Zulip's text for channels `actor` created with `announce`. */
export function newChannelsAnnouncement(actor: User, created: Stream[]): string {
  const links = created.map((stream) => channelLinkSyntax(stream.id, stream.name)).join(', ');
  return created.length > 1
    ? `${silentMentionSyntax(actor)} created the following channels: ${links}.`
    : `${silentMentionSyntax(actor)} created a new channel ${links}.`;
}

/** Posts in the channel `choose` picks from the organization's current row (null: none). Any
 * failure, reading the row included, is logged: the change it announces has committed. */
async function announce(
  realm: Realm,
  choose: (current: Realm) => Promise<number | null> | number | null,
  topic: string,
  content: string,
  readFor?: number,
): Promise<void> {
  try {
    const channelId = await choose(await currentRealm(realm));
    if (channelId === null) return;
    const target = { kind: 'channel', to: JSON.stringify(channelId), topic } as const;
    await sendBotMessage(realm, 'notification', target, content, {
      ...(readFor !== undefined ? { readFor: new Set([readFor]) } : {}),
    });
  } catch (error) {
    getLogger().error('announcement failed', { realm_id: realm.id, topic, error });
  }
}

/** New channels, read for the person who created them, when the organization has a new-channel
 * announcements channel. */
export async function sendNewChannelsAnnouncement(
  realm: Realm,
  actor: User,
  created: Stream[],
): Promise<void> {
  if (created.length === 0) return;
  await announce(
    realm,
    (current) => current.newStreamAnnouncementsStreamId,
    'new channels',
    newChannelsAnnouncement(actor, created),
    actor.id,
  );
}

/** Zulip's notify_new_user: "… joined this organization." when the organization has a signup
 * announcements channel, for everyone but its first member. */
export async function sendSignupAnnouncement(realm: Realm, user: User): Promise<void> {
  if (user.isBot) return;
  await announce(
    realm,
    async (current) => {
      if (current.signupAnnouncementsStreamId === null) return null;
      // Zulip's realm_user_count: the organization's active human accounts.
      const people = await getPrisma().user.count({
        where: { realmId: realm.id, isActive: true, isBot: false },
      });
      return people > 1 ? current.signupAnnouncementsStreamId : null;
    },
    'signups',
    `${silentMentionSyntax(user)} joined this organization.`,
  );
}
