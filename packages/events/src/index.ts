export { keys, rateLimitKeys, shardOf } from './keys';
export { publishNotification } from './publish';
export { createRedis, disconnectRedis, getRedis, pingRedis } from './redis';
export type { Notification, ZulipEvent } from './types';
