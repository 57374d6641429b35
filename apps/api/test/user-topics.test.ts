import { Role, type User } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

describe('topic visibility', () => {
  let org: MessageOrg;
  let user: User;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  beforeEach(async () => {
    // A fresh subscriber of #general per test: policies are personal.
    user = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(
      await as(org.owner, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'general' }],
        principals: [user.id],
        send_new_subscription_messages: false,
      }),
    );
  });
  const setPolicy = (topic: string, visibility_policy: number, stream_id = org.general.id) =>
    as(user, org.host).post('/user_topics', { stream_id, topic, visibility_policy });
  const post = (topic: string, content = 'hello') =>
    send(org.member, org.host, { type: 'stream', to: 'general', topic, content });
  const fetch = (narrow: unknown[], anchor = 'newest') =>
    as(user, org.host).get('/messages', {
      anchor,
      num_before: 50,
      num_after: 50,
      narrow: JSON.stringify(narrow),
    });
  const ids = (res: { body: { messages: { id: number }[] } }) => res.body.messages.map((m) => m.id);
  const register = async (types: string[], capabilities: Record<string, boolean> = {}) =>
    expectSuccess(
      await as(user, org.host).post('/register', {
        fetch_event_types: types,
        event_types: types,
        client_capabilities: capabilities,
      }),
    );

  it('mutes a topic: legacy list and user_topic event to the user, state in /register', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await setPolicy('Lunch', 1));
    });
    expect(published).toEqual([
      {
        event: { type: 'muted_topics', muted_topics: [['general', 'Lunch', expect.any(Number)]] },
        users: [user.id],
      },
      {
        event: {
          type: 'user_topic',
          stream_id: org.general.id,
          topic_name: 'Lunch',
          last_updated: expect.any(Number),
          visibility_policy: 1,
        },
        users: [user.id],
      },
    ]);
    const state = await register(['user_topic', 'muted_topics']);
    expect(state.user_topics).toEqual([
      {
        stream_id: org.general.id,
        topic_name: 'Lunch',
        visibility_policy: 1,
        last_updated: expect.any(Number),
      },
    ]);
    // Zulip sends muted_topics only to clients that do not follow user_topic.
    expect(state.muted_topics).toBeUndefined();
    const legacy = await register(['muted_topics']);
    expect(legacy.muted_topics).toEqual([['general', 'Lunch', expect.any(Number)]]);
  });

  it('changes nothing, silently, when the policy is already set (topics compared ignoring case)', async () => {
    expectSuccess(await setPolicy('Plans', 3));
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await setPolicy('PLANS', 3));
      expectSuccess(await setPolicy('never set', 0));
    });
    expect(published).toEqual([]);
    expect((await register(['user_topic'])).user_topics).toEqual([
      expect.objectContaining({ topic_name: 'Plans', visibility_policy: 3 }),
    ]);
  });

  it('follows topics for is:followed, and inherit removes the policy', async () => {
    const followed = expectSuccess(await post('Followed')).id as number;
    const other = expectSuccess(await post('Other')).id as number;
    expectSuccess(await setPolicy('followed', 3));
    const onlyFollowed = await fetch([{ operator: 'is', operand: 'followed' }]);
    expect(ids(onlyFollowed)).toEqual([followed]);
    const notFollowed = ids(await fetch([{ operator: 'is', operand: 'followed', negated: true }]));
    expect(notFollowed).toContain(other);
    expect(notFollowed).not.toContain(followed);
    expectSuccess(await setPolicy('Followed', 0));
    expect(ids(await fetch([{ operator: 'is', operand: 'followed' }]))).toEqual([]);
    expect((await register(['user_topic'])).user_topics).toEqual([]);
  });

  it('keeps muted topics out of in:home, is:muted finds them, and unread counts skip them', async () => {
    const muted = expectSuccess(await post('Muted topic', '@**Olivia Owner** hi')).id as number;
    const wildcard = expectSuccess(await post('muted topic', '@**all** hi')).id as number;
    const visible = expectSuccess(await post('Visible')).id as number;
    expectSuccess(await setPolicy('muted TOPIC', 1));
    const home = ids(await fetch([{ operator: 'in', operand: 'home' }]));
    expect(home).toContain(visible);
    expect(home).not.toContain(muted);
    expect(ids(await fetch([{ operator: 'is', operand: 'muted' }]))).toEqual([muted, wildcard]);
    // A narrow to the channel still hides its muted topics from in:home.
    expect(
      ids(
        await fetch([
          { operator: 'channel', operand: 'general' },
          { operator: 'in', operand: 'home' },
        ]),
      ),
    ).not.toContain(muted);
    const state = await register(['message', 'update_message_flags']);
    const unread = state.unread_msgs as {
      count: number;
      streams: { topic: string; unread_message_ids: number[] }[];
      mentions: number[];
    };
    // Listed under streams, but not counted; its wildcard mention does not count either.
    expect(unread.streams.flatMap((s) => s.unread_message_ids)).toEqual(
      expect.arrayContaining([muted, wildcard, visible]),
    );
    expect(unread.count).toBe(unread.streams.flatMap((s) => s.unread_message_ids).length - 2);
    expect(unread.mentions).not.toContain(wildcard);
    // The first unread message skips muted topics.
    const first = await as(user, org.host).get('/messages', {
      anchor: 'first_unread',
      num_before: 0,
      num_after: 1,
      narrow: JSON.stringify([{ operator: 'channel', operand: 'general' }]),
    });
    expect(first.body.anchor).not.toBe(muted);
  });

  it('treats a muted channel as muted except for topics unmuted or followed in it', async () => {
    const loud = expectSuccess(await post('Loud')).id as number;
    const quiet = expectSuccess(await post('Quiet')).id as number;
    expectSuccess(
      await as(user, org.host).patch(`/users/me/subscriptions/${org.general.id}`, {
        property: 'is_muted',
        value: true,
      }),
    );
    expectSuccess(await setPolicy('Loud', 2));
    const mutedIds = ids(await fetch([{ operator: 'is', operand: 'muted' }]));
    expect(mutedIds).toContain(quiet);
    expect(mutedIds).not.toContain(loud);
    // in:home leaves the muted channel out even beside a term naming it (Zulip's by_in), and
    // lets the unmuted topic in.
    const home = ids(
      await fetch([
        { operator: 'channel', operand: 'general' },
        { operator: 'in', operand: 'home' },
      ]),
    );
    expect(home).not.toContain(quiet);
    expect(home).toContain(loud);
    const unread = (await register(['message', 'update_message_flags'])).unread_msgs as {
      count: number;
    };
    expect(unread.count).toBe(1);
    // Marking a muted-channel message unread tells the client it is muted.
    expectSuccess(
      await as(user, org.host).post('/messages/flags', {
        messages: [quiet, loud],
        op: 'add',
        flag: 'read',
      }),
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(user, org.host).post('/messages/flags', {
          messages: [quiet, loud],
          op: 'remove',
          flag: 'read',
        }),
      );
    });
    const details = published[0]!.event.message_details as Record<string, object>;
    expect(details[String(quiet)]).toMatchObject({ unmuted_stream_msg: false });
    expect(details[String(loud)]).toMatchObject({ unmuted_stream_msg: true });
  });

  it('reads "general chat" as the empty topic, and names it so for older clients', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await setPolicy('general chat', 1));
    });
    expect(published[1]!.event).toMatchObject({ type: 'user_topic', topic_name: '' });
    expect((await register(['muted_topics'])).muted_topics).toEqual([
      ['general', '', expect.any(Number)],
    ]);
  });

  it('refuses bad policies, long topics and channels the user cannot reach', async () => {
    expectError(
      await setPolicy('x', 7),
      'Invalid visibility_policy: Value error, Not in the list of possible values',
    );
    expectError(await setPolicy('x'.repeat(61), 1), 'topic is too long (limit: 60 characters)');
    expectError(await setPolicy('x', 1, org.secret.id), 'Invalid channel ID');
    expectError(await setPolicy('x', 1, 999999), 'Invalid channel ID');
    expectError(await setPolicy('x', 0, 999999), 'Invalid channel ID');
    expectError(
      await as(user, org.host).post('/user_topics', {
        stream_id: 'abc',
        topic: 'x',
        visibility_policy: 1,
      }),
      'stream_id is not valid JSON',
    );
    expectError(
      await as(user, org.host).post('/user_topics', { topic: 'x', visibility_policy: 1 }),
      "Missing 'stream_id' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
  });

  describe('automatic policies on send (Zulip defaults)', () => {
    const sendAs = (sender: User, topic: string, content = 'hi') =>
      send(sender, org.host, { type: 'stream', to: 'general', topic, content });

    it('follows a topic its sender starts, once, and says so in the response', async () => {
      const topic = `started ${Math.random()}`;
      const published = await captureEvents(org.realm.id, async () => {
        const first = expectSuccess(await sendAs(user, topic));
        expect(first.automatic_new_visibility_policy).toBe(3);
      });
      expect(
        published.filter((entry) => entry.event.type === 'user_topic').map((entry) => entry.users),
      ).toEqual([[user.id]]);
      const second = expectSuccess(await sendAs(user, topic));
      expect(second).not.toHaveProperty('automatic_new_visibility_policy');
      // Someone else's topic is not started by a reply.
      const replier = await createTestUser(org.realm, Role.MEMBER);
      expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name: 'general' }],
          principals: [replier.id],
        }),
      );
      expect(expectSuccess(await sendAs(replier, topic))).not.toHaveProperty(
        'automatic_new_visibility_policy',
      );
    });

    it('counts only the messages a sender can see where history is not shared', async () => {
      const name = `protected ${Math.random()}`;
      expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name }],
          invite_only: true,
          history_public_to_subscribers: false,
        }),
      );
      const topic = 'older talk';
      const inProtected = (sender: User) =>
        send(sender, org.host, { type: 'stream', to: name, topic, content: 'hi' });
      expectSuccess(await inProtected(org.owner));
      const newcomer = await createTestUser(org.realm, Role.MEMBER);
      expectSuccess(
        await as(org.owner, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name }],
          principals: [newcomer.id],
        }),
      );
      // The earlier message predates the newcomer's access: for them the topic starts now.
      expect(expectSuccess(await inProtected(newcomer)).automatic_new_visibility_policy).toBe(3);
    });

    it('unmutes a topic the sender writes in within a muted channel', async () => {
      const topic = `muted ${Math.random()}`;
      expectSuccess(await post(topic));
      expectSuccess(
        await as(user, org.host).patch(`/users/me/subscriptions/${org.general.id}`, {
          property: 'is_muted',
          value: true,
        }),
      );
      expect(expectSuccess(await sendAs(user, topic)).automatic_new_visibility_policy).toBe(2);
    });

    it('follows topics where a user is mentioned, if they want to, and never for bots or NEVER', async () => {
      const topic = `mention ${Math.random()}`;
      expectSuccess(await sendAs(org.member, topic, `@**${user.fullName}|${user.id}** look`));
      expect((await register(['user_topic'])).user_topics).toEqual([
        expect.objectContaining({ topic_name: topic, visibility_policy: 3 }),
      ]);
      expectSuccess(
        await as(user, org.host).patch('/settings', {
          automatically_follow_topics_policy: 4,
          automatically_unmute_topics_in_muted_streams_policy: 4,
        }),
      );
      expect(expectSuccess(await sendAs(user, `quiet ${Math.random()}`))).not.toHaveProperty(
        'automatic_new_visibility_policy',
      );
    });
  });

  describe('automatic policies on participation (reactions, widgets)', () => {
    const topicPolicies = async () =>
      (
        (await register(['user_topic'])).user_topics as {
          topic_name: string;
          visibility_policy: number;
        }[]
      ).map(({ topic_name, visibility_policy }) => [topic_name, visibility_policy]);

    it('follows the topic of a message a user reacts to or votes on, when they asked for that', async () => {
      const reacted = `reacted ${Math.random()}`;
      const polled = `polled ${Math.random()}`;
      const plain = expectSuccess(await post(reacted)).id as number;
      const poll = expectSuccess(await post(polled, '/poll Which?\nA\nB')).id as number;
      // Zulip's defaults (on initiation, unmute on send) leave both alone.
      expectSuccess(
        await as(user, org.host).post(`/messages/${plain}/reactions`, { emoji_name: 'smile' }),
      );
      expect(await topicPolicies()).toEqual([]);
      expectSuccess(
        await as(user, org.host).patch('/settings', { automatically_follow_topics_policy: 1 }),
      );
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(
          await as(user, org.host).post(`/messages/${plain}/reactions`, { emoji_name: 'tada' }),
        );
      });
      expect(published.map((entry) => entry.event.type)).toEqual([
        'muted_topics',
        'user_topic',
        'reaction',
      ]);
      expectSuccess(
        await as(user, org.host).post('/submessage', {
          message_id: poll,
          msg_type: 'widget',
          content: JSON.stringify({ type: 'vote', key: 'canned,0', vote: 1 }),
        }),
      );
      expect(await topicPolicies()).toEqual(
        expect.arrayContaining([
          [reacted, 3],
          [polled, 3],
        ]),
      );
      // Direct messages have no topic to follow.
      const direct = expectSuccess(
        await send(org.member, org.host, {
          type: 'direct',
          to: JSON.stringify([user.id]),
          content: 'hi',
        }),
      ).id as number;
      const onDirect = await captureEvents(org.realm.id, async () => {
        expectSuccess(
          await as(user, org.host).post(`/messages/${direct}/reactions`, { emoji_name: 'smile' }),
        );
      });
      expect(onDirect.map((entry) => entry.event.type)).toEqual(['reaction']);
    });

    it('unmutes in a muted channel on participation, and never lowers a followed topic', async () => {
      const topic = `muted participation ${Math.random()}`;
      const id = expectSuccess(await post(topic)).id as number;
      expectSuccess(
        await as(user, org.host).patch('/settings', {
          automatically_unmute_topics_in_muted_streams_policy: 1,
        }),
      );
      // Not muted: nothing to unmute.
      expectSuccess(
        await as(user, org.host).post(`/messages/${id}/reactions`, { emoji_name: 'smile' }),
      );
      expect(await topicPolicies()).toEqual([]);
      expectSuccess(
        await as(user, org.host).patch(`/users/me/subscriptions/${org.general.id}`, {
          property: 'is_muted',
          value: true,
        }),
      );
      expectSuccess(
        await as(user, org.host).post(`/messages/${id}/reactions`, { emoji_name: 'tada' }),
      );
      expect(await topicPolicies()).toEqual([[topic, 2]]);
      expectSuccess(await setPolicy(topic, 3));
      expectSuccess(
        await as(user, org.host).post(`/messages/${id}/reactions`, { emoji_name: 'heart' }),
      );
      expect(await topicPolicies()).toEqual([[topic, 3]]);
    });
  });

  describe('PATCH /users/me/subscriptions/muted_topics (legacy)', () => {
    const legacy = (form: Record<string, unknown>) =>
      as(user, org.host).patch('/users/me/subscriptions/muted_topics', form);

    it('mutes by channel name or id and unmutes', async () => {
      expectSuccess(await legacy({ stream: 'general', topic: 'Old way', op: 'add' }));
      expectSuccess(await legacy({ stream_id: org.general.id, topic: 'Old way', op: 'add' }));
      expect((await register(['muted_topics'])).muted_topics).toEqual([
        ['general', 'Old way', expect.any(Number)],
      ]);
      expectSuccess(await legacy({ stream: 'general', topic: 'old WAY', op: 'remove' }));
      expect((await register(['muted_topics'])).muted_topics).toEqual([]);
    });

    it('refuses what Zulip refuses', async () => {
      expectError(await legacy({ topic: 't', op: 'add' }), "Missing 'stream_id' argument");
      expectError(
        await legacy({ stream: 'general', stream_id: org.general.id, topic: 't', op: 'add' }),
        'Unsupported parameter combination: stream_id, stream',
      );
      expectError(
        await legacy({ stream: 'nowhere', topic: 't', op: 'add' }),
        "Invalid channel name 'nowhere'",
      );
      expectError(
        await legacy({ stream: 'nowhere', topic: 't', op: 'remove' }),
        'Topic is not muted',
      );
      expectError(await legacy({ stream: 'general', topic: 't', op: 'mute' }), 'Invalid op');
    });
  });

  describe('when a topic moves (Zulip moves the policies with it)', () => {
    const policies = async () => (await register(['user_topic'])).user_topics;
    const move = async (id: number, form: Record<string, unknown>) =>
      expectSuccess(await as(org.owner, org.host).patch(`/messages/${id}`, form));

    it('keeps a muted topic muted once it is resolved, and tells the user', async () => {
      const id = expectSuccess(await post('Flaky test')).id as number;
      expectSuccess(await setPolicy('Flaky test', 1));
      const published = await captureEvents(org.realm.id, () =>
        move(id, { topic: '✔ Flaky test', propagate_mode: 'change_all' }),
      );
      expect(await policies()).toEqual([
        expect.objectContaining({ topic_name: '✔ Flaky test', visibility_policy: 1 }),
      ]);
      const mine = published.filter((p) => p.users.includes(user.id)).map((p) => p.event);
      expect(mine.filter((e) => e.type === 'user_topic')).toEqual([
        expect.objectContaining({ topic_name: 'Flaky test', visibility_policy: 0 }),
        expect.objectContaining({ topic_name: '✔ Flaky test', visibility_policy: 1 }),
      ]);
      // One legacy list, after the last change.
      expect(mine.filter((e) => e.type === 'muted_topics')).toEqual([
        { type: 'muted_topics', muted_topics: [['general', '✔ Flaky test', expect.any(Number)]] },
      ]);
    });

    it('merges into a topic with messages, keeping whichever shows more', async () => {
      const id = expectSuccess(await post('Standup')).id as number;
      await post('Daily');
      expectSuccess(await setPolicy('Standup', 3));
      expectSuccess(await setPolicy('Daily', 1));
      await move(id, { topic: 'Daily', propagate_mode: 'change_all' });
      expect(await policies()).toEqual([
        expect.objectContaining({ topic_name: 'Daily', visibility_policy: 3 }),
      ]);
      // Messages the user did not mute, moved into a topic they muted, show it again.
      const other = expectSuccess(await post('Retro')).id as number;
      expectSuccess(await setPolicy('Daily', 1));
      await move(other, { topic: 'Daily', propagate_mode: 'change_all' });
      expect(await policies()).toEqual([]);
    });

    it('leaves the policy where it is when only part of the topic moves', async () => {
      const first = expectSuccess(await post('Split')).id as number;
      const second = expectSuccess(await post('Split')).id as number;
      expectSuccess(await setPolicy('Split', 1));
      await move(first, { topic: 'Elsewhere', propagate_mode: 'change_one' });
      expect(await policies()).toEqual([
        expect.objectContaining({ topic_name: 'Split', visibility_policy: 1 }),
      ]);
      // Changing only the letter case moves nothing: policies ignore it.
      await move(second, { topic: 'SPLIT', propagate_mode: 'change_all' });
      expect(await policies()).toEqual([
        expect.objectContaining({ topic_name: 'Split', visibility_policy: 1 }),
      ]);
    });

    /** A message from the test's fresh user in #general; its id. */
    const postAsUser = async (topic: string, content: string) =>
      expectSuccess(await send(user, org.host, { type: 'stream', to: 'general', topic, content }))
        .id as number;

    it('lets a sender whose message a move makes the first of a topic follow it', async () => {
      // The fresh user follows topics they start (Zulip's default), and this one they did not.
      await post('Source');
      const mine = await postAsUser('Source', 'x');
      expect(await policies()).toEqual([]);
      await move(mine, { topic: 'Split off', propagate_mode: 'change_one' });
      expect(await policies()).toEqual([
        expect.objectContaining({ topic_name: 'Split off', visibility_policy: 3 }),
      ]);
      // Into a topic that already had an older message, it is not theirs to start.
      await post('Older');
      const again = await postAsUser('Split off', 'y');
      await move(again, { topic: 'Older', propagate_mode: 'change_one' });
      expect(await policies()).toEqual([
        expect.objectContaining({ topic_name: 'Split off', visibility_policy: 3 }),
      ]);
    });

    it('drops the policy of a user who cannot follow the topic to another channel', async () => {
      const id = expectSuccess(await post('Roadmap')).id as number;
      expectSuccess(await setPolicy('Roadmap', 3));
      // By a member of the private channel, which the user is not.
      expectSuccess(
        await as(org.member, org.host).patch(`/messages/${id}`, {
          stream_id: org.secret.id,
          propagate_mode: 'change_all',
        }),
      );
      expect(await policies()).toEqual([]);
    });
  });
});
