// Setting a topic's visibility policy (Zulip's do_set_user_topic_visibility_policy): one row
// per user and topic, removed when the policy goes back to inherit. A request that changes
// nothing sends nothing; a change sends the legacy muted_topics list and a user_topic event
// to the user's clients.
import type { ActionContext, Stream, User } from '@parley/db';
import { sendEventOnCommit } from '../lib/events';
import { AutoPolicy } from '../lib/user-settings';
import {
  mutedTopicsLegacy,
  policyOnSend,
  sendContext,
  VisibilityPolicy,
  type VisibilityPolicyValue,
} from '../lib/user-topics';

/** Returns whether anything changed. `topic` is already normalized ("general chat" → ""). */
export async function doSetUserTopicPolicy(
  ctx: ActionContext,
  user: User,
  stream: Stream,
  topic: string,
  policy: VisibilityPolicyValue,
  now = new Date(),
): Promise<boolean> {
  const { tx } = ctx;
  const [current] = await tx.$queryRaw<{ visibility_policy: number }[]>`
    SELECT visibility_policy FROM user_topic
    WHERE user_profile_id = ${user.id} AND recipient_id = ${stream.recipientId}
      AND lower(topic_name) = lower(${topic})
    FOR UPDATE`;
  const currentPolicy = current?.visibility_policy ?? VisibilityPolicy.INHERIT;
  if (currentPolicy === policy) return false;
  if (policy === VisibilityPolicy.INHERIT) {
    await tx.$executeRaw`
      DELETE FROM user_topic WHERE user_profile_id = ${user.id}
        AND recipient_id = ${stream.recipientId} AND lower(topic_name) = lower(${topic})`;
  } else {
    // The stored spelling stays the one the row was created with, as in Zulip.
    await tx.$executeRaw`
      INSERT INTO user_topic (user_profile_id, stream_id, recipient_id, topic_name,
                              last_updated, visibility_policy)
      VALUES (${user.id}, ${stream.id}, ${stream.recipientId}, ${topic}, ${now}, ${policy})
      ON CONFLICT (user_profile_id, recipient_id, lower(topic_name))
      DO UPDATE SET visibility_policy = EXCLUDED.visibility_policy,
                    last_updated = EXCLUDED.last_updated`;
  }
  sendEventOnCommit(ctx, { type: 'muted_topics', muted_topics: await mutedTopicsLegacy(user) }, [
    user.id,
  ]);
  sendEventOnCommit(
    ctx,
    {
      type: 'user_topic',
      stream_id: stream.id,
      topic_name: topic,
      last_updated: Math.floor(now.getTime() / 1000),
      visibility_policy: policy,
    },
    [user.id],
  );
  return true;
}

/** Zulip's automatic topic policies on send: the sender may follow (or, in a muted channel,
 * unmute) the topic per their settings, and people mentioned by name follow it when they
 * asked to. Returns the sender's new policy, for POST /messages's
 * automatic_new_visibility_policy. Bots never change policies. */
export async function doAutoFollowOnSend(
  ctx: ActionContext,
  sender: User,
  stream: Stream,
  topic: string,
  messageId: number,
  mentionedIds: Iterable<number>,
): Promise<VisibilityPolicyValue | null> {
  let senderPolicy: VisibilityPolicyValue | null = null;
  const automatic =
    sender.automaticallyFollowTopicsPolicy !== AutoPolicy.NEVER ||
    sender.automaticallyUnmuteTopicsInMutedStreamsPolicy !== AutoPolicy.NEVER;
  if (!sender.isBot && automatic) {
    const context = await sendContext(
      ctx.tx,
      sender.id,
      stream.recipientId!,
      topic,
      messageId,
      stream.historyPublicToSubscribers,
    );
    const policy = policyOnSend(sender, context);
    if (policy !== null && (await doSetUserTopicPolicy(ctx, sender, stream, topic, policy)))
      senderPolicy = policy;
  }
  const mentioned = [...mentionedIds].filter((id) => id !== sender.id);
  if (mentioned.length > 0) {
    // Those who already muted or follow the topic keep their choice.
    const followers = await ctx.tx.$queryRaw<{ id: number }[]>`
      SELECT u.id FROM user_profile u
      WHERE u.id = ANY(${mentioned}::int[]) AND u.realm_id = ${sender.realmId}
        AND u.is_active AND NOT u.is_bot AND u.automatically_follow_topics_where_mentioned
        AND NOT EXISTS (SELECT 1 FROM user_topic ut WHERE ut.user_profile_id = u.id
          AND ut.recipient_id = ${stream.recipientId} AND lower(ut.topic_name) = lower(${topic})
          AND ut.visibility_policy IN (${VisibilityPolicy.MUTED}, ${VisibilityPolicy.FOLLOWED}))`;
    if (followers.length > 0)
      for (const user of await ctx.tx.user.findMany({
        where: { id: { in: followers.map((row) => row.id) } },
      }))
        await doSetUserTopicPolicy(ctx, user, stream, topic, VisibilityPolicy.FOLLOWED);
  }
  return senderPolicy;
}
