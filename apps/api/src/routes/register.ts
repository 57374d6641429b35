// POST /register: create the queue first, then read the state, then fold in the events that
// arrived meanwhile (as Zulip does), so no change falls between the state and the queue.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { getConfig } from '@parley/config';
import {
  getRedis,
  parseQueueId,
  QueueStore,
  queueOptionsFromParams,
  queueParams,
} from '@parley/events';
import { defineRoute, p } from '@parley/http';
import { includeSubscribersParam } from '../lib/channel-params';
import { MAX_HISTORY_LIMIT_DAYS } from '../lib/presence';
import {
  applyEvent,
  fetchInitialState,
  postProcessState,
  refreshAfterEvents,
  STATE_TYPES,
} from '../lib/initial-state';

export const registerRoutes = Router();

defineRoute(registerRoutes, '/register', {
  POST: userEndpoint(
    {
      params: {
        ...queueParams,
        fetch_event_types: p.json(z.array(z.string()).nullable()).optional(),
        include_subscribers: includeSubscribersParam,
        presence_history_limit_days: p.int({ min: 0, max: MAX_HISTORY_LIMIT_DAYS }).optional(),
      },
      // The sections asked for (docs/register.md lists them); always the queue and the
      // server's versions.
      response: z.looseObject({
        queue_id: z.string(),
        last_event_id: z.int(),
        idle_queue_timeout_secs: z.int(),
        zulip_feature_level: z.int(),
        zulip_version: z.string(),
        zulip_merge_base: z.string(),
      }),
    },
    async ({ user, realm, params }) => {
      const options = queueOptionsFromParams(params, user);
      const store = new QueueStore(getRedis(), getConfig().EVENT_SHARDS);
      const queueId = await store.create(user.id, realm.id, options);
      const fetchTypes = params.fetch_event_types ?? params.event_types ?? [...STATE_TYPES];
      const capabilities = options.client_capabilities;
      const stateOptions = {
        clientGravatar: options.client_gravatar,
        slimPresence: options.slim_presence || capabilities.simplified_presence_events === true,
        presenceHistoryLimitDays: params.presence_history_limit_days,
        emptyTopicName: capabilities.empty_topic_name === true,
        explicitTypes: (params.fetch_event_types ?? params.event_types) != null,
        includeSubscribers: params.include_subscribers !== false,
        archivedChannels: capabilities.archived_channels === true,
        linkifierUrlTemplate: capabilities.linkifier_url_template === true,
        includeDeactivatedGroups: capabilities.include_deactivated_groups === true,
        userListIncomplete: capabilities.user_list_incomplete === true,
        peers: new Map<number, Set<number>>(),
      };
      const state = await fetchInitialState(user, realm, new Set(fetchTypes), stateOptions);
      const raced = await store.events({
        shard: parseQueueId(queueId, getConfig().EVENT_SHARDS)!.shard,
        queueId,
      });
      let lastEventId = -1;
      for (const event of raced) {
        applyEvent(state, event, user, stateOptions);
        lastEventId = event.id;
      }
      if (raced.length > 0) await refreshAfterEvents(state, raced, user, realm, stateOptions);
      postProcessState(state, user, capabilities);
      return {
        ...state,
        queue_id: queueId,
        last_event_id: lastEventId,
        // How long the queue outlives its last poll (the lifespan asked for, capped).
        idle_queue_timeout_secs: options.lifespan_secs,
      };
    },
  ),
});
