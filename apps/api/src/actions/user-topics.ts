// Setting a topic's visibility policy (Zulip's do_set_user_topic_visibility_policy): one row
// per user and topic, removed when the policy goes back to inherit. A request that changes
// nothing sends nothing; a change sends the legacy muted_topics list and a user_topic event
// to the user's clients.
import type { ActionContext, Stream, User } from '@parley/db';
import { sendEventOnCommit } from '../lib/events';
import {
  mutedTopicsLegacy,
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
  sendEventOnCommit(
    ctx,
    { type: 'muted_topics', muted_topics: await mutedTopicsLegacy(user, tx) },
    [user.id],
  );
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
