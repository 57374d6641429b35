// GET /events (long-poll) and DELETE /events, served by any events replica for any queue.
import { Router } from 'express';
import { resolveRealm, userEndpoint } from '@parley/auth';
import { getConfig } from '@parley/config';
import { Role } from '@parley/db';
import { BadEventQueueIdError, JsonableError } from '@parley/errors';
import { queueOptionsFromParams, queueParams, type QueueMeta } from '@parley/events';
import { bodyParsers, defineRoute, p } from '@parley/http';
import type { EventsService } from './service';

export function eventsRouter(service: EventsService): Router {
  const { store, poller } = service;
  const router = Router();
  // Only for /events: the all-in-one server mounts the API tier's router after this one.
  router.use('/events', bodyParsers(getConfig().MAX_REQUEST_BODY_MIB * 1024 * 1024), resolveRealm);

  async function ownQueue(queueId: string, userId: number): Promise<QueueMeta> {
    const meta = await store.meta(queueId);
    // Another user's queue is indistinguishable from a missing one (Zulip logs it and says the same).
    if (!meta || meta.userId !== userId) throw new BadEventQueueIdError(queueId);
    return meta;
  }

  defineRoute(router, '/events', {
    GET: userEndpoint(
      {
        rateLimitScope: 'events',
        params: {
          queue_id: p.string({ maxLength: 100 }).optional(),
          last_event_id: p.int({ min: -1 }).optional(),
          dont_block: p.bool().default(false),
          ...queueParams,
        },
      },
      async ({ user, realm, params, res }) => {
        if (params.queue_id === undefined) {
          // Zulip: without a queue, a non-blocking call registers one with these parameters.
          if (!params.dont_block) throw new JsonableError("Missing 'queue_id' argument");
          const queueId = await store.create(
            user.id,
            realm.id,
            queueOptionsFromParams(params, { isGuest: user.role === Role.GUEST }),
          );
          return { events: [], queue_id: queueId };
        }
        const meta = await ownQueue(params.queue_id, user.id);
        if (params.last_event_id === undefined)
          throw new JsonableError("Missing 'last_event_id' argument");
        const generation = await store.nextPollGeneration(meta);
        await poller.announcePoll(meta, generation);
        const lifespanMs = meta.options.lifespan_secs * 1000;
        const pruned = await store.prune(meta, params.last_event_id, Date.now() + lifespanMs);
        if (!pruned.ok) {
          if (pruned.error === 'missing') throw new BadEventQueueIdError(meta.queueId);
          throw new JsonableError(
            pruned.error === 'already_pruned'
              ? `An event newer than ${pruned.lastEventId} has already been pruned!`
              : `Event ${pruned.lastEventId} was not in this queue`,
          );
        }
        const events = await store.events(meta);
        if (events.length > 0 || params.dont_block) return { events, queue_id: meta.queueId };
        // Parked: keep the queue alive past the longest wait, then refresh it on the way out.
        await store.touch(meta, Date.now() + lifespanMs + poller.heartbeatDelayMs() + 60_000);
        const woken = await poller.wait(meta, generation, (onClose) => res.on('close', onClose));
        await store.touch(meta, Date.now() + lifespanMs);
        return { events: woken ?? [], queue_id: meta.queueId };
      },
    ),
    DELETE: userEndpoint(
      { rateLimitScope: 'events', params: { queue_id: p.string({ maxLength: 100 }) } },
      async ({ user, params }) => {
        const meta = await ownQueue(params.queue_id, user.id);
        await store.delete(meta);
        await poller.announceDeleted(meta);
        return {};
      },
    ),
  });
  return router;
}
