// The events tier's moving parts in one place: the queue store, the parked long-polls and (on
// replicas that run it) the fan-out. Both the events app and the all-in-one server start it.
import { getConfig } from '@parley/config';
import { createRedis, QueueStore } from '@parley/events';
import { getLogger } from '@parley/logger';
import { Fanout, SHARD_READ_TIMEOUT_MS } from './fanout';
import { queueLastQueueGone } from './last-queue-gone';
import { trackService } from './metrics';
import { Poller } from './poller';

export interface EventsService {
  store: QueueStore;
  poller: Poller;
  fanout: Fanout | null;
  /** Answers parked polls, releases shard leases, closes connections. */
  stop(): Promise<void>;
}

export interface EventsServiceOptions {
  fanout?: boolean;
  heartbeatSeconds?: number;
  heartbeatJitterSeconds?: number;
  leaseMs?: number;
  gcIntervalMs?: number;
}

export async function startEventsService(
  options: EventsServiceOptions = {},
): Promise<EventsService> {
  const config = getConfig();
  const log = getLogger();
  // Queue commands from many polls answered in one turn of the event loop go out in one
  // write (auto-pipelining): each write to Redis costs a system call and a wake-up, which
  // dominated the tier's CPU per poll. Its own connection, because rate-limiter-flexible,
  // on the shared one, does not work with auto-pipelining.
  const redis = createRedis(config.REDIS_URL, { enableAutoPipelining: true });
  const store = new QueueStore(redis, config.EVENT_SHARDS);
  const subscriber = createRedis(config.REDIS_URL, {
    maxRetriesPerRequest: null,
    commandTimeout: undefined,
  });
  const poller = new Poller({
    store,
    subscriber,
    shards: config.EVENT_SHARDS,
    heartbeatSeconds: options.heartbeatSeconds ?? config.EVENTS_HEARTBEAT_SECONDS,
    heartbeatJitterSeconds:
      options.heartbeatJitterSeconds ?? config.EVENTS_HEARTBEAT_JITTER_SECONDS,
    log,
  });
  await poller.start();
  // The garbage collector's `last-queue-gone` jobs being queued: stopping waits for them.
  const queuingJobs = new Set<Promise<void>>();
  const fanout =
    options.fanout === false
      ? null
      : new Fanout({
          redis,
          // A shard's blocking reads wait up to SHARD_READ_BLOCK_MS by design, so the usual
          // command timeout does not fit them; blockingTimeout bounds them instead, including a
          // read queued while Redis is away (ioredis would otherwise keep it forever, and the
          // worker waiting on it with it). The connection is dropped and renewed with the lease.
          connect: () =>
            createRedis(config.REDIS_URL, {
              maxRetriesPerRequest: null,
              commandTimeout: undefined,
              blockingTimeout: SHARD_READ_TIMEOUT_MS,
            }),
          shards: config.EVENT_SHARDS,
          leaseMs: options.leaseMs ?? config.EVENTS_LEASE_MS,
          retainMs: config.EVENTS_LOG_RETAIN_MS,
          gcIntervalMs: options.gcIntervalMs ?? config.EVENTS_GC_INTERVAL_MS,
          log,
          onExpired: (gone) => {
            const queuing = queueLastQueueGone([gone]).finally(() => queuingJobs.delete(queuing));
            queuingJobs.add(queuing);
          },
        });
  fanout?.start();
  const service: EventsService = {
    store,
    poller,
    fanout,
    stop: async () => {
      untrack();
      poller.drain();
      await fanout?.stop();
      await Promise.all(queuingJobs);
      subscriber.disconnect();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
  const untrack = trackService(service);
  return service;
}
