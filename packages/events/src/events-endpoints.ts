// What GET and DELETE /events accept and answer, declared once: the events tier serves them, and
// the API tier's OpenAPI description documents them too (behind the load balancer both tiers
// answer under one /api/v1).
import { z } from 'zod';
import { p, recordRoute, type Param } from '@parley/http';
import { queueParams } from './queue-params';

/** The client capabilities GET /events takes as parameters of their own when it registers a
 * queue (Zulip's get_events_backend), beside /register's client_capabilities. */
export const EVENTS_CAPABILITY_PARAMS = [
  'bulk_message_deletion',
  'stream_typing_notifications',
  'pronouns_field_type_supported',
  'linkifier_url_template',
  'user_list_incomplete',
  'include_deactivated_groups',
  'archived_channels',
  'empty_topic_name',
  'simplified_presence_events',
] as const;

export const getEventsSpec = {
  params: {
    queue_id: p.string({ maxLength: 100 }).optional(),
    last_event_id: p.int({ min: -1 }).optional(),
    dont_block: p.bool().default(false),
    ...queueParams,
    // Zulip's default here, unlike /register's.
    client_gravatar: p.json(z.boolean()).default(false),
    ...(Object.fromEntries(
      EVENTS_CAPABILITY_PARAMS.map((name) => [name, p.json(z.boolean()).optional()]),
    ) as Record<(typeof EVENTS_CAPABILITY_PARAMS)[number], Param<boolean | undefined>>),
  },
  // Each event carries its id and type; the rest depends on the type (docs/events.md).
  response: z.object({
    events: z.array(z.looseObject({ id: z.int(), type: z.string() })),
    queue_id: z.string(),
  }),
};

export const deleteEventsSpec = {
  params: { queue_id: p.string({ maxLength: 100 }) },
  response: z.object({}),
};

/** Documents /events in this process's description without serving it. */
export function documentEventsEndpoints(): void {
  recordRoute('/events', 'GET', { ...getEventsSpec, auth: 'basic' });
  recordRoute('/events', 'DELETE', { ...deleteEventsSpec, auth: 'basic' });
}
