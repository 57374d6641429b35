export {
  allPublicStreamsKey,
  keys,
  outboxRelayLeaseKey,
  rateLimitKeys,
  replicasKey,
  SHARD_USER_RANGE,
  shardOf,
  tusKeys,
  uploadTokenKey,
  zoomStateKey,
} from './keys';
export { LuaScript } from './lua';
export { RELEASE_IF_HELD, RENEW_IF_HELD } from './token-lock';
export { publishNotification, publishOutboxRows } from './publish';
export { makeQueueId, parseQueueId } from './queue-id';
export { queueOptionsFromParams, queueParams, type QueueParamValues } from './queue-params';
export {
  deleteEventsSpec,
  documentEventsEndpoints,
  EVENTS_CAPABILITY_PARAMS,
  getEventsSpec,
} from './events-endpoints';
export {
  DEFAULT_QUEUE_LIFESPAN_SECS,
  defaultQueueOptions,
  MAX_QUEUE_LIFESPAN_SECS,
  QueueStore,
  type GoneQueue,
  type NarrowTerm,
  type PollResult,
  type QueuedEvent,
  rawEventId,
  type RawEvent,
  type QueueMeta,
  type QueueOptions,
} from './queues';
export {
  createRedis,
  disconnectRedis,
  getRedis,
  pingRedis,
  REDIS_COMMAND_TIMEOUT_MS,
} from './redis';
export type { Notification, ZulipEvent } from './types';
