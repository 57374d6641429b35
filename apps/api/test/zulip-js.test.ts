// The official client against a listening Parley: password login, own profile, user list.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import zulipInit from 'zulip-js';
import { getPrisma, Role, runAction } from '@parley/db';
import { doSetPassword } from '../src/actions/users';
import { hashPassword } from '../src/lib/credentials';
import { eventsRouter, startEventsService, type EventsService } from '@parley/events-app';
import { createApp } from '../src/app';
import { createTestUser, ensureRootRealm, uniqueSubdomain } from './helpers';

let events: EventsService;
const children: ChildProcess[] = [];

let server: Server;
let realmUrl: string;

beforeAll(async () => {
  events = await startEventsService({
    heartbeatSeconds: 2,
    heartbeatJitterSeconds: 0,
    leaseMs: 1000,
  });
  const app = createApp({ mount: [eventsRouter(events)] });
  server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  // 127.0.0.1:<port> is not under EXTERNAL_HOST, so it reaches the root organization.
  realmUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await ensureRootRealm();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await events.stop();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

type Event = Record<string, unknown>;

/** Runs zulip-js's callOnEachEvent as `user` in a child process (it loops forever) and
 * collects the events it prints. */
function listenForEvents(user: { deliveryEmail: string; apiKey: string }, eventTypes: string[]) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(__dirname, 'fixtures', 'zulip-js-events.ts')],
    {
      cwd: join(__dirname, '..', '..', '..'),
      env: {
        ...process.env,
        ZULIP_USERNAME: user.deliveryEmail,
        ZULIP_API_KEY: user.apiKey,
        ZULIP_REALM: realmUrl,
        ZULIP_EVENT_TYPES: JSON.stringify(eventTypes),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(child);
  const lines: Event[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const part of parts) if (part.trim()) lines.push(JSON.parse(part) as Event);
  });
  const waitFor = async (check: (event: Event) => boolean, what: string) => {
    const deadline = Date.now() + 20_000;
    while (!lines.some(check)) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}; saw ${JSON.stringify(lines)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { lines, waitFor };
}

describe('zulip-js', () => {
  it('logs in with username and password, reads its profile and the user list', async () => {
    const realm = await getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
    const email = `${uniqueSubdomain('js')}@example.com`;
    const user = await createTestUser(realm, Role.MEMBER, { email, fullName: 'Js Client' });
    const hash = await hashPassword('zulip-js-password');
    await runAction((ctx) => doSetPassword(ctx, user, hash, null));

    const client = await zulipInit({
      username: email,
      password: 'zulip-js-password',
      realm: realmUrl,
    });
    expect(client.config.apiKey).toBe(user.apiKey);

    const profile = await client.users.me.getProfile();
    expect(profile).toMatchObject({
      result: 'success',
      user_id: user.id,
      email,
      full_name: 'Js Client',
      role: 400,
      max_message_id: -1,
    });

    const list = await client.users.retrieve({ client_gravatar: false });
    expect(list.result).toBe('success');
    const me = list.members.find((member: { user_id: number }) => member.user_id === user.id);
    expect(me).toMatchObject({ email, full_name: 'Js Client', is_active: true });
    expect(typeof me.avatar_url).toBe('string');
  });

  it('subscribes, lists and finds channels, reads topics, unsubscribes and archives', async () => {
    const realm = await getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
    const user = await createTestUser(realm, Role.MEMBER, {
      email: `${uniqueSubdomain('ch')}@example.com`,
    });
    const client = await zulipInit({
      username: user.deliveryEmail,
      apiKey: user.apiKey,
      realm: realmUrl,
    });
    const name = uniqueSubdomain('js-channel');
    const added = await client.users.me.subscriptions.add({
      subscriptions: JSON.stringify([{ name, description: 'from zulip-js' }]),
    });
    expect(added).toMatchObject({ result: 'success', subscribed: { [String(user.id)]: [name] } });

    const { stream_id: streamId } = await client.streams.getStreamId(name);
    expect(typeof streamId).toBe('number');
    const subs = await client.streams.subscriptions.retrieve({ include_subscribers: true });
    expect(subs.subscriptions).toEqual([
      expect.objectContaining({ stream_id: streamId, name, subscribers: [user.id] }),
    ]);
    const listed = await client.streams.retrieve({ include_public: false });
    expect(listed.streams.map((s: { name: string }) => s.name)).toEqual([name]);
    // The Notification Bot's first message starts the channel's only topic.
    expect(await client.streams.topics.retrieve({ stream_id: streamId })).toMatchObject({
      result: 'success',
      topics: [{ name: 'channel events', max_id: expect.any(Number) as number }],
    });

    // zulip-js sends DELETE parameters in the query string.
    const removed = await client.users.me.subscriptions.remove({
      subscriptions: JSON.stringify([name]),
    });
    expect(removed).toMatchObject({ result: 'success', removed: [name], not_removed: [] });
    const archived = await client.streams.deleteById({ stream_id: streamId });
    expect(archived).toMatchObject({
      result: 'success',
      ignored_parameters_unsupported: ['stream_id'],
    });
    expect(await client.streams.getStreamId(name)).toMatchObject({
      result: 'error',
      code: 'BAD_REQUEST',
      msg: `Invalid channel name '${name}'`,
    });
  });

  it('gets a JSON error envelope, not a crash, for a wrong password', async () => {
    // A fresh address each run: failed logins are rate limited per username for 30 minutes.
    const client = await zulipInit({
      username: `${uniqueSubdomain('nobody')}@example.com`,
      password: 'wrong',
      realm: realmUrl,
    });
    // zulip-js keeps going without a key when the login fails; asking again shows the answer.
    expect(client.config.apiKey).toBeUndefined();
    const answer = await client.accounts.retrieve();
    expect(answer).toEqual({
      result: 'error',
      code: 'AUTHENTICATION_FAILED',
      msg: 'Your username or password is incorrect',
    });
  });

  it('sends to a channel and as a DM, narrows, edits and deletes, seeing each as an event', async () => {
    const realm = await getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
    const user = await createTestUser(realm, Role.MEMBER, {
      email: `${uniqueSubdomain('msg')}@example.com`,
    });
    const friend = await createTestUser(realm, Role.MEMBER, {
      email: `${uniqueSubdomain('friend')}@example.com`,
    });
    const listener = listenForEvents(user, [
      'message',
      'update_message',
      'delete_message',
      'reaction',
      'update_message_flags',
    ]);
    await listener.waitFor((e) => e.type === 'heartbeat', 'the first heartbeat');
    const client = await zulipInit({
      username: user.deliveryEmail,
      apiKey: user.apiKey,
      realm: realmUrl,
    });
    const channel = uniqueSubdomain('js-talk');
    expect(
      await client.users.me.subscriptions.add({
        subscriptions: JSON.stringify([{ name: channel }]),
      }),
    ).toMatchObject({ result: 'success' });

    const sent = await client.messages.send({
      type: 'stream',
      to: channel,
      topic: 'greetings',
      content: 'hello **all**',
    });
    expect(sent).toMatchObject({ result: 'success', id: expect.any(Number) as number });
    const dm = await client.messages.send({
      type: 'private',
      to: friend.deliveryEmail,
      content: 'psst',
    });
    expect(dm.result).toBe('success');

    const found = await client.messages.retrieve({
      anchor: 'newest',
      num_before: 10,
      num_after: 0,
      narrow: [{ operator: 'stream', operand: channel }],
    });
    // After the Notification Bot's first message in the channel.
    expect(found.messages.map((m: { id: number }) => m.id)).toEqual([expect.any(Number), sent.id]);
    expect(found.messages[0]).toMatchObject({
      subject: 'channel events',
      sender_email: 'notification-bot@zulip.com',
      content: expect.stringContaining('channel created by') as string,
    });
    expect(found.messages[1]).toMatchObject({
      subject: 'greetings',
      content: '<p>hello <strong>all</strong></p>',
    });

    expect(
      await client.messages.update({ message_id: sent.id, content: 'hello again' }),
    ).toMatchObject({
      result: 'success',
    });
    expect(await client.messages.deleteById({ message_id: dm.id })).toMatchObject({
      result: 'success',
    });

    expect(
      await client.reactions.add({ message_id: sent.id, emoji_name: 'octopus' }),
    ).toMatchObject({
      result: 'success',
    });
    expect(
      await client.reactions.remove({ message_id: sent.id, emoji_name: 'octopus' }),
    ).toMatchObject({
      result: 'success',
    });
    expect(await client.messages.flags.add({ messages: [sent.id], flag: 'starred' })).toMatchObject(
      {
        result: 'success',
        messages: [sent.id],
      },
    );
    await listener.waitFor(
      (e) => e.type === 'update_message_flags',
      'the update_message_flags event',
    );
    const [notice, ...seen] = listener.lines.filter((e) => e.type !== 'heartbeat');
    // First the Notification Bot's message in the channel zulip-js created.
    expect(notice).toMatchObject({
      type: 'message',
      message: { subject: 'channel events', display_recipient: channel },
    });
    expect(seen.map((e) => e.type)).toEqual([
      'message',
      'message',
      'update_message',
      'delete_message',
      'reaction',
      'reaction',
      'update_message_flags',
    ]);
    expect(seen[4]).toMatchObject({
      op: 'add',
      message_id: sent.id,
      emoji_name: 'octopus',
      user_id: user.id,
    });
    expect(seen[5]).toMatchObject({ op: 'remove', emoji_name: 'octopus' });
    expect(seen[6]).toMatchObject({ op: 'add', flag: 'starred', messages: [sent.id] });
    expect(seen[0]).toMatchObject({ message: { id: sent.id, display_recipient: channel } });
    expect(seen[1]).toMatchObject({ message: { id: dm.id, type: 'private' } });
    expect(seen[2]).toMatchObject({
      message_id: sent.id,
      content: 'hello again',
      rendered_content: '<p>hello again</p>',
    });
    // zulip-js registers without bulk_message_deletion: one message_id per event.
    expect(seen[3]).toMatchObject({ message_id: dm.id, message_type: 'private' });
  }, 40_000);

  it('receives events through callOnEachEvent', async () => {
    const realm = await getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
    const user = await createTestUser(realm, Role.MEMBER, {
      email: `${uniqueSubdomain('cb')}@example.com`,
    });
    const { lines, waitFor } = listenForEvents(user, ['user_settings']);
    // The first heartbeat shows the client registered its queue and is polling.
    await waitFor((e) => e.type === 'heartbeat', 'the first heartbeat');
    const client = await zulipInit({
      username: user.deliveryEmail,
      apiKey: user.apiKey,
      realm: realmUrl,
    });
    const changed = await client.callEndpoint('/settings', 'PATCH', { enable_sounds: false });
    expect(changed.result).toBe('success');
    await waitFor((e) => e.type === 'user_settings', 'the user_settings event');
    expect(lines.find((e) => e.type === 'user_settings')).toMatchObject({
      type: 'user_settings',
      op: 'update',
      property: 'enable_sounds',
      value: false,
    });
    const ids = lines.map((e) => e.id as number);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  }, 40_000);
  it('runs a poll: the widget comes with the message, votes through callEndpoint as events', async () => {
    const realm = await getPrisma().realm.findUniqueOrThrow({ where: { stringId: '' } });
    const user = await createTestUser(realm, Role.MEMBER, {
      email: `${uniqueSubdomain('poll')}@example.com`,
    });
    const { lines, waitFor } = listenForEvents(user, ['message', 'submessage']);
    await waitFor((e) => e.type === 'heartbeat', 'the first heartbeat');
    const client = await zulipInit({
      username: user.deliveryEmail,
      apiKey: user.apiKey,
      realm: realmUrl,
    });
    const sent = await client.messages.send({
      type: 'private',
      to: user.deliveryEmail,
      content: '/poll Coffee?\nYes\nNo',
    });
    expect(sent.result).toBe('success');
    const vote = JSON.stringify({ type: 'vote', key: 'canned,0', vote: 1 });
    expect(
      await client.callEndpoint('/submessage', 'POST', {
        message_id: sent.id,
        msg_type: 'widget',
        content: vote,
      }),
    ).toMatchObject({ result: 'success' });
    await waitFor((e) => e.type === 'submessage', 'the submessage event');
    const message = lines.find((e) => e.type === 'message')!.message as {
      id: number;
      submessages: { msg_type: string; content: string }[];
    };
    expect(message.id).toBe(sent.id);
    expect(message.submessages.map((s) => [s.msg_type, JSON.parse(s.content) as unknown])).toEqual([
      [
        'widget',
        { widget_type: 'poll', extra_data: { question: 'Coffee?', options: ['Yes', 'No'] } },
      ],
    ]);
    expect(lines.find((e) => e.type === 'submessage')).toMatchObject({
      message_id: sent.id,
      sender_id: user.id,
      msg_type: 'widget',
      content: vote,
    });
  }, 40_000);
});
