// Telling long-lived clients that the server changed (Zulip's send_restart_events): queues
// outlive an events replica here, so a client registered before an upgrade would otherwise
// keep the feature level it registered with until its queue expires. The first lease holder of
// a shard that runs another release than the one the shard's queues last heard of appends a
// `restart` event to each of them (Zulip's form: version, merge base, feature level, server
// generation), then records its release. Restarting replicas of one release announce nothing;
// a shard with no release recorded (a new Redis, or the first release that records it) has
// its release recorded silently, there being nothing to compare with.
import { ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION } from '@parley/config';
import { keys, type QueueStore } from '@parley/events';
import type { Logger } from '@parley/logger';

/** Queues per script run: each run holds Redis for its queues only. */
const BATCH = 500;

export interface Release {
  zulip_version: string;
  zulip_merge_base: string;
  zulip_feature_level: number;
}

export const CURRENT_RELEASE: Release = {
  zulip_version: ZULIP_VERSION,
  zulip_merge_base: ZULIP_MERGE_BASE,
  zulip_feature_level: ZULIP_FEATURE_LEVEL,
};

/** Announces `release` to the shard's queues if they last heard of another one. Returns false
 * when the lease was lost meanwhile (the new holder announces instead). */
export async function announceRelease(
  store: QueueStore,
  shard: number,
  token: string,
  log: Logger,
  release: Release = CURRENT_RELEASE,
): Promise<boolean> {
  const { redis } = store;
  const recorded = JSON.stringify(release);
  const previous = await redis.get(keys.release(shard));
  if (previous === recorded) return true;
  if (previous !== null) {
    const event = {
      type: 'restart',
      ...release,
      // Seconds, as Zulip's SERVER_GENERATION: newer than any generation a client saw.
      server_generation: Math.floor(Date.now() / 1000),
    };
    const queueIds = await redis.zrange(keys.queueExpiry(shard), '0', '-1');
    let announced = 0;
    for (let start = 0; start < queueIds.length; start += BATCH) {
      const appended = await store.appendToQueues(
        shard,
        token,
        queueIds.slice(start, start + BATCH),
        event,
      );
      if (appended === null) return false;
      if (appended.length === 0) continue;
      announced += appended.length;
      // The fan-out's wake-up form (poller.ts onEvents): parked polls answer with the event.
      const pairs = appended.map(([queueId, id]) => `${queueId} ${id} 1`).join(' ');
      await redis.publish(keys.wake(shard), `E:${pairs}\n${JSON.stringify(event).slice(1)}`);
    }
    log.info('release announced', { shard, queues: announced, release });
  }
  await redis.set(keys.release(shard), recorded);
  return true;
}
