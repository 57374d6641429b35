// Deleting a topic (POST /streams/{id}/delete_topic, Zulip's delete_in_topic): an
// administrator deletes the topic's messages they can read, newest first, in batches that
// each commit with one bulk delete_message event, so a topic too big for one request is still
// deleted in part and the request can be repeated. Once none are left, the topic's visibility
// policies go too, except for people who can still read messages in it (a private channel
// with protected history can hold some the administrator never received).
import { flagBit, runAction, type ActionContext, type Stream, type User } from '@parley/db';
import { sendEventOnCommit } from '../lib/events';
import { VisibilityPolicy } from '../lib/user-topics';
import { channelDeletionAudience, refreshFirstMessageId } from './message-edit';
import { queuePushRemovalsOnCommit } from './push-notifications';
import { doSetUserTopicPolicy } from './user-topics';

/** Zulip's retention STREAM_MESSAGE_BATCH_SIZE. */
export const TOPIC_DELETION_BATCH_SIZE = 100;
/** Zulip stops starting batches after 50 seconds and answers complete: false. */
const TIME_BUDGET_MS = 50_000;

/** Returns whether the topic is gone (false: the time ran out first). */
export async function doDeleteTopic(
  actor: User,
  stream: Stream,
  topic: string,
  { batchSize = TOPIC_DELETION_BATCH_SIZE, budgetMs = TIME_BUDGET_MS } = {},
): Promise<boolean> {
  const start = Date.now();
  for (;;) {
    if (Date.now() - start >= budgetMs) return false;
    const deleted = await runAction((ctx) =>
      doDeleteTopicBatch(ctx, actor, stream.id, topic, batchSize),
    );
    if (deleted < batchSize) break;
  }
  await runAction((ctx) => doClearTopicPolicies(ctx, stream, topic));
  return true;
}

/** One batch: the newest messages of the topic the actor can read, locked and deleted, with
 * their copies, reactions and attachment links (ON DELETE CASCADE). */
async function doDeleteTopicBatch(
  ctx: ActionContext,
  actor: User,
  streamId: number,
  topic: string,
  limit: number,
): Promise<number> {
  const { tx } = ctx;
  const stream = await tx.stream.findUniqueOrThrow({ where: { id: streamId } });
  const batch = await tx.$queryRaw<{ id: number }[]>`
    SELECT m.id FROM message m
    WHERE m.realm_id = ${stream.realmId} AND m.recipient_id = ${stream.recipientId}
      AND m.is_channel_message AND upper(m.subject) = upper(${topic})
      AND (${stream.historyPublicToSubscribers}::boolean OR EXISTS (
        SELECT 1 FROM user_message um
        WHERE um.message_id = m.id AND um.user_profile_id = ${actor.id}))
    ORDER BY m.id DESC LIMIT ${limit}
    FOR UPDATE OF m`;
  if (batch.length === 0) return 0;
  const ids = batch.map((row) => row.id);
  const pushBit = flagBit('active_mobile_push_notification');
  // Who had the messages, and which of them each one's phone still shows.
  const copies = await tx.$queryRaw<{ id: number; showing: number[] | null }[]>`
    SELECT user_profile_id AS id,
      array_agg(message_id) FILTER (WHERE (flags & ${pushBit}) <> 0) AS showing
    FROM user_message WHERE message_id = ANY(${ids}::int[])
    GROUP BY user_profile_id`;
  const subscribers = await tx.subscription.findMany({
    where: { recipientId: stream.recipientId!, active: true, isUserActive: true },
    select: { userId: true },
  });
  const gone = await tx.$queryRaw<{ id: number; subject: string }[]>`
    DELETE FROM message WHERE id = ANY(${ids}::int[]) RETURNING id, subject`;
  if (gone.length === 0) return batch.length;
  const audience = channelDeletionAudience(
    stream,
    copies.map((copy) => copy.id),
    subscribers.map((row) => row.userId),
  );
  audience.add(actor.id);
  const goneIds = gone.map((row) => row.id).sort((a, b) => a - b);
  sendEventOnCommit(
    ctx,
    {
      type: 'delete_message',
      message_ids: goneIds,
      message_type: 'stream',
      stream_id: stream.id,
      // Zulip names the topic as its sample message, the batch's newest, spells it.
      topic: gone.reduce((newest, row) => (row.id > newest.id ? row : newest)).subject,
    },
    audience,
  );
  const deletedIds = new Set(goneIds);
  for (const copy of copies)
    if (copy.showing)
      queuePushRemovalsOnCommit(
        ctx,
        [copy.id],
        copy.showing.filter((id) => deletedIds.has(id)),
      );
  if (stream.firstMessageId !== null && goneIds.includes(stream.firstMessageId))
    await refreshFirstMessageId(ctx, stream);
  return batch.length;
}

/** The topic's visibility policies go back to inherit, with each person's user_topic event,
 * except for those who can still read messages left in it. */
async function doClearTopicPolicies(
  ctx: ActionContext,
  stream: Stream,
  topic: string,
): Promise<void> {
  const { tx } = ctx;
  const stale = await tx.$queryRaw<{ id: number }[]>`
    SELECT ut.user_profile_id AS id FROM user_topic ut
    WHERE ut.recipient_id = ${stream.recipientId} AND lower(ut.topic_name) = lower(${topic})
      AND (${stream.historyPublicToSubscribers}::boolean OR NOT EXISTS (
        SELECT 1 FROM user_message um JOIN message m ON m.id = um.message_id
        WHERE um.user_profile_id = ut.user_profile_id AND m.recipient_id = ${stream.recipientId}
          AND m.is_channel_message AND upper(m.subject) = upper(${topic})))
    ORDER BY ut.user_profile_id`;
  if (stale.length === 0) return;
  const users = await tx.user.findMany({ where: { id: { in: stale.map((row) => row.id) } } });
  for (const user of users)
    await doSetUserTopicPolicy(ctx, user, stream, topic, VisibilityPolicy.INHERIT);
}
