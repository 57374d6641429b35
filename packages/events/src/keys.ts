// Every Redis key name either tier uses. All keys of one shard share the hash tag {ev:K}, so a
// shard's log, leases, checkpoint and queues live on one Redis Cluster slot.

export function shardOf(userId: number, shards: number): number {
  return userId % shards;
}

export const keys = {
  /** The shard's notification log (a Redis Stream), appended after commit by the API tier. */
  shardLog: (shard: number) => `{ev:${shard}}:log`,
};

/** Rate-limit counters (not per shard: any replica of the API tier reads them). */
export const rateLimitKeys = {
  failedLogins: (realmId: number, username: string) =>
    `ratelimit:authenticate_by_username:${realmId}:${username.toLowerCase()}`,
};
