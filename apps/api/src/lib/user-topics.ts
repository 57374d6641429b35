// Topic visibility (Zulip's UserTopic): a user's muted, unmuted and followed topics, as
// /register lists them, and as SQL conditions for narrows (is:followed, is:muted, in:home).
// Topics are compared case-insensitively, as everywhere in Zulip.
import { Prisma, query, statement, type User } from '@parley/db';
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

export interface TopicPolicyRow {
  stream_id: number;
  stream_name: string;
  topic_name: string;
  visibility_policy: number;
  last_updated: Date;
}

/** The user's ($1) policy rows in channels that are not archived, before any further
 * condition and the order. */
const TOPIC_POLICY_ROWS = `
  SELECT ut.stream_id, s.name AS stream_name, ut.topic_name, ut.visibility_policy,
         ut.last_updated
  FROM user_topic ut JOIN stream s ON s.id = ut.stream_id
  WHERE ut.user_profile_id = $1 AND NOT s.deactivated`;
const topicPolicyRowsOf = statement<TopicPolicyRow, [number]>(
  `${TOPIC_POLICY_ROWS} ORDER BY ut.id`,
);

/** The user's policy rows in channels that are not archived: what user_topics and the legacy
 * muted_topics are both made of (in the caller's transaction, if any). */
export function topicPolicyRows(user: Pick<User, 'id'>): Promise<TopicPolicyRow[]> {
  return query(topicPolicyRowsOf, [user.id]);
}

/** user_topics of /register: every policy row of channels that are not archived. */
export function presentUserTopics(rows: TopicPolicyRow[]): UserTopicEntry[] {
  return rows.map((row) => ({
    stream_id: row.stream_id,
    topic_name: row.topic_name,
    visibility_policy: row.visibility_policy,
    last_updated: seconds(row.last_updated),
  }));
}

/** The legacy muted_topics list: [channel name, topic, timestamp] for muted topics only. */
export function presentMutedTopicsLegacy(rows: TopicPolicyRow[]): [string, string, number][] {
  return rows
    .filter((row) => row.visibility_policy === VisibilityPolicy.MUTED)
    .map((row) => [row.stream_name, row.topic_name, seconds(row.last_updated)]);
}

const mutedTopicRowsOf = statement<TopicPolicyRow, [number]>(
  `${TOPIC_POLICY_ROWS} AND ut.visibility_policy = ${VisibilityPolicy.MUTED} ORDER BY ut.id`,
);

/** The legacy muted_topics list alone (every policy change sends it). */
export async function mutedTopicsLegacy(
  user: Pick<User, 'id'>,
): Promise<[string, string, number][]> {
  return presentMutedTopicsLegacy(await query(mutedTopicRowsOf, [user.id]));
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

const mutingOf = statement<
  { muted_channels: number[]; topics: { s: number; t: string; p: number }[] },
  [number]
>(`
  SELECT ARRAY(
      SELECT st.id FROM subscription s JOIN stream st ON st.recipient_id = s.recipient_id
      WHERE s.user_profile_id = $1 AND s.active AND s.is_muted
    ) AS muted_channels,
    COALESCE((SELECT json_agg(json_build_object('s', stream_id, 't', topic_name,
                                                'p', visibility_policy))
              FROM user_topic WHERE user_profile_id = $1), '[]') AS topics`);

/** The user's muted channels and topic policies, in one statement (in the caller's
 * transaction, if any). */
export async function loadMuting(user: Pick<User, 'id'>): Promise<Muting> {
  const [row] = await query(mutingOf, [user.id]);
  return {
    mutedChannels: new Set(row!.muted_channels),
    topics: new Map(row!.topics.map((topic) => [topicKey(topic.s, topic.t), topic.p])),
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

/** Whether a send by `sender` may set their policy automatically: then the send reads the
 * context below. */
export function setsPolicyOnSend(sender: Pick<User, 'isBot'> & AutoSettings): boolean {
  return (
    !sender.isBot &&
    (sender.automaticallyFollowTopicsPolicy !== AutoPolicy.NEVER ||
      sender.automaticallyUnmuteTopicsInMutedStreamsPolicy !== AutoPolicy.NEVER)
  );
}

/** Columns giving the sender's policy, channel muting and whether the topic had messages the
 * sender can see, read with the channel before the message is inserted (so the new message is
 * not among them; a send decides from them whether it needs a transaction). Null unless
 * `wanted`.
 * The arguments are the statement's SQL parameters (with `sharedHistory`, the sender sees the
 * whole topic; otherwise only their copies). */
export function sendContextColumns(p: {
  wanted: string;
  user: string;
  recipient: string;
  topic: string;
  sharedHistory: string;
}): string {
  return `
    CASE WHEN ${p.wanted} THEN (SELECT visibility_policy FROM user_topic
      WHERE user_profile_id = ${p.user} AND recipient_id = ${p.recipient}
        AND lower(topic_name) = lower(${p.topic})) END AS send_topic_policy,
    CASE WHEN ${p.wanted} THEN (SELECT is_muted FROM subscription
      WHERE user_profile_id = ${p.user} AND recipient_id = ${p.recipient} AND active)
    END AS send_channel_muted,
    CASE WHEN NOT ${p.wanted} THEN NULL
      WHEN ${p.sharedHistory} THEN EXISTS (SELECT 1 FROM message
        WHERE recipient_id = ${p.recipient} AND upper(subject) = upper(${p.topic}))
      ELSE EXISTS (SELECT 1 FROM user_message um JOIN message m ON m.id = um.message_id
        WHERE um.user_profile_id = ${p.user} AND m.recipient_id = ${p.recipient}
          AND upper(m.subject) = upper(${p.topic}))
    END AS send_topic_had_messages`;
}

export interface SendContextRow {
  send_topic_policy: number | null;
  send_channel_muted: boolean | null;
  send_topic_had_messages: boolean | null;
}

export function sendContextOf(row: SendContextRow): SendContext {
  return {
    current: row.send_topic_policy ?? VisibilityPolicy.INHERIT,
    channelMuted: row.send_channel_muted === true,
    initiation: row.send_topic_had_messages !== true,
  };
}
