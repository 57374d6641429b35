import { bitmaskToFlags, getPrisma, Role, type User } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

const prisma = () => getPrisma();

async function flagsOf(userId: number, messageId: number): Promise<string[]> {
  const row = await prisma().userMessage.findUnique({
    where: { userId_messageId: { userId, messageId } },
  });
  return row ? bitmaskToFlags(row.flags) : [];
}

describe('POST /messages/flags', () => {
  let org: MessageOrg;
  let a: number;
  let b: number;
  let secretId: number;
  beforeAll(async () => {
    org = await createMessageOrg();
    const post = async (user: User, form: Record<string, unknown>) =>
      expectSuccess(await send(user, org.host, form)).id as number;
    a = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 't',
      content: 'a @**Otto Other**',
    });
    b = await post(org.member, { type: 'stream', to: 'general', topic: 't', content: 'b' });
    secretId = await post(org.member, { type: 'stream', to: 'secret', topic: 's', content: 's' });
  });
  const flags = (user: User, form: Record<string, unknown>) =>
    as(user, org.host).post('/messages/flags', form);

  it('marks messages read and tells only the user, returning what changed', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(
        await flags(org.other, { messages: [a, b], op: 'add', flag: 'read' }),
      );
      expect(body.messages).toEqual([a, b]);
    });
    expect(published).toEqual([
      {
        event: {
          type: 'update_message_flags',
          op: 'add',
          operation: 'add',
          flag: 'read',
          messages: [a, b],
          all: false,
        },
        users: [org.other.id],
      },
    ]);
    expect(await flagsOf(org.other.id, a)).toEqual(['read', 'mentioned']);
    // Nothing left to change: the event says so (Zulip sends it whatever changed).
    const again = await captureEvents(org.realm.id, async () => {
      expect(
        expectSuccess(await flags(org.other, { messages: [a], op: 'add', flag: 'read' })).messages,
      ).toEqual([]);
    });
    expect(again.map((p) => p.event)).toEqual([
      expect.objectContaining({ type: 'update_message_flags', messages: [] }),
    ]);
  });

  it("marks unread with message_details for the client's unread state", async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await flags(org.other, { messages: [a], op: 'remove', flag: 'read' }));
    });
    expect(published[0]!.event).toMatchObject({
      op: 'remove',
      flag: 'read',
      messages: [a],
      message_details: {
        [String(a)]: { type: 'stream', stream_id: org.general.id, topic: 't', mentioned: true },
      },
    });
  });

  it("stars messages in the user's history that they never received", async () => {
    const late = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await flags(late, { messages: [b], op: 'add', flag: 'starred' }));
    expect(await flagsOf(late.id, b)).toEqual(['read', 'starred', 'historical']);
    expectError(
      await flags(late, { messages: [secretId], op: 'add', flag: 'starred' }),
      'Invalid message(s)',
    );
  });

  it('writes no row for a change a message without one already has (Zulip: read, historical)', async () => {
    const late = await createTestUser(org.realm, Role.MEMBER);
    for (const [op, flag] of [
      ['add', 'read'],
      ['remove', 'starred'],
      ['remove', 'collapsed'],
    ])
      expect(
        expectSuccess(await flags(late, { messages: [a, secretId, 99999999], op, flag })).messages,
      ).toEqual([]);
    expect(await prisma().userMessage.count({ where: { userId: late.id } })).toBe(0);
    // So reading a channel's history does not put the reader among its read receipts.
    expect(
      expectSuccess(await as(org.member, org.host).get(`/messages/${a}/read_receipts`)).user_ids,
    ).not.toContain(late.id);
  });

  it('keeps messages of unsubscribed channels read, even unreadable ones', async () => {
    const late = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await flags(late, { messages: [b], op: 'add', flag: 'starred' }));
    const body = expectSuccess(
      await flags(late, { messages: [b, secretId], op: 'remove', flag: 'read' }),
    );
    expect(body).toMatchObject({
      messages: [],
      ignored_because_not_subscribed_channels: [org.general.id, org.secret.id].sort(
        (x, y) => x - y,
      ),
    });
    // A subscriber marks an old message they never received unread: a historical row.
    const joined = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(
      await as(joined, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'general' }],
      }),
    );
    expect(
      expectSuccess(await flags(joined, { messages: [b], op: 'remove', flag: 'read' })).messages,
    ).toEqual([b]);
    expect(await flagsOf(joined.id, b)).toEqual(['historical']);
  });

  it('refuses flags users cannot set and bad input', async () => {
    expectError(
      await flags(org.other, { messages: [a], op: 'add', flag: 'mentioned' }),
      "Flag not editable: 'mentioned'",
    );
    expectError(
      await flags(org.other, { messages: [a], op: 'add', flag: 'shiny' }),
      "Invalid flag: 'shiny'",
    );
    expectError(
      await flags(org.other, { messages: [a], op: 'toggle', flag: 'read' }),
      "Invalid message flag operation: 'toggle'",
    );
    // The flag is checked first; flags the API never shows are unknown.
    expectError(
      await flags(org.other, { messages: [a], op: 'toggle', flag: 'is_private' }),
      "Invalid flag: 'is_private'",
    );
    expectError(
      await flags(org.other, { messages: [a], op: 'add', flag: 'active_mobile_push_notification' }),
      "Invalid flag: 'active_mobile_push_notification'",
    );
    expectError(
      await flags(org.other, { messages: 'a', op: 'add', flag: 'read' }),
      'messages is not valid JSON',
    );
    expectError(
      await flags(org.other, { op: 'add', flag: 'read' }),
      "Missing 'messages' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await flags(org.other, { messages: [99999999], op: 'add', flag: 'starred' }),
      'Invalid message(s)',
    );
  });
});

describe('mark as read, and unread_msgs in /register', () => {
  it('counts unread messages by channel and topic, conversation and mention, and clears them', async () => {
    const org = await createMessageOrg();
    const post = async (user: User, form: Record<string, unknown>) =>
      expectSuccess(await send(user, org.host, form)).id as number;
    const g1 = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 'Lunch',
      content: 'hi @**Otto Other**',
    });
    const g2 = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 'lunch',
      content: 'again',
    });
    const g3 = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 'other',
      content: 'x',
    });
    const d1 = await post(org.member, { type: 'direct', to: [org.other.id], content: 'dm' });
    const h1 = await post(org.member, {
      type: 'direct',
      to: [org.other.id, org.guest.id],
      content: 'group',
    });
    const register = async () =>
      expectSuccess(
        await as(org.other, org.host).post('/register', {
          fetch_event_types: ['message', 'update_message_flags'],
        }),
      ).unread_msgs as Record<string, unknown>;
    expect(await register()).toEqual({
      count: 5,
      pms: [{ other_user_id: org.member.id, sender_id: org.member.id, unread_message_ids: [d1] }],
      streams: [
        // The bucket is spelled as its newest message (Zulip reads newest first).
        { stream_id: org.general.id, topic: 'lunch', unread_message_ids: [g1, g2] },
        { stream_id: org.general.id, topic: 'other', unread_message_ids: [g3] },
      ],
      huddles: [
        {
          user_ids_string: [org.member.id, org.other.id, org.guest.id]
            .sort((x, y) => x - y)
            .join(','),
          unread_message_ids: [h1],
        },
      ],
      mentions: [g1],
      old_unreads_missing: false,
    });
    expectSuccess(
      await as(org.other, org.host).post('/mark_topic_as_read', {
        stream_id: org.general.id,
        topic_name: 'LUNCH',
      }),
    );
    expect((await register()).count).toBe(3);
    expectSuccess(
      await as(org.other, org.host).post('/mark_stream_as_read', { stream_id: org.general.id }),
    );
    expect((await register()).streams).toEqual([]);
    const all = await captureEvents(org.realm.id, async () => {
      expect(expectSuccess(await as(org.other, org.host).post('/mark_all_as_read'))).toMatchObject({
        complete: true,
      });
    });
    // Zulip's event names no messages: clients reload their unread state.
    expect(all.find((p) => p.event.type === 'update_message_flags')).toEqual({
      event: {
        type: 'update_message_flags',
        op: 'add',
        operation: 'add',
        flag: 'read',
        messages: [],
        all: true,
      },
      users: [org.other.id],
    });
    expect((await register()).count).toBe(0);
    expectError(
      await as(org.other, org.host).post('/mark_topic_as_read', {
        stream_id: org.general.id,
        topic_name: 'nope',
      }),
      "No such topic 'nope'",
    );
    // A topic is the user's when they received some of it (Zulip's
    // user_message_exists_for_topic): a subscriber who joined after it has none.
    const late = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(
      await as(late, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'general' }],
      }),
    );
    expectError(
      await as(late, org.host).post('/mark_topic_as_read', {
        stream_id: org.general.id,
        topic_name: 'lunch',
      }),
      "No such topic 'lunch'",
    );
    expectError(
      await as(org.other, org.host).post('/mark_stream_as_read', { stream_id: org.secret.id }),
      'Invalid channel ID',
    );
  });

  it('leaves channels the user left out, sorts buckets, and names the empty topic as the client asks', async () => {
    const org = await createMessageOrg();
    const post = async (user: User, form: Record<string, unknown>) =>
      expectSuccess(await send(user, org.host, form)).id as number;
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'zebra' }, { name: 'left' }],
        principals: [org.other.id],
      }),
    );
    const zebra = await post(org.member, { type: 'stream', to: 'zebra', topic: 'z', content: 'z' });
    const left = await post(org.member, { type: 'stream', to: 'left', topic: 'l', content: 'l' });
    const beta = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 'Beta',
      content: 'b',
    });
    const empty = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: '',
      content: 'e',
    });
    const alpha = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 'alpha',
      content: 'a',
    });
    expectSuccess(
      await as(org.other, org.host).delete('/users/me/subscriptions', {
        subscriptions: ['left'],
      }),
    );
    // Each new channel's announcement is left aside.
    const streamsOf = async (capabilities: Record<string, boolean>) =>
      (
        expectSuccess(
          await as(org.other, org.host).post('/register', {
            fetch_event_types: ['message', 'update_message_flags'],
            client_capabilities: capabilities,
          }),
        ).unread_msgs as {
          streams: { stream_id: number; topic: string; unread_message_ids: number[] }[];
        }
      ).streams.filter((bucket) => bucket.topic !== 'channel events');
    const zebraId = (
      await getPrisma().stream.findFirstOrThrow({ where: { realmId: org.realm.id, name: 'zebra' } })
    ).id;
    expect(await streamsOf({})).toEqual([
      { stream_id: org.general.id, topic: 'alpha', unread_message_ids: [alpha] },
      { stream_id: org.general.id, topic: 'Beta', unread_message_ids: [beta] },
      { stream_id: org.general.id, topic: 'general chat', unread_message_ids: [empty] },
      { stream_id: zebraId, topic: 'z', unread_message_ids: [zebra] },
    ]);
    expect((await streamsOf({ empty_topic_name: true })).map((s) => s.topic)).toEqual([
      '',
      'alpha',
      'Beta',
      'z',
    ]);
    expect(JSON.stringify(await streamsOf({}))).not.toContain(String(left));
  });

  it("folds a racing mark_all_as_read into /register's unread_msgs: nothing is unread", async () => {
    const org = await createMessageOrg();
    const state = {
      unread_msgs: {
        count: 2,
        pms: [{ other_user_id: 3, sender_id: 3, unread_message_ids: [5] }],
        streams: [{ stream_id: 1, topic: 't', unread_message_ids: [6] }],
        huddles: [],
        mentions: [6],
        old_unreads_missing: false,
      },
    };
    applyEvent(
      state,
      {
        id: 0,
        type: 'update_message_flags',
        op: 'add',
        operation: 'add',
        flag: 'read',
        messages: [],
        all: true,
      } as QueuedEvent,
      org.other,
      {} as StateOptions,
    );
    expect(state.unread_msgs).toEqual({
      count: 0,
      pms: [],
      streams: [],
      huddles: [],
      mentions: [],
      old_unreads_missing: false,
    });
  });

  it('applies a flag to a narrowed window of messages', async () => {
    const org = await createMessageOrg();
    const ids = [];
    for (const content of ['1', '2', '3'])
      ids.push(
        expectSuccess(
          await send(org.member, org.host, { type: 'stream', to: 'general', topic: 'n', content }),
        ).id as number,
      );
    const body = expectSuccess(
      await as(org.other, org.host).post('/messages/flags/narrow', {
        anchor: 'oldest',
        num_before: 0,
        num_after: 2,
        narrow: [['channel', 'general']],
        op: 'add',
        flag: 'starred',
      }),
    );
    expect(body).toMatchObject({
      processed_count: 2,
      updated_count: 2,
      first_processed_id: ids[0],
      last_processed_id: ids[1],
      found_oldest: true,
      found_newest: false,
    });
    // Too wide a window is narrowed, not refused ("the server may decrease this").
    expect(
      expectSuccess(
        await as(org.other, org.host).post('/messages/flags/narrow', {
          anchor: 'newest',
          num_before: 6000,
          num_after: 6000,
          narrow: [['channel', 'general']],
          op: 'add',
          flag: 'read',
        }),
      ),
    ).toMatchObject({ processed_count: 3, found_oldest: true, found_newest: true });
    expectError(
      await as(org.other, org.host).post('/messages/flags/narrow', {
        anchor: 'newest',
        num_before: 1,
        num_after: 0,
        op: 'add',
        flag: 'read',
      }),
      "Missing 'narrow' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });
});
