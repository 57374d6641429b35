// Topic visibility (Zulip's UserTopic): a user's muted, unmuted and followed topics, as
// /register lists them, and as SQL conditions for narrows (is:followed, is:muted, in:home).
// Topics are compared case-insensitively, as everywhere in Zulip.
import { getPrisma, Prisma, type Tx, type User } from '@parley/db';
import { AutoPolicy } from './user-settings';

export const VisibilityPolicy = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;
export type VisibilityPolicyValue = (typeof VisibilityPolicy)[keyof typeof VisibilityPolicy];

export interface UserTopicEntry {
  stream_id: number;
  topic_name: string;
  visibility_policy: number;
  last_updated: number;
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** user_topics of /register: every policy row of channels that are not archived. */
export async function userTopics(user: Pick<User, 'id'>, db: Tx = getPrisma()) {
  const rows = await db.userTopic.findMany({
    where: { userId: user.id, stream: { deactivated: false } },
    orderBy: { id: 'asc' },
  });
  return rows.map((row): UserTopicEntry => ({
    stream_id: row.streamId,
    topic_name: row.topicName,
    visibility_policy: row.visibilityPolicy,
    last_updated: seconds(row.lastUpdated),
  }));
}

/** The legacy muted_topics list: [channel name, topic, timestamp] for muted topics only. */
export async function mutedTopicsLegacy(
  user: Pick<User, 'id'>,
  db: Tx = getPrisma(),
): Promise<[string, string, number][]> {
  const rows = await db.userTopic.findMany({
    where: {
      userId: user.id,
      visibilityPolicy: VisibilityPolicy.MUTED,
      stream: { deactivated: false },
    },
    include: { stream: { select: { name: true } } },
    orderBy: { id: 'asc' },
  });
  return rows.map((row) => [row.stream.name, row.topicName, seconds(row.lastUpdated)]);
}

/** `m` (message) is in a topic the user gave one of `policies`. */
export function topicPolicyIn(userId: number, policies: readonly number[]): Prisma.Sql {
  return Prisma.sql`(m.is_channel_message AND EXISTS (SELECT 1 FROM user_topic ut
    WHERE ut.user_profile_id = ${userId} AND ut.recipient_id = m.recipient_id
      AND lower(ut.topic_name) = lower(m.subject)
      AND ut.visibility_policy IN (${Prisma.join(policies)})))`;
}

/** Zulip's exclude_stream_and_topic_mutes, negated: a muted topic, or a muted channel's topic
 * that the user did not unmute or follow. With `topicsOnly` (a narrow to one channel) the
 * channel's own muting does not count. */
export function mutedCondition(userId: number, topicsOnly = false): Prisma.Sql {
  const mutedTopic = topicPolicyIn(userId, [VisibilityPolicy.MUTED]);
  if (topicsOnly) return mutedTopic;
  return Prisma.sql`(${mutedTopic} OR (m.recipient_id IN (SELECT s.recipient_id
      FROM subscription s WHERE s.user_profile_id = ${userId} AND s.active AND s.is_muted)
    AND NOT ${topicPolicyIn(userId, [VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED])}))`;
}

/** What unread counting needs to know of a user's muting (Zulip's is_row_muted). */
export interface Muting {
  mutedChannels: Set<number>;
  /** `${stream id}:${lower topic}` → policy. */
  topics: Map<string, number>;
}

export async function loadMuting(user: Pick<User, 'id'>, db: Tx = getPrisma()): Promise<Muting> {
  const [subs, topics] = await Promise.all([
    db.$queryRaw<{ stream_id: number }[]>`
      SELECT st.id AS stream_id FROM subscription s JOIN stream st ON st.recipient_id = s.recipient_id
      WHERE s.user_profile_id = ${user.id} AND s.active AND s.is_muted`,
    db.userTopic.findMany({
      where: { userId: user.id },
      select: { streamId: true, topicName: true, visibilityPolicy: true },
    }),
  ]);
  return {
    mutedChannels: new Set(subs.map((row) => row.stream_id)),
    topics: new Map(
      topics.map((row) => [topicKey(row.streamId, row.topicName), row.visibilityPolicy]),
    ),
  };
}

export const topicKey = (streamId: number, topic: string) => `${streamId}:${topic.toLowerCase()}`;

export function isTopicMuted(muting: Muting, streamId: number, topic: string): boolean {
  const policy = muting.topics.get(topicKey(streamId, topic));
  if (muting.mutedChannels.has(streamId))
    return policy !== VisibilityPolicy.UNMUTED && policy !== VisibilityPolicy.FOLLOWED;
  return policy === VisibilityPolicy.MUTED;
}

/** What decides whether sending a message changes the sender's policy for its topic. */
export interface SendContext {
  current: number;
  /** The sender's subscription to the channel is muted (false when not subscribed). */
  channelMuted: boolean;
  /** No other message of the topic that the sender can see: the sender starts the topic. */
  initiation: boolean;
}

type AutoSettings = Pick<
  User,
  'automaticallyFollowTopicsPolicy' | 'automaticallyUnmuteTopicsInMutedStreamsPolicy'
>;

/** Zulip's visibility_policy_for_send_message: the policy sending should set, or null. The
 * settings say when to follow (and, in muted channels, unmute): on participation, on send, on
 * initiation (first message of the topic) or never; a policy only ever increases. */
export function policyOnSend(
  settings: AutoSettings,
  context: SendContext,
): VisibilityPolicyValue | null {
  const follow = settings.automaticallyFollowTopicsPolicy;
  const unmute = settings.automaticallyUnmuteTopicsInMutedStreamsPolicy;
  const { current, channelMuted, initiation } = context;
  if (current === VisibilityPolicy.FOLLOWED) return null;
  // Participation and send are the same moment for a sent message.
  const onSend = (policy: number) =>
    policy === AutoPolicy.ON_PARTICIPATION || policy === AutoPolicy.ON_SEND;
  if (onSend(follow)) return VisibilityPolicy.FOLLOWED;
  let candidate: VisibilityPolicyValue | null =
    channelMuted && onSend(unmute) ? VisibilityPolicy.UNMUTED : null;
  if (current !== VisibilityPolicy.INHERIT) return candidate === current ? null : candidate;
  if (!initiation) return candidate;
  if (follow === AutoPolicy.ON_INITIATION) return VisibilityPolicy.FOLLOWED;
  if (channelMuted && unmute === AutoPolicy.ON_INITIATION) candidate = VisibilityPolicy.UNMUTED;
  return candidate;
}

/** The sender's policy, channel muting and whether the message starts its topic, in one
 * query. With `sharedHistory` the sender sees the whole topic; otherwise only their copies. */
export async function sendContext(
  db: Tx,
  userId: number,
  recipientId: number,
  topic: string,
  messageId: number,
  sharedHistory: boolean,
): Promise<SendContext> {
  const [row] = await db.$queryRaw<
    { current: number | null; channel_muted: boolean | null; others: boolean }[]
  >`
    SELECT
      (SELECT visibility_policy FROM user_topic WHERE user_profile_id = ${userId}
         AND recipient_id = ${recipientId} AND lower(topic_name) = lower(${topic})) AS current,
      (SELECT is_muted FROM subscription WHERE user_profile_id = ${userId}
         AND recipient_id = ${recipientId} AND active) AS channel_muted,
      CASE WHEN ${sharedHistory}
        THEN EXISTS (SELECT 1 FROM message WHERE recipient_id = ${recipientId}
               AND upper(subject) = upper(${topic}) AND id <> ${messageId})
        ELSE EXISTS (SELECT 1 FROM user_message um JOIN message m ON m.id = um.message_id
               WHERE um.user_profile_id = ${userId} AND m.recipient_id = ${recipientId}
                 AND upper(m.subject) = upper(${topic}) AND m.id <> ${messageId})
      END AS others`;
  return {
    current: row?.current ?? VisibilityPolicy.INHERIT,
    channelMuted: row?.channel_muted === true,
    initiation: row?.others !== true,
  };
}
