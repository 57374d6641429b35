import { authCache, realmUrl, startedAuthCache, stopAuthCache } from '@parley/auth';
import { bitmaskToFlags, getPrisma, Role, runAction, type Stream, type User } from '@parley/db';
import { prepareMessage, sendPreparedMessage } from '../src/actions/messages';
import { EmailVisibility } from '../src/lib/users';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, captureEvents, createTestUser, expectError, expectSuccess } from './helpers';

const prisma = () => getPrisma();
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

async function flagsOf(messageId: number): Promise<Record<number, string[]>> {
  const rows = await prisma().userMessage.findMany({ where: { messageId } });
  return Object.fromEntries(rows.map((row) => [row.userId, bitmaskToFlags(row.flags)]));
}

describe('POST /messages to a channel', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });

  /** The member sends to #general > lunch, and so follows it (auto-follow on initiation): their
   * next sends there change no topic policy and are written in one statement. */
  const followLunch = () =>
    send(org.member, org.host, { type: 'stream', to: 'general', topic: 'lunch', content: 'a' });

  // A send written in one statement would join a caller's transaction and publish before it
  // commits: inside one, a send is its own transaction, as it always was.
  it("inside a caller's transaction, a send stays a transaction of its own", async () => {
    // This send would be written in one statement.
    await followLunch();
    const prepared = await prepareMessage(
      org.realm,
      org.member,
      { kind: 'channel', to: 'general', topic: 'lunch' },
      'inside',
      { client: 'test', readBySender: true },
    );
    const published = await captureEvents(org.realm.id, async () => {
      await expect(
        runAction(
          async () => {
            await sendPreparedMessage(prepared);
            throw new Error('the caller rolls back');
          },
          { prisma: false },
        ),
      ).rejects.toThrow('the caller rolls back');
    });
    const stored = await prisma().message.findUnique({ where: { id: prepared.messageId } });
    expect(stored?.content).toBe('inside');
    const sent = published.filter((p) => p.event.type === 'message');
    expect(sent.length).toBeGreaterThan(0);
    for (const p of sent) expect((p.event.message as { id: number }).id).toBe(prepared.messageId);
  });

  // Most sends write in one statement, with events built before it from the row it will
  // insert (no RETURNING to read them from); a send that changes a topic policy runs in a
  // transaction and builds them from the inserted row. Both must give what a fetch gives.
  it.each([
    ['one statement', 'lunch'],
    ['a transaction', `policy ${Date.now()}`],
  ])('its events carry the message as stored (%s)', async (_how, topic) => {
    await followLunch();
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic,
          content: 'see https://example.com and **this**',
        }),
      );
      id = body.id as number;
      expect('automatic_new_visibility_policy' in body).toBe(topic !== 'lunch');
    });
    const event = published.find(
      (p) => p.event.type === 'message' && p.users.includes(org.other.id),
    )!.event;
    // GET /messages/{id} leaves gravatars to the client, as Zulip's does; the events tier
    // does so per queue.
    const fetched = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`))
      .message as Record<string, unknown>;
    const { flags: _flags, avatar_url: fetchedAvatar, ...stored } = fetched;
    const { avatar_url: sentAvatar, ...sent } = event.message as Record<string, unknown>;
    expect(sent).toEqual(stored);
    expect(fetchedAvatar).toBeNull();
    expect(sentAvatar).toMatch(/^https:\/\/secure\.gravatar\.com\//);
    const row = await prisma().message.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ hasLink: true, hasImage: false, hasAttachment: false });
    expect((event.message as { timestamp: number }).timestamp).toBe(
      Math.floor(row.dateSent.getTime() / 1000),
    );
  });

  // The group's members and who may mention it are read with its name (rendering.ts): members
  // directly or through subgroups; a silent mention flags nobody.
  it('flags the members of a mentioned group, through its subgroups', async () => {
    const createGroup = async (name: string, members: number[]) =>
      (
        expectSuccess(
          await as(org.admin, org.host).post('/user_groups/create', {
            name,
            description: 'mentioned',
            members: JSON.stringify(members),
          }),
        ) as { group_id: number }
      ).group_id;
    const inner = await createGroup(`inner ${Date.now()}`, [org.guest.id]);
    const outerName = `outer ${Date.now()}`;
    const outer = await createGroup(outerName, [org.other.id]);
    expectSuccess(
      await as(org.admin, org.host).post(`/user_groups/${outer}/subgroups`, {
        add: JSON.stringify([inner]),
      }),
    );
    const sendNaming = async (content: string) =>
      expectSuccess(
        await send(org.member, org.host, { type: 'stream', to: 'general', topic: 'g', content }),
      ).id as number;
    expect(await flagsOf(await sendNaming(`@*${outerName}*`))).toEqual({
      [org.owner.id]: [],
      [org.member.id]: [],
      [org.other.id]: ['mentioned'],
      [org.guest.id]: ['mentioned'],
    });
    expect(await flagsOf(await sendNaming(`@_*${outerName}*`))).toEqual({
      [org.owner.id]: [],
      [org.member.id]: [],
      [org.other.id]: [],
      [org.guest.id]: [],
    });
  });

  it('stores the message for every subscriber and publishes it per recipient form', async () => {
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      const body = expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'lunch',
          content: 'Hello @**Otto Other**, <b>bold</b> **really**',
        }),
      );
      id = body.id as number;
    });
    expect(await flagsOf(id)).toEqual({
      [org.owner.id]: [],
      [org.member.id]: [],
      [org.other.id]: ['mentioned'],
      [org.guest.id]: [],
    });
    const message = await prisma().message.findUniqueOrThrow({ where: { id } });
    expect(message.renderedContent).toBe(
      `<p>Hello <span class="user-mention" data-user-id="${org.other.id}">@Otto Other</span>, &lt;b&gt;bold&lt;/b&gt; <strong>really</strong></p>`,
    );
    const events = published.filter((p) => p.event.type === 'message');
    expect(sorted(events.flatMap((e) => e.users))).toEqual(
      sorted([org.owner.id, org.member.id, org.other.id, org.guest.id]),
    );
    const toOther = events.find((e) => e.users.includes(org.other.id))!;
    expect(toOther.event.flags).toEqual(['mentioned']);
    expect(toOther.event.message).toMatchObject({
      id,
      sender_id: org.member.id,
      type: 'stream',
      stream_id: org.general.id,
      display_recipient: 'general',
      subject: 'lunch',
      content_type: 'text/html',
      sender_full_name: 'Mia Member',
      is_me_message: false,
      reactions: [],
      submessages: [],
      topic_links: [],
    });
    expect(toOther.event.internal_data).toMatchObject({ raw_content: message.content });
  });

  it('sends to a public channel nobody follows: no copies, no events, the next id', async () => {
    await createTestRealmChannel(org, 'empty');
    expectSuccess(
      await as(org.admin, org.host).delete('/users/me/subscriptions', {
        subscriptions: ['empty'],
      }),
    );
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      const first = expectSuccess(
        await send(org.member, org.host, { type: 'stream', to: 'empty', topic: 't', content: 'x' }),
      );
      const second = expectSuccess(
        await send(org.member, org.host, { type: 'stream', to: 'empty', topic: 't', content: 'y' }),
      );
      expect(second.id).toBeGreaterThan(first.id as number);
      id = second.id as number;
    });
    expect(await flagsOf(id)).toEqual({});
    expect(published.filter((p) => p.event.type === 'message')).toEqual([]);
    expect((await prisma().message.findUniqueOrThrow({ where: { id } })).content).toBe('y');
  });

  it('accepts the channel by id, as JSON, or as a one-element list', async () => {
    for (const to of [String(org.general.id), '"general"', '["general"]', `[${org.general.id}]`])
      expectSuccess(
        await send(org.member, org.host, { type: 'channel', to, topic: 't', content: 'x' }),
      );
  });

  it("marks the sender's copy read only for interactive clients or read_by_sender", async () => {
    const api = expectSuccess(
      await send(org.member, org.host, { type: 'stream', to: 'general', topic: 't', content: 'a' }),
    );
    expect((await flagsOf(api.id as number))[org.member.id]).toEqual([]);
    const web = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 't',
        content: 'b',
      }).set('User-Agent', 'ZulipMobile/27.190 (Android 9)'),
    );
    expect((await flagsOf(web.id as number))[org.member.id]).toEqual(['read']);
    const explicit = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 't',
        content: 'c',
        read_by_sender: true,
      }),
    );
    expect((await flagsOf(explicit.id as number))[org.member.id]).toEqual(['read']);
    const stored = await prisma().message.findUniqueOrThrow({ where: { id: web.id as number } });
    expect(stored.sendingClient).toBe('ZulipMobile');
  });

  it('sets wildcard flags: channel wildcards for all, topic wildcards for participants', async () => {
    const hi = expectSuccess(
      await send(org.other, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'wild',
        content: 'hi',
      }),
    );
    // Reacting makes a participant too (Zulip's participants_for_topic).
    expectSuccess(
      await as(org.guest, org.host).post(`/messages/${hi.id as number}/reactions`, {
        emoji_name: 'wave',
      }),
    );
    const all = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'wild',
        content: '@**all** hey',
      }),
    );
    expect((await flagsOf(all.id as number))[org.guest.id]).toEqual(['stream_wildcard_mentioned']);
    const topic = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'WILD',
        content: '@**topic** hey',
      }),
    );
    const flags = await flagsOf(topic.id as number);
    expect(flags[org.other.id]).toEqual(['topic_wildcard_mentioned']);
    expect(flags[org.guest.id]).toEqual(['topic_wildcard_mentioned']);
    expect(flags[org.owner.id]).toEqual([]);
    const fetched = expectSuccess(
      await as(org.other, org.host).get(`/messages/${topic.id as number}`),
    );
    expect((fetched.message as { flags: string[] }).flags).toEqual([
      'topic_wildcard_mentioned',
      'wildcard_mentioned',
    ]);
    // The sender of a topic's first message is its participant: their message is.
    const first = expectSuccess(
      await send(org.owner, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'fresh',
        content: '@**topic** anyone?',
      }),
    );
    const fresh = await flagsOf(first.id as number);
    expect(fresh[org.owner.id]).toEqual(['topic_wildcard_mentioned']);
    expect(fresh[org.other.id]).toEqual([]);
  });

  it('treats "(no topic)" and the display name as the empty topic, and truncates long topics', async () => {
    for (const topic of ['(no topic)', 'general chat', '  ']) {
      const { id } = expectSuccess(
        await send(org.member, org.host, { type: 'stream', to: 'general', topic, content: 'x' }),
      );
      expect(
        (await prisma().message.findUniqueOrThrow({ where: { id: id as number } })).subject,
      ).toBe('');
    }
    const { id } = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 't'.repeat(70),
        content: 'x',
      }),
    );
    expect(
      (await prisma().message.findUniqueOrThrow({ where: { id: id as number } })).subject,
    ).toBe(`${'t'.repeat(57)}...`);
    const long = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'x',
        content: 'y'.repeat(10050),
      }),
    );
    const stored = await prisma().message.findUniqueOrThrow({ where: { id: long.id as number } });
    expect([...stored.content]).toHaveLength(10000);
    expect(stored.content.endsWith('\n[message truncated]')).toBe(true);
  });

  it('enforces who may post where', async () => {
    const post = (user: User, to: string, topic = 't') =>
      send(user, org.host, { type: 'stream', to, topic, content: 'x' });
    // Members may post to public channels they are not in; the copy is not theirs.
    const { id } = expectSuccess(await post(org.admin, 'general'));
    expect((await flagsOf(id as number))[org.admin.id]).toBeUndefined();
    expectError(await post(org.other, 'secret'), "Not authorized to send to channel 'secret'");
    expectError(await post(org.admin, 'secret'), "Not authorized to send to channel 'secret'");
    const open = await createTestRealmChannel(org, 'guests-out');
    expectError(await post(org.guest, open.name), "Not authorized to send to channel 'guests-out'");
    const admins = await prisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:administrators' },
    });
    await prisma().stream.update({
      where: { id: open.id },
      data: { canSendMessageGroupId: admins.id },
    });
    expectError(
      await post(org.member, 'guests-out'),
      'You do not have permission to post in this channel.',
    );
    expectSuccess(await post(org.admin, 'guests-out'));
    // A bot may post where its owner may (Zulip's access_stream_for_send_message): an
    // administrator's bot here, a subscriber's bot in the private channel.
    const botOf = async (owner: User, short: string) => {
      const created = expectSuccess(
        await as(owner, org.host).post('/bots', { full_name: `Bot ${short}`, short_name: short }),
      );
      return prisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    };
    const adminBot = await botOf(org.admin, `adm${Date.now()}`);
    const memberBot = await botOf(org.member, `mem${Date.now()}`);
    expectSuccess(await post(adminBot, 'guests-out'));
    expectError(
      await post(memberBot, 'guests-out'),
      'You do not have permission to post in this channel.',
    );
    expectSuccess(await post(memberBot, 'secret'));
    expectError(await post(adminBot, 'secret'), "Not authorized to send to channel 'secret'");
    await prisma().stream.update({ where: { id: open.id }, data: { deactivated: true } });
    expectError(
      await post(org.admin, 'guests-out'),
      "Not authorized to send to channel 'guests-out'",
    );
    // The posting permission is looked at first, archived or not.
    expectError(
      await post(org.member, 'guests-out'),
      'You do not have permission to post in this channel.',
    );
  });

  it('answers bad input with clear 400s', async () => {
    const post = (form: Record<string, unknown>) => send(org.member, org.host, form);
    expectError(
      await post({ to: 'general', topic: 't', content: 'x' }),
      "Missing 'type' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await post({ type: 'email', to: 'general', topic: 't', content: 'x' }),
      'Invalid type',
    );
    expectError(
      await post({ type: 'stream', to: 'general', topic: 't' }),
      "Missing 'content' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await post({ type: 'stream', to: 'general', topic: 't', content: ' \n ' }),
      'Message must not be empty',
    );
    expectError(await post({ type: 'stream', to: 'general', content: 'x' }), 'Missing topic');
    expectError(await post({ type: 'stream', topic: 't', content: 'x' }), 'Missing channel');
    // Zulip's check_stream_name on a name sent empty.
    expectError(
      await post({ type: 'stream', to: '  ', topic: 't', content: 'x' }),
      "Channel name can't be empty.",
    );
    expectError(
      await post({ type: 'stream', to: 'general', topic: 'a\u0007', content: 'x' }),
      'Invalid character in topic, at position 2!',
    );
    expectError(
      await post({ type: 'stream', to: 'general', topic: 't', subject: 's', content: 'x' }),
      "Can't decide between 'topic' and 'subject' arguments",
      400,
      'REQUEST_CONFUSING_VAR',
    );
    expectError(
      await post({ type: 'stream', to: '["a","b"]', topic: 't', content: 'x' }),
      'Expected exactly one channel',
    );
    expectError(
      await post({ type: 'stream', to: '{"a":1}', topic: 't', content: 'x' }),
      'Invalid data type for channel',
    );
    const missing = await post({ type: 'stream', to: 'nowhere', topic: 't', content: 'x' });
    expectError(missing, "Channel 'nowhere' does not exist", 400, 'STREAM_DOES_NOT_EXIST');
    expect(missing.body.stream).toBe('nowhere');
    const missingId = await post({ type: 'stream', to: '99999999', topic: 't', content: 'x' });
    expectError(
      missingId,
      "Channel with ID '99999999' does not exist",
      400,
      'STREAM_DOES_NOT_EXIST',
    );
    expect(missingId.body.stream_id).toBe(99999999);
    expectError(
      await post({ type: 'stream', to: '1e99', topic: 't', content: 'x' }),
      "Channel with ID '1e+99' does not exist",
      400,
      'STREAM_DOES_NOT_EXIST',
    );
    expectError(
      await post({ type: 'stream', to: 'general', topic: 't', content: 'x\u0000' }),
      'Invalid content: null bytes are not allowed',
    );
    expectError(
      await post({
        type: 'stream',
        to: 'general',
        topic: 't',
        content: 'x',
        read_by_sender: 'yes',
      }),
      'read_by_sender is not a boolean',
    );
  });
});

async function createTestRealmChannel(org: MessageOrg, name: string): Promise<Stream> {
  expectSuccess(
    await as(org.admin, org.host).post('/users/me/subscriptions', { subscriptions: [{ name }] }),
  );
  return prisma().stream.findFirstOrThrow({ where: { realmId: org.realm.id, name } });
}

describe('POST /messages as a direct message', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });

  it('sends 1:1 messages by id or email, both directions sharing a recipient id', async () => {
    const first = expectSuccess(
      await send(org.member, org.host, { type: 'direct', to: [org.other.id], content: 'psst' }),
    );
    const reply = expectSuccess(
      await send(org.other, org.host, {
        type: 'private',
        to: org.member.deliveryEmail,
        content: 'yes?',
      }),
    );
    expect(await flagsOf(first.id as number)).toEqual({
      [org.member.id]: ['is_private'],
      [org.other.id]: ['is_private'],
    });
    const seen = async (user: User, id: number) =>
      expectSuccess(await as(user, org.host).get(`/messages/${id}`)).message as Record<
        string,
        unknown
      >;
    const a = await seen(org.member, first.id as number);
    const b = await seen(org.member, reply.id as number);
    expect(a).toMatchObject({ type: 'private', subject: '', flags: [] });
    expect(a).not.toHaveProperty('stream_id');
    expect(a.recipient_id).toBe(b.recipient_id);
    // The two users in the order of their addresses (Zulip's hydrate_recipient_info).
    const shown = a.display_recipient as { id: number; email: string }[];
    expect(shown.map((u) => u.id).sort((x, y) => x - y)).toEqual(
      sorted([org.member.id, org.other.id]),
    );
    expect(shown.map((u) => u.email)).toEqual(shown.map((u) => u.email).sort());
  });

  it('creates a group conversation once and reuses it', async () => {
    const to = [org.other.id, org.guest.id];
    const one = expectSuccess(
      await send(org.member, org.host, { type: 'direct', to, content: 'group' }),
    );
    const two = expectSuccess(
      await send(org.guest, org.host, {
        type: 'direct',
        to: [org.member.id, org.other.id],
        content: 'again',
      }),
    );
    const [m1, m2] = await Promise.all(
      [one.id, two.id].map((id) =>
        prisma().message.findUniqueOrThrow({ where: { id: id as number } }),
      ),
    );
    expect(m1!.recipientId).toBe(m2!.recipientId);
    expect(
      Object.keys(await flagsOf(one.id as number))
        .map(Number)
        .sort((x, y) => x - y),
    ).toEqual(sorted([org.member.id, org.other.id, org.guest.id]));
  });

  it('lets a user write to themself', async () => {
    const { id } = expectSuccess(
      await send(org.member, org.host, { type: 'direct', to: [org.member.id], content: 'note' }),
    );
    expect(Object.keys(await flagsOf(id as number))).toEqual([String(org.member.id)]);
  });

  it("answers bad recipients with Zulip's messages", async () => {
    const dm = (to: unknown) => send(org.member, org.host, { type: 'direct', to, content: 'x' });
    expectError(await dm([99999999]), 'Invalid user ID 99999999');
    expectError(await dm(['nobody@nowhere.test']), "Invalid email 'nobody@nowhere.test'");
    expectError(
      await dm([org.other.id, org.guest.deliveryEmail]),
      'Recipient lists may contain emails or user IDs, but not both.',
    );
    expectError(await dm([]), 'Message must have recipients');
    expectError(await dm({ a: 1 }), 'Invalid data type for recipients');
    expectError(
      await send(org.member, org.host, { type: 'direct', content: 'x' }),
      'Message must have recipients',
    );
    const gone = await createTestUser(org.realm, Role.MEMBER);
    await prisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    expectError(await dm([gone.id]), `'${gone.deliveryEmail}' is no longer using Zulip.`);
  });

  // Zulip's access_user_by_email: a real address in any case when the sender may see it, the
  // dummy address of anyone; an address the sender may not see is unknown.
  it('finds recipients by email address, real or dummy', async () => {
    const hidden = await createTestUser(org.realm, Role.MEMBER);
    await prisma().user.update({
      where: { id: hidden.id },
      data: { emailAddressVisibility: EmailVisibility.ADMINS },
    });
    const dm = (from: User, to: string[]) =>
      send(from, org.host, { type: 'direct', to, content: 'by address' });
    const recipientsOf = async (answer: Record<string, unknown>) =>
      Object.keys(await flagsOf(answer.id as number))
        .map(Number)
        .sort((x, y) => x - y);
    const dummy = `user${hidden.id}@${org.realm.stringId}.localhost`;
    expect(
      await recipientsOf(
        expectSuccess(await dm(org.member, [org.other.deliveryEmail.toUpperCase(), dummy])),
      ),
    ).toEqual(sorted([org.member.id, org.other.id, hidden.id]));
    expectError(
      await dm(org.member, [hidden.deliveryEmail]),
      `Invalid email '${hidden.deliveryEmail}'`,
    );
    expectError(
      await dm(org.member, [org.other.deliveryEmail, 'nobody@nowhere.test']),
      "Invalid email 'nobody@nowhere.test'",
    );
    // An administrator sees it; and the hidden user addresses themself.
    expect(await recipientsOf(expectSuccess(await dm(org.admin, [hidden.deliveryEmail])))).toEqual(
      sorted([org.admin.id, hidden.id]),
    );
    expect(await recipientsOf(expectSuccess(await dm(hidden, [hidden.deliveryEmail])))).toEqual([
      hidden.id,
    ]);
    // Another organization's user is nobody here, by id or either address, even while this
    // process holds them for their own requests.
    const elsewhere = await createMessageOrg();
    expectSuccess(await as(elsewhere.other, elsewhere.host).get('/users/me'));
    expect(authCache().peekUserById(elsewhere.realm.id, elsewhere.other.id)).not.toBeNull();
    for (const address of [
      elsewhere.other.deliveryEmail,
      `user${elsewhere.other.id}@${org.realm.stringId}.localhost`,
    ])
      expectError(await dm(org.member, [address]), `Invalid email '${address}'`);
    expectError(
      await send(org.member, org.host, { type: 'direct', to: [elsewhere.other.id], content: 'x' }),
      `Invalid user ID ${elsewhere.other.id}`,
    );
  });

  // The worker delivers scheduled messages and authenticates nobody: it reads every recipient
  // and opens no notification connection for a cache it would never fill.
  it('reads the recipients, and starts no authentication cache, where nobody authenticated', async () => {
    await stopAuthCache();
    const prepared = await prepareMessage(
      org.realm,
      org.member,
      { kind: 'direct', to: JSON.stringify([org.other.id]) },
      'scheduled',
      { client: 'test', readBySender: true },
    );
    expect(startedAuthCache()).toBeUndefined();
    expect(prepared.addressee).toMatchObject({ kind: 'direct', users: [{ id: org.other.id }] });
  });

  // Recipients who authenticated here lately come from the authentication cache, which a
  // change to their row reaches at its commit.
  it('sees a change to a recipient held in memory', async () => {
    const recipient = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(await as(recipient, org.host).get('/users/me'));
    expect(authCache().peekUserById(org.realm.id, recipient.id)).not.toBeNull();
    const dm = (to: unknown[]) => send(org.member, org.host, { type: 'direct', to, content: 'x' });
    expectSuccess(await dm([recipient.id]));
    await prisma().user.update({ where: { id: recipient.id }, data: { isActive: false } });
    const gone = `'${recipient.deliveryEmail}' is no longer using Zulip.`;
    expectError(await dm([recipient.id]), gone);
    expectError(await dm([recipient.deliveryEmail]), gone);
  });
});

describe("the sender's translate_emoticons", () => {
  it('turns emoticons into emoji in the messages of users who asked for it, as Zulip renders', async () => {
    const org = await createMessageOrg();
    expectSuccess(await as(org.member, org.host).patch('/settings', { translate_emoticons: true }));
    const contentOf = async (user: User) => {
      const { id } = expectSuccess(
        await send(user, org.host, { type: 'stream', to: 'general', topic: 't', content: 'hi :)' }),
      ) as { id: number };
      return (await prisma().message.findUniqueOrThrow({ where: { id } })).renderedContent;
    };
    expect(await contentOf(org.member)).toMatch(/^<p>hi <span aria-label="[^"]+" class="emoji/);
    expect(await contentOf(org.other)).toBe('<p>hi :)</p>');
    expect(
      expectSuccess(await as(org.member, org.host).post('/messages/render', { content: ':)' }))
        .rendered,
    ).toMatch(/class="emoji/);
  });
});

describe("the organization's rendering settings", () => {
  it('applies default_code_block_language, inline_image_preview and relative local links', async () => {
    const org = await createMessageOrg();
    const url = realmUrl(org.realm);
    const content = `\`\`\`\nx = 1\n\`\`\`\n[here](${url}/#narrow/channel/1-x) https://example.com/a.png`;
    const rendered = async () => {
      const { id } = expectSuccess(
        await send(org.member, org.host, { type: 'stream', to: 'general', topic: 't', content }),
      ) as { id: number };
      return (await prisma().message.findUniqueOrThrow({ where: { id } })).renderedContent;
    };
    const before = await rendered();
    expect(before).toContain('<div class="codehilite"><pre>');
    expect(before).toContain('<a href="#narrow/channel/1-x">here</a>');
    expect(before).toContain('message_inline_image');
    expectSuccess(
      await as(org.admin, org.host).patch('/realm', {
        default_code_block_language: 'python',
        inline_image_preview: false,
      }),
    );
    const after = await rendered();
    expect(after).toContain('<div class="codehilite" data-code-language="Python">');
    expect(after).not.toContain('message_inline_image');
    // The preview of a message rendered without sending follows the same settings.
    expect(
      expectSuccess(await as(org.member, org.host).post('/messages/render', { content })).rendered,
    ).toBe(after);
  });
});

describe('POST /messages/render and GET /messages/{id}', () => {
  it('renders without storing, and fetches one message as its viewer may see it', async () => {
    const org = await createMessageOrg();
    const link = expectSuccess(
      await as(org.member, org.host).post('/messages/render', {
        content: '#**general** #**secret**',
      }),
    ).rendered;
    // Private channels are never linked: the link would reveal their id.
    expect(link).toBe(
      `<p><a class="stream" data-stream-id="${org.general.id}" href="/#narrow/channel/${org.general.id}-general">#general</a> #<strong>secret</strong></p>`,
    );
    const before = await prisma().message.count({ where: { realmId: org.realm.id } });
    expect(
      expectSuccess(
        await as(org.member, org.host).post('/messages/render', { content: '**hi** <i>' }),
      ).rendered,
    ).toBe('<p><strong>hi</strong> &lt;i&gt;</p>');
    expect(await prisma().message.count({ where: { realmId: org.realm.id } })).toBe(before);

    const { id } = expectSuccess(
      await send(org.member, org.host, { type: 'stream', to: 'secret', topic: '', content: '*x*' }),
    );
    const get = (user: User, query: Record<string, unknown> = {}) =>
      as(user, org.host).get(`/messages/${id as number}`, query);
    const body = expectSuccess(await get(org.member, { apply_markdown: false }));
    expect(body.raw_content).toBe('*x*');
    expect(body.message).toMatchObject({
      content: '*x*',
      content_type: 'text/x-markdown',
      subject: 'general chat',
    });
    expect(
      (
        expectSuccess(await get(org.member, { allow_empty_topic_name: true })).message as {
          subject: string;
        }
      ).subject,
    ).toBe('');
    expectError(await get(org.other), 'Invalid message(s)');
    expectError(await get(org.admin), 'Invalid message(s)');
    expectError(await as(org.member, org.host).get('/messages/99999999'), 'Invalid message(s)');
    // Another organization's owner, on their own host, asking for this message by id.
    const elsewhere = await createMessageOrg();
    expectError(
      await as(elsewhere.owner, elsewhere.host).get(`/messages/${id as number}`),
      'Invalid message(s)',
    );
    expectError(
      await as(org.member, org.host).get('/messages/abc'),
      'message_id is not an integer',
    );

    // A public channel's history is readable by members who were not subscribed.
    const pub = expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'p',
        content: 'public',
      }),
    );
    const late = await createTestUser(org.realm, Role.MEMBER);
    const seen = expectSuccess(await as(late, org.host).get(`/messages/${pub.id as number}`));
    expect((seen.message as { flags: string[] }).flags).toEqual(['read', 'historical']);
    const lateGuest = await createTestUser(org.realm, Role.GUEST);
    expectError(
      await as(lateGuest, org.host).get(`/messages/${pub.id as number}`),
      'Invalid message(s)',
    );
  });
});

describe('what a message names', () => {
  // One statement reads the users, groups and channels the content names (lib/rendering.ts):
  // each kind keeps its own rules.
  it('renders only active users, named active groups and public channels of the organization', async () => {
    const org = await createMessageOrg();
    const render = async (content: string) =>
      expectSuccess(await as(org.member, org.host).post('/messages/render', { content }))
        .rendered as string;
    const mention = (user: User) =>
      `<span class="user-mention" data-user-id="${user.id}">@${user.fullName}</span>`;

    // By name in any case, or by id with its name.
    expect(await render('@**otto OTHER** @**Otto Other|' + org.other.id + '**')).toBe(
      `<p>${mention(org.other)} ${mention(org.other)}</p>`,
    );
    // An id with another user's name, and a user of another organization, are not mentions.
    const elsewhere = await createMessageOrg();
    expect(await render(`@**Ada Admin|${org.other.id}**`)).not.toContain('user-mention');
    expect(await render(`@**${elsewhere.other.fullName}|${elsewhere.other.id}**`)).not.toContain(
      'user-mention',
    );
    // A deactivated user is not mentioned.
    const leaving = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Lea Leaving' });
    expect(await render('@**Lea Leaving**')).toContain(mention(leaving));
    expectSuccess(await as(org.owner, org.host).delete(`/users/${leaving.id}`));
    expect(await render('@**Lea Leaving**')).not.toContain('user-mention');

    // Named groups. A system group shows its display name; a deactivated one renders silently
    // (Zulip's get_user_group_mention_display_name and UserGroupMentionPattern).
    const { group_id: groupId } = expectSuccess(
      await as(org.admin, org.host).post('/user_groups/create', {
        name: 'Night Owls',
        description: 'late',
        members: JSON.stringify([org.other.id]),
      }),
    ) as { group_id: number };
    const groupMention = `<span class="user-group-mention" data-user-group-id="${groupId}">@Night Owls</span>`;
    expect(await render('@*night owls*')).toBe(`<p>${groupMention}</p>`);
    const members = await getPrisma().userGroup.findFirstOrThrow({
      where: { realmId: org.realm.id, name: 'role:members' },
    });
    expect(await render('@*role:members* @_*Role:Members*')).toBe(
      `<p><span class="user-group-mention" data-user-group-id="${members.id}">@Members</span> ` +
        `<span class="user-group-mention silent" data-user-group-id="${members.id}">Members</span></p>`,
    );
    // Nobody may notify a system group; a silent mention is fine.
    expectError(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'groups',
        content: '@*role:members*',
      }),
      "You are not allowed to mention user group 'role:members'.",
    );
    expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 'groups',
        content: '@_*role:members*',
      }),
    );
    expectSuccess(await as(org.admin, org.host).post(`/user_groups/${groupId}/deactivate`));
    expect(await render('@*Night Owls*')).toBe(
      `<p><span class="user-group-mention silent" data-user-group-id="${groupId}">Night Owls</span></p>`,
    );

    // Channels: public ones of this organization only (private ones would reveal their id).
    expect(await render('#**GENERAL** #**secret**')).toBe(
      `<p><a class="stream" data-stream-id="${org.general.id}" href="/#narrow/channel/${org.general.id}-general">#general</a> #<strong>secret</strong></p>`,
    );
    expectSuccess(
      await as(elsewhere.member, elsewhere.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'elsewhere only' }],
      }),
    );
    expect(await render('#**elsewhere only**')).not.toContain('class="stream"');
  });
});

describe('wildcard mentions in large channels', () => {
  it('lets only administrators notify more than 15 subscribers with @**all**', async () => {
    const org = await createMessageOrg();
    const crowd = [];
    for (let i = 0; i < 14; i++) crowd.push(await createTestUser(org.realm, Role.MEMBER));
    expectSuccess(
      await as(org.member, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: 'crowd' }],
        principals: [org.member.id, org.admin.id, ...crowd.map((u) => u.id)],
      }),
    );
    const post = (user: User, content: string) =>
      send(user, org.host, { type: 'stream', to: 'crowd', topic: 't', content });
    expectError(
      await post(org.member, 'hey @**all**'),
      'You do not have permission to use channel wildcard mentions in this channel.',
      400,
      'STREAM_WILDCARD_MENTION_NOT_ALLOWED',
    );
    expectSuccess(await post(org.admin, 'hey @**all**'));
    // An edit that adds the wildcard is held to the same rule (Zulip's check_update_message).
    const plain = expectSuccess(await post(org.member, 'hey')).id as number;
    expectError(
      await as(org.member, org.host).patch(`/messages/${plain}`, { content: 'hey @**all**' }),
      'You do not have permission to use channel wildcard mentions in this channel.',
      400,
      'STREAM_WILDCARD_MENTION_NOT_ALLOWED',
    );
    expectSuccess(
      await as(org.member, org.host).patch(`/messages/${plain}`, { content: 'hey @_**all**' }),
    );
    // Silent wildcards and small channels are fine.
    expectSuccess(await post(org.member, 'hey @_**all**'));
    expectSuccess(
      await send(org.member, org.host, {
        type: 'stream',
        to: 'general',
        topic: 't',
        content: '@**all**',
      }),
    );
  });
});
