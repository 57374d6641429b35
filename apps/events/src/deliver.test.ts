import { defaultQueueOptions, type QueueOptions, type ZulipEvent } from '@parley/events';
import { eventForQueue } from './deliver';

/** For events that are never split into several: the one event, or null. */
const deliverOne = (...args: Parameters<typeof eventForQueue>) =>
  eventForQueue(...args) as ZulipEvent | null;

const options = (overrides: Partial<QueueOptions> = {}): QueueOptions => ({
  ...defaultQueueOptions(),
  ...overrides,
});

describe('eventForQueue', () => {
  it('filters by event_types', () => {
    const event = { type: 'user_settings', op: 'update', property: 'x', value: true };
    expect(deliverOne(event, options({ event_types: ['realm_user'] }))).toBeNull();
    expect(deliverOne(event, options({ event_types: ['user_settings'] }))).toEqual(event);
    expect(deliverOne(event, options())).toEqual(event);
  });

  it('sends linkifiers only to clients that understand URL templates', () => {
    const event = { type: 'realm_linkifiers', realm_linkifiers: [] };
    expect(deliverOne(event, options())).toBeNull();
    expect(
      deliverOne(event, options({ client_capabilities: { linkifier_url_template: true } })),
    ).toEqual(event);
  });

  it('never passes internal_data on', () => {
    const event = {
      type: 'realm_user',
      op: 'add',
      person: { user_id: 1, avatar_url: 'https://x' },
      internal_data: { avatar_gravatar: false },
    };
    expect(deliverOne(event, options())).toEqual({
      type: 'realm_user',
      op: 'add',
      person: { user_id: 1, avatar_url: 'https://x' },
    });
  });

  it('sends each form of an archival to the queues of the matching capability', () => {
    const update = {
      type: 'stream',
      op: 'update',
      stream_id: 3,
      property: 'is_archived',
      value: true,
      internal_data: { archived_channels: true },
    };
    const del = {
      type: 'stream',
      op: 'delete',
      stream_ids: [3],
      internal_data: { archived_channels: false },
    };
    const capable = options({ client_capabilities: { archived_channels: true } });
    const legacy = options({ client_capabilities: {} });
    expect(deliverOne(update, capable)).toMatchObject({ property: 'is_archived' });
    expect(deliverOne(update, legacy)).toBeNull();
    expect(deliverOne(del, capable)).toBeNull();
    expect(deliverOne(del, legacy)).toEqual({ type: 'stream', op: 'delete', stream_ids: [3] });
  });

  it('sends each form of a group deactivation to the queues of the matching capability', () => {
    const update = {
      type: 'user_group',
      op: 'update',
      group_id: 7,
      data: { deactivated: true },
      internal_data: { include_deactivated_groups: true },
    };
    const remove = {
      type: 'user_group',
      op: 'remove',
      group_id: 7,
      internal_data: { include_deactivated_groups: false },
    };
    const capable = options({ client_capabilities: { include_deactivated_groups: true } });
    const legacy = options({ client_capabilities: {} });
    expect(deliverOne(update, capable)).toMatchObject({ data: { deactivated: true } });
    expect(deliverOne(update, legacy)).toBeNull();
    expect(deliverOne(remove, capable)).toBeNull();
    expect(deliverOne(remove, legacy)).toEqual({ type: 'user_group', op: 'remove', group_id: 7 });
  });

  it('keeps the "Unknown user" announcement from queues with user_list_incomplete', () => {
    const placeholder = {
      type: 'realm_user',
      op: 'add',
      person: { user_id: 9, full_name: 'Unknown user' },
      internal_data: { user_list_incomplete: false },
    };
    expect(
      deliverOne(placeholder, options({ client_capabilities: { user_list_incomplete: true } })),
    ).toBeNull();
    expect(deliverOne(placeholder, options({ client_capabilities: {} }))).toMatchObject({
      person: { full_name: 'Unknown user' },
    });
  });

  it('formats message events per queue: avatar, empty topic, local echo', () => {
    const event = {
      type: 'message',
      message: { id: 5, type: 'stream', subject: '', avatar_url: 'https://x', content: '<p>x</p>' },
      flags: [],
      internal_data: {
        raw_content: 'x',
        avatar_gravatar: true,
        sender_queue_id: 'q1',
        local_id: '7.01',
      },
    };
    const plain = deliverOne(event, options({ client_gravatar: false }), 'q2')!;
    expect(plain.message).toMatchObject({ subject: 'general chat', avatar_url: 'https://x' });
    expect(plain).not.toHaveProperty('local_message_id');
    const modern = deliverOne(
      event,
      options({ client_gravatar: true, client_capabilities: { empty_topic_name: true } }),
      'q1',
    )!;
    expect(modern.message).toMatchObject({ subject: '', avatar_url: null });
    expect(modern.local_message_id).toBe('7.01');
  });

  it('gives clients without bulk_message_deletion one event per message_id', () => {
    const event = {
      type: 'delete_message',
      message_ids: [9],
      message_type: 'stream',
      stream_id: 1,
      topic: '',
    };
    expect(eventForQueue({ ...event, message_ids: [9, 10] }, options())).toEqual([
      {
        type: 'delete_message',
        message_id: 9,
        message_type: 'stream',
        stream_id: 1,
        topic: 'general chat',
      },
      {
        type: 'delete_message',
        message_id: 10,
        message_type: 'stream',
        stream_id: 1,
        topic: 'general chat',
      },
    ]);

    expect(
      deliverOne(
        event,
        options({ client_capabilities: { bulk_message_deletion: true, empty_topic_name: true } }),
      ),
    ).toEqual(event);
  });

  it('nulls a computable avatar for client_gravatar queues only', () => {
    const event = {
      type: 'realm_user',
      op: 'add',
      person: { user_id: 1, avatar_url: 'https://x' },
      internal_data: { avatar_gravatar: true },
    };
    expect(deliverOne(event, options({ client_gravatar: true }))!.person).toEqual({
      user_id: 1,
      avatar_url: null,
    });
    expect(deliverOne(event, options({ client_gravatar: false }))!.person).toEqual({
      user_id: 1,
      avatar_url: 'https://x',
    });
  });

  it('gives raw Markdown to queues without apply_markdown', () => {
    const event = {
      type: 'message',
      message: {
        id: 1,
        type: 'private',
        display_recipient: [],
        sender_id: 2,
        sender_email: 'a@b.c',
        content: '<p><strong>hi</strong></p>',
        content_type: 'text/html',
      },
      flags: [],
      internal_data: { raw_content: '**hi**' },
    };
    expect(
      deliverOne(event, options({ apply_markdown: false }))!.message as {
        content: string;
        content_type: string;
      },
    ).toMatchObject({
      content: '**hi**',
      content_type: 'text/x-markdown',
    });
    expect(
      (deliverOne(event, options({ apply_markdown: true }))!.message as { content: string })
        .content,
    ).toBe('<p><strong>hi</strong></p>');
  });

  it('gives channel typing only to clients that handle it, with the empty topic named for older clients', () => {
    const event = {
      type: 'typing',
      op: 'start',
      message_type: 'stream',
      sender: { user_id: 1, email: 'a@x' },
      stream_id: 5,
      topic: '',
    };
    expect(deliverOne(event, options())).toBeNull();
    expect(
      deliverOne(event, options({ client_capabilities: { stream_typing_notifications: true } })),
    ).toEqual({ ...event, topic: 'general chat' });
    expect(
      deliverOne(
        event,
        options({
          client_capabilities: { stream_typing_notifications: true, empty_topic_name: true },
        }),
      ),
    ).toEqual(event);
    const direct = { ...event, message_type: 'direct', stream_id: undefined, recipients: [] };
    delete direct.stream_id;
    expect(deliverOne(direct, options())).toEqual(direct);
  });

  it('formats presence per client: modern, slim or legacy', () => {
    const legacy = {
      type: 'presence',
      user_id: 7,
      email: 'seven@x',
      server_timestamp: 1700000000.5,
      presence: {
        website: { client: 'website', status: 'active', timestamp: 1700000000, pushable: false },
      },
    };
    const event = {
      ...legacy,
      internal_data: {
        modern_presence: { active_timestamp: 1700000000, idle_timestamp: 1700000000 },
      },
    };
    expect(deliverOne(event, options())).toEqual(legacy);
    const { email: _email, ...slim } = legacy;
    expect(deliverOne(event, options({ slim_presence: true }))).toEqual(slim);
    expect(
      deliverOne(event, options({ client_capabilities: { simplified_presence_events: true } })),
    ).toEqual({
      type: 'presence',
      presences: { '7': { active_timestamp: 1700000000, idle_timestamp: 1700000000 } },
    });
  });

  it('drops muted_topics for clients that follow user_topic, and names the empty topic', () => {
    const muted = { type: 'muted_topics', muted_topics: [] };
    expect(deliverOne(muted, options({ event_types: ['user_topic', 'muted_topics'] }))).toBeNull();
    expect(deliverOne(muted, options())).toEqual(muted);
    const topic = {
      type: 'user_topic',
      stream_id: 1,
      topic_name: '',
      last_updated: 1,
      visibility_policy: 1,
    };
    expect(deliverOne(topic, options())).toEqual({ ...topic, topic_name: 'general chat' });
    expect(deliverOne(topic, options({ client_capabilities: { empty_topic_name: true } }))).toEqual(
      topic,
    );
  });
});
