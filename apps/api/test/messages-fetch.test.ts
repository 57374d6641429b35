import { getPrisma, Role, type User } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { as, createChannel, createTestUser, expectError, expectSuccess } from './helpers';

interface Fetched {
  id: number;
  subject: string;
  flags: string[];
  content: string;
  match_content?: string;
  match_subject?: string;
}

/** GET /messages as `user` of `org`. */
const getMessages = (org: MessageOrg, user: User, query: Record<string, unknown>) =>
  as(user, org.host).get('/messages', query);

/** The ids of the newest (up to 100) messages `user` sees with `query`, oldest first. */
async function newestIds(org: MessageOrg, user: User, query: Record<string, unknown>) {
  const body = expectSuccess(
    await getMessages(org, user, { anchor: 'newest', num_before: 100, ...query }),
  );
  return (body.messages as Fetched[]).map((m) => m.id);
}

describe('GET /messages', () => {
  let org: MessageOrg;
  const ids: Record<string, number> = {};
  beforeAll(async () => {
    org = await createMessageOrg();
    const post = async (key: string, user: User, form: Record<string, unknown>) => {
      ids[key] = expectSuccess(await send(user, org.host, form)).id as number;
    };
    await post('g1', org.member, {
      type: 'stream',
      to: 'general',
      topic: 'Lunch',
      content: 'pizza today?',
    });
    await post('g2', org.other, {
      type: 'stream',
      to: 'general',
      topic: 'lunch',
      content: 'I want **pasta** https://example.com',
    });
    await post('g3', org.member, {
      type: 'stream',
      to: 'general',
      topic: '✔ done',
      content: '@**Otto Other** finished',
    });
    await post('s1', org.member, {
      type: 'stream',
      to: 'secret',
      topic: 'plans',
      content: 'secret pizza plans',
    });
    await post('d1', org.member, { type: 'direct', to: [org.other.id], content: 'just us' });
    await post('d2', org.other, { type: 'direct', to: [org.member.id], content: 'reply to you' });
    await post('d3', org.member, {
      type: 'direct',
      to: [org.other.id, org.guest.id],
      content: 'the three of us',
    });
  });

  const get = (user: User, query: Record<string, unknown>) => getMessages(org, user, query);
  const fetchIds = (user: User, query: Record<string, unknown>) => newestIds(org, user, query);

  it('returns the newest messages of the viewer, oldest first, with flags and found_*', async () => {
    const body = expectSuccess(
      await get(org.other, { anchor: 'newest', num_before: 3, num_after: 0 }),
    );
    expect((body.messages as Fetched[]).map((m) => m.id)).toEqual([ids.d1, ids.d2, ids.d3]);
    expect(body).toMatchObject({
      anchor: 10_000_000_000_000_000,
      found_anchor: false,
      found_oldest: false,
      found_newest: true,
      history_limited: false,
    });
    const all = await fetchIds(org.other, {});
    expect(all).toEqual([ids.g1, ids.g2, ids.g3, ids.d1, ids.d2, ids.d3]);
  });

  it('shows every sender and participant of a page that mixes channels and conversations', async () => {
    // The users of a page are read once for all its messages: each message must still find
    // its own sender and participants among them.
    const body = expectSuccess(await get(org.other, { anchor: 'newest', num_before: 6 }));
    const byId = new Map(
      (body.messages as Record<string, unknown>[]).map((m) => [m.id as number, m]),
    );
    const name = (user: User) => user.fullName;
    const shown = (key: string) => byId.get(ids[key]!)!;
    expect(shown('g2')).toMatchObject({
      sender_id: org.other.id,
      sender_full_name: name(org.other),
      display_recipient: 'general',
    });
    expect(shown('g3')).toMatchObject({
      sender_id: org.member.id,
      sender_full_name: name(org.member),
    });
    const participants = (key: string) =>
      (shown(key).display_recipient as { id: number; full_name: string }[]).map((u) => [
        u.id,
        u.full_name,
      ]);
    const sortedPairs = (users: User[]) =>
      users.map((u) => [u.id, u.fullName]).sort((a, b) => (a[0] as number) - (b[0] as number));
    // A 1:1 message's two users in the order of their addresses as shown (Zulip's
    // hydrate_recipient_info); a group's by id.
    expect(participants('d1').sort()).toEqual(sortedPairs([org.member, org.other]).sort());
    const addresses = (shown('d1').display_recipient as { email: string }[]).map((u) => u.email);
    expect(addresses).toEqual([...addresses].sort());
    expect(shown('d2')).toMatchObject({
      sender_id: org.other.id,
      sender_full_name: name(org.other),
    });
    expect(participants('d3')).toEqual(sortedPairs([org.member, org.other, org.guest]));
  });

  it('pages around a numeric anchor, with or without the anchor itself', async () => {
    const around = expectSuccess(
      await get(org.member, { anchor: String(ids.g2), num_before: 1, num_after: 1 }),
    );
    expect((around.messages as Fetched[]).map((m) => m.id)).toEqual([ids.g1, ids.g2, ids.g3]);
    expect(around).toMatchObject({
      anchor: ids.g2,
      found_anchor: true,
      found_oldest: false,
      found_newest: false,
    });
    const after = expectSuccess(
      await get(org.member, {
        anchor: String(ids.g2),
        num_before: 0,
        num_after: 2,
        include_anchor: false,
      }),
    );
    expect((after.messages as Fetched[]).map((m) => m.id)).toEqual([ids.g3, ids.s1]);
    const oldest = expectSuccess(await get(org.member, { anchor: 'oldest', num_after: 1 }));
    expect(oldest).toMatchObject({ anchor: 0, found_oldest: true });
  });

  it('finds the first unread message', async () => {
    const body = expectSuccess(
      await get(org.other, { anchor: 'first_unread', num_before: 0, num_after: 1 }),
    );
    expect(body.anchor).toBe(ids.g1);
  });

  it('narrows by channel (reaching history the viewer did not receive), topic and sender', async () => {
    const late = await createTestUser(org.realm, Role.MEMBER);
    const channel = [{ operator: 'channel', operand: 'general' }];
    const seen = expectSuccess(
      await get(late, { anchor: 'newest', num_before: 10, narrow: channel }),
    ).messages as Fetched[];
    expect(seen.map((m) => m.id)).toEqual([ids.g1, ids.g2, ids.g3]);
    expect(seen[0]!.flags).toEqual(['read', 'historical']);
    expect(await fetchIds(late, {})).toEqual([]);
    expect(
      await fetchIds(org.member, {
        narrow: [
          ['stream', 'general'],
          ['topic', 'LUNCH'],
        ],
      }),
    ).toEqual([ids.g1, ids.g2]);
    expect(
      await fetchIds(org.member, {
        narrow: [
          { operator: 'channel', operand: org.general.id },
          { operator: 'sender', operand: org.other.id },
        ],
      }),
    ).toEqual([ids.g2]);
    expect(
      await fetchIds(org.member, {
        narrow: [{ operator: 'sender', operand: org.other.deliveryEmail }],
      }),
    ).toEqual([ids.g2, ids.d2]);
    expect(
      await fetchIds(org.member, {
        narrow: [{ operator: 'topic', operand: 'lunch', negated: true }, ['channel', 'general']],
      }),
    ).toEqual([ids.g3]);
    // A private channel's history is not reachable without access.
    expect(await fetchIds(org.admin, { narrow: [['channel', 'secret']] })).toEqual([]);
    expect(await fetchIds(org.guest, { narrow: [['channel', 'general']] })).toEqual([
      ids.g1,
      ids.g2,
      ids.g3,
    ]);
  });

  it('narrows to direct-message conversations', async () => {
    expect(
      await fetchIds(org.member, { narrow: [{ operator: 'dm', operand: [org.other.id] }] }),
    ).toEqual([ids.d1, ids.d2]);
    // Nobody is no conversation, and an empty address no user (Zulip's by_dm).
    expect(await fetchIds(org.member, { narrow: [{ operator: 'dm', operand: [] }] })).toEqual([]);
    expectError(
      await as(org.member, org.host).get('/messages', {
        anchor: 'newest',
        num_before: 5,
        narrow: JSON.stringify([['dm', '']]),
      }),
      'Invalid narrow operator: unknown user in ',
      400,
      'BAD_NARROW',
    );
    expect(await fetchIds(org.other, { narrow: [['pm-with', org.member.deliveryEmail]] })).toEqual([
      ids.d1,
      ids.d2,
    ]);
    expect(
      await fetchIds(org.other, {
        narrow: [{ operator: 'dm', operand: [org.member.id, org.guest.id] }],
      }),
    ).toEqual([ids.d3]);
    expect(
      await fetchIds(org.member, { narrow: [{ operator: 'dm-including', operand: org.other.id }] }),
    ).toEqual([ids.d1, ids.d2, ids.d3]);
    expect(await fetchIds(org.member, { narrow: [['is', 'dm']] })).toEqual([
      ids.d1,
      ids.d2,
      ids.d3,
    ]);
    expect(
      await fetchIds(org.member, {
        narrow: [
          ['is', 'private'],
          ['sender', org.other.deliveryEmail],
        ],
      }),
    ).toEqual([ids.d2]);
  });

  it('narrows by flags and message properties', async () => {
    expect(await fetchIds(org.other, { narrow: [['is', 'mentioned']] })).toEqual([ids.g3]);
    expect(await fetchIds(org.other, { narrow: [['is', 'resolved']] })).toEqual([ids.g3]);
    expect(await fetchIds(org.member, { narrow: [['has', 'link']] })).toEqual([ids.g2]);
    expect(await fetchIds(org.member, { narrow: [['is', 'starred']] })).toEqual([]);
    expect(await fetchIds(org.member, { narrow: [['id', String(ids.g2)]] })).toEqual([ids.g2]);
    expect(await fetchIds(org.member, { narrow: [{ operator: 'with', operand: ids.g1 }] })).toEqual(
      [ids.g1, ids.g2],
    );
    // A permalink names the topic as it was: `with` puts the message's conversation now in its
    // place (Zulip's update_narrow_terms_containing_with_operator), and reads its history.
    expect(
      await fetchIds(org.member, {
        narrow: [
          ['channel', 'general'],
          ['topic', 'an old name'],
          ['with', String(ids.g1)],
        ],
      }),
    ).toEqual([ids.g1, ids.g2]);
    expect(await fetchIds(org.member, { narrow: [['with', String(ids.d1)]] })).toEqual([
      ids.d1,
      ids.d2,
    ]);
    // A message the viewer cannot read (Otto is not in #secret) is as one that does not exist:
    // a narrow that names a conversation stands as it is, one that does not is refused.
    for (const [viewer, unreachable] of [
      [org.other, ids.s1!],
      [org.member, 99_999_999],
    ] as const) {
      expect(
        await fetchIds(viewer, {
          narrow: [
            ['channel', 'general'],
            ['topic', 'lunch'],
            ['with', String(unreachable)],
          ],
        }),
      ).toEqual([ids.g1, ids.g2]);
      expectError(
        await as(viewer, org.host).get('/messages', {
          anchor: 'newest',
          num_before: 10,
          narrow: JSON.stringify([['with', String(unreachable)]]),
        }),
        "Invalid narrow operator: Invalid 'with' operator",
        400,
        'BAD_NARROW',
      );
    }
    expectError(
      await as(org.member, org.host).get('/messages', {
        anchor: 'newest',
        num_before: 10,
        narrow: JSON.stringify([
          ['with', String(ids.g1)],
          ['with', String(ids.g2)],
        ]),
      }),
      "Invalid narrow operator combination: Duplicate 'with' operators.",
      400,
      'BAD_NARROW',
    );
    const unread = await fetchIds(org.other, {
      narrow: [
        ['is', 'unread'],
        ['channel', 'general'],
      ],
    });
    // g2 is Otto's own, sent from an API client: still unread for him (spec 4.17).
    expect(unread).toEqual([ids.g1, ids.g2, ids.g3]);
  });

  it("reads the viewer's flags alone for flag narrows, with the same windows", async () => {
    // These windows read user_message alone (message-fetch.ts): the same rows as joined. A
    // channel of their own, so that the other tests' channels keep their histories.
    const viewer = await createTestUser(org.realm, Role.MEMBER);
    await createChannel(org.realm, viewer, 'flag narrows', [viewer, org.member]);
    const mine: number[] = [];
    for (const content of ['one', `@**${viewer.fullName}|${viewer.id}** two`, 'three', 'four'])
      mine.push(
        expectSuccess(
          await send(org.member, org.host, {
            type: 'stream',
            to: 'flag narrows',
            topic: 'f',
            content,
          }),
        ).id as number,
      );
    const flag = async (messages: number[], name: string) =>
      expectSuccess(
        await as(viewer, org.host).post('/messages/flags', {
          messages: JSON.stringify(messages),
          op: 'add',
          flag: name,
        }),
      );
    await flag([mine[0]!, mine[2]!], 'starred');
    await flag([mine[1]!], 'read');
    const everything = await fetchIds(viewer, {});
    expect(everything).toEqual(mine);
    expect(await fetchIds(viewer, { narrow: [['in', 'all']] })).toEqual(everything);
    expect(await fetchIds(viewer, { narrow: [['is', 'starred']] })).toEqual([mine[0], mine[2]]);
    expect(
      await fetchIds(viewer, { narrow: [{ operator: 'is', operand: 'starred', negated: true }] }),
    ).toEqual([mine[1], mine[3]]);
    expect(await fetchIds(viewer, { narrow: [['is', 'unread']] })).toEqual([
      mine[0],
      mine[2],
      mine[3],
    ]);
    expect(await fetchIds(viewer, { narrow: [['is', 'mentioned']] })).toEqual([mine[1]]);
    expect(
      await fetchIds(viewer, {
        narrow: [
          ['is', 'starred'],
          ['is', 'unread'],
        ],
      }),
    ).toEqual([mine[0], mine[2]]);
    // A window around an anchor, on both sides.
    const around = expectSuccess(
      await get(viewer, {
        anchor: mine[2],
        num_before: 1,
        num_after: 1,
        narrow: [['is', 'starred']],
      }),
    );
    expect((around.messages as Fetched[]).map((m) => m.id)).toEqual([mine[0], mine[2]]);
    expect(around).toMatchObject({ found_anchor: true, found_newest: true, found_oldest: false });
    // By id: the viewer's copies only, as an `is:` narrow keeps out shared history (sent
    // before the viewer joined: no copy), Zulip's ok_to_include_history.
    const byIds = async (narrow: unknown[]) =>
      (
        expectSuccess(await get(viewer, { message_ids: JSON.stringify([ids.g1, mine[0]]), narrow }))
          .messages as Fetched[]
      ).map((m) => m.id);
    expect(await byIds([['is', 'starred']])).toEqual([mine[0]]);
    expect(await byIds([{ operator: 'is', operand: 'starred', negated: true }])).toEqual([]);
    expect(await byIds([['channel', 'general']])).toEqual([ids.g1]);
  });

  it('searches content and topics, highlighting matches', async () => {
    const found = expectSuccess(
      await get(org.member, { anchor: 'newest', num_before: 10, narrow: [['search', 'pizza']] }),
    ).messages as Fetched[];
    expect(found.map((m) => m.id)).toEqual([ids.g1, ids.s1]);
    expect(found[0]!.match_content).toBe('<p><span class="highlight">pizza</span> today?</p>');
    expect(found[0]!.match_subject).toBe('Lunch');
    expect(await fetchIds(org.other, { narrow: [['search', 'pizza']] })).toEqual([ids.g1]);
    expect(await fetchIds(org.member, { narrow: [['search', 'lunch']] })).toEqual([ids.g1, ids.g2]);
    expect(await fetchIds(org.member, { narrow: [['search', '"reply to"']] })).toEqual([ids.d2]);
  });

  it('tells which of some messages match a narrow (GET /messages/matches_narrow)', async () => {
    const matches = async (user: User, msgIds: number[], narrow: unknown) =>
      expectSuccess(
        await as(user, org.host).get('/messages/matches_narrow', { msg_ids: msgIds, narrow }),
      ).messages as Record<string, { match_content: string; match_subject: string }>;
    const some = [ids.g1!, ids.g2!, ids.s1!, ids.d1!, 99_999_999];
    // As a search result shows them: the search's words highlighted, in the topic too.
    expect(await matches(org.member, some, [['search', 'pizza']])).toEqual({
      [ids.g1!]: {
        match_content: '<p><span class="highlight">pizza</span> today?</p>',
        match_subject: 'Lunch',
      },
      [ids.s1!]: {
        match_content: '<p>secret <span class="highlight">pizza</span> plans</p>',
        match_subject: 'plans',
      },
    });
    // Only among the messages the viewer received.
    expect(Object.keys(await matches(org.other, some, [['search', 'pizza']]))).toEqual([
      String(ids.g1),
    ]);
    // Other narrows: the content and topic unchanged; a direct message's topic is empty.
    expect(
      await matches(org.member, some, [
        ['channel', 'general'],
        ['topic', 'lunch'],
      ]),
    ).toEqual({
      [ids.g1!]: { match_content: '<p>pizza today?</p>', match_subject: 'Lunch' },
      [ids.g2!]: {
        match_content: expect.stringContaining('I want <strong>pasta</strong>') as string,
        match_subject: 'lunch',
      },
    });
    expect(await matches(org.member, some, [['is', 'dm']])).toEqual({
      [ids.d1!]: { match_content: '<p>just us</p>', match_subject: '' },
    });
    expectError(
      await as(org.member, org.host).get('/messages/matches_narrow', { msg_ids: some }),
      "Missing 'narrow' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await as(org.member, org.host).get('/messages/matches_narrow', {
        msg_ids: 'x',
        narrow: [],
      }),
      'msg_ids is not valid JSON',
    );
  });

  it('returns requested ids the viewer may see', async () => {
    const body = expectSuccess(
      await get(org.other, { message_ids: [ids.g1, ids.s1, ids.d3, 99999999] }),
    );
    expect((body.messages as Fetched[]).map((m) => m.id)).toEqual([ids.g1, ids.d3]);
    expect(body).not.toHaveProperty('anchor');
  });

  it("answers bad requests with Zulip's messages", async () => {
    expectError(await get(org.member, { num_before: 1 }), "Missing 'anchor' argument.");
    expectError(await get(org.member, { anchor: 'middle', num_before: 1 }), 'Invalid anchor');
    expectError(
      await get(org.member, { anchor: 'newest', num_before: 4000, num_after: 1001 }),
      'Too many messages requested (maximum 5000).',
    );
    expectError(
      await get(org.member, { anchor: '5', num_before: 1, num_after: 1, include_anchor: false }),
      'The anchor can only be excluded at an end of the range',
    );
    expectError(
      await get(org.member, { anchor: 'newest', num_before: -1 }),
      'num_before is too small',
    );
    // Zeros are no range: clients send them with message_ids (Zulip counts non-zero values).
    expectSuccess(await get(org.member, { message_ids: [1], num_before: 0, num_after: 0 }));
    const combo = await get(org.member, { anchor: 'newest', message_ids: [1] });
    expectError(
      combo,
      'Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor',
    );
    const badOp = await get(org.member, { anchor: 'newest', narrow: [['color', 'red']] });
    expectError(badOp, 'Invalid narrow operator: unknown operator color', 400, 'BAD_NARROW');
    expect(badOp.body.desc).toBe('unknown operator color');
    expectError(
      await get(org.member, { anchor: 'newest', narrow: [['channel', 'nowhere']] }),
      'Invalid narrow operator: unknown channel nowhere',
      400,
      'BAD_NARROW',
    );
    expectError(
      await get(org.member, { anchor: 'newest', narrow: [['sender', 'ghost@nowhere.test']] }),
      'Invalid narrow operator: unknown user ghost@nowhere.test',
      400,
      'BAD_NARROW',
    );
    // Numbers no user id can be find nobody too (they reached the database, a 500).
    expectError(
      await get(org.member, {
        anchor: 'newest',
        narrow: [{ operator: 'dm-including', operand: -3_000_000_000 }],
      }),
      'Invalid narrow operator: unknown user -3000000000',
      400,
      'BAD_NARROW',
    );
    // Operands of the wrong type, in Zulip's words (NarrowParameter.validate_terms).
    for (const [term, msg] of [
      [{ operator: 'sender', operand: 1.5 }, 'operand is not a string or integer'],
      [{ operator: 'channel', operand: ['general'] }, 'operand is not a string or integer'],
      [{ operator: 'dm', operand: 5 }, 'operand is not a string or an integer list'],
      [{ operator: 'dm', operand: [1, 'x'] }, 'operand[1] is not an integer'],
      [{ operator: 'topic', operand: 5 }, 'operand is not a string'],
      [{ operator: 'is', operand: ['dm'] }, 'operand is not a string'],
      [{ operator: 'search', operand: '  ' }, 'operand cannot be blank.'],
    ] as const)
      expectError(await get(org.member, { anchor: 'newest', narrow: [term] }), msg);
    // Keys Zulip does not know are ignored, as pydantic ignores them.
    expectSuccess(
      await get(org.member, {
        anchor: 'newest',
        narrow: [{ operator: 'channel', operand: 'general', extra: 1 }],
      }),
    );
    expectError(
      await get(org.member, { anchor: 'newest', narrow: [['is', 'shiny']] }),
      "Invalid narrow operator: unknown 'is' operand shiny",
      400,
      'BAD_NARROW',
    );
    expectError(
      await get(org.member, { anchor: 'newest', narrow: [['has', 'cats']] }),
      "Invalid narrow operator: unknown 'has' operand cats",
      400,
      'BAD_NARROW',
    );
    expectError(
      await get(org.member, {
        anchor: 'newest',
        narrow: [
          ['channel', 'general'],
          ['dm', 'x@y.z'],
        ],
      }),
      'Invalid narrow operator: No message can be both a channel message and direct message',
      400,
      'BAD_NARROW',
    );
    // A topic, or channels:public, or not being a DM, is a channel narrow too.
    for (const narrow of [
      [
        ['topic', 'lunch'],
        ['is', 'dm'],
      ],
      [
        ['channels', 'public'],
        ['dm-including', String(org.other.id)],
      ],
      [
        { operator: 'is', operand: 'dm', negated: true },
        { operator: 'dm', operand: [org.other.id] },
      ],
    ])
      expectError(
        await get(org.member, { anchor: 'newest', narrow }),
        'Invalid narrow operator: No message can be both a channel message and direct message',
        400,
        'BAD_NARROW',
      );
    // Zulip's underscore spelling of group-pm-with.
    expectSuccess(
      await get(org.member, {
        anchor: 'newest',
        narrow: [['group_pm_with', org.other.deliveryEmail]],
      }),
    );
    expectError(
      await get(org.member, { anchor: 'newest', narrow: 'general' }),
      'narrow is not valid JSON',
    );
    expectError(
      await get(org.member, { anchor: 'newest', narrow: [{ operator: 'channel' }] }),
      'Invalid narrow[0]',
    );
    expectError(
      await get(org.member, { anchor: 'newest', narrow: [['id', 'abc']] }),
      'Invalid narrow operator: Invalid message ID',
      400,
      'BAD_NARROW',
    );
  });

  it("pages a channel's history around any anchor, other channels' messages interleaved", async () => {
    // The window is read by (recipient_id, id), positioned at the anchor (message-fetch.ts):
    // the same rows as ordering and bounding on the id alone, at every anchor and on both sides.
    const channel: number[] = [];
    const other: number[] = [];
    for (let i = 0; i < 6; i++) {
      channel.push(
        expectSuccess(
          await send(org.member, org.host, {
            type: 'stream',
            to: 'general',
            topic: 'paging',
            content: `in general ${i}`,
          }),
        ).id as number,
      );
      other.push(
        expectSuccess(
          await send(org.member, org.host, {
            type: 'stream',
            to: 'secret',
            topic: 'paging',
            content: `elsewhere ${i}`,
          }),
        ).id as number,
      );
    }
    const late = await createTestUser(org.realm, Role.MEMBER);
    const history = [ids.g1!, ids.g2!, ids.g3!, ...channel];
    const page = async (anchor: number | string, before: number, after: number, include = true) =>
      expectSuccess(
        await get(late, {
          anchor,
          num_before: before,
          num_after: after,
          include_anchor: include,
          narrow: [['channel', 'general']],
        }),
      );
    const pageIds = async (...args: Parameters<typeof page>) =>
      ((await page(...args)).messages as Fetched[]).map((m) => m.id);
    expect(await pageIds('newest', 4, 0)).toEqual(history.slice(-4));
    expect(await pageIds('oldest', 0, 4)).toEqual(history.slice(0, 4));
    // An anchor in the channel, and one between two of its messages (another channel's).
    expect(await pageIds(channel[2]!, 2, 2)).toEqual(channel.slice(0, 5));
    expect(await pageIds(channel[2]!, 0, 2, false)).toEqual([channel[3], channel[4]]);
    expect(await pageIds(channel[2]!, 2, 0, false)).toEqual([channel[0], channel[1]]);
    expect(await pageIds(other[2]!, 2, 2)).toEqual([
      channel[1],
      channel[2],
      channel[3],
      channel[4],
    ]);
    expect(await page(other[2]!, 2, 2)).toMatchObject({ found_anchor: false });
    // Past the channel's newest message: nothing after it, found_newest.
    expect(await page(other[5]!, 1, 3)).toMatchObject({ found_newest: true, found_oldest: false });
    expect(await pageIds(other[5]!, 1, 3)).toEqual([channel[5]]);
    expect(await pageIds(history[0]!, 5, 0)).toEqual([history[0]]);
  });
});

describe('GET /messages: what the viewer can still read, and Zulip edge cases', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  const get = (user: User, query: Record<string, unknown>) => getMessages(org, user, query);
  const idsOf = (user: User, query: Record<string, unknown>) => newestIds(org, user, query);
  const byIdsOf = async (user: User, messageIds: number[], narrow: unknown[] = []) =>
    (expectSuccess(await get(user, { message_ids: messageIds, narrow })).messages as Fetched[]).map(
      (m) => m.id,
    );
  const post = async (user: User, form: Record<string, unknown>) =>
    expectSuccess(await send(user, org.host, form)).id as number;

  it("keeps a private channel's messages from a member removed from it, not a public one's", async () => {
    const hidden = await createChannel(org.realm, org.member, 'hideout', [org.member, org.other], {
      inviteOnly: true,
    });
    const open = await createChannel(org.realm, org.owner, 'lobby', [org.owner, org.other]);
    const secret = await post(org.member, {
      type: 'stream',
      to: 'hideout',
      topic: 't',
      content: 'x',
    });
    const lobby = await post(org.owner, { type: 'stream', to: 'lobby', topic: 't', content: 'y' });
    const dm = await post(org.member, { type: 'direct', to: [org.other.id], content: 'z' });
    expect(await idsOf(org.other, {})).toEqual(expect.arrayContaining([secret, lobby, dm]));
    for (const name of [hidden.name, open.name])
      expectSuccess(
        await as(org.other, org.host).delete('/users/me/subscriptions', { subscriptions: [name] }),
      );
    // Zulip's get_base_query_for_search: the rows kept from the private channel grant nothing.
    const feed = await idsOf(org.other, {});
    expect(feed).toEqual(expect.arrayContaining([lobby, dm]));
    expect(feed).not.toContain(secret);
    expect(await idsOf(org.other, { narrow: [['is', 'unread']] })).not.toContain(secret);
    expect(await idsOf(org.other, { narrow: [['search', 'x']] })).not.toContain(secret);
    expect(await byIdsOf(org.other, [secret, lobby])).toEqual([lobby]);
    const matches = expectSuccess(
      await as(org.other, org.host).get('/messages/matches_narrow', {
        msg_ids: [secret, lobby],
        narrow: [],
      }),
    ).messages as Record<string, unknown>;
    expect(Object.keys(matches)).toEqual([String(lobby)]);
    // Still readable by its members.
    expect(await idsOf(org.member, {})).toContain(secret);
  });

  it('returns by id only messages the viewer received, unless the narrow names their channel', async () => {
    // The guest was never subscribed to "lobby"-like channels: use a fresh public channel.
    await createChannel(org.realm, org.owner, 'plaza', [org.owner]);
    const unseen = await post(org.owner, { type: 'stream', to: 'plaza', topic: 't', content: 'p' });
    expect(await byIdsOf(org.member, [unseen])).toEqual([]);
    expect(await byIdsOf(org.member, [unseen], [['channel', 'plaza']])).toEqual([unseen]);
  });

  it('searches quoted phrases within the full-text match, as Zulip does', async () => {
    const land = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 'geography',
      content: 'friesland is flat',
    });
    const food = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: 'food',
      content: 'hot fries please',
    });
    const found = await idsOf(org.member, { narrow: [['search', '"fries"']] });
    expect(found).toContain(food);
    expect(found).not.toContain(land);
    // A phrase of stop words alone has no full-text match.
    expect(await idsOf(org.member, { narrow: [['search', '"is"']] })).toEqual([]);
  });

  it("highlights a topic's apostrophe as Zulip's SQL escapes it", async () => {
    const id = await post(org.member, {
      type: 'stream',
      to: 'general',
      topic: "James' burger",
      content: 'burger time',
    });
    const [found] = expectSuccess(
      await get(org.member, {
        anchor: id,
        num_before: 0,
        num_after: 0,
        narrow: [['search', 'burger']],
      }),
    ).messages as Fetched[];
    expect(found!.match_subject).toBe('James&#39; <span class="highlight">burger</span>');
  });

  it('ignores negation of in:all and near, which select nothing', async () => {
    const all = await idsOf(org.member, {});
    expect(
      await idsOf(org.member, { narrow: [{ operator: 'in', operand: 'all', negated: true }] }),
    ).toEqual(all);
    expect(
      await idsOf(org.member, { narrow: [{ operator: 'near', operand: '1', negated: true }] }),
    ).toEqual(all);
  });

  it('checks the anchor before the size of the window, as Zulip does', async () => {
    expectError(await get(org.member, { num_before: 6000 }), "Missing 'anchor' argument.");
    expectError(await get(org.member, { anchor: 'x', num_before: 6000 }), 'Invalid anchor');
  });
});

describe('bad input to the message endpoints', () => {
  let org: MessageOrg;
  let id: number;
  beforeAll(async () => {
    org = await createMessageOrg();
    id = expectSuccess(
      await send(org.member, org.host, { type: 'stream', to: 'general', topic: 't', content: 'x' }),
    ).id as number;
  });

  it('answers every mistyped GET /messages parameter with a 400', async () => {
    for (const flag of [
      'include_anchor',
      'client_gravatar',
      'apply_markdown',
      'use_first_unread_anchor',
      'allow_empty_topic_name',
    ])
      expectError(
        await as(org.member, org.host).get('/messages', { anchor: 'newest', [flag]: 'x' }),
        `${flag} is not a boolean`,
      );
    expectError(
      await as(org.member, org.host).get('/messages', { anchor: 'newest', num_after: 'x' }),
      'num_after is not an integer',
    );
    expectError(
      await as(org.member, org.host).get('/messages', { message_ids: ['a'] }),
      'message_ids[0] is not an integer',
    );
    expectError(
      await as(org.member, org.host).get('/messages', { anchor: 'x'.repeat(31) }),
      'anchor is too long (limit: 30 characters)',
    );
  });

  it('answers every mistyped PATCH /messages/{id} parameter with a 400', async () => {
    const patch = (form: Record<string, unknown>) =>
      as(org.member, org.host).patch(`/messages/${id}`, form);
    expectError(await patch({ stream_id: 'x' }), 'stream_id is not an integer');
    expectError(await patch({ stream_id: 0 }), 'stream_id is too small');
    expectError(await patch({ content: 'a\u0000' }), 'Invalid content: null bytes are not allowed');
    expectError(await patch({ topic: 'a\u0007' }), 'Invalid character in topic, at position 2!');
    expectError(
      await as(org.member, org.host).patch('/messages/99999999999', { content: 'x' }),
      'message_id is too large',
    );
    expectError(
      await as(org.member, org.host).delete('/messages/abc'),
      'message_id is not an integer',
    );
    expectError(
      await as(org.member, org.host).get(`/messages/${id}/history`, {
        allow_empty_topic_name: 'x',
      }),
      'allow_empty_topic_name is not a boolean',
    );
  });

  it('refuses deactivated users everywhere', async () => {
    const gone = await createTestUser(org.realm, Role.MEMBER);
    await getPrisma().user.update({ where: { id: gone.id }, data: { isActive: false } });
    expectError(
      await as(gone, org.host).get('/messages', { anchor: 'newest' }),
      'Account is deactivated',
      401,
      'UNAUTHORIZED',
    );
    expectError(
      await send(gone, org.host, { type: 'stream', to: 'general', topic: 't', content: 'x' }),
      'Account is deactivated',
      401,
      'UNAUTHORIZED',
    );
  });
});
