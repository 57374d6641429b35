import { createHash } from 'node:crypto';
import { getPrisma, SYSTEM_GROUPS, type User } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { api, as, captureEvents, expectError, expectSuccess } from './helpers';

const prisma = () => getPrisma();
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

async function post(org: MessageOrg, user: User, topic: string, content: string, to = 'general') {
  return expectSuccess(await send(user, org.host, { type: 'stream', to, topic, content }))
    .id as number;
}

describe('PATCH /messages/{id}', () => {
  let org: MessageOrg;
  beforeEach(async () => {
    org = await createMessageOrg();
  });
  const patch = (user: User, id: number, form: Record<string, unknown>) =>
    as(user, org.host).patch(`/messages/${id}`, form);

  it('edits content, keeping history and telling every recipient with their flags', async () => {
    const id = await post(org, org.member, 'plans', 'first draft');
    const published = await captureEvents(org.realm.id, async () => {
      expect(
        expectSuccess(await patch(org.member, id, { content: 'final @**Otto Other**' })),
      ).toEqual({
        result: 'success',
        msg: '',
        detached_uploads: [],
      });
    });
    const updates = published.filter((p) => p.event.type === 'update_message');
    expect(sorted(updates.flatMap((u) => u.users))).toEqual(
      sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]),
    );
    const toOther = updates.find((u) => u.users.includes(org.other.id))!;
    expect(toOther.event).toMatchObject({
      user_id: org.member.id,
      message_id: id,
      message_ids: [id],
      rendering_only: false,
      stream_id: org.general.id,
      stream_name: 'general',
      orig_content: 'first draft',
      orig_rendered_content: '<p>first draft</p>',
      content: 'final @**Otto Other**',
      is_me_message: false,
      flags: ['mentioned'],
    });
    const message = await prisma().message.findUniqueOrThrow({ where: { id } });
    expect(message.editHistory).toEqual([
      {
        user_id: org.member.id,
        timestamp: expect.any(Number) as number,
        prev_content: 'first draft',
        prev_rendered_content: '<p>first draft</p>',
      },
    ]);
    const fetched = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`))
      .message as Record<string, unknown>;
    expect(fetched).toHaveProperty('last_edit_timestamp');
    expect(fetched).not.toHaveProperty('last_moved_timestamp');
    expect(fetched.flags).toEqual(['mentioned']);
  });

  it("moves a topic with propagate_mode, recording each message's history", async () => {
    const a = await post(org, org.member, 'old', 'a');
    const b = await post(org, org.other, 'OLD', 'b');
    const c = await post(org, org.member, 'old', 'c');
    expectSuccess(await patch(org.owner, b, { topic: 'new', propagate_mode: 'change_later' }));
    const subjects = async () =>
      (
        await prisma().message.findMany({
          where: { id: { in: [a, b, c] } },
          orderBy: { id: 'asc' },
        })
      ).map((m) => m.subject);
    expect(await subjects()).toEqual(['old', 'new', 'new']);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await patch(org.member, a, { topic: 'newer', propagate_mode: 'change_all' }));
    });
    // Only the first message was still in "old".
    expect(await subjects()).toEqual(['newer', 'new', 'new']);
    expect(published[0]!.event).toMatchObject({
      type: 'update_message',
      propagate_mode: 'change_all',
      orig_subject: 'old',
      subject: 'newer',
      message_ids: [a],
    });
    const moved = await prisma().message.findUniqueOrThrow({ where: { id: c } });
    expect(moved.editHistory).toEqual([
      {
        user_id: org.owner.id,
        timestamp: expect.any(Number) as number,
        prev_topic: 'old',
        topic: 'new',
      },
    ]);
    expect(moved.lastMovedTime).not.toBeNull();
  });

  it('resolves topics without marking the messages moved', async () => {
    const id = await post(org, org.member, 'bug', 'x');
    expectSuccess(await patch(org.other, id, { topic: '✔ bug' }));
    const message = await prisma().message.findUniqueOrThrow({ where: { id } });
    expect(message.subject).toBe('✔ bug');
    expect(message.lastMovedTime).toBeNull();
    expectError(
      await patch(org.member, await post(org, org.member, '', 'y'), { topic: '✔ general chat' }),
      'General chat cannot be marked as resolved',
    );
  });

  it('moves messages to another channel, taking them from those who cannot follow', async () => {
    const id = await post(org, org.member, 'move me', 'travelling');
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await patch(org.member, id, { stream_id: org.secret.id, propagate_mode: 'change_all' }),
      );
    });
    const message = await prisma().message.findUniqueOrThrow({ where: { id } });
    expect(message.recipientId).toBe(org.secret.recipientId);
    const holders = await prisma().userMessage.findMany({ where: { messageId: id } });
    expect(holders.map((h) => h.userId)).toEqual([org.member.id]);
    const deleted = published.find((p) => p.event.type === 'delete_message')!;
    expect(deleted.users).toEqual(sorted([org.owner.id, org.other.id, org.guest.id]));
    expect(published.find((p) => p.event.type === 'update_message')!.event).toMatchObject({
      new_stream_id: org.secret.id,
      stream_id: org.general.id,
    });
    expectError(await as(org.other, org.host).get(`/messages/${id}`), 'Invalid message(s)');
  });

  it('enforces who may edit what', async () => {
    const id = await post(org, org.member, 't', 'mine');
    expectError(
      await patch(org.admin, id, { content: 'not yours' }),
      "You don't have permission to edit this message",
    );
    expectError(await patch(org.member, id, {}), 'Nothing to change');
    expectError(await patch(org.member, id, { topic: 't' }), 'Nothing to change');
    expectError(
      await patch(org.member, id, { content: 'x', stream_id: org.secret.id }),
      'Cannot change message content while changing channel',
    );
    expectError(
      await patch(org.member, id, { content: 'x', propagate_mode: 'change_all' }),
      'Invalid propagate_mode without topic edit',
    );
    expectError(await patch(org.other, id, { stream_id: org.secret.id }), 'Invalid channel ID');
    expectError(
      await patch(org.member, id, { propagate_mode: 'change_some', topic: 'x' }),
      'Invalid propagate_mode',
    );
    const dm = expectSuccess(
      await send(org.member, org.host, { type: 'direct', to: [org.other.id], content: 'dm' }),
    ).id as number;
    expectError(await patch(org.member, dm, { topic: 'x' }), 'Direct messages cannot have topics.');
    expectError(
      await patch(org.member, dm, { stream_id: org.general.id }),
      'Direct messages cannot be moved to channels.',
    );
    expectError(await patch(org.admin, dm, { content: 'x' }), 'Invalid message(s)');
    expectSuccess(await patch(org.member, id, { content: '   ' }));
    expect((await prisma().message.findUniqueOrThrow({ where: { id } })).content).toBe('(deleted)');
    await prisma().message.update({
      where: { id },
      data: { dateSent: new Date(Date.now() - 3600_000) },
    });
    expectError(
      await patch(org.member, id, { content: 'late' }),
      'The time limit for editing this message has passed',
    );
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { allowMessageEditing: false },
    });
    expectError(
      await patch(org.member, id, { content: 'off' }),
      'Your organization has turned off message editing',
    );
  });
});

describe('limits on moving topics', () => {
  let org: MessageOrg;
  beforeEach(async () => {
    org = await createMessageOrg();
  });
  const patch = (user: User, id: number, form: Record<string, unknown>) =>
    as(user, org.host).patch(`/messages/${id}`, form);

  it('moves a whole topic only as far as the time limit reaches, and says how far', async () => {
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { moveMessagesWithinStreamLimitSeconds: 600 },
    });
    const [a, b, c] = [
      await post(org, org.member, 'old', 'a'),
      await post(org, org.other, 'old', 'b'),
      await post(org, org.member, 'old', 'c'),
    ];
    await prisma().message.update({
      where: { id: a },
      data: { dateSent: new Date(Date.now() - 7200_000) },
    });
    const refused = await patch(org.member, c, { topic: 'new', propagate_mode: 'change_all' });
    expectError(
      refused,
      'You only have permission to move the 2/3 most recent messages in this topic.',
      400,
      'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
    );
    expect(refused.body).toMatchObject({
      first_message_id_allowed_to_move: b,
      total_messages_in_topic: 3,
      total_messages_allowed_to_move: 2,
    });
    // Resolving has no time limit, and moderators have none.
    expectSuccess(await patch(org.member, c, { topic: '✔ old', propagate_mode: 'change_all' }));
    expectSuccess(await patch(org.member, c, { topic: 'old', propagate_mode: 'change_all' }));
    expectSuccess(await patch(org.member, b, { topic: 'new', propagate_mode: 'change_later' }));
    expectSuccess(await patch(org.admin, a, { topic: 'new', propagate_mode: 'change_all' }));
  });

  it("starts a topic, by moving or sending, only for the channel's can_create_topic_group", async () => {
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: SYSTEM_GROUPS.ADMINISTRATORS },
    });
    const id = await post(org, org.member, 'first', 'a');
    await post(org, org.member, 'second', 'b');
    await prisma().stream.update({
      where: { id: org.general.id },
      data: { canCreateTopicGroupId: admins.id },
    });
    const forbidden = 'You do not have permission to create new topics in this channel.';
    expectError(await patch(org.member, id, { topic: 'brand new' }), forbidden);
    expectError(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'new',
        content: 'x',
      }),
      forbidden,
    );
    // Into a topic that exists, or by someone in the group, it is allowed.
    expectSuccess(await patch(org.member, id, { topic: 'second' }));
    expectSuccess(await patch(org.admin, id, { topic: 'brand new' }));
    // A bot may when its owner may.
    const bot = expectSuccess(
      await as(org.admin, org.host).post('/bots', {
        full_name: 'Helper',
        short_name: 'helper',
        bot_type: 1,
      }),
    );
    const botUser = await prisma().user.findUniqueOrThrow({ where: { id: bot.user_id as number } });
    expectSuccess(
      await send(botUser, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'bot topic',
        content: 'hi',
      }),
    );
  });
});

describe('GET /messages/{id}/history', () => {
  it('lists snapshots oldest first with diffs, as the organization allows', async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 'topic one', 'hello world');
    const patch = (form: Record<string, unknown>) =>
      as(org.member, org.host).patch(`/messages/${id}`, form);
    expectSuccess(await patch({ content: 'hello there world' }));
    expectSuccess(await patch({ topic: 'topic two' }));
    const history = expectSuccess(await as(org.other, org.host).get(`/messages/${id}/history`))
      .message_history as Record<string, unknown>[];
    expect(history).toHaveLength(3);
    expect(history[0]).toEqual({
      topic: 'topic one',
      content: 'hello world',
      rendered_content: '<p>hello world</p>',
      timestamp: expect.any(Number) as number,
      user_id: org.member.id,
    });
    expect(history[1]).toMatchObject({
      topic: 'topic one',
      content: 'hello there world',
      prev_content: 'hello world',
      content_html_diff: '<p>hello <span class="highlight_text_inserted">there </span>world</p>',
    });
    expect(history[2]).toMatchObject({
      topic: 'topic two',
      prev_topic: 'topic one',
      content: 'hello there world',
    });
    expect(history[2]).not.toHaveProperty('prev_content');

    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { editHistoryVisibilityPolicy: 2 },
    });
    const moves = expectSuccess(await as(org.other, org.host).get(`/messages/${id}/history`))
      .message_history as Record<string, unknown>[];
    expect(moves.map((s) => s.prev_topic)).toEqual([undefined, 'topic one']);
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { editHistoryVisibilityPolicy: 3 },
    });
    expectError(
      await as(org.other, org.host).get(`/messages/${id}/history`),
      'Message edit history is disabled in this organization',
    );
    const fetched = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`)).message;
    expect(fetched).not.toHaveProperty('edit_history');
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { editHistoryVisibilityPolicy: 1 },
    });
    expectError(
      await as(org.admin, org.host).get(`/messages/99999999/history`),
      'Invalid message(s)',
    );
  });

  it('shows moves-only history of a message that was only edited as [], as Zulip does', async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 'topic', 'before');
    expectSuccess(await as(org.member, org.host).patch(`/messages/${id}`, { content: 'after' }));
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { editHistoryVisibilityPolicy: 2 },
    });
    const fetched = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`))
      .message as Record<string, unknown>;
    expect(fetched.edit_history).toEqual([]);
  });
});

describe('is_me_message', () => {
  it('is true only for "/me " and more, as Zulip\'s is_status_message', async () => {
    const org = await createMessageOrg();
    const shown = async (content: string) => {
      const id = await post(org, org.member, 'me', content);
      return (
        expectSuccess(await as(org.member, org.host).get(`/messages/${id}`)).message as Record<
          string,
          unknown
        >
      ).is_me_message;
    };
    expect(await shown('/me waves')).toBe(true);
    expect(await shown('/me')).toBe(false);
    expect(await shown('/me\nwaves')).toBe(false);
  });
});

describe('DELETE /messages/{id}', () => {
  it('lets senders and administrators delete, and tells everyone who saw the message', async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 't', 'oops');
    expectError(
      await as(org.other, org.host).delete(`/messages/${id}`),
      "You don't have permission to delete this message",
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.member, org.host).delete(`/messages/${id}`));
    });
    expect(published).toContainEqual({
      event: {
        type: 'delete_message',
        message_ids: [id],
        message_type: 'stream',
        stream_id: org.general.id,
        topic: 't',
      },
      users: sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]),
    });
    expect(await prisma().message.count({ where: { id } })).toBe(0);
    expectError(await as(org.member, org.host).delete(`/messages/${id}`), 'Invalid message(s)');
    const other = await post(org, org.other, 't', 'moderated');
    expectSuccess(await as(org.admin, org.host).delete(`/messages/${other}`));
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { messageContentDeleteLimitSeconds: 60 },
    });
    const old = await post(org, org.member, 't', 'old');
    await prisma().message.update({
      where: { id: old },
      data: { dateSent: new Date(Date.now() - 3600_000) },
    });
    expectError(
      await as(org.member, org.host).delete(`/messages/${old}`),
      'The time limit for deleting this message has passed',
    );
  });
});

describe('review findings on messages', () => {
  it('renames a whole topic of a protected channel, moving what the renamer never received too (not to another channel); the time limit binds the channel movers too', async () => {
    const org = await createMessageOrg();
    const patch = (user: User, id: number, form: Record<string, unknown>) =>
      as(user, org.host).patch(`/messages/${id}`, form);
    const channel = 'protected';
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: channel }],
        principals: [org.member.id, org.other.id],
        invite_only: true,
        history_public_to_subscribers: false,
      }),
    );
    const before = await post(org, org.member, 'old', 'before other joined', channel);
    const stream = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: channel },
    });
    // Other never received `before` (removed, as if they joined after it).
    await prisma().userMessage.deleteMany({ where: { userId: org.other.id, messageId: before } });
    const mine = await post(org, org.other, 'old', 'after', channel);
    expectSuccess(await patch(org.other, mine, { topic: 'renamed', propagate_mode: 'change_all' }));
    expect((await prisma().message.findUniqueOrThrow({ where: { id: before } })).subject).toBe(
      'renamed',
    );
    // Moved to another channel, though, only what the mover received goes along: nobody gains
    // access to messages by moving them.
    const later = await post(org, org.other, 'renamed', 'mine too', channel);
    expectSuccess(
      await patch(org.other, later, { stream_id: org.general.id, propagate_mode: 'change_all' }),
    );
    const recipientOf = async (id: number) =>
      (await prisma().message.findUniqueOrThrow({ where: { id } })).recipientId;
    expect(await recipientOf(before)).toBe(stream.recipientId);
    expect(await recipientOf(mine)).not.toBe(stream.recipientId);

    // The channel's can_move_messages_within_channel_group lets its members rename, within the
    // organization's time limit like everyone but moderators.
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { moveMessagesWithinStreamLimitSeconds: 60 },
    });
    const nobody = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: SYSTEM_GROUPS.NOBODY },
    });
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { canMoveMessagesBetweenTopicsGroupId: nobody.id },
    });
    const membersGroup = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: SYSTEM_GROUPS.MEMBERS },
    });
    await prisma().stream.update({
      where: { id: stream.id },
      data: { canMoveMessagesWithinChannelGroupId: membersGroup.id },
    });
    const old = await post(org, org.member, 'aged', 'old news', channel);
    await prisma().message.update({
      where: { id: old },
      data: { dateSent: new Date(Date.now() - 3600_000) },
    });
    expectError(
      await patch(org.other, old, { topic: 'fresh' }),
      "The time limit for editing this message's topic has passed.",
    );
    const fresh = await post(org, org.member, 'new', 'new news', channel);
    expectSuccess(await patch(org.other, fresh, { topic: 'fresher' }));
  });

  it('refuses even a content edit of a message left in a named topic of a general-chat-only channel', async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 'named', 'before the policy');
    // PATCH /streams refuses the policy while other topics exist (as Zulip does); a message
    // sent meanwhile, racing the change, is one left behind.
    await prisma().stream.update({
      where: { id: org.general.id },
      data: { topicsPolicy: 'empty_topic_only' },
    });
    expectError(
      await as(org.member, org.host).patch(`/messages/${id}`, { content: 'after' }),
      'Only the general chat topic is allowed in this channel.',
    );
    expectSuccess(
      await as(org.member, org.host).patch(`/messages/${id}`, { content: 'after', topic: '' }),
    );
  });

  it("stops access to a private channel's messages once the user leaves it", async () => {
    const org = await createMessageOrg();
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'secret' }],
        principals: [org.other.id],
      }),
    );
    const id = await post(org, org.member, 'x', 'for insiders', 'secret');
    expectSuccess(await as(org.other, org.host).get(`/messages/${id}`));
    expectSuccess(
      await as(org.other, org.host).delete('/users/me/subscriptions', {
        subscriptions: ['secret'],
      }),
    );
    expectError(await as(org.other, org.host).get(`/messages/${id}`), 'Invalid message(s)');
    expectError(
      await as(org.other, org.host).patch(`/messages/${id}`, { topic: 'y' }),
      'Invalid message(s)',
    );
  });

  it('serializes concurrent deletions and first messages to a new group', async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 't', 'once');
    const deletions = await Promise.all(
      Array.from({ length: 4 }, () => as(org.member, org.host).delete(`/messages/${id}`)),
    );
    expect(deletions.filter((res) => res.status === 200)).toHaveLength(1);
    for (const res of deletions.filter((r) => r.status !== 200))
      expectError(res, 'Invalid message(s)');
    const sends = await Promise.all(
      Array.from({ length: 4 }, () =>
        send(org.member, org.host, {
          type: 'direct',
          to: [org.other.id, org.guest.id, org.admin.id],
          content: 'hi',
        }),
      ),
    );
    expect(sends.map((res) => res.status)).toEqual([200, 200, 200, 200]);
  });

  it('keeps concurrent edits in the history, one after another', async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 't', 'v0');
    await Promise.all(
      [1, 2, 3, 4].map((n) =>
        as(org.member, org.host).patch(`/messages/${id}`, { content: `v${n}` }),
      ),
    );
    const message = await prisma().message.findUniqueOrThrow({ where: { id } });
    expect((message.editHistory as unknown[]).length).toBe(4);
  });

  it('refuses an edit made against content that changed since (prev_content_sha256)', async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 't', 'Init message');
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    const edit = (form: Record<string, unknown>) =>
      as(org.member, org.host).patch(`/messages/${id}`, form);
    expectSuccess(
      await edit({ content: 'First user edit', prev_content_sha256: sha('Init message') }),
    );
    // A second client still holding the first content loses the race, as with Zulip.
    const stale = "'prev_content_sha256' value does not match the expected value.";
    expectError(
      await edit({ content: 'Second user edit', prev_content_sha256: sha('Init message') }),
      stale,
      400,
      'EXPECTATION_MISMATCH',
    );
    // Checked for moves too; a non-hex value simply does not match.
    expectError(
      await edit({ topic: 'elsewhere', prev_content_sha256: sha('Init message') }),
      stale,
      400,
      'EXPECTATION_MISMATCH',
    );
    expectError(
      await edit({ content: 'x', prev_content_sha256: 'zz' }),
      stale,
      400,
      'EXPECTATION_MISMATCH',
    );
    const kept = await prisma().message.findUniqueOrThrow({ where: { id } });
    expect([kept.content, kept.subject]).toEqual(['First user edit', 't']);
    // Multi-byte content is hashed as UTF-8, as Zulip's sha256_hash does.
    expectSuccess(await edit({ content: 'café ☕', prev_content_sha256: sha('First user edit') }));
    const res = await edit({ topic: 'moved', prev_content_sha256: sha('café ☕') });
    expect(expectSuccess(res).ignored_parameters_unsupported).toBeUndefined();
  });

  it('moves into a public channel without taking the messages from its readers', async () => {
    const org = await createMessageOrg();
    expectSuccess(
      await as(org.admin, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'open' }],
      }),
    );
    const open = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'open' },
    });
    const id = await post(org, org.member, 'travel', 'x');
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.member, org.host).patch(`/messages/${id}`, { stream_id: open.id }),
      );
    });
    // Only the guest, who sees no channel it is not in, loses the message.
    expect(published.find((p) => p.event.type === 'delete_message')!.users).toEqual([org.guest.id]);
    const moved = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`))
      .message as Record<string, unknown>;
    expect(moved).toHaveProperty('last_moved_timestamp');
    expect(moved).not.toHaveProperty('last_edit_timestamp');
  });

  it("tells the old channel's readers of a move: the update if they still can read, else a delete", async () => {
    const org = await createMessageOrg();
    const id = await post(org, org.member, 'travel', 'x');
    // The administrator joins #general after the message: no copy, but #general shows it.
    expectSuccess(
      await as(org.admin, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'general' }],
      }),
    );
    const toSecret = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.member, org.host).patch(`/messages/${id}`, { stream_id: org.secret.id }),
      );
    });
    const audience = (published: typeof toSecret, type: string) =>
      sorted(published.filter((p) => p.event.type === type).flatMap((p) => p.users));
    expect(audience(toSecret, 'delete_message')).toEqual(
      sorted([org.owner.id, org.other.id, org.guest.id, org.admin.id]),
    );
    expect(audience(toSecret, 'update_message')).toEqual([org.member.id]);

    // Into a public channel, members whose copies go keep reading: they get the update.
    const other = await post(org, org.member, 'travel', 'y');
    expectSuccess(
      await as(org.other, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'open' }],
      }),
    );
    const open = await prisma().stream.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'open' },
    });
    const toOpen = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.member, org.host).patch(`/messages/${other}`, { stream_id: open.id }),
      );
    });
    expect(audience(toOpen, 'delete_message')).toEqual([org.guest.id]);
    expect(audience(toOpen, 'update_message')).toEqual(
      sorted([org.owner.id, org.member.id, org.other.id, org.admin.id]),
    );
    const readOnly = toOpen.find(
      (p) => p.event.type === 'update_message' && p.users.includes(org.owner.id),
    )!;
    expect(readOnly.event.flags).toEqual(['read']);
    expect(
      (
        expectSuccess(await as(org.owner, org.host).get(`/messages/${other}`)).message as {
          stream_id: number;
        }
      ).stream_id,
    ).toBe(open.id);
  });

  it('refuses text that is not valid Unicode, and oversized narrows, with a 400', async () => {
    const org = await createMessageOrg();
    // A JSON body can carry a lone surrogate, which no database text column takes.
    const lone = await api
      .post(org.host, '/messages')
      .auth(org.member.deliveryEmail, org.member.apiKey)
      .type('json')
      .send('{"type":"stream","to":"general","topic":"t","content":"bad \\ud800 text"}');
    expectError(lone, 'Invalid content: not valid Unicode text');
    expectError(
      await as(org.member, org.host).get('/messages', {
        anchor: 'newest',
        narrow: [['search', 'x'.repeat(1001)]],
      }),
      'narrow[0][1] is too long (limit: 1000 characters)',
    );
    expectError(
      await as(org.member, org.host).get('/messages', {
        anchor: 'newest',
        narrow: [{ operator: 'dm', operand: Array.from({ length: 101 }, (_, i) => i + 1) }],
      }),
      'Invalid narrow[0]',
    );
  });
});
