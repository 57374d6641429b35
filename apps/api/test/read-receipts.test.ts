// GET /messages/{id}/read_receipts (Zulip's read_receipts): who has read a message, with
// Zulip's exclusions (the sender, those who do not share receipts, deactivated accounts,
// muting either way) and the organization's switch.
import { Role, type User } from '@parley/db';
import { as, createTestUser, expectError, expectSuccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';

describe('GET /messages/{id}/read_receipts', () => {
  let org: MessageOrg;
  let reader: User;
  beforeAll(async () => {
    org = await createMessageOrg();
    reader = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Rita Reader' });
  });

  const receipts = async (viewer: User, messageId: number) =>
    expectSuccess(await as(viewer, org.host).get(`/messages/${messageId}/read_receipts`))
      .user_ids as number[];
  const markRead = async (user: User, messageId: number) =>
    expectSuccess(
      await as(user, org.host).post('/messages/flags', {
        messages: [messageId],
        op: 'add',
        flag: 'read',
      }),
    );
  const channelMessage = async (sender: User, content: string) =>
    expectSuccess(
      await send(sender, org.host, { type: 'stream', to: 'general', topic: 'receipts', content }),
    ).id as number;

  it('lists those who read it, never the sender', async () => {
    const id = await channelMessage(org.other, 'read me');
    expect(await receipts(org.owner, id)).toEqual([]);
    await markRead(org.member, id);
    await markRead(org.guest, id);
    expect(await receipts(org.owner, id)).toEqual(
      [org.member.id, org.guest.id].sort((a, b) => a - b),
    );
    // The sender's copy is read, but the sender is not listed; the viewer is, having read it.
    await markRead(org.owner, id);
    expect(await receipts(org.other, id)).toEqual(
      [org.owner.id, org.member.id, org.guest.id].sort((a, b) => a - b),
    );
  });

  it('leaves out those who share no receipts, deactivated accounts and muting either way', async () => {
    const id = await channelMessage(org.other, 'private reading');
    await markRead(org.member, id);
    await markRead(org.guest, id);
    await markRead(org.owner, id);
    expectSuccess(await as(org.member, org.host).patch('/settings', { send_read_receipts: false }));
    // The guest muted the viewer (listing the guest would give that away); the viewer muted the
    // owner.
    expectSuccess(await as(org.guest, org.host).post(`/users/me/muted_users/${org.admin.id}`));
    expectSuccess(await as(org.admin, org.host).post(`/users/me/muted_users/${org.owner.id}`));
    expect(await receipts(org.admin, id)).toEqual([]);
    expect(await receipts(org.other, id)).toEqual(
      [org.owner.id, org.guest.id].sort((a, b) => a - b),
    );
    expectSuccess(await as(org.owner, org.host).delete(`/users/${org.guest.id}`));
    expect(await receipts(org.other, id)).toEqual([org.owner.id]);
  });

  it('refuses messages the viewer cannot read, and all while the organization hides receipts', async () => {
    const secret = expectSuccess(
      await send(org.member, org.host, { type: 'stream', to: 'secret', topic: 't', content: 'x' }),
    ).id as number;
    for (const id of [secret, 999_999_999])
      expectError(
        await as(reader, org.host).get(`/messages/${id}/read_receipts`),
        'Invalid message(s)',
      );
    const id = await channelMessage(org.other, 'no receipts here');
    expectSuccess(await as(org.owner, org.host).patch('/realm', { enable_read_receipts: false }));
    expectError(
      await as(org.other, org.host).get(`/messages/${id}/read_receipts`),
      'Read receipts are disabled in this organization.',
    );
    expectError(
      await as(org.other, org.host).get('/messages/abc/read_receipts'),
      'message_id is not an integer',
    );
  });
});
