// GET /events (long-poll) and DELETE /events, served by any events replica for any queue.
import { Router, type RequestHandler } from 'express';
import { resolveRealm, userEndpoint } from '@parley/auth';
import { getConfig } from '@parley/config';
import { BadEventQueueIdError, JsonableError } from '@parley/errors';
import {
  deleteEventsSpec,
  EVENTS_CAPABILITY_PARAMS,
  getEventsSpec,
  parseQueueId,
  queueOptionsFromParams,
  type QueueMeta,
} from '@parley/events';
import { bodyParsers, defineRoute, jsonArray } from '@parley/http';
import { queueLastQueueGone } from './last-queue-gone';
import type { EventsService } from './service';

export function eventsRouter(
  service: EventsService,
  handlers: EventsHandlers = eventsHandlers(service),
): Router {
  const router = Router();
  // Only for /events: the all-in-one server mounts the API tier's router after this one.
  router.use('/events', bodyParsers(getConfig().MAX_REQUEST_BODY_MIB * 1024 * 1024), resolveRealm);
  defineRoute(router, '/events', handlers);
  return router;
}

export interface EventsHandlers {
  GET: RequestHandler;
  DELETE: RequestHandler;
}

/** The handlers of /events, after the body parsers and resolveRealm (the router runs them; the
 * events tier also serves GET directly, see app.ts). */
export function eventsHandlers(service: EventsService): EventsHandlers {
  const { store, poller } = service;

  async function ownQueue(queueId: string, userId: number): Promise<QueueMeta> {
    const meta = await store.meta(queueId);
    // Another user's queue is indistinguishable from a missing one (Zulip logs it and says the same).
    if (!meta || meta.userId !== userId) throw new BadEventQueueIdError(queueId);
    return meta;
  }

  return {
    GET: userEndpoint(
      { rateLimitScope: 'events', ...getEventsSpec },
      async ({ user, realm, params, res }) => {
        if (params.queue_id === undefined) {
          // Zulip: without a queue, a non-blocking call registers one with these parameters.
          if (!params.dont_block) throw new JsonableError("Missing 'queue_id' argument");
          // Capabilities come as parameters of their own here (Zulip's get_events_backend).
          const capabilities = { ...params.client_capabilities };
          for (const name of EVENTS_CAPABILITY_PARAMS)
            if (params[name] !== undefined) capabilities[name] = params[name];
          const queueId = await store.create(
            user.id,
            realm.id,
            queueOptionsFromParams(
              { ...params, client_capabilities: capabilities },
              {
                // Zulip applies a bot's defaults in /register only.
                role: user.role,
                defaultAllPublicStreams: false,
                defaultEventsRegisterStreamId: null,
              },
            ),
          );
          return { events: [], queue_id: queueId };
        }
        // Zulip's fetch_events: before the queue is looked up.
        if (params.last_event_id === undefined)
          throw new JsonableError("Missing 'last_event_id' argument");
        const queueId = params.queue_id;
        const shard = parseQueueId(queueId, store.shards)?.shard ?? 0;
        // Registered before the queue is read, so no wake-up in between is missed.
        const parked = poller.park(
          { shard, queueId },
          (onClose) => res.on('close', onClose),
          params.last_event_id,
        );
        let polled;
        try {
          polled = await store.pollRaw(
            queueId,
            user.id,
            params.last_event_id,
            // A poll that will not wait keeps the queue its lifespan only.
            params.dont_block ? 0 : poller.heartbeatDelayMs() + 60_000,
          );
        } catch (error) {
          parked.cancel();
          throw error;
        }
        if (!polled.ok) {
          parked.cancel();
          if (polled.error === 'missing') throw new BadEventQueueIdError(queueId);
          throw new JsonableError(
            polled.error === 'already_pruned'
              ? `An event newer than ${polled.lastEventId} has already been pruned!`
              : `Event ${polled.lastEventId} was not in this queue`,
          );
        }
        if (polled.events.length > 0 || params.dont_block) {
          parked.cancel();
          return { events: jsonArray(polled.events), queue_id: queueId };
        }
        parked.setGeneration(polled.generation);
        return { events: jsonArray((await parked.answer) ?? []), queue_id: queueId };
      },
    ),
    DELETE: userEndpoint(
      { rateLimitScope: 'events', ...deleteEventsSpec },
      async ({ user, params }) => {
        const meta = await ownQueue(params.queue_id, user.id);
        const gone = await store.delete(meta);
        // Before anything else can fail: the queue's report exists nowhere else.
        if (gone) await queueLastQueueGone([gone]);
        await poller.announceDeleted(meta);
        return {};
      },
    ),
  };
}
