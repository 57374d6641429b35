// Scheduled messages and reminders (spec 2.6, 4.3; Zulip's zerver/views/scheduled_messages.py
// and reminders.py): creating, listing, editing and deleting them, the rules they obey (every
// check of a send, a delivery time in the future), the events that keep the user's clients in
// step, and /register's sections. Delivery by the worker: apps/worker/test/scheduled-delivery.
import request from 'supertest';
import { getPrisma, Role, type User } from '@parley/db';
import { eventsRouter, startEventsService, type EventsService } from '@parley/events-app';
import type { QueuedEvent } from '@parley/events';
import { closeQueues } from '@parley/jobs';
import { createApp } from '../src/app';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

let org: MessageOrg;
let user: User;

beforeAll(async () => {
  org = await createMessageOrg();
});
afterAll(async () => {
  // Scheduling queued delivery jobs (no worker runs here).
  await closeQueues();
});
beforeEach(async () => {
  user = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Sam Scheduler' });
  expectSuccess(
    await as(org.owner, org.host).post('/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }],
      principals: [user.id],
    }),
  );
});

/** A time an hour (plus `offset` seconds) from now, in whole seconds. */
const later = (offset = 0) => Math.floor(Date.now() / 1000) + 3600 + offset;

const schedule = (form: Record<string, unknown>, who: User = user) =>
  as(who, org.host).post('/scheduled_messages', form);
const edit = (id: number | string, form: Record<string, unknown>, who: User = user) =>
  as(who, org.host).patch(`/scheduled_messages/${id}`, form);
const remove = (id: number | string, who: User = user) =>
  as(who, org.host).delete(`/scheduled_messages/${id}`);
const list = async (who: User = user) =>
  expectSuccess(await as(who, org.host).get('/scheduled_messages')).scheduled_messages as Record<
    string,
    unknown
  >[];

const channelMessage = (fields: Record<string, unknown> = {}) => ({
  type: 'stream',
  to: org.general.id,
  topic: 'plans',
  content: 'Let us meet',
  scheduled_delivery_timestamp: later(),
  ...fields,
});

async function scheduleOne(fields: Record<string, unknown> = {}, who: User = user) {
  return expectSuccess(await schedule(channelMessage(fields), who)).scheduled_message_id as number;
}

const rowOf = (id: number) => getPrisma().scheduledMessage.findUniqueOrThrow({ where: { id } });

describe('POST /scheduled_messages', () => {
  it('schedules a channel message and tells the user’s clients', async () => {
    const when = later();
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(
        await schedule(channelMessage({ scheduled_delivery_timestamp: when, content: '**Hi**' })),
      );
      id = body.scheduled_message_id as number;
      expect(Object.keys(body).sort()).toEqual(['msg', 'result', 'scheduled_message_id']);
    });
    const object = {
      scheduled_message_id: id,
      type: 'stream',
      to: org.general.id,
      topic: 'plans',
      content: '**Hi**',
      rendered_content: '<p><strong>Hi</strong></p>',
      scheduled_delivery_timestamp: when,
      failed: false,
    };
    expect(published).toEqual([
      {
        event: { type: 'scheduled_messages', op: 'add', scheduled_messages: [object] },
        users: [user.id],
      },
    ]);
    expect(await list()).toEqual([object]);
    // Nothing is sent yet, and nobody else sees it.
    expect(await list(org.member)).toEqual([]);
    const row = await rowOf(id);
    expect(row).toMatchObject({ delivered: false, deliveredMessageId: null, version: 1 });
  });

  it('schedules direct messages: to lists the other participants, or the sender alone', async () => {
    const group = expectSuccess(
      await schedule({
        type: 'direct',
        to: [org.other.id, user.id, org.member.id],
        content: 'group',
        scheduled_delivery_timestamp: later(1),
      }),
    ).scheduled_message_id as number;
    const self = expectSuccess(
      await schedule({
        type: 'private',
        to: JSON.stringify([user.id]),
        content: 'me',
        topic: 'ignored',
        scheduled_delivery_timestamp: later(2),
      }),
    ).scheduled_message_id as number;
    const messages = await list();
    expect(messages).toEqual([
      expect.objectContaining({
        scheduled_message_id: group,
        type: 'private',
        to: [org.member.id, org.other.id].sort((a, b) => a - b),
      }),
      expect.objectContaining({ scheduled_message_id: self, type: 'private', to: [user.id] }),
    ]);
    expect(messages[1]).not.toHaveProperty('topic');
  });

  it('accepts type "channel", lists soonest first, keeps read_by_sender', async () => {
    const second = await scheduleOne({ type: 'channel', scheduled_delivery_timestamp: later(20) });
    const first = await scheduleOne({ scheduled_delivery_timestamp: later(10) });
    expect((await list()).map((m) => m.scheduled_message_id)).toEqual([first, second]);
    expect((await rowOf(first)).readBySender).toBe(false);
    const explicit = await scheduleOne({ read_by_sender: true });
    expect((await rowOf(explicit)).readBySender).toBe(true);
  });

  it('normalizes content and topic as sending does', async () => {
    const id = await scheduleOne({ topic: 'é'.repeat(70), content: '\n\n  indented\ntext   \n' });
    const [message] = (await list()).filter((m) => m.scheduled_message_id === id);
    expect(message).toMatchObject({ topic: `${'é'.repeat(57)}...`, content: '  indented\ntext' });
    const noTopic = await scheduleOne({ topic: '(no topic)' });
    expect((await rowOf(noTopic)).subject).toBe('');
  });

  it('refuses a delivery time that is not in the future', async () => {
    const message = 'Scheduled delivery time must be in the future.';
    const now = Math.floor(Date.now() / 1000);
    expectError(
      await schedule(channelMessage({ scheduled_delivery_timestamp: now - 60 })),
      message,
    );
    expectError(await schedule(channelMessage({ scheduled_delivery_timestamp: -5 })), message);
    expectError(
      await schedule(channelMessage({ scheduled_delivery_timestamp: 'soon' })),
      'scheduled_delivery_timestamp is not an integer',
    );
    expectError(
      await schedule(channelMessage({ scheduled_delivery_timestamp: 2 ** 60 })),
      'scheduled_delivery_timestamp is too large',
    );
    expect(await list()).toEqual([]);
  });

  it('refuses missing and mistyped parameters', async () => {
    const { content: _content, ...noContent } = channelMessage();
    expectError(
      await schedule(noContent),
      "Missing 'content' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    const { to: _to, ...noTo } = channelMessage();
    expectError(await schedule(noTo), "Missing 'to' argument", 400, 'REQUEST_VARIABLE_MISSING');
    const { scheduled_delivery_timestamp: _t, ...noTime } = channelMessage();
    expectError(
      await schedule(noTime),
      "Missing 'scheduled_delivery_timestamp' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(await schedule(channelMessage({ type: 'letter' })), 'Invalid type');
    const { topic: _topic, ...noTopic } = channelMessage();
    expectError(await schedule(noTopic), 'Missing topic');
    // `to` is JSON (Zulip's Json[int | list[int]]), read before the topic is looked at.
    expectError(await schedule(channelMessage({ to: 'general' })), 'to is not valid JSON');
    expectError(
      await schedule({ ...noTopic, to: JSON.stringify([org.general.id, 1]) }),
      'Invalid data type for channel ID',
    );
    expectError(
      await schedule(channelMessage({ to: '"general"' })),
      'Invalid data type for channel ID',
    );
    expectError(
      await schedule(channelMessage({ to: [org.general.id, 1] })),
      'Invalid data type for channel ID',
    );
    expectError(await schedule(channelMessage({ content: '   ' })), 'Message must not be empty');
    expectError(
      await schedule(channelMessage({ content: 'a\u0000b' })),
      'Invalid content: null bytes are not allowed',
    );
    expectError(
      await schedule(channelMessage({ read_by_sender: 'perhaps' })),
      'read_by_sender is not a boolean',
    );
    const direct = { type: 'direct', content: 'hi', scheduled_delivery_timestamp: later() };
    expectError(
      await schedule({ ...direct, to: String(org.other.id) }),
      'Invalid data type for recipients',
    );
    expectError(await schedule({ ...direct, to: 'someone' }), 'to is not valid JSON');
    expectError(await schedule({ ...direct, to: '[3,' }), 'to is not valid JSON');
    expectError(
      await schedule({ ...direct, to: [org.other.email] }),
      'Recipient list may only contain user IDs',
    );
    expectError(await schedule({ ...direct, to: [] }), 'Message must have recipients');
    expect(await list()).toEqual([]);
  });

  it('checks the message as a send would: channel, recipients, permissions', async () => {
    const res = await schedule(channelMessage({ to: 999_999_999 }));
    expectError(res, "Channel with ID '999999999' does not exist", 400, 'STREAM_DOES_NOT_EXIST');
    expect(res.body.stream_id).toBe(999_999_999);
    expectError(
      await schedule(channelMessage({ to: org.secret.id })),
      "Not authorized to send to channel 'secret'",
    );
    const direct = { type: 'direct', content: 'hi', scheduled_delivery_timestamp: later() };
    expectError(await schedule({ ...direct, to: [999_999_999] }), 'Invalid user ID 999999999');
    expectError(await schedule({ ...direct, to: [2 ** 40] }), `Invalid user ID ${2 ** 40}`);
    const gone = await createTestUser(org.realm, Role.MEMBER);
    await getPrisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    expectError(
      await schedule({ ...direct, to: [gone.id] }),
      `'${gone.deliveryEmail}' is no longer using Zulip.`,
    );
    // The member subscribed to the private channel may.
    expectSuccess(await schedule(channelMessage({ to: org.secret.id }), org.member));
    expect(await list()).toEqual([]);
  });

  it('lists parameters it does not know as ignored', async () => {
    const body = expectSuccess(await schedule(channelMessage({ colour: 'blue' })));
    expect(body.ignored_parameters_unsupported).toEqual(['colour']);
  });
});

describe('PATCH /scheduled_messages/{scheduled_message_id}', () => {
  it('edits the content and tells the user’s clients; each edit is a new version', async () => {
    const id = await scheduleOne();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await edit(id, { content: '*new*' }));
    });
    const [message] = await list();
    expect(message).toMatchObject({
      content: '*new*',
      rendered_content: '<p><em>new</em></p>',
      topic: 'plans',
    });
    expect(published).toEqual([
      {
        event: { type: 'scheduled_messages', op: 'update', scheduled_message: message },
        users: [user.id],
      },
    ]);
    expect((await rowOf(id)).version).toBe(2);
    const when = later(500);
    expectSuccess(await edit(id, { scheduled_delivery_timestamp: when }));
    expect((await list())[0]).toMatchObject({
      scheduled_delivery_timestamp: when,
      content: '*new*',
    });
    expect((await rowOf(id)).version).toBe(3);
  });

  it('edits the topic of a channel message, and ignores it for a direct one', async () => {
    const id = await scheduleOne();
    expectSuccess(await edit(id, { topic: 'other plans' }));
    expect((await list())[0]).toMatchObject({ topic: 'other plans', to: org.general.id });
    const direct = expectSuccess(
      await schedule({
        type: 'direct',
        to: [org.other.id],
        content: 'hi',
        scheduled_delivery_timestamp: later(5),
      }),
    ).scheduled_message_id as number;
    expectSuccess(await edit(direct, { topic: 'nothing' }));
    expect((await rowOf(direct)).subject).toBe('');
    // A new topic alone is not checked as a send: its channel's rules apply at delivery
    // (Zulip's edit_scheduled_message), but its characters are, and it is truncated.
    await getPrisma().stream.update({ where: { id: org.general.id }, data: { deactivated: true } });
    try {
      expectSuccess(await edit(id, { topic: 't'.repeat(70) }));
      expect((await rowOf(id)).subject).toBe(`${'t'.repeat(57)}...`);
      expectError(
        await edit(id, { topic: 'bell\u0007' }),
        'Invalid character in topic, at position 5!',
      );
    } finally {
      await getPrisma().stream.update({
        where: { id: org.general.id },
        data: { deactivated: false },
      });
    }
  });

  it('changes the recipient and the type, which needs a recipient (and a topic for a channel)', async () => {
    const id = await scheduleOne();
    expectError(
      await edit(id, { type: 'direct' }),
      'Recipient required when updating type of scheduled message.',
    );
    expectError(
      await edit(id, { type: 'channel', to: org.general.id }),
      'Topic required when updating scheduled message type to channel.',
    );
    expectSuccess(await edit(id, { type: 'direct', to: [org.other.id] }));
    const [direct] = await list();
    expect(direct).toMatchObject({ type: 'private', to: [org.other.id], content: 'Let us meet' });
    expect(direct).not.toHaveProperty('topic');
    expectSuccess(await edit(id, { type: 'stream', to: org.general.id, topic: 'back' }));
    expect((await list())[0]).toMatchObject({ type: 'stream', to: org.general.id, topic: 'back' });
    // `to` alone keeps the type.
    expectSuccess(await edit(id, { to: org.general.id }));
    expect((await list())[0]).toMatchObject({ type: 'stream', topic: 'back' });
  });

  it('refuses a missing channel with its id, an invalid user, and what a send would refuse', async () => {
    const id = await scheduleOne();
    const res = await edit(id, { to: 424_242_424 });
    expectError(res, "Channel with ID '424242424' does not exist", 400, 'STREAM_DOES_NOT_EXIST');
    expect(res.body.stream_id).toBe(424_242_424);
    expectError(await edit(id, { type: 'direct', to: [999_999_999] }), 'Invalid user ID 999999999');
    expectError(
      await edit(id, { to: org.secret.id }),
      "Not authorized to send to channel 'secret'",
    );
    expectError(await edit(id, { content: ' ' }), 'Message must not be empty');
    expectError(
      await edit(id, { scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) - 1 }),
      'Scheduled delivery time must be in the future.',
    );
    expectError(await edit(id, {}), 'Nothing to change');
    expectError(await edit(id, { type: 'fax', to: 1 }), 'Invalid type');
    // Nothing changed.
    expect((await rowOf(id)).version).toBe(1);
    expect((await list())[0]).toMatchObject({ content: 'Let us meet', to: org.general.id });
  });

  it('answers 404 for a scheduled message that is not the user’s', async () => {
    const id = await scheduleOne();
    const missing = 'Scheduled message does not exist';
    expectError(await edit(id, { content: 'mine now' }, org.member), missing, 404);
    expectError(await edit(999_999_999, { content: 'x' }), missing, 404);
    expectError(await edit('abc', { content: 'x' }), 'scheduled_message_id is not an integer');
    expect((await list())[0]).toMatchObject({ content: 'Let us meet' });
  });

  it('needs a new time to edit a failed message, and clears failed', async () => {
    const id = await scheduleOne();
    await getPrisma().scheduledMessage.update({
      where: { id },
      data: { failed: true, failureMessage: 'Not authorized' },
    });
    expect((await list())[0]).toMatchObject({ failed: true });
    expectError(
      await edit(id, { content: 'try again' }),
      'Scheduled delivery time must be in the future.',
    );
    const when = later(60);
    expectSuccess(await edit(id, { content: 'try again', scheduled_delivery_timestamp: when }));
    expect((await list())[0]).toMatchObject({
      failed: false,
      content: 'try again',
      scheduled_delivery_timestamp: when,
    });
    expect((await rowOf(id)).failureMessage).toBeNull();
  });

  it('refuses to edit a message already sent', async () => {
    const id = await scheduleOne();
    await getPrisma().scheduledMessage.update({ where: { id }, data: { delivered: true } });
    expectError(await edit(id, { content: 'late' }), 'Scheduled message was already sent');
  });
});

describe('DELETE /scheduled_messages/{scheduled_message_id}', () => {
  it('deletes the user’s scheduled message and tells their clients', async () => {
    const id = await scheduleOne();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await remove(id));
    });
    expect(published).toEqual([
      {
        event: { type: 'scheduled_messages', op: 'remove', scheduled_message_id: id },
        users: [user.id],
      },
    ]);
    expect(await list()).toEqual([]);
    expect(await getPrisma().scheduledMessage.findUnique({ where: { id } })).toBeNull();
    expectError(await remove(id), 'Scheduled message does not exist', 404);
  });

  it('answers 404 for another user’s or an unknown id, and refuses a bad one', async () => {
    const id = await scheduleOne();
    expectError(await remove(id, org.member), 'Scheduled message does not exist', 404);
    expectError(await remove(999_999_999), 'Scheduled message does not exist', 404);
    expectError(await remove(-1), 'scheduled_message_id is too small');
    expect(await list()).toHaveLength(1);
  });
});

describe('reminders', () => {
  const remind = (form: Record<string, unknown>, who: User = user) =>
    as(who, org.host).post('/reminders', form);
  const reminders = async (who: User = user) =>
    expectSuccess(await as(who, org.host).get('/reminders')).reminders as Record<string, unknown>[];

  async function channelMessageId(content = 'The plan is ready') {
    return expectSuccess(
      await send(org.other, org.host, { type: 'stream', to: 'general', topic: 'launch', content }),
    ).id as number;
  }

  it('schedules a reminder about a channel message, quoting it, and tells the user’s clients', async () => {
    const messageId = await channelMessageId();
    const when = later();
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = expectSuccess(
        await remind({ message_id: messageId, scheduled_delivery_timestamp: when }),
      ).reminder_id as number;
    });
    const [reminder] = await reminders();
    expect(reminder).toMatchObject({
      reminder_id: id,
      type: 'private',
      to: [user.id],
      scheduled_delivery_timestamp: when,
      failed: false,
      reminder_target_message_id: messageId,
    });
    const content = reminder!.content as string;
    expect(content.startsWith('You requested a reminder for the following message.\n\n')).toBe(
      true,
    );
    expect(content).toContain(`@_**Otto Other|${org.other.id}** [said](`);
    expect(content).toContain(
      `/#narrow/channel/${org.general.id}-general/topic/launch/near/${messageId}`,
    );
    expect(content).toContain(`in #**general>launch@${messageId}**:\n`);
    expect(content.endsWith('```quote\nThe plan is ready\n```')).toBe(true);
    expect(published).toEqual([
      { event: { type: 'reminders', op: 'add', reminders: [reminder] }, users: [user.id] },
    ]);
    // A reminder is no scheduled message.
    expect(await list()).toEqual([]);
    expectError(await edit(id, { content: 'x' }), 'Scheduled message does not exist', 404);
    expectError(await remove(id), 'Scheduled message does not exist', 404);
  });

  it('adds the note, and quotes a direct message with its participants', async () => {
    const dm = expectSuccess(
      await send(org.other, org.host, {
        type: 'direct',
        to: JSON.stringify([user.id]),
        content: 'psst',
      }),
    ).id as number;
    const id = expectSuccess(
      await remind({
        message_id: dm,
        scheduled_delivery_timestamp: later(),
        note: 'reply to Otto\n\n',
      }),
    ).reminder_id as number;
    const row = await rowOf(id);
    expect(row.reminderNote).toBe('reply to Otto');
    expect(
      row.content.startsWith(
        'You requested a reminder for the following direct message. Note:\n > reply to Otto\n\n',
      ),
    ).toBe(true);
    const ids = [user.id, org.other.id].sort((a, b) => a - b).join(',');
    expect(row.content).toContain(
      `/#narrow/dm/${ids}-dm/near/${dm}) to @_**Sam Scheduler|${user.id}**:`,
    );
  });

  it('refuses messages the user cannot read, times not in the future, long notes', async () => {
    const secret = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'secret',
        topic: 't',
        content: 'hush',
      }),
    ).id as number;
    expectError(
      await remind({ message_id: secret, scheduled_delivery_timestamp: later() }),
      'Invalid message(s)',
    );
    expectError(
      await remind({ message_id: 999_999_999, scheduled_delivery_timestamp: later() }),
      'Invalid message(s)',
    );
    const messageId = await channelMessageId();
    expectError(
      await remind({
        message_id: messageId,
        scheduled_delivery_timestamp: Math.floor(Date.now() / 1000),
      }),
      'Scheduled delivery time must be in the future.',
    );
    expectError(
      await remind({
        message_id: messageId,
        scheduled_delivery_timestamp: later(),
        note: 'n'.repeat(1001),
      }),
      'Maximum reminder note length: 1000 characters',
    );
    expectError(
      await remind({ message_id: 'first', scheduled_delivery_timestamp: later() }),
      'message_id is not an integer',
    );
    expectError(
      await remind({ scheduled_delivery_timestamp: later() }),
      "Missing 'message_id' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expect(await reminders()).toEqual([]);
  });

  it('deletes a reminder, telling the user’s clients; not another user’s nor a scheduled message', async () => {
    const messageId = await channelMessageId();
    const id = expectSuccess(
      await remind({ message_id: messageId, scheduled_delivery_timestamp: later() }),
    ).reminder_id as number;
    const scheduled = await scheduleOne();
    const missing = 'Reminder does not exist';
    expectError(await as(org.member, org.host).delete(`/reminders/${id}`), missing, 404);
    expectError(await as(user, org.host).delete(`/reminders/${scheduled}`), missing, 404);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(user, org.host).delete(`/reminders/${id}`));
    });
    expect(published).toEqual([
      { event: { type: 'reminders', op: 'remove', reminder_id: id }, users: [user.id] },
    ]);
    expect(await reminders()).toEqual([]);
    expectError(await as(user, org.host).delete(`/reminders/${id}`), missing, 404);
  });
});

describe('POST /register scheduled_messages and reminders', () => {
  const options = {} as StateOptions;
  const register = async () =>
    expectSuccess(
      await as(user, org.host).post('/register', {
        fetch_event_types: ['scheduled_messages', 'reminders'],
      }),
    );

  it('lists the undelivered ones, failed included, soonest first', async () => {
    const b = await scheduleOne({ scheduled_delivery_timestamp: later(30) });
    const a = await scheduleOne({ scheduled_delivery_timestamp: later(10) });
    const sent = await scheduleOne({ scheduled_delivery_timestamp: later(20) });
    await getPrisma().scheduledMessage.update({ where: { id: sent }, data: { delivered: true } });
    await getPrisma().scheduledMessage.update({ where: { id: b }, data: { failed: true } });
    const state = await register();
    expect(
      (state.scheduled_messages as { scheduled_message_id: number }[]).map(
        (m) => m.scheduled_message_id,
      ),
    ).toEqual([a, b]);
    expect(state.scheduled_messages).toEqual(await list());
    expect(state.reminders).toEqual([]);
  });

  it('becomes the fresh state when the events of changes are applied to it', async () => {
    const keep = await scheduleOne({ scheduled_delivery_timestamp: later(10) });
    const change = await scheduleOne({ scheduled_delivery_timestamp: later(20) });
    const gone = await scheduleOne({ scheduled_delivery_timestamp: later(30) });
    const messageId = expectSuccess(
      await send(org.other, org.host, { type: 'stream', to: 'general', topic: 't', content: 'x' }),
    ).id as number;
    const state = await register();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await edit(change, { content: 'changed', scheduled_delivery_timestamp: later(40) }),
      );
      expectSuccess(await remove(gone));
      await scheduleOne({ scheduled_delivery_timestamp: later(5) });
      expectSuccess(
        await as(user, org.host).post('/reminders', {
          message_id: messageId,
          scheduled_delivery_timestamp: later(),
        }),
      );
    });
    for (const [index, { event }] of published.entries())
      applyEvent(state, { id: index, ...event } as QueuedEvent, user, options);
    const fresh = await register();
    expect(state.scheduled_messages).toEqual(fresh.scheduled_messages);
    expect(state.reminders).toEqual(fresh.reminders);
    expect(
      (fresh.scheduled_messages as { scheduled_message_id: number }[]).map(
        (m) => m.scheduled_message_id,
      ),
    ).toContain(keep);
    expect(fresh.reminders).toHaveLength(1);
  });
});

describe('the events tier', () => {
  let service: EventsService;
  let composed: ReturnType<typeof createApp>;

  beforeAll(async () => {
    service = await startEventsService({ heartbeatSeconds: 1, heartbeatJitterSeconds: 0 });
    composed = createApp({ mount: [eventsRouter(service)] });
  });
  afterAll(async () => {
    await service.stop();
  });

  it('delivers scheduled_messages and reminders events to queues that asked for them', async () => {
    const auth = <T extends request.Test>(test: T) =>
      test.set('Host', org.host).auth(user.deliveryEmail, user.apiKey);
    const registered = expectSuccess(
      await auth(request(composed).post('/api/v1/register'))
        .type('form')
        .send({ event_types: JSON.stringify(['scheduled_messages', 'reminders']) }),
    );
    const queueId = registered.queue_id as string;
    const id = await scheduleOne();
    const messageId = expectSuccess(
      await send(org.other, org.host, { type: 'stream', to: 'general', topic: 't', content: 'x' }),
    ).id as number;
    const reminderId = expectSuccess(
      await as(user, org.host).post('/reminders', {
        message_id: messageId,
        scheduled_delivery_timestamp: later(),
      }),
    ).reminder_id as number;
    expectSuccess(await remove(id));
    const seen: Record<string, unknown>[] = [];
    let lastEventId = -1;
    const deadline = Date.now() + 15_000;
    while (seen.filter((event) => event.type !== 'heartbeat').length < 3) {
      if (Date.now() > deadline) throw new Error(`saw only ${JSON.stringify(seen)}`);
      const body = expectSuccess(
        await auth(request(composed).get('/api/v1/events')).query({
          queue_id: queueId,
          last_event_id: String(lastEventId),
        }),
      );
      for (const event of body.events as { id: number }[]) {
        seen.push(event);
        lastEventId = event.id;
      }
    }
    const events = seen.filter((event) => event.type !== 'heartbeat');
    expect(events.map(({ type, op }) => `${String(type)} ${String(op)}`)).toEqual([
      'scheduled_messages add',
      'reminders add',
      'scheduled_messages remove',
    ]);
    expect(events[0]!.scheduled_messages).toEqual([
      expect.objectContaining({ scheduled_message_id: id, failed: false }),
    ]);
    expect(events[1]!.reminders).toEqual([expect.objectContaining({ reminder_id: reminderId })]);
    expect(events[2]).toMatchObject({ scheduled_message_id: id });
  });
});
