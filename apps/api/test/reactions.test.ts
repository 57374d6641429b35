import { getPrisma, Role, type User } from '@parley/db';
import { dummyEmail, EmailVisibility } from '../src/lib/users';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

describe('message reactions', () => {
  let org: MessageOrg;
  let id: number;
  let secretId: number;
  beforeAll(async () => {
    org = await createMessageOrg();
    id = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'r',
        content: 'react',
      }),
    ).id as number;
    secretId = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'secret',
        topic: 'r',
        content: 'hidden',
      }),
    ).id as number;
  });
  const react = (user: User, form: Record<string, unknown>, messageId = id) =>
    as(user, org.host).post(`/messages/${messageId}/reactions`, form);
  const unreact = (user: User, form: Record<string, unknown>, messageId = id) =>
    as(user, org.host).delete(`/messages/${messageId}/reactions`, form);

  it('adds a reaction, tells everyone who sees the message, and lists reactions oldest first', async () => {
    // The deprecated user object's email is Zulip's UserProfile.email: the dummy address unless
    // the user shows theirs to everyone.
    await getPrisma().user.update({
      where: { id: org.other.id },
      data: { emailAddressVisibility: EmailVisibility.ADMINS },
    });
    const publicEmail = dummyEmail(org.other, org.realm);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await react(org.other, { emoji_name: 'smile' }));
    });
    expect(published).toEqual([
      {
        event: {
          type: 'reaction',
          op: 'add',
          message_id: id,
          emoji_name: 'smile',
          emoji_code: '1f642',
          reaction_type: 'unicode_emoji',
          user_id: org.other.id,
          user: { user_id: org.other.id, email: publicEmail, full_name: 'Otto Other' },
        },
        users: sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]),
      },
    ]);
    expectSuccess(
      await react(org.member, {
        emoji_name: 'robot',
        emoji_code: '1f916',
        reaction_type: 'unicode_emoji',
      }),
    );
    const message = expectSuccess(await as(org.guest, org.host).get(`/messages/${id}`)).message as {
      reactions: unknown[];
    };
    expect(message.reactions).toEqual([
      {
        emoji_name: 'smile',
        emoji_code: '1f642',
        reaction_type: 'unicode_emoji',
        user_id: org.other.id,
      },
      {
        emoji_name: 'robot',
        emoji_code: '1f916',
        reaction_type: 'unicode_emoji',
        user_id: org.member.id,
      },
    ]);
    const withReactions = expectSuccess(
      await as(org.member, org.host).get('/messages', {
        anchor: 'newest',
        num_before: 10,
        narrow: [['has', 'reaction']],
      }),
    ).messages as { id: number }[];
    expect(withReactions.map((m) => m.id)).toEqual([id]);
  });

  it('refuses duplicates and removing what is not there', async () => {
    expectError(
      await react(org.other, { emoji_name: 'smile' }),
      'Reaction already exists.',
      400,
      'REACTION_ALREADY_EXISTS',
    );
    expectSuccess(await unreact(org.other, { emoji_name: 'smile' }));
    expectError(
      await unreact(org.other, { emoji_name: 'smile' }),
      "Reaction doesn't exist.",
      400,
      'REACTION_DOES_NOT_EXIST',
    );
    expectSuccess(
      await react(org.other, { emoji_name: 'zulip', reaction_type: 'zulip_extra_emoji' }),
    );
    expectSuccess(
      await unreact(org.other, { emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' }),
    );
  });

  it('validates the emoji and the message', async () => {
    expectError(
      await react(org.other, { emoji_name: 'no_such_emoji' }),
      "Emoji 'no_such_emoji' does not exist",
    );
    expectError(
      await react(org.other, { emoji_name: 'smile', emoji_code: 'zzzz' }),
      'Invalid emoji code.',
    );
    expectError(
      await react(org.other, { emoji_name: 'smile', emoji_code: '1f600' }),
      'Invalid emoji name.',
    );
    // Beside someone's 1f916 (robot) reaction it is a vote for theirs, under its name.
    expectSuccess(await react(org.other, { emoji_name: 'smile', emoji_code: '1f916' }));
    expectError(
      await react(org.other, {
        emoji_name: 'party',
        reaction_type: 'realm_emoji',
        emoji_code: '1',
      }),
      'Invalid custom emoji.',
    );
    expectError(
      await react(org.other, { emoji_name: 'smile', reaction_type: 'other' }),
      'Invalid emoji type.',
    );
    expectError(
      await react(org.other, {}),
      "Missing 'emoji_name' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await unreact(org.other, {}),
      'At least one of the following arguments must be present: emoji_name, emoji_code',
    );
    expectError(await react(org.other, { emoji_name: 'smile' }, secretId), 'Invalid message(s)');
    expectError(await react(org.admin, { emoji_name: 'smile' }, 99999999), 'Invalid message(s)');
    const late = await createTestUser(org.realm, Role.GUEST);
    expectError(await react(late, { emoji_name: 'smile' }), 'Invalid message(s)');
  });

  it('knows every Zulip emoji name, aliases too, and keeps the name as sent', async () => {
    const post = async () =>
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'r',
          content: 'x',
        }),
      ).id as number;
    const reactionsOf = async (messageId: number) =>
      (
        expectSuccess(await as(org.member, org.host).get(`/messages/${messageId}`)).message as {
          reactions: { emoji_name: string; emoji_code: string; user_id: number }[];
        }
      ).reactions.map(({ emoji_name, emoji_code, user_id }) => ({
        emoji_name,
        emoji_code,
        user_id,
      }));

    const first = await post();
    expectSuccess(await react(org.member, { emoji_name: '+1' }, first));
    expect(await reactionsOf(first)).toEqual([
      { emoji_name: '+1', emoji_code: '1f44d', user_id: org.member.id },
    ]);

    const second = await post();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await react(org.member, { emoji_name: 'thumbs_up' }, second));
    });
    expect(published[0]!.event).toMatchObject({ emoji_name: 'thumbs_up', emoji_code: '1f44d' });
    expectSuccess(await react(org.member, { emoji_name: 'grinning', emoji_code: '1f600' }, second));
    // Joining someone's reaction under another name of the same emoji is a vote for it: it
    // takes the earlier reaction's name.
    expectSuccess(await react(org.other, { emoji_name: '+1' }, second));
    expect(await reactionsOf(second)).toEqual([
      { emoji_name: 'thumbs_up', emoji_code: '1f44d', user_id: org.member.id },
      { emoji_name: 'grinning', emoji_code: '1f600', user_id: org.member.id },
      { emoji_name: 'thumbs_up', emoji_code: '1f44d', user_id: org.other.id },
    ]);
    expectError(
      await react(org.member, { emoji_name: 'like' }, second),
      'Reaction already exists.',
      400,
      'REACTION_ALREADY_EXISTS',
    );
  });

  it("checks names and codes against Zulip's emoji table", async () => {
    expectError(
      await react(org.other, { emoji_name: 'grinning', emoji_code: '1f601' }),
      'Invalid emoji name.',
    );
    expectError(
      await react(org.other, { emoji_name: '+1', emoji_code: 'zzzz' }),
      'Invalid emoji code.',
    );
    // Zulip's codes have no U+FE0F.
    expectError(
      await react(org.other, { emoji_name: 'heart', emoji_code: '2764-fe0f' }),
      'Invalid emoji code.',
    );
    expectError(
      await react(org.other, { emoji_name: 'nope_not_emoji' }),
      "Emoji 'nope_not_emoji' does not exist",
    );
    // Without a reaction_type, the name is looked up even beside a code.
    expectError(
      await react(org.other, { emoji_name: 'nope_not_emoji', emoji_code: '1f600' }),
      "Emoji 'nope_not_emoji' does not exist",
    );
    expectError(
      await react(org.other, {
        emoji_name: 'nope_not_emoji',
        emoji_code: '1f600',
        reaction_type: 'unicode_emoji',
      }),
      'Invalid emoji name.',
    );
    // Removing does not validate the code: there is simply no such reaction.
    expectError(
      await unreact(org.other, { emoji_code: 'zzzz' }),
      "Reaction doesn't exist.",
      400,
      'REACTION_DOES_NOT_EXIST',
    );
  });

  it('lets users vote for a reaction whose custom emoji was deactivated since, and remove it', async () => {
    const message = expectSuccess(
      await send(org.member, org.host, { type: 'stream', to: 'general', topic: 'v', content: 'v' }),
    ).id as number;
    const emoji = await getPrisma().realmEmoji.create({
      data: {
        realmId: org.realm.id,
        name: 'party_parrot',
        fileName: 'x.png',
        authorId: org.owner.id,
      },
    });
    const vote = {
      emoji_name: 'party_parrot',
      emoji_code: String(emoji.id),
      reaction_type: 'realm_emoji',
    };
    expectSuccess(await react(org.member, vote, message));
    await getPrisma().realmEmoji.update({ where: { id: emoji.id }, data: { deactivated: true } });
    // A new reaction with it is refused.
    expectError(await react(org.other, vote), 'This custom emoji has been deactivated.');
    // Joining the existing reaction is a vote, not a new use of the emoji.
    expectSuccess(await react(org.other, vote, message));
    // Removing names the emoji by code and type, unchecked; the event names it as stored.
    const removed = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await unreact(
          org.other,
          { emoji_code: String(emoji.id), reaction_type: 'realm_emoji' },
          message,
        ),
      );
    });
    expect(removed[0]!.event).toMatchObject({ op: 'remove', emoji_name: 'party_parrot' });
    // Without reaction_type, removing means a Unicode emoji (Zulip's default).
    expectError(
      await unreact(org.member, { emoji_code: String(emoji.id) }, message),
      "Reaction doesn't exist.",
      400,
      'REACTION_DOES_NOT_EXIST',
    );
  });

  it('refuses reactions in archived channels, as any change to their messages', async () => {
    const message = expectSuccess(
      await send(org.member, org.host, { type: 'stream', to: 'general', topic: 'a', content: 'a' }),
    ).id as number;
    expectSuccess(await react(org.other, { emoji_name: 'smile' }, message));
    await getPrisma().stream.update({ where: { id: org.general.id }, data: { deactivated: true } });
    try {
      expectError(await react(org.member, { emoji_name: 'smile' }, message), 'Invalid message(s)');
      expectError(await unreact(org.other, { emoji_name: 'smile' }, message), 'Invalid message(s)');
    } finally {
      await getPrisma().stream.update({
        where: { id: org.general.id },
        data: { deactivated: false },
      });
    }
  });

  it('gives a historical copy to members reacting to public history', async () => {
    const late = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await react(late, { emoji_name: 'heart' }));
    const row = await getPrisma().userMessage.findUnique({
      where: { userId_messageId: { userId: late.id, messageId: id } },
    });
    expect(row).not.toBeNull();
  });
});
