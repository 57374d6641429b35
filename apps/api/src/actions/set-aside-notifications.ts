// Zulip's idle, shared by pushes and missed-message emails, and what is set aside for users who
// are not. A user is present while a client of theirs takes message events (Zulip's
// receiver_is_off_zulip) and their presence reported activity within OFFLINE_THRESHOLD_SECS;
// else idle. A notification not sent because its user was present is set aside, and sent if
// their last client goes without the message being read (the `last-queue-gone` job, Zulip's
// missedmessage_hook); a notification sent is never set aside, so nothing is sent twice.
import { getConfig } from '@parley/config';
import { getPrisma } from '@parley/db';
import { getRedis, keys, MAX_QUEUE_LIFESPAN_SECS, QueueStore, shardOf } from '@parley/events';
import { OFFLINE_THRESHOLD_SECS } from '../lib/presence';

type NotificationKind = 'email' | 'push';

/** Of `userIds`, those present for the message at `at` (ms: when it was sent, or edited to
 * mention them): active recently (`activeRecently`, when the caller read it already) with a
 * client open that takes messages, registered before then. Their `kind` notification is set
 * aside, before their clients are looked at: a last client going meanwhile finds it set
 * aside. */
export async function presentSettingAside(
  kind: NotificationKind,
  userIds: number[],
  message: { id: number; at: number },
  activeRecently?: ReadonlySet<number>,
): Promise<Set<number>> {
  if (userIds.length === 0) return new Set();
  const active =
    activeRecently ??
    new Set(
      (
        await getPrisma().$queryRaw<{ id: number }[]>`
          SELECT user_profile_id AS id FROM user_presence
          WHERE user_profile_id = ANY(${userIds}::int[])
            AND last_active_time >= now() - make_interval(secs => ${OFFLINE_THRESHOLD_SECS})`
      ).map((row) => row.id),
    );
  const candidates = userIds.filter((id) => active.has(id));
  if (candidates.length === 0) return new Set();
  await setAside(kind, candidates, message.id);
  const present = await new QueueStore(getRedis(), getConfig().EVENT_SHARDS).acceptingMessages(
    candidates,
    message.at,
  );
  const idle = candidates.filter((id) => !present.has(id));
  if (idle.length > 0) {
    const pipeline = getRedis().pipeline();
    for (const userId of idle) pipeline.zrem(setAsideKey(kind, userId), message.id);
    await execAll(pipeline);
  }
  return present;
}

/** A user's messages of one kind set aside (a sorted set of message ids, scored by when; on the
 * user's shard of the events tier, which reads it when their last queue goes). An entry is kept
 * as long as a queue can live, and a day more: its client's queue is gone by then. */
const setAsideKey = (kind: NotificationKind, userId: number) =>
  keys.setAside(shardOf(userId, getConfig().EVENT_SHARDS), kind, userId);
const SET_ASIDE_RETAIN_MS = (MAX_QUEUE_LIFESPAN_SECS + 86_400) * 1000;

/** Sets the message's `kind` notification aside for each of `userIds`. */
async function setAside(
  kind: NotificationKind,
  userIds: Iterable<number>,
  messageId: number,
): Promise<void> {
  const now = Date.now();
  const pipeline = getRedis().pipeline();
  for (const userId of userIds) {
    const key = setAsideKey(kind, userId);
    pipeline
      .zadd(key, now, messageId)
      .zremrangebyscore(key, '-inf', now - SET_ASIDE_RETAIN_MS)
      .pexpire(key, SET_ASIDE_RETAIN_MS);
  }
  await execAll(pipeline);
}

/** Runs the pipeline; throws its first command's error, if any. */
async function execAll(
  pipeline: ReturnType<ReturnType<typeof getRedis>['pipeline']>,
): Promise<void> {
  const failed = (await pipeline.exec())?.find(([error]) => error)?.[0];
  if (failed) throw failed;
}

/** Of `messageIds`, those whose `kind` notification was set aside for the user. */
export async function setAsideAmong(
  kind: NotificationKind,
  userId: number,
  messageIds: number[],
): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const scores = await getRedis().zmscore(setAsideKey(kind, userId), ...messageIds);
  return messageIds.filter((_, index) => scores[index] !== null);
}

/** The notifications are sent (or decided against): no longer set aside. */
export async function forgetSetAside(
  kind: NotificationKind,
  userId: number,
  messageIds: number[],
): Promise<void> {
  if (messageIds.length > 0) await getRedis().zrem(setAsideKey(kind, userId), ...messageIds);
}
