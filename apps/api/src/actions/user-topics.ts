// Setting a topic's visibility policy (Zulip's do_set_user_topic_visibility_policy): one row
// per user and topic, removed when the policy goes back to inherit. A request that changes
// nothing sends nothing; a change sends the legacy muted_topics list and a user_topic event
// to the user's clients.
import {
  columnsOf,
  query,
  statement,
  type ActionContext,
  type Message,
  type Stream,
  type User,
} from '@parley/db';
import { sendEventOnCommit } from '../lib/events';
import { topicHasMessages } from '../lib/messages';
import { subscriptionOf } from '../lib/streams';
import { AutoPolicy } from '../lib/user-settings';
import {
  mutedTopicsLegacy,
  policyOnSend,
  type SendContext,
  VisibilityPolicy,
  type VisibilityPolicyValue,
} from '../lib/user-topics';

// Typed SQL only (no ctx.tx): a send that changes the sender's policy runs without Prisma.
const currentPolicyForUpdate = statement<{ visibility_policy: number }, [number, number, string]>(`
  SELECT visibility_policy FROM user_topic
  WHERE user_profile_id = $1 AND recipient_id = $2 AND lower(topic_name) = lower($3)
  FOR UPDATE`);
const deletePolicy = statement<never, [number, number, string]>(`
  DELETE FROM user_topic
  WHERE user_profile_id = $1 AND recipient_id = $2 AND lower(topic_name) = lower($3)`);
// The stored spelling stays the one the row was created with, as in Zulip.
const upsertPolicy = statement<never, [number, number, number, string, Date, number]>(`
  INSERT INTO user_topic (user_profile_id, stream_id, recipient_id, topic_name,
                          last_updated, visibility_policy)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (user_profile_id, recipient_id, lower(topic_name))
  DO UPDATE SET visibility_policy = EXCLUDED.visibility_policy,
                last_updated = EXCLUDED.last_updated`);
// Mentioned users who follow topics where they are mentioned, unless they already muted or
// follow this one (they keep their choice).
const mentionFollowers = statement<User, [number[], number, number, string]>(`
  SELECT ${columnsOf('User', 'u')} FROM user_profile u
  WHERE u.id = ANY($1::int[]) AND u.realm_id = $2
    AND u.is_active AND NOT u.is_bot AND u.automatically_follow_topics_where_mentioned
    AND NOT EXISTS (SELECT 1 FROM user_topic ut WHERE ut.user_profile_id = u.id
      AND ut.recipient_id = $3 AND lower(ut.topic_name) = lower($4)
      AND ut.visibility_policy IN (${VisibilityPolicy.MUTED}, ${VisibilityPolicy.FOLLOWED}))
  ORDER BY u.id`);

/** Returns whether anything changed. `topic` is already normalized ("general chat" → "").
 * `withMutedTopics`: false where another change for the same user follows at once and sends
 * the legacy list (Zulip's skip_muted_topics_event). */
export async function doSetUserTopicPolicy(
  ctx: ActionContext,
  user: User,
  stream: Stream,
  topic: string,
  policy: VisibilityPolicyValue,
  { now = new Date(), withMutedTopics = true }: { now?: Date; withMutedTopics?: boolean } = {},
): Promise<boolean> {
  const [current] = await query(currentPolicyForUpdate, [user.id, stream.recipientId!, topic]);
  const currentPolicy = current?.visibility_policy ?? VisibilityPolicy.INHERIT;
  if (currentPolicy === policy) return false;
  if (policy === VisibilityPolicy.INHERIT)
    await query(deletePolicy, [user.id, stream.recipientId!, topic]);
  else await query(upsertPolicy, [user.id, stream.id, stream.recipientId!, topic, now, policy]);
  if (withMutedTopics)
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

/** Zulip's automatic topic policies on participation other than sending (a reaction, a
 * vote or task in a widget; Zulip's visibility_policy_for_participation with
 * should_change_visibility_policy): a subscriber whose settings say "on participation" follows
 * the channel message's topic, or in a muted channel unmutes it. Policies only increase: a
 * followed topic stays followed. Bots never change policies. */
export async function doAutoFollowOnParticipation(
  ctx: ActionContext,
  user: User,
  message: Pick<Message, 'subject'>,
  stream: Stream | null,
): Promise<void> {
  if (stream === null || user.isBot) return;
  const follow = user.automaticallyFollowTopicsPolicy === AutoPolicy.ON_PARTICIPATION;
  const unmute = user.automaticallyUnmuteTopicsInMutedStreamsPolicy === AutoPolicy.ON_PARTICIPATION;
  if (!follow && !unmute) return;
  const subscription = await subscriptionOf(user.id, stream, ctx.tx);
  if (!subscription) return;
  const policy = follow
    ? VisibilityPolicy.FOLLOWED
    : subscription.isMuted
      ? VisibilityPolicy.UNMUTED
      : null;
  if (policy === null) return;
  const [current] = await query(currentPolicyForUpdate, [
    user.id,
    stream.recipientId!,
    message.subject,
  ]);
  if (current?.visibility_policy === VisibilityPolicy.FOLLOWED) return;
  await doSetUserTopicPolicy(ctx, user, stream, message.subject, policy);
}

/** Zulip's automatic topic policies on send: the sender may follow (or, in a muted channel,
 * unmute) the topic per their settings, and people mentioned by name follow it when they
 * asked to. Returns the sender's new policy, for POST /messages's
 * automatic_new_visibility_policy. Bots never change policies. `context` was read with the
 * message's insert; null when setsPolicyOnSend said no. */
export async function doAutoFollowOnSend(
  ctx: ActionContext,
  sender: User,
  stream: Stream,
  topic: string,
  context: SendContext | null,
  mentionedIds: Iterable<number>,
): Promise<VisibilityPolicyValue | null> {
  let senderPolicy: VisibilityPolicyValue | null = null;
  if (context) {
    const policy = policyOnSend(sender, context);
    if (policy !== null && (await doSetUserTopicPolicy(ctx, sender, stream, topic, policy)))
      senderPolicy = policy;
  }
  for (const user of await mentionedWhoWillFollow(sender, stream, topic, mentionedIds))
    await doSetUserTopicPolicy(ctx, user, stream, topic, VisibilityPolicy.FOLLOWED);
  return senderPolicy;
}

/** The users a message mentions who start following its topic (see mentionFollowers); none
 * without a statement when it mentions nobody but its sender. */
export async function mentionedWhoWillFollow(
  sender: User,
  stream: Stream,
  topic: string,
  mentionedIds: Iterable<number>,
): Promise<User[]> {
  const mentioned = [...mentionedIds].filter((id) => id !== sender.id);
  if (mentioned.length === 0) return [];
  return query(mentionFollowers, [mentioned, sender.realmId, stream.recipientId!, topic]);
}

const topicPolicies = statement<
  { userId: number; policy: VisibilityPolicyValue },
  [number, string]
>(`
  SELECT user_profile_id AS "userId", visibility_policy AS policy FROM user_topic
  WHERE recipient_id = $1 AND lower(topic_name) = lower($2)`);
const usersById = statement<User, [number[]]>(`
  SELECT ${columnsOf('User', 'u')} FROM user_profile u WHERE u.id = ANY($1::int[])`);

/** Zulip's get_visibility_policy_after_merge: of a user's policies for two topics merged into
 * one, whichever shows more. */
function policyAfterMerge(
  a: VisibilityPolicyValue,
  b: VisibilityPolicyValue,
): VisibilityPolicyValue {
  const both = new Set([a, b]);
  for (const policy of [
    VisibilityPolicy.FOLLOWED,
    VisibilityPolicy.UNMUTED,
    VisibilityPolicy.INHERIT,
  ] as const)
    if (both.has(policy)) return policy;
  return VisibilityPolicy.MUTED;
}

interface TopicRef {
  stream: Stream;
  topic: string;
}

/** When a whole topic moves (messages `except` just did), users' policies for it go along
 * (Zulip's do_update_message): each is removed from the old topic and set on the new one,
 * merged with any the user had there when that topic already had messages. Users who lost
 * access to the messages (`lostAccess`, a move to another channel) only lose the old one. */
export async function doMoveTopicPolicies(
  ctx: ActionContext,
  from: TopicRef,
  to: TopicRef,
  { except, lostAccess }: { except: number[]; lostAccess: ReadonlySet<number> },
): Promise<void> {
  // A rename that only changes letter case keeps the same policies: they name topics
  // case-insensitively.
  if (from.stream.id === to.stream.id && from.topic.toLowerCase() === to.topic.toLowerCase())
    return;
  const [fromRows, toRows] = await Promise.all([
    query(topicPolicies, [from.stream.recipientId!, from.topic]),
    query(topicPolicies, [to.stream.recipientId!, to.topic]),
  ]);
  if (fromRows.length === 0 && toRows.length === 0) return;
  const targetHadMessages = await topicHasMessages(to.stream, to.topic, except);
  const before = new Map(fromRows.map((row) => [row.userId, row.policy]));
  const there = new Map(toRows.map((row) => [row.userId, row.policy]));
  const users = await query(usersById, [[...new Set([...before.keys(), ...there.keys()])]]);
  for (const user of users) {
    const old = before.get(user.id) ?? VisibilityPolicy.INHERIT;
    const current = there.get(user.id) ?? VisibilityPolicy.INHERIT;
    const next = targetHadMessages ? policyAfterMerge(old, current) : old;
    const setsNew = !lostAccess.has(user.id) && next !== current;
    // One legacy muted_topics list per user, after their last change.
    if (old !== VisibilityPolicy.INHERIT)
      await doSetUserTopicPolicy(ctx, user, from.stream, from.topic, VisibilityPolicy.INHERIT, {
        withMutedTopics: !setsNew,
      });
    if (setsNew) await doSetUserTopicPolicy(ctx, user, to.stream, to.topic, next);
  }
}

/** Zulip's apply_automatic_unmute_follow_topics_policy, for a message that a move made the
 * first of its topic: its sender follows the topic if they follow topics they start, or else
 * unmutes it in a channel they muted if they unmute topics they start there. */
export async function doAutoFollowOnMove(
  ctx: ActionContext,
  sender: User,
  stream: Stream,
  topic: string,
): Promise<void> {
  if (sender.automaticallyFollowTopicsPolicy === AutoPolicy.ON_INITIATION) {
    await doSetUserTopicPolicy(ctx, sender, stream, topic, VisibilityPolicy.FOLLOWED);
    return;
  }
  if (sender.automaticallyUnmuteTopicsInMutedStreamsPolicy !== AutoPolicy.ON_INITIATION) return;
  const subscription = await subscriptionOf(sender.id, stream, ctx.tx);
  if (subscription?.isMuted && subscription.isUserActive)
    await doSetUserTopicPolicy(ctx, sender, stream, topic, VisibilityPolicy.UNMUTED);
}
