// The Notification Bot's messages about moved and resolved topics (Zulip's
// send_message_moved_breadcrumbs and maybe_send_resolve_topic_notifications, in
// zerver/actions/message_edit.py). They are written in the edit's transaction, as Zulip's are:
// they commit with the move they report, and their events follow its update_message.
import { realmUrl } from '@parley/auth';
import {
  columnsOf,
  MessageType,
  query,
  statement,
  type ActionContext,
  type Message,
  type Realm,
  type Stream,
  type User,
} from '@parley/db';
import { channelMessageUrl, silentMentionSyntax, topicLinkSyntax } from '@parley/markdown';
import { hasVisibleTopicMessage } from '../lib/messages';
import { VisibilityPolicy } from '../lib/user-topics';
import { doDeleteMessage, type CheckedEdit } from './message-edit';
import { sendBotMessageIn, type BotSendOptions } from './system-bots';

/** Zulip's RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS: resolving a topic and undoing it within
 * this long deletes the first notice instead of posting a second. */
const RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS = 60;

/** PATCH /messages/{id}'s send_notification_to_old_thread and send_notification_to_new_thread. */
export interface MoveNoticeRequest {
  toOldThread: boolean;
  toNewThread: boolean;
}

const lastTopicMessage = statement<Message, [number, string]>(`
  SELECT ${columnsOf('Message', 'm')} FROM message m
  WHERE m.recipient_id = $1 AND upper(m.subject) = upper($2)
  ORDER BY m.id DESC LIMIT 1`);

/** Who gets a resolve notice unread (Zulip's get_unread_user_ids_for_resolved_topic_notifications):
 * the channel's active human subscribers ($1 its recipient) whose
 * resolved_topic_notice_auto_read_policy is "never", or "except_followed" while they follow the
 * topic ($2 the channel, $3 the topic). */
const resolveNoticeUnreadUsers = statement<{ id: number }, [number, number, string]>(`
  SELECT u.id FROM subscription s JOIN user_profile u ON u.id = s.user_profile_id
  WHERE s.recipient_id = $1 AND s.active AND u.is_active AND NOT u.is_bot
    AND (u.resolved_topic_notice_auto_read_policy = 'never'
      OR (u.resolved_topic_notice_auto_read_policy = 'except_followed' AND EXISTS (
        SELECT 1 FROM user_topic ut
        WHERE ut.user_profile_id = u.id AND ut.stream_id = $2 AND lower(ut.topic_name) = lower($3)
          AND ut.visibility_policy = ${VisibilityPolicy.FOLLOWED})))`);

/** After a checked edit moved `ids` (the edited message among them; `movedAll`: all of the
 * topic the user could see): the resolve notice, and the notices in the new and the old
 * location that the request asks for. */
export async function sendMoveNotices(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  edit: CheckedEdit,
  { ids, movedAll }: { ids: number[]; movedAll: boolean },
  request: MoveNoticeRequest,
): Promise<void> {
  const { message, stream, target } = edit;
  if (!stream || (edit.topic === undefined && target === null)) return;
  const origTopic = message.subject;
  const newStream = target ?? stream;
  const newTopic = edit.topic ?? origTopic;
  const mention = silentMentionSyntax(user);

  // Those who followed the topic follow it under its new name by now, if all of it moved
  // (doMoveTopicPolicies).
  if (edit.resolution && target === null && edit.content === undefined)
    await sendResolveNotice(ctx, user, realm, stream, newTopic, edit.resolution);

  const count = ids.length;
  // Resolving is not news in the topic itself.
  if (request.toNewThread && (target !== null || !edit.resolving)) {
    const from = topicLinkSyntax(stream.id, stream.name, origTopic);
    let content: string;
    if (movedAll && !(await hasVisibleTopicMessage(user, newStream, newTopic, ids)))
      content = `This topic was moved here from ${from} by ${mention}.`;
    else if (count === 1) {
      const link = channelMessageUrl(realmUrl(realm), {
        id: message.id,
        channelId: newStream.id,
        channelName: newStream.name,
        topic: newTopic,
      });
      content = `[A message](${link}) was moved here from ${from} by ${mention}.`;
    } else content = `${count} messages were moved here from ${from} by ${mention}.`;
    await sendNotice(ctx, realm, user, newStream, newTopic, content);
  }
  if (request.toOldThread) {
    const to = topicLinkSyntax(newStream.id, newStream.name, newTopic);
    const content = movedAll
      ? `This topic was moved to ${to} by ${mention}.`
      : count === 1
        ? `A message was moved from this topic to ${to} by ${mention}.`
        : `${count} messages were moved from this topic to ${to} by ${mention}.`;
    await sendNotice(ctx, realm, user, stream, origTopic, content);
  }
}

/** "{user} has marked this topic as resolved." in the topic, read for those whose settings
 * say so; or, when the topic's last message is such a notice from the grace period, that
 * notice deleted instead (resolving and unresolving at once leaves no trace). */
async function sendResolveNotice(
  ctx: ActionContext,
  user: User,
  realm: Realm,
  stream: Stream,
  topic: string,
  resolution: 'resolved' | 'unresolved',
): Promise<void> {
  const [last] = await query(lastTopicMessage, [stream.recipientId!, topic]);
  if (
    last &&
    last.type === MessageType.RESOLVE_TOPIC_NOTIFICATION &&
    Date.now() - last.dateSent.getTime() <= RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS * 1000
  ) {
    await doDeleteMessage(ctx, user, last, stream);
    return;
  }
  const unread = await query(resolveNoticeUnreadUsers, [stream.recipientId!, stream.id, topic]);
  await sendNotice(
    ctx,
    realm,
    user,
    stream,
    topic,
    `${silentMentionSyntax(user)} has marked this topic as ${resolution}.`,
    {
      type: MessageType.RESOLVE_TOPIC_NOTIFICATION,
      unreadOnlyFor: new Set(unread.map((row) => row.id)),
    },
  );
}

/** A notice from the Notification Bot, read for the user whose action it reports. */
async function sendNotice(
  ctx: ActionContext,
  realm: Realm,
  actor: User,
  stream: Stream,
  topic: string,
  content: string,
  options: BotSendOptions = {},
): Promise<void> {
  const target = { kind: 'channel', to: JSON.stringify(stream.id), topic } as const;
  await sendBotMessageIn(ctx, realm, 'notification', target, content, {
    ...options,
    readFor: new Set([actor.id]),
  });
}
