// The registration parameters of a queue (POST /register, and GET /events without queue_id),
// declared once for both tiers.
import { z } from 'zod';
import { JsonableError } from '@parley/errors';
import { p, type ParamValues } from '@parley/http';
import {
  DEFAULT_QUEUE_LIFESPAN_SECS,
  MAX_QUEUE_LIFESPAN_SECS,
  type NarrowTerm,
  type QueueOptions,
} from './queues';

const narrowTerm = z.union([
  z.tuple([
    z.string(),
    z.union([z.string(), z.number().int(), z.array(z.union([z.string(), z.number().int()]))]),
  ]),
  z.object({
    operator: z.string(),
    operand: z.union([
      z.string(),
      z.number().int(),
      z.array(z.union([z.string(), z.number().int()])),
    ]),
    negated: z.boolean().optional(),
  }),
]);

export const queueParams = {
  // null as not given: the Python client sends it when no types are named.
  event_types: p.json(z.array(z.string()).nullable()).optional(),
  narrow: p.json(z.array(narrowTerm)).default([]),
  all_public_streams: p.json(z.boolean()).optional(),
  apply_markdown: p.json(z.boolean()).default(false),
  client_gravatar: p.json(z.boolean()).default(true),
  slim_presence: p.json(z.boolean()).default(false),
  client_capabilities: p.json(z.record(z.string(), z.boolean())).default({}),
  lifespan_secs: p.int({ min: 0 }).optional().alias('queue_lifespan_secs'),
  // Zulip's newer name for the lifespan (feature level 481, sent by zulip-flutter as the JSON
  // string "mobile"): seconds, or "mobile" for a phone's long absences.
  idle_queue_timeout: p
    .jsonOrText(z.union([z.literal('mobile'), z.number().int().min(0)]))
    .optional(),
};

/** What `idle_queue_timeout: "mobile"` asks for: twelve hours, what Zulip gives its mobile
 * apps, so a phone in a pocket keeps its queue through a working day. */
export const MOBILE_QUEUE_LIFESPAN_SECS = 12 * 60 * 60;

export type QueueParamValues = ParamValues<typeof queueParams>;

/** What of the registering user the options depend on: its role (a guest may not follow
 * every public channel), and a bot's defaults (its user_profile row's fields). */
export interface QueueRegistrant {
  role: number;
  defaultAllPublicStreams: boolean;
  defaultEventsRegisterStreamId: number | null;
}

/** The narrow operators a queue may filter on ("stream" is the old name of "channel"). */
const EVENT_NARROW_OPERATORS = ['channel', 'stream', 'topic', 'sender', 'is'];

/** Zulip's ROLE_GUEST. */
const GUEST_ROLE = 600;

/** Validated queue options; `user` decides whether all_public_streams is allowed (guests
 * cannot see every public channel, Zulip: "User not authorized for this query"), and a bot's
 * defaults fill in what the registration leaves out (Zulip's _default_all_public_streams and
 * _default_narrow): all_public_streams, and a narrow to its default channel, by id so that a
 * renamed channel still matches. */
export function queueOptionsFromParams(
  params: QueueParamValues,
  user: QueueRegistrant,
): QueueOptions {
  if (params.all_public_streams && user.role === GUEST_ROLE)
    throw new JsonableError('User not authorized for this query');
  const narrow: NarrowTerm[] = params.narrow.map((term) =>
    Array.isArray(term) ? { operator: term[0], operand: term[1] } : term,
  );
  if (narrow.length === 0 && user.defaultEventsRegisterStreamId !== null)
    narrow.push({ operator: 'channel', operand: user.defaultEventsRegisterStreamId });
  for (const term of narrow) {
    if (term.operator === '') throw new JsonableError('Invalid narrow operator: empty operator');
    // Zulip's check_narrow_for_events: only what a message event alone can decide.
    if (!EVENT_NARROW_OPERATORS.includes(term.operator))
      throw new JsonableError(`Operator ${term.operator} not supported.`);
    if (term.operator === 'is' && term.operand === 'followed')
      throw new JsonableError('Operand followed not supported.');
  }
  const requested =
    params.idle_queue_timeout === 'mobile'
      ? MOBILE_QUEUE_LIFESPAN_SECS
      : (params.idle_queue_timeout ?? params.lifespan_secs ?? DEFAULT_QUEUE_LIFESPAN_SECS);
  return {
    event_types: params.event_types ?? null,
    narrow,
    all_public_streams: params.all_public_streams ?? user.defaultAllPublicStreams,
    apply_markdown: params.apply_markdown,
    client_gravatar: params.client_gravatar,
    slim_presence: params.slim_presence,
    client_capabilities: params.client_capabilities,
    // Zulip: min(lifespan_secs or 600, 7 days); 0 means the default.
    lifespan_secs: Math.min(requested || DEFAULT_QUEUE_LIFESPAN_SECS, MAX_QUEUE_LIFESPAN_SECS),
  };
}
