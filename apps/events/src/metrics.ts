// The events tier's gauges, read when Prometheus scrapes: parked long-polls, shards held, and
// the event queues of those shards. Every service running in the process counts (the
// all-in-one server and tests may run more than one).
import { gauge } from '@parley/metrics';
import { keys } from '@parley/events';
import type { EventsService } from './service';

const live = new Set<EventsService>();

gauge(
  'parley_events_parked_polls',
  'Long-polls waiting for events on this replica',
  [],
  function () {
    this.set([...live].reduce((sum, service) => sum + service.poller.parked(), 0));
  },
);

gauge(
  'parley_events_shards_held',
  'Event shards whose fan-out this replica holds',
  [],
  function () {
    this.set([...live].reduce((sum, s) => sum + (s.fanout?.heldShards().length ?? 0), 0));
  },
);

gauge(
  'parley_events_queues',
  'Event queues in the shards this replica holds (each replica reports its own shards)',
  [],
  async function () {
    let total = 0;
    for (const service of live)
      for (const shard of service.fanout?.heldShards() ?? [])
        total += await service.store.redis.zcard(keys.queueExpiry(shard)).catch(() => 0);
    this.set(total);
  },
);

export function trackService(service: EventsService): () => void {
  live.add(service);
  return () => live.delete(service);
}
