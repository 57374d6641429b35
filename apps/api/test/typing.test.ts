import { getPrisma, Role } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

describe('POST /typing', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  const typing = (form: Record<string, unknown>, user = org.member) =>
    as(user, org.host).post('/typing', form);

  it('tells the direct-message participants, sender included and listed last', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await typing({ op: 'start', to: [org.other.id] }));
    });
    expect(published).toEqual([
      {
        event: {
          type: 'typing',
          op: 'start',
          message_type: 'direct',
          sender: { user_id: org.member.id, email: org.member.deliveryEmail },
          recipients: [
            { user_id: org.other.id, email: org.other.deliveryEmail },
            { user_id: org.member.id, email: org.member.deliveryEmail },
          ],
        },
        users: sorted([org.member.id, org.other.id]),
      },
    ]);
  });

  it('tells a channel topic to its subscribers, with stop as well as start', async () => {
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await typing({ type: 'channel', op: 'stop', stream_id: org.general.id, topic: ' plans ' }),
      );
    });
    expect(published).toEqual([
      {
        event: {
          type: 'typing',
          op: 'stop',
          message_type: 'stream',
          sender: { user_id: org.member.id, email: org.member.deliveryEmail },
          stream_id: org.general.id,
          topic: 'plans',
        },
        users: sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]),
      },
    ]);
  });

  it('reads "general chat" and "(no topic)" as the empty topic', async () => {
    for (const topic of ['general chat', '(no topic)']) {
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(
          await typing({ type: 'stream', op: 'start', stream_id: org.general.id, topic }),
        );
      });
      expect(published[0]!.event).toMatchObject({ topic: '' });
    }
  });

  it('leaves out users who turned typing notifications off, and deactivated users', async () => {
    const quiet = await createTestUser(org.realm, Role.MEMBER);
    await getPrisma().user.update({
      where: { id: quiet.id },
      data: { receivesTypingNotifications: false },
    });
    const gone = await createTestUser(org.realm, Role.MEMBER);
    await getPrisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await typing({ op: 'start', to: [quiet.id, gone.id, org.other.id] }));
    });
    expect(published).toHaveLength(1);
    expect(published[0]!.users).toEqual(sorted([org.member.id, org.other.id]));
    expect((published[0]!.event.recipients as { user_id: number }[]).map((r) => r.user_id)).toEqual(
      [quiet.id, gone.id, org.other.id, org.member.id],
    );
  });

  it('shows hidden addresses as dummy addresses to those who may not see them', async () => {
    const shy = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await as(shy, org.host).patch('/settings', { email_address_visibility: 4 }));
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await typing({ op: 'start', to: [org.other.id] }, shy));
    });
    const forOther = published.find((entry) => entry.users.includes(org.other.id))!;
    expect(forOther.event.sender).toEqual({
      user_id: shy.id,
      email: `user${shy.id}@${org.host.replace(/:\d+$/, '')}`,
    });
    const forShy = published.find((entry) => entry.users.includes(shy.id))!;
    expect(forShy.event.sender).toEqual({ user_id: shy.id, email: shy.deliveryEmail });
  });

  it('refuses what Zulip refuses, with its messages', async () => {
    expectError(
      await typing({ to: [org.other.id] }),
      "Missing 'op' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(await typing({ op: 'typing', to: [org.other.id] }), 'Invalid op');
    expectError(await typing({ op: 'start', type: 'private', to: [org.other.id] }), 'Invalid type');
    expectError(await typing({ op: 'start' }), "Missing 'to' argument");
    expectError(await typing({ op: 'start', to: 'null' }), "Missing 'to' argument");
    expectError(await typing({ op: 'start', to: [] }), "Empty 'to' list");
    expectError(await typing({ op: 'start', to: [999999999] }), 'Invalid user ID 999999999');
    expectError(await typing({ op: 'start', to: 'nope' }), 'to is not valid JSON');
    expectError(await typing({ op: 'start', to: [1, 'x'] }), 'to[1] is not an integer');
    expectError(
      await typing({ op: 'start', type: 'stream', topic: 'x' }),
      "Missing 'stream_id' argument",
    );
    expectError(
      await typing({ op: 'start', type: 'stream', stream_id: org.general.id }),
      'Missing topic',
    );
    expectError(
      await typing({ op: 'start', type: 'stream', stream_id: 999999, topic: 'x' }),
      'Invalid channel ID',
    );
    // A private channel the user cannot read does not reveal itself.
    expectError(
      await typing(
        { op: 'start', type: 'stream', stream_id: org.secret.id, topic: 'x' },
        org.other,
      ),
      'Invalid channel ID',
    );
  });

  it('respects the sender turning typing notifications off', async () => {
    const user = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(
      await as(user, org.host).patch('/settings', {
        send_private_typing_notifications: false,
        send_stream_typing_notifications: false,
      }),
    );
    expectError(
      await typing({ op: 'start', to: [org.other.id] }, user),
      'User has disabled typing notifications for direct messages',
    );
    expectError(
      await typing({ op: 'start', type: 'channel', stream_id: org.general.id, topic: 't' }, user),
      'User has disabled typing notifications for channel messages',
    );
  });
});

describe('POST /messages/{id}/typing', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });

  it('tells the channel who is editing which message', async () => {
    const id = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'draft',
        content: 'x',
      }),
    ).id as number;
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.member, org.host).post(`/messages/${id}/typing`, { op: 'start' }));
    });
    expect(published).toEqual([
      {
        event: {
          type: 'typing_edit_message',
          op: 'start',
          sender_id: org.member.id,
          message_id: id,
          recipient: { type: 'channel', channel_id: org.general.id, topic: 'draft' },
        },
        users: sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]),
      },
    ]);
  });

  it('tells the participants of a direct message, and refuses what cannot be edited', async () => {
    const id = expectSuccess(
      await send(org.member, org.host, { type: 'direct', to: [org.other.id], content: 'x' }),
    ).id as number;
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.member, org.host).post(`/messages/${id}/typing`, { op: 'stop' }));
    });
    expect(published[0]!.event).toMatchObject({
      type: 'typing_edit_message',
      recipient: { type: 'direct', user_ids: sorted([org.member.id, org.other.id]) },
    });
    expectError(
      await as(org.other, org.host).post(`/messages/${id}/typing`, { op: 'start' }),
      "You don't have permission to edit this message",
    );
    expectError(
      await as(org.guest, org.host).post(`/messages/${id}/typing`, { op: 'start' }),
      'Invalid message(s)',
    );
    expectError(
      await as(org.member, org.host).post(`/messages/${id}/typing`, { op: 'go' }),
      'Invalid op',
    );
  });
});
