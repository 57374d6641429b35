// The Notification Bot's direct messages when someone adds people to a user group or removes
// them from one (Zulip's notify_for_user_group_subscription_changes): one to each person
// changed, except the person who made the change and bots. Sent after the change commits; a
// failure is logged and the rest still go.
import type { Realm, User } from '@parley/db';
import { getLogger } from '@parley/logger';
import { silentMentionSyntax } from '@parley/markdown';
import { sendBotMessage } from './system-bots';

export type GroupMembershipChange = 'added' | 'removed';

/** Zulip's words, with the group as a silent group mention. */
export function groupMembershipMessage(
  actor: Pick<User, 'id' | 'fullName'>,
  groupName: string,
  change: GroupMembershipChange,
): string {
  const who = silentMentionSyntax(actor);
  return change === 'added'
    ? `${who} added you to the group @_*${groupName}*.`
    : `${who} removed you from the group @_*${groupName}*.`;
}

export async function sendGroupMembershipNotices(
  realm: Realm,
  actor: User,
  groupName: string,
  change: GroupMembershipChange,
  recipients: readonly Pick<User, 'id' | 'isBot'>[],
): Promise<void> {
  const content = groupMembershipMessage(actor, groupName, change);
  for (const recipient of recipients) {
    if (recipient.id === actor.id || recipient.isBot) continue;
    const target = { kind: 'direct', to: JSON.stringify([recipient.id]) } as const;
    try {
      await sendBotMessage(realm, 'notification', target, content);
    } catch (error) {
      getLogger().error('user group membership notice failed', {
        realm_id: realm.id,
        user_id: recipient.id,
        error,
      });
    }
  }
}
