// What GET and DELETE /events accept and answer, declared once: the events tier serves them, and
// the API tier's OpenAPI description documents them too (behind the load balancer both tiers
// answer under one /api/v1).
import { z } from 'zod';
import { p, recordRoute } from '@parley/http';
import { queueParams } from './queue-params';

export const getEventsSpec = {
  params: {
    queue_id: p.string({ maxLength: 100 }).optional(),
    last_event_id: p.int({ min: -1 }).optional(),
    dont_block: p.bool().default(false),
    ...queueParams,
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
