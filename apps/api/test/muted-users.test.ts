import { Role, type User } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import {
  as,
  captureEvents,
  createTestUser,
  expectError,
  expectSuccess,
  setGuestAccess,
} from './helpers';

describe('muted users', () => {
  let org: MessageOrg;
  let user: User;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  beforeEach(async () => {
    user = await createTestUser(org.realm, Role.MEMBER);
  });
  const mute = (id: number) => as(user, org.host).post(`/users/me/muted_users/${id}`);
  const unmute = (id: number) => as(user, org.host).delete(`/users/me/muted_users/${id}`);
  const dm = (from: User, content: string) =>
    send(from, org.host, { type: 'direct', to: [user.id], content });
  const unreadCount = async () =>
    expectSuccess(
      await as(user, org.host).post('/register', {
        fetch_event_types: ['message', 'update_message_flags', 'muted_users'],
      }),
    ).unread_msgs as { count: number };

  it('marks the muted user’s unread messages read, tells the user, and lists them', async () => {
    const before = expectSuccess(await dm(org.other, 'one')).id as number;
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await mute(org.other.id));
    });
    expect(published.map((entry) => entry.event)).toEqual([
      {
        type: 'update_message_flags',
        op: 'add',
        operation: 'add',
        flag: 'read',
        messages: [before],
        all: false,
      },
      { type: 'muted_users', muted_users: [{ id: org.other.id, timestamp: expect.any(Number) }] },
    ]);
    expect((await unreadCount()).count).toBe(0);
    // New messages from them arrive read; others' do not.
    const after = expectSuccess(await dm(org.other, 'two')).id as number;
    const fromMember = expectSuccess(await dm(org.member, 'three')).id as number;
    const flags = async (id: number) =>
      (await as(user, org.host).get(`/messages/${id}`)).body.message.flags as string[];
    expect(await flags(after)).toContain('read');
    expect(await flags(fromMember)).not.toContain('read');
    const state = expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: ['muted_users'] }),
    );
    expect(state.muted_users).toEqual([{ id: org.other.id, timestamp: expect.any(Number) }]);
    expectSuccess(await unmute(org.other.id));
    expect(
      expectSuccess(
        await as(user, org.host).post('/register', { fetch_event_types: ['muted_users'] }),
      ).muted_users,
    ).toEqual([]);
  });

  it('refuses what Zulip refuses', async () => {
    expectError(await mute(user.id), 'Cannot mute self');
    expectError(await mute(999999999), 'No such user');
    expectSuccess(await mute(org.member.id));
    expectError(await mute(org.member.id), 'User already muted');
    expectError(await unmute(org.other.id), 'User is not muted');
    expectError(await unmute(user.id), 'User is not muted');
    expectError(
      await as(user, org.host).post('/users/me/muted_users/abc'),
      'muted_user_id is not an integer',
    );
  });

  it('a guest may mute only the people they may see', async () => {
    // An organization of its own: guests limited to the people they share something with.
    const limited = await createMessageOrg();
    await setGuestAccess(limited);
    const stranger = await createTestUser(limited.realm, Role.MEMBER);
    const guestMute = (id: number) =>
      as(limited.guest, limited.host).post(`/users/me/muted_users/${id}`);
    expectError(await guestMute(stranger.id), 'Insufficient permission');
    expectError(
      await as(limited.guest, limited.host).delete(`/users/me/muted_users/${stranger.id}`),
      'Insufficient permission',
    );
    // #general is shared with this member.
    expectSuccess(await guestMute(limited.member.id));
  });
});
