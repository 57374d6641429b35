// Every Redis key name either tier uses. All keys of one shard share the hash tag {ev:K}: a
// shard's log, lease, checkpoint, queues and wake-up channel live on one Redis Cluster slot,
// so one Lua script can touch them atomically.

/** How many consecutive user ids share a shard. An organization's users are mostly created
 * together, so its channels' members have nearby ids: with ranges of ids rather than
 * `user_id mod shards`, a message reaches a few shards instead of every one, and each shard it
 * reaches costs a copy of the event in Redis, a script to append it, one to fan it out, and a
 * wake-up for every events replica to parse (docs/events.md has the measurements). The price:
 * an organization smaller than a range has its fan-out on one shard, so on one events replica
 * (Zulip shards its event queues by organization for the same reason); larger ones spread. */
export const SHARD_USER_RANGE = 1024;

export function shardOf(userId: number, shards: number): number {
  return Math.floor(userId / SHARD_USER_RANGE) % shards;
}

const tag = (shard: number) => `{ev:${shard}}`;

export const keys = {
  /** The shard's notification log (a Redis Stream), appended after commit by the API tier. */
  shardLog: (shard: number) => `${tag(shard)}:log`,
  /** Token of the events replica that owns the shard's fan-out (SET NX PX). */
  lease: (shard: number) => `${tag(shard)}:lease`,
  /** Log entries whose fan-out kept failing (a Redis Stream): kept for an operator to read,
   * with the error, so the shard could move on. */
  deadLetters: (shard: number) => `${tag(shard)}:dead`,
  /** Marks an outbox row as appended to this shard's log, so it is appended once. Named by
   * the row's id and when it was written: a database restored from a backup, or recreated,
   * hands out the same ids again, and its rows must not pass for ones already published. */
  published: (shard: number, outboxId: string, written: string) =>
    `${tag(shard)}:published:${outboxId}:${written}`,
  /** Queues registered on the shard (a Redis Stream of their ids, options and starting
   * points, kept CREATED_RETAIN_MS): the lease holder learns a new queue's options from it
   * before the queue's first event, instead of reading them then. */
  created: (shard: number) => `${tag(shard)}:created`,
  /** The release (version, merge base, feature level) the shard's queues last heard of: a
   * lease holder of another release announces itself to them in a `restart` event. */
  release: (shard: number) => `${tag(shard)}:release`,
  /** Id of the last log entry fanned out. */
  checkpoint: (shard: number) => `${tag(shard)}:checkpoint`,
  /** Sorted set of the shard's queue ids, scored by the time they expire (ms). */
  queueExpiry: (shard: number) => `${tag(shard)}:queues`,
  /** Pub/sub channel: new events, kicked and deleted queues of the shard. */
  wake: (shard: number) => `${tag(shard)}:wake`,
  /** Queue ids of one user (the user's shard). */
  userQueues: (shard: number, userId: number) => `${tag(shard)}:user:${userId}:queues`,
  /** Hash: owner, options, event-id counter, newest pruned id, poll generation. */
  queueMeta: (shard: number, queueId: string) => `${tag(shard)}:q:${queueId}:meta`,
  /** List of the queue's events as JSON, oldest first. */
  queueEvents: (shard: number, queueId: string) => `${tag(shard)}:q:${queueId}:events`,
  /** Messages whose `kind` notification was not sent to the user because a client of theirs
   * was open (a sorted set of message ids; apps/api/src/actions/set-aside-notifications.ts).
   * On the user's shard: removing the user's last queue reads it in the same script. */
  setAside: (shard: number, kind: 'email' | 'push', userId: number) =>
    `${tag(shard)}:set-aside:${kind}:${userId}`,
};

/** Lease of the API replica whose outbox relay is active (one at a time is enough). */
export const outboxRelayLeaseKey = 'outbox:relay:lease';

/** Live events replicas, scored by when their registration lapses (ms); used to share shards. */
export const replicasKey = 'events:replicas';

/** Users of an organization who have (or had) a queue with all_public_streams: public-channel
 * messages are also published to them. Members are never removed; a user whose queues are
 * gone costs the fan-out a lookup and receives nothing. */
export const allPublicStreamsKey = (realmId: number) => `realm:${realmId}:all_public_streams_users`;

/** Rate-limit counters (not per shard: any replica reads them): one prefix per domain and
 * window, followed by `:` and the counted entity (`api:<user id>`, an IP, `<realm>:<email>`). */
export const rateLimitKeys = {
  prefix: (domain: string, seconds: number) => `ratelimit:${domain}:${seconds}`,
};

/** A temporary download link for an upload (GET /user_uploads/{realm}/{path} in the API):
 * the path id, expiring after a minute, valid on every API replica. */
export const uploadTokenKey = (token: string) => `upload:temporary:${token}`;

/** Resumable uploads (/api/v1/tus) shared by every API replica: the lock of one upload (the
 * holder's token, expiring unless renewed), the channel on which a request waiting for a lock
 * asks its holder to let go, the answer of a finished upload (for a repeated last PATCH), and
 * an organization's unfinished uploads (a hash: upload id → `{declared length}:{expiry ms}`,
 * counted against its quota and each user's limit of open uploads). */
export const tusKeys = {
  lock: (uploadId: string) => `tus:lock:${uploadId}`,
  releaseChannel: 'tus:lock:release',
  finished: (uploadId: string) => `tus:finished:${uploadId}`,
  open: (realmId: number) => `tus:open:${realmId}`,
};

/** A Zoom authorization started by GET /calls/zoom/register: its state's nonce, holding the
 * user's id until the flow completes (consumed once) or the state expires. */
export const zoomStateKey = (nonce: string) => `zoom:oauth:state:${nonce}`;
