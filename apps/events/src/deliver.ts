// Per-queue filtering and formatting (Zulip's ClientDescriptor.accepts_event and the per-client
// message formatting): decides whether a queue receives an event, and in which form.
// Notifications carry everything needed; `internal_data` is for this step only and never
// reaches a client.
import type { QueueOptions, ZulipEvent } from '@parley/events';
import { matchesNarrow, type NarrowableMessage } from './narrow';

interface InternalData {
  /** The person's avatar is the external provider's and the audience may compute it. */
  avatar_gravatar?: boolean;
  /** Markdown source of a message, for queues that asked for raw content. */
  raw_content?: string;
  /** Only for queues whose archived_channels capability is this: archiving is an is_archived
   * update for capable clients and a delete (unarchiving: a create) for the others. */
  archived_channels?: boolean;
  /** Only for queues whose include_deactivated_groups capability is this: capable clients
   * get deactivation as an update of the group, the others a remove (reactivation: add). */
  include_deactivated_groups?: boolean;
  /** Only for queues whose user_list_incomplete capability is this (the "Unknown user"
   * announcement of a user a restricted guest may not see goes to the others only). */
  user_list_incomplete?: boolean;
  /** A public-channel message for a user who did not receive it: only their
   * all_public_streams queues take it. */
  all_public_streams_only?: boolean;
  /** Local echo: the sending queue's message event gets local_message_id. */
  sender_queue_id?: string;
  local_id?: string;
  /** A presence change in the modern form, for clients with simplified_presence_events. */
  modern_presence?: { active_timestamp: number; idle_timestamp: number };
}

/** Zulip's realm_empty_topic_display_name, for clients without the empty_topic_name
 * capability. */
const EMPTY_TOPIC_DISPLAY_NAME = 'general chat';

/** The event as this queue should receive it (several for a bulk deletion to a client
 * without bulk_message_deletion), or null if the queue does not take it. */
export function eventForQueue(
  event: ZulipEvent,
  options: QueueOptions,
  queueId?: string,
): ZulipEvent | ZulipEvent[] | null {
  if (options.event_types !== null && !options.event_types.includes(event.type)) return null;
  const { internal_data: internal = {}, ...visible } = event as ZulipEvent & {
    internal_data?: InternalData;
  };

  if (
    internal.archived_channels !== undefined &&
    (options.client_capabilities.archived_channels === true) !== internal.archived_channels
  )
    return null;

  if (
    internal.include_deactivated_groups !== undefined &&
    (options.client_capabilities.include_deactivated_groups === true) !==
      internal.include_deactivated_groups
  )
    return null;

  if (
    internal.user_list_incomplete !== undefined &&
    (options.client_capabilities.user_list_incomplete === true) !== internal.user_list_incomplete
  )
    return null;

  if (internal.all_public_streams_only && !options.all_public_streams) return null;

  // Zulip sends linkifiers only to clients that understand URL templates.
  if (
    visible.type === 'realm_linkifiers' &&
    options.client_capabilities.linkifier_url_template !== true
  )
    return null;

  if (visible.type === 'message') {
    const message = visible.message as NarrowableMessage & Record<string, unknown>;
    const flags = Array.isArray(visible.flags) ? (visible.flags as string[]) : [];
    if (!matchesNarrow(options.narrow, message, flags)) return null;
    const formatted: Record<string, unknown> = { ...message };
    if (!options.apply_markdown && internal.raw_content !== undefined) {
      formatted.content = internal.raw_content;
      formatted.content_type = 'text/x-markdown';
    }
    if (options.client_gravatar && internal.avatar_gravatar) formatted.avatar_url = null;
    if (
      formatted.type === 'stream' &&
      formatted.subject === '' &&
      options.client_capabilities.empty_topic_name !== true
    )
      formatted.subject = EMPTY_TOPIC_DISPLAY_NAME;
    const result: ZulipEvent = { ...visible, message: formatted };
    if (queueId !== undefined && internal.sender_queue_id === queueId)
      result.local_message_id = internal.local_id;
    return result;
  }

  // Presence: modern clients get {presences: {id: timestamps}}, slim ones the legacy form
  // without the address (Zulip's process_presence_event).
  if (visible.type === 'presence') {
    if (options.client_capabilities.simplified_presence_events === true && internal.modern_presence)
      return {
        type: 'presence',
        presences: { [String(visible.user_id)]: internal.modern_presence },
      };
    if (options.slim_presence) {
      const { email: _email, ...slim } = visible;
      return slim;
    }
    return visible;
  }

  const emptyTopicAware = options.client_capabilities.empty_topic_name === true;
  // Clients that follow user_topic have no use for the legacy muted_topics list.
  if (visible.type === 'muted_topics' && options.event_types?.includes('user_topic')) return null;
  if (visible.type === 'user_topic' && visible.topic_name === '' && !emptyTopicAware)
    return { ...visible, topic_name: EMPTY_TOPIC_DISPLAY_NAME };
  // Channel typing is for clients that declared they handle it (feature level 58).
  if (visible.type === 'typing' && visible.stream_id !== undefined) {
    if (options.client_capabilities.stream_typing_notifications !== true) return null;
    return visible.topic === '' && !emptyTopicAware
      ? { ...visible, topic: EMPTY_TOPIC_DISPLAY_NAME }
      : visible;
  }
  if (visible.type === 'update_message' && !emptyTopicAware && visible.stream_id !== undefined) {
    const renamed: ZulipEvent = { ...visible };
    for (const key of ['orig_subject', 'subject'])
      if (renamed[key] === '') renamed[key] = EMPTY_TOPIC_DISPLAY_NAME;
    return renamed;
  }
  if (visible.type === 'delete_message') {
    const topic =
      visible.topic === '' && !emptyTopicAware ? { topic: EMPTY_TOPIC_DISPLAY_NAME } : {};
    // Clients without bulk_message_deletion get one event per id, with message_id.
    if (options.client_capabilities.bulk_message_deletion !== true) {
      const { message_ids: ids, ...rest } = visible as ZulipEvent & { message_ids?: number[] };
      return (ids ?? []).map((id) => ({ ...rest, ...topic, message_id: id }));
    }
    return { ...visible, ...topic };
  }

  if (
    visible.type === 'realm_user' &&
    visible.op === 'add' &&
    options.client_gravatar &&
    internal.avatar_gravatar
  ) {
    return {
      ...visible,
      person: { ...(visible.person as Record<string, unknown>), avatar_url: null },
    };
  }
  return visible;
}
