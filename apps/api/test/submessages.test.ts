// Widgets and submessages (Zulip's /poll and /todo, POST /submessage): the server describes
// the widget as the message is sent, checks what readers add, tells everyone who can see the
// message, and hands the submessages back with the message.
import { getPrisma, Role, type User } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

interface Submessage {
  msg_type: string;
  content: string;
  message_id: number;
  sender_id: number;
  id: number;
}

describe('widgets and submessages', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  const post = (user: User, messageId: number, content: unknown, msgType = 'widget') =>
    as(user, org.host).post('/submessage', {
      message_id: messageId,
      msg_type: msgType,
      content: typeof content === 'string' ? content : JSON.stringify(content),
    });
  const submessagesOf = async (user: User, messageId: number) =>
    (
      expectSuccess(await as(user, org.host).get(`/messages/${messageId}`)).message as {
        submessages: Submessage[];
      }
    ).submessages;
  const sendTo = async (channel: string, content: string, sender = org.member) =>
    expectSuccess(
      await send(sender, org.host, { type: 'stream', to: channel, topic: 'w', content }),
    ).id as number;

  it('describes a /poll as it is sent, in the message event and every fetch', async () => {
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = await sendTo('general', '/poll Lunch?\nPizza\n- Tacos\n\n');
    });
    const widget = {
      msg_type: 'widget',
      content: JSON.stringify({
        widget_type: 'poll',
        extra_data: { question: 'Lunch?', options: ['Pizza', 'Tacos'] },
      }),
      message_id: id,
      sender_id: org.member.id,
      id: expect.any(Number) as number,
    };
    const messageEvents = published.filter((p) => p.event.type === 'message');
    expect(messageEvents.length).toBeGreaterThan(0);
    for (const { event } of messageEvents)
      expect((event.message as { submessages: unknown }).submessages).toEqual([widget]);
    expect(await submessagesOf(org.guest, id)).toEqual([widget]);
    const fetched = expectSuccess(
      await as(org.other, org.host).get('/messages', {
        anchor: id,
        num_before: 0,
        num_after: 0,
      }),
    ).messages as { submessages: Submessage[] }[];
    expect(fetched[0]!.submessages).toEqual([widget]);
    // The content is the message as typed, rendered as any other.
    const raw = expectSuccess(
      await as(org.member, org.host).get(`/messages/${id}`, { apply_markdown: false }),
    ).message as { content: string };
    expect(raw.content).toBe('/poll Lunch?\nPizza\n- Tacos');
  });

  it("stores a sender's widget_content (a zform of choices) as the widget, instead of a /poll", async () => {
    const zform = {
      widget_type: 'zform',
      extra_data: {
        type: 'choices',
        heading: 'Which planet is largest?',
        choices: [
          { type: 'multiple_choice', short_name: 'A', long_name: 'Jupiter', reply: 'answer q1 A' },
          { type: 'multiple_choice', short_name: 'B', long_name: 'Mars', reply: 'answer q1 B' },
        ],
      },
    };
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'quiz',
          content: '/poll not this one',
          widget_content: JSON.stringify(zform),
        }),
      ).id as number;
    });
    const [widget] = await submessagesOf(org.other, id);
    expect(widget).toMatchObject({ msg_type: 'widget', sender_id: org.member.id });
    expect(JSON.parse(widget!.content)).toEqual(zform);
    const event = published.find((p) => p.event.type === 'message')!.event;
    expect((event.message as { submessages: Submessage[] }).submessages).toEqual([widget]);

    const refused = async (widgetContent: string, msg: string) =>
      expectError(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'quiz',
          content: 'x',
          widget_content: widgetContent,
        }),
        msg,
      );
    await refused('{', 'Widgets: API programmer sent invalid JSON content');
    // What Zulip's Python bots send with a plain reply.
    expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'quiz',
        content: 'plain',
        widget_content: 'null',
      }),
    );
    await refused('[]', 'Widgets: widget_content is not a dict');
    await refused('{"extra_data": {}}', 'Widgets: widget_type is not in widget_content');
    await refused('{"widget_type": "zform"}', 'Widgets: extra_data is not in widget_content');
    await refused(
      '{"widget_type": "zform", "extra_data": []}',
      'Widgets: extra_data is not a dict',
    );
    await refused(
      '{"widget_type": "poll", "extra_data": {}}',
      'Widgets: unknown widget type: poll',
    );
    await refused(
      '{"widget_type": "zform", "extra_data": {}}',
      'Widgets: zform is missing type field',
    );
    await refused(
      '{"widget_type": "zform", "extra_data": {"type": "buttons"}}',
      'Widgets: unknown zform type: buttons',
    );
    await refused(
      '{"widget_type": "zform", "extra_data": {"type": "choices", "choices": []}}',
      'Widgets: heading key is missing from extra_data',
    );
    await refused(
      '{"widget_type": "zform", "extra_data": {"type": "choices", "heading": "h", "choices": [{"short_name": "A", "long_name": "a"}]}}',
      'Widgets: reply key is missing from extra_data["choices"][0]',
    );
    await refused(
      '{"widget_type": "zform", "extra_data": {"type": "choices", "heading": 1, "choices": []}}',
      'Widgets: extra_data["heading"] is not a string',
    );
  });

  it('takes votes and options from readers, questions only from the author, and tells everyone who can see the message', async () => {
    const id = await sendTo('general', '/poll Tabs or spaces?\nTabs\nSpaces');
    const vote = { type: 'vote', key: 'canned,0', vote: 1 };
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await post(org.guest, id, vote));
    });
    expect(published).toEqual([
      {
        event: {
          type: 'submessage',
          msg_type: 'widget',
          message_id: id,
          submessage_id: expect.any(Number) as number,
          sender_id: org.guest.id,
          content: JSON.stringify(vote),
        },
        users: sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]),
      },
    ]);
    const voteRow = (await submessagesOf(org.member, id))[1]!;
    expect(published[0]!.event.submessage_id).toBe(voteRow.id);
    expectSuccess(await post(org.other, id, { type: 'new_option', idx: 1, option: 'Both' }));
    expectSuccess(await post(org.member, id, { type: 'question', question: 'Tabs?' }));
    expectError(
      await post(org.other, id, { type: 'question', question: 'Mine?' }),
      "You can't edit a question unless you are the author.",
    );
    expectError(
      await post(org.other, id, { type: 'vote', key: 'canned,0', vote: 2 }),
      'Invalid poll data["vote"]',
    );
    expectError(await post(org.other, id, 'not json'), 'Invalid json for submessage');
    expectError(await post(org.other, id, { type: 'tally' }), 'Unknown type for poll data: tally');
    const rows = await submessagesOf(org.other, id);
    expect(rows.map((row) => [row.sender_id, JSON.parse(row.content) as unknown])).toEqual([
      [
        org.member.id,
        {
          widget_type: 'poll',
          extra_data: { question: 'Tabs or spaces?', options: ['Tabs', 'Spaces'] },
        },
      ],
      [org.guest.id, vote],
      [org.other.id, { type: 'new_option', idx: 1, option: 'Both' }],
      [org.member.id, { type: 'question', question: 'Tabs?' }],
    ]);
    expect(rows.map((row) => row.id)).toEqual(sorted(rows.map((row) => row.id)));
  });

  it('checks a todo list, whose title only its author changes', async () => {
    const id = await sendTo('general', '/todo Chores\nDishes: before noon\nLaundry');
    const [widget] = await submessagesOf(org.other, id);
    expect(JSON.parse(widget!.content)).toEqual({
      widget_type: 'todo',
      extra_data: {
        task_list_title: 'Chores',
        tasks: [
          { task: 'Dishes', desc: 'before noon' },
          { task: 'Laundry', desc: '' },
        ],
      },
    });
    expectSuccess(await post(org.other, id, { type: 'strike', key: '0,canned' }));
    expectSuccess(
      await post(org.other, id, {
        type: 'new_task',
        key: 2,
        task: 'Sweep',
        desc: '',
        completed: false,
      }),
    );
    expectError(
      await post(org.other, id, { type: 'new_task_list_title', title: 'Mine' }),
      "You can't edit the task list title unless you are the author.",
    );
    expectError(
      await post(org.other, id, {
        type: 'new_task',
        key: 1001,
        task: 'x',
        desc: '',
        completed: false,
      }),
      'todo data["key"] is too large',
    );
  });

  it('lets only the sender start submessages on a plain message, then anyone who can read it', async () => {
    const id = await sendTo('general', 'a plain message');
    expect(await submessagesOf(org.member, id)).toEqual([]);
    expectError(
      await post(org.other, id, {}, 'whatever'),
      'You cannot attach a submessage to this message.',
    );
    // Without a widget, any JSON goes.
    expectSuccess(await post(org.member, id, { name: 'alice', salary: 20 }, 'whatever'));
    expectSuccess(await post(org.other, id, [1, 2, 3], 'whatever'));
    expect((await submessagesOf(org.member, id)).map((row) => row.msg_type)).toEqual([
      'whatever',
      'whatever',
    ]);
    // Any submessage makes a message a widget, whose content stays.
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { content: 'edited' }),
      'Widgets cannot be edited.',
    );
  });

  it('refuses messages the user cannot read, and bad input', async () => {
    const secretId = await sendTo('secret', '/poll Hidden?');
    expectError(
      await post(org.other, secretId, { type: 'vote', key: 'canned,0', vote: 1 }),
      'Invalid message(s)',
    );
    expectError(await post(org.other, 2 ** 31 - 1, {}), 'Invalid message(s)');
    const late = await createTestUser(org.realm, Role.GUEST);
    const id = await sendTo('general', '/poll Open?');
    expectError(
      await post(late, id, { type: 'vote', key: 'canned,0', vote: 1 }),
      'Invalid message(s)',
    );
    expectError(
      await as(org.member, org.host).post('/submessage', { message_id: id, msg_type: 'widget' }),
      "Missing 'content' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await as(org.member, org.host).post('/submessage', {
        message_id: 'x',
        msg_type: 'widget',
        content: '{}',
      }),
      'message_id is not an integer',
    );
    expectError(
      await post(org.member, id, { type: 'question', question: 'q'.repeat(20_000) }),
      'content is too long (limit: 10000 characters)',
    );
  });

  it('keeps a widget message from being edited, but not from being moved or deleted', async () => {
    const id = await sendTo('general', '/poll Keep?\nYes');
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { content: '/poll Changed?' }),
      'Widgets cannot be edited.',
    );
    expectSuccess(await as(org.member, org.host).patch(`/messages/${id}`, { topic: 'moved' }));
    expectSuccess(await post(org.other, id, { type: 'vote', key: 'canned,0', vote: 1 }));
    expectSuccess(await as(org.admin, org.host).delete(`/messages/${id}`));
    expect(await getPrisma().subMessage.count({ where: { messageId: id } })).toBe(0);
  });

  it('tells only those who can still read the message', async () => {
    // Shared history: the subscribers, not a member who left.
    const name = `shared ${Math.random()}`;
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name }],
        principals: [org.member.id, org.other.id, org.admin.id],
        invite_only: true,
        history_public_to_subscribers: true,
      }),
    );
    const shared = await sendTo(name, '/poll Shared?');
    expectSuccess(
      await as(org.admin, org.host).delete('/users/me/subscriptions', {
        subscriptions: [name],
      }),
    );
    const vote = { type: 'vote', key: 'canned,0', vote: 1 };
    const toShared = await captureEvents(org.realm.id, async () => {
      expectSuccess(await post(org.other, shared, vote));
    });
    expect(toShared.map((p) => p.users)).toEqual([sorted([org.member.id, org.other.id])]);
    // Protected history: subscribers who received it; a newcomer did not.
    const protectedName = `protected ${Math.random()}`;
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: protectedName }],
        principals: [org.member.id, org.other.id],
        invite_only: true,
        history_public_to_subscribers: false,
      }),
    );
    const guarded = await sendTo(protectedName, '/poll Guarded?');
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: protectedName }],
        principals: [org.admin.id],
      }),
    );
    const toProtected = await captureEvents(org.realm.id, async () => {
      expectSuccess(await post(org.other, guarded, vote));
    });
    expect(toProtected.map((p) => p.users)).toEqual([sorted([org.member.id, org.other.id])]);
    // Public: the subscribers and non-guests who received it, not a guest who left.
    const open = `open ${Math.random()}`;
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: open }],
        principals: [org.member.id, org.other.id, org.guest.id, org.admin.id],
      }),
    );
    const poll = await sendTo(open, '/poll Open?');
    for (const leaver of [org.guest, org.admin])
      expectSuccess(
        await as(leaver, org.host).delete('/users/me/subscriptions', { subscriptions: [open] }),
      );
    const toPublic = await captureEvents(org.realm.id, async () => {
      expectSuccess(await post(org.other, poll, vote));
    });
    expect(toPublic.map((p) => p.users)).toEqual([
      sorted([org.member.id, org.other.id, org.admin.id]),
    ]);
  });

  it('leaves messages of archived channels as they are', async () => {
    const name = `archived ${Math.random()}`;
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name }],
        principals: [org.member.id, org.other.id],
      }),
    );
    const id = await sendTo(name, '/poll Still?');
    const stream = await getPrisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name },
    });
    expectSuccess(await as(org.owner, org.host).delete(`/streams/${stream.id}`));
    expectError(
      await post(org.other, id, { type: 'vote', key: 'canned,0', vote: 1 }),
      'Invalid message(s)',
    );
  });

  it('describes widgets in direct messages too, for their participants', async () => {
    const sent = expectSuccess(
      await send(org.member, org.host, {
        type: 'direct',
        to: JSON.stringify([org.other.id]),
        content: '/todo',
      }),
    ).id as number;
    expect(JSON.parse((await submessagesOf(org.other, sent))[0]!.content)).toEqual({
      widget_type: 'todo',
      extra_data: { task_list_title: '', tasks: [] },
    });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await post(org.other, sent, {
          type: 'new_task',
          key: 0,
          task: 'Call',
          desc: '',
          completed: false,
        }),
      );
    });
    expect(published.map((p) => p.users)).toEqual([sorted([org.member.id, org.other.id])]);
    expectError(await post(org.guest, sent, { type: 'strike', key: '0,0' }), 'Invalid message(s)');
  });
});
