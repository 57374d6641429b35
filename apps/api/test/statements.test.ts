// Statements per request on the hot paths, counted (never timed): every statement PostgreSQL
// receives from this process while one warm request runs (BEGIN and COMMIT included). The
// README's "Speed" section lists the same figures; a change that adds a statement to one of
// these paths must say why there.
//
// Not counted: the outbox's work after a commit beyond deleting the request's own rows (when
// another test's rows wait, a request first publishes those, which is load, not cost), and the
// cache listener's heartbeat.
import pg from 'pg';
import { authCache } from '@parley/auth';
import { getPrisma, Role, type User } from '@parley/db';
import { as, createTestUser, expectSuccess, setGuestAccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { outboxSettled } from '../src/lib/outbox';
import { activeMembersSql, groupIdsOfUser, groupIdsOfUserSql } from '../src/lib/groups';

/** A node of EXPLAIN (ANALYZE, FORMAT JSON)'s plan. */
interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

class RolledBack extends Error {}

type Sent = string | { text?: string; values?: unknown[] };

const textOf = (config: Sent) =>
  (typeof config === 'string' ? config : (config.text ?? '')).replace(/\s+/g, ' ').trim();

// The last: the test app's wait for the auth cache before each request (helpers.ts).
const NOT_COUNTED = [
  /^SELECT id, .* AS written, notification FROM event_outbox/,
  /^SELECT 1$/,
  /^SELECT pg_notify\('parley_auth_change'/,
];

/** The statements `run` sends, by their first words (for a readable failure). */
async function statements(run: () => Promise<unknown>): Promise<string[]> {
  // The warm-up request's outbox deletion may still be on its way: not this request's.
  await outboxSettled();
  const spy = jest.spyOn(pg.Client.prototype, 'query');
  try {
    await run();
    // The outbox rows' deletion follows the answer (batched with other requests'): counted.
    await outboxSettled();
    const sent = spy.mock.calls.map((call) => call[0] as Sent);
    // Rows a request publishes for others (publishOlder: `SELECT … WHERE id < $1`) lie below
    // its own; their deletion, when the read found any, is that load, not this request's cost.
    const belows = sent
      .filter((config) => NOT_COUNTED[0]!.test(textOf(config)) && typeof config !== 'string')
      .map((config) => BigInt(String((config as { values: unknown[] }).values[0])));
    const othersDeletion = (config: Sent) =>
      typeof config !== 'string' &&
      textOf(config).startsWith('DELETE FROM event_outbox') &&
      belows.some((below) => (config.values![0] as string[]).every((id) => BigInt(id) < below));
    return sent
      .filter((config) => !NOT_COUNTED.some((pattern) => pattern.test(textOf(config))))
      .filter((config) => !othersDeletion(config))
      .map((config) => textOf(config).slice(0, 60));
  } finally {
    spy.mockRestore();
  }
}

let org: MessageOrg;
let messageId: number;

beforeAll(async () => {
  org = await createMessageOrg();
  expect(await authCache().listening()).toBe(true);
  const sent = expectSuccess(
    await send(org.member, org.host, { type: 'stream', to: 'general', topic: 't', content: 'hi' }),
  );
  messageId = sent.id as number;
  // Warm: the auth cache holds everyone, every statement is prepared on some connection.
  for (const user of [org.member, org.other, org.admin])
    expectSuccess(await as(user, org.host).get('/users/me'));
});

describe('statements per request', () => {
  it('GET /users/me: the newest message id with the custom profile values', async () => {
    const run = () => as(org.member, org.host).get('/users/me');
    await run();
    expect(await statements(async () => expectSuccess(await run()))).toHaveLength(1);
  });

  // The display data is read with what decides access, and shown only if access allows
  // (permissions.test.ts and messages-fetch.test.ts check who may read what).
  it('GET /messages/{id}: access, the message, its display data and users at once', async () => {
    const run = () => as(org.member, org.host).get(`/messages/${messageId}`);
    await run();
    expect(await statements(async () => expectSuccess(await run()))).toHaveLength(1);
  });

  it('GET /messages: groups, the window, then the one of presentation', async () => {
    const newest = () =>
      as(org.member, org.host).get('/messages', { anchor: 'newest', num_before: 20 });
    const channel = () =>
      as(org.member, org.host).get('/messages', {
        anchor: 'newest',
        num_before: 20,
        num_after: 0,
        narrow: [{ operator: 'channel', operand: 'general' }],
      });
    await newest();
    await channel();
    expect(await statements(async () => expectSuccess(await newest()))).toHaveLength(3);
    // A channel operand: one more, the channel with the viewer's subscription.
    expect(await statements(async () => expectSuccess(await channel()))).toHaveLength(4);
  });

  /** The statement that read a GET /messages window in `narrow`. */
  const windowOf = async (narrow: unknown[]) => {
    const spy = jest.spyOn(pg.Client.prototype, 'query');
    try {
      expectSuccess(
        await as(org.member, org.host).get('/messages', {
          anchor: 'newest',
          num_before: 20,
          num_after: 0,
          narrow,
        }),
      );
      const window = spy.mock.calls
        .map((call) => call[0] as unknown as { text?: string; name?: string })
        .find((config) => config.text?.includes(' AS side '));
      expect(window).toBeDefined();
      return window!;
    } finally {
      spy.mockRestore();
    }
  };
  const channel = { operator: 'channel', operand: 'general' };

  it('GET /messages: the window of a common view is prepared, of a search unnamed', async () => {
    // Prepared statements live as long as their connection: only views with few shapes get
    // one (everything, a channel, a channel's topic), never a narrow a client can vary at will.
    expect((await windowOf([])).name).toMatch(/^parley_[0-9a-f]{20}$/);
    expect((await windowOf([channel])).name).toMatch(/^parley_/);
    expect((await windowOf([channel, { operator: 'topic', operand: 't' }])).name).toMatch(
      /^parley_/,
    );
    expect((await windowOf([{ operator: 'search', operand: 'hi' }])).name).toBeUndefined();
    expect((await windowOf([{ ...channel, negated: true }])).name).toBeUndefined();
  });

  it("GET /messages: a window that asks nothing of the message reads the viewer's rows alone", async () => {
    // Joined with message, a plan could walk message's primary key through every newer
    // message of the server (message-fetch.ts).
    expect((await windowOf([])).text).not.toMatch(/\bmessage m\b/);
    // A flag is written as the partial index's predicate is, so that the index serves it.
    const starred = (await windowOf([{ operator: 'is', operand: 'starred' }])).text!;
    expect(starred).not.toMatch(/\bmessage m\b/);
    expect(starred).toContain('(um.flags & 2::bigint) <> 0');
    expect((await windowOf([{ operator: 'is', operand: 'dm' }])).text).toMatch(/JOIN message m\b/);
  });

  it('GET /messages: each flag a narrow reads alone has a partial index with its test', async () => {
    const predicates = (
      await getPrisma().$queryRaw<{ indexdef: string }[]>`
        SELECT indexdef FROM pg_indexes WHERE tablename = 'user_message'`
    ).map(({ indexdef }) =>
      /WHERE \(\(flags & \((\d+)\)::bigint\) (<>|=) 0\)$/.exec(indexdef)?.slice(1),
    );
    for (const operand of ['starred', 'mentioned', 'alerted', 'unread']) {
      const text = (await windowOf([{ operator: 'is', operand }])).text!;
      const [, bits, comparison] = /\(um\.flags & (\d+)::bigint\) (<>|=) 0/.exec(text) ?? [];
      expect({ operand, index: [bits, comparison] }).toEqual({
        operand,
        index: predicates.find((p) => p !== undefined && p[0] === bits && p[1] === comparison),
      });
    }
  });

  // The user's groups are read by every send and every GET /messages, and members through
  // subgroups by group mentions and permission checks. group_group_membership holds every
  // organization's links: a walk must follow the links of the groups it reached, at any size.
  it('group walks read only the links of the groups they reach', async () => {
    const rowsRead = (plan: PlanNode): number =>
      (plan['Relation Name'] === 'group_group_membership'
        ? plan['Actual Rows'] * plan['Actual Loops']
        : 0) + (plan.Plans ?? []).reduce((sum, child) => sum + rowsRead(child), 0);
    const memberGroups = await groupIdsOfUser(org.member.id);
    const read: Record<string, number> = {};
    await expect(
      getPrisma().$transaction(async (tx) => {
        // 3,000 links between other groups, rolled back below. Replica mode skips the foreign
        // keys' checks, so the links need no group rows.
        await tx.$executeRaw`SET LOCAL session_replication_role = replica`;
        await tx.$executeRaw`
          INSERT INTO group_group_membership (supergroup_id, subgroup_id)
          SELECT 2000000000 - 2 * i, 2000000000 - 2 * i - 1 FROM generate_series(1, 3000) i`;
        const explain = async (sql: string, value: unknown) => {
          const [row] = await tx.$queryRawUnsafe<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(
            `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
            value,
          );
          return rowsRead(row!['QUERY PLAN'][0]!.Plan);
        };
        read.up = await explain(`SELECT ${groupIdsOfUserSql('$1::int')}`, org.member.id);
        read.down = await explain(activeMembersSql('unnest($1::int[])'), [...memberGroups]);
        throw new RolledBack();
      }),
    ).rejects.toBeInstanceOf(RolledBack);
    // A member of a few groups, nested a few levels: a handful of links each way, where a scan
    // of the table read every one of the 3,000 at each level.
    expect(memberGroups.size).toBeGreaterThan(1);
    expect(read.up).toBeGreaterThan(0);
    expect(read.up).toBeLessThan(100);
    expect(read.down).toBeGreaterThan(0);
    expect(read.down).toBeLessThan(100);
  });

  // One read: the channel (with what decides the sender's topic policy) and its recipients
  // (with the new message's id; linkifiers come from memory). Then one statement writes the
  // message, its copies and its events' outbox rows: PostgreSQL commits it alone, no BEGIN and
  // no COMMIT. After the answer: the outbox rows' deletion (outbox.test.ts shows the answer
  // does not wait for it).
  it('POST /messages to a channel: one read, then one statement for every write', async () => {
    const run = () =>
      send(org.member, org.host, { type: 'stream', to: 'general', topic: 't', content: 'x' });
    await run();
    const sent = await statements(async () => expectSuccess(await run()));
    expect(sent).toHaveLength(3);
    expect(sent[0]).toMatch(/^WITH ch AS \(SELECT \* FROM stream/);
    expect(sent[1]).toMatch(/^WITH inserted AS \( INSERT INTO message/);
    expect(sent.filter((text) => /^(BEGIN|COMMIT)/.test(text))).toEqual([]);
  });

  // When guests may see only the people they share something with (can_access_all_users_group
  // is role:members), a channel with guests among its subscribers costs one more read when the
  // sender is not subscribed: which of them may not see the sender (they get "Unknown user").
  // Otherwise nothing more: a subscriber shares the channel with every recipient, and whether
  // the organization limits guests is known from memory after its first request.
  it('POST /messages to a channel with guests, when guests see only some users: one more read', async () => {
    const limited = await createMessageOrg();
    await setGuestAccess(limited);
    const run = (sender: User) => () =>
      send(sender, limited.host, { type: 'stream', to: 'general', topic: 't', content: 'x' });
    // The administrator is not subscribed to #general, the member is.
    await run(limited.admin)();
    const sent = await statements(async () => expectSuccess(await run(limited.admin)()));
    expect(sent).toHaveLength(4);
    expect(sent[0]).toMatch(/^WITH ch AS \(SELECT \* FROM stream/);
    expect(sent[1]).toMatch(/^SELECT guest.id AS "guestId"/);
    expect(sent[2]).toMatch(/^WITH inserted AS \( INSERT INTO message/);
    await run(limited.member)();
    const bySubscriber = await statements(async () => expectSuccess(await run(limited.member)()));
    expect(bySubscriber).toHaveLength(3);
  });

  // What the content names (users and groups it mentions, channels it links) is read in one
  // statement, whatever it names, while the channel is read. Then one statement tells whether a
  // mentioned subscriber starts following the topic: on the first mention of Otto Other here
  // (a policy write, in a transaction), not on the next ones, which write alone. A group
  // mention costs nothing more: its members and who may mention it come with its name.
  it('POST /messages naming users, groups and channels: one statement for all of them', async () => {
    expectSuccess(
      await as(org.admin, org.host).post('/user_groups/create', {
        name: 'statement counters',
        description: 'counted',
        members: JSON.stringify([org.other.id]),
      }),
    );
    const names = /^SELECT 'user' AS kind/;
    const counts: number[] = [];
    for (const content of [
      '@**Otto Other** see #**general**',
      '@**Otto Other** @**Ada Admin** @_**Gus Guest** #**general** #**secret** @**nobody**',
      '@**Otto Other** @*statement counters* #**general**',
    ]) {
      const run = () =>
        send(org.member, org.host, { type: 'stream', to: 'general', topic: 't', content });
      await run();
      const sent = await statements(async () => expectSuccess(await run()));
      expect(sent.filter((text) => names.test(text))).toHaveLength(1);
      expect(sent.filter((text) => /^(BEGIN|COMMIT)/.test(text))).toEqual([]);
      counts.push(sent.length);
    }
    expect(counts).toEqual([5, 5, 5]);

    // A first mention that makes its user follow: the check, then the transaction (in a topic
    // the sender started before, so that only Otto's policy changes).
    const topic = `first ${Date.now()}`;
    const inTopic = (content: string) =>
      send(org.member, org.host, { type: 'stream', to: 'general', topic, content });
    expectSuccess(await inTopic('opening'));
    const firstMention = await statements(async () =>
      expectSuccess(await inTopic('@**Otto Other**')),
    );
    expect(firstMention.filter((text) => /^(BEGIN|COMMIT)/.test(text))).toHaveLength(2);
    expect(firstMention.some((text) => text.startsWith('INSERT INTO user_topic'))).toBe(true);
  });

  // The sender starts a topic and their settings follow topics they start: the policy's
  // writes need the transaction.
  it('POST /messages that sets a topic policy: its writes in one transaction', async () => {
    let answer: Record<string, unknown> = {};
    const sent = await statements(async () => {
      answer = expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: `new topic ${Date.now()}`,
          content: 'x',
        }),
      );
    });
    expect(answer.automatic_new_visibility_policy).toBe(3);
    expect(sent[1]).toMatch(/^BEGIN/);
    expect(sent.filter((text) => text.startsWith('COMMIT'))).toHaveLength(1);
    expect(sent.some((text) => text.startsWith('INSERT INTO user_topic'))).toBe(true);
  });

  it("POST /messages runs its transaction without Prisma's, except for Prisma's rare writes", async () => {
    const newcomer = await createTestUser(org.realm, Role.MEMBER);
    const group = JSON.stringify([org.other.id, newcomer.id]);
    const transactions = jest.spyOn(getPrisma(), '$transaction');
    try {
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 't',
          content: 'x',
        }),
      );
      expect(transactions).not.toHaveBeenCalled();
      // A new direct-message group is created through Prisma.
      expectSuccess(await send(org.member, org.host, { type: 'private', to: group, content: 'a' }));
      expect(transactions).toHaveBeenCalledTimes(1);
      expectSuccess(await send(org.member, org.host, { type: 'private', to: group, content: 'b' }));
      expect(transactions).toHaveBeenCalledTimes(1);
    } finally {
      transactions.mockRestore();
    }
  });

  // The users named, by id or address, unless all of them authenticated here lately (then they
  // are in memory); the conversation with its recipients, in one read; then, as for a channel,
  // the one statement that writes, and the outbox rows' deletion.
  it('POST /messages to a direct-message group: the same count whatever its size', async () => {
    const counts: number[] = [];
    for (const size of [3, 9]) {
      // Users who never authenticated: read.
      const others: User[] = [];
      while (others.length < size - 1) others.push(await createTestUser(org.realm, Role.MEMBER));
      const run = () =>
        send(org.member, org.host, {
          type: 'private',
          to: JSON.stringify(others.map((user) => user.id)),
          content: 'group',
        });
      expectSuccess(await run()); // creates the group
      counts.push((await statements(async () => expectSuccess(await run()))).length);
    }
    expect(counts).toEqual([4, 4]);
  });

  it('POST /messages 1:1: the users named read once, whether by id or address', async () => {
    const newcomer = await createTestUser(org.realm, Role.MEMBER);
    for (const to of [[newcomer.id], [newcomer.deliveryEmail]]) {
      const run = () =>
        send(org.member, org.host, { type: 'private', to: JSON.stringify(to), content: 'hi' });
      await run();
      const sent = await statements(async () => expectSuccess(await run()));
      expect(sent).toHaveLength(4);
      expect(sent[0]).toMatch(/^SELECT NULL::text AS named, u\.id AS "id"/);
      expect(sent[1]).toMatch(/^WITH r AS \(/);
      expect(sent[2]).toMatch(/^WITH inserted AS \( INSERT INTO message/);
    }
  });

  // Users who authenticated lately: as many statements as a channel message.
  it('POST /messages direct to users in memory: the same count as a channel', async () => {
    for (const user of [org.other, org.admin])
      expectSuccess(await as(user, org.host).get('/users/me'));
    for (const to of [
      [org.other.id],
      [org.other.id, org.admin.id],
      [org.other.deliveryEmail, org.admin.deliveryEmail],
    ]) {
      const run = () =>
        send(org.member, org.host, { type: 'private', to: JSON.stringify(to), content: 'hi' });
      await run();
      const sent = await statements(async () => expectSuccess(await run()));
      expect(sent).toHaveLength(3);
      expect(sent[0]).toMatch(/^WITH r AS \(/);
    }
  });

  // Every section, one prepared statement each: the user's groups (for permission flags and
  // channel access), the groups, the users (and bots), profile values, custom fields, default
  // channels, channels, the user's subscriptions, channel group settings, subscribers,
  // system groups, the newest message, emoji, presence, topic policies, muted users, alert
  // words, muting, unread messages, starred messages, recent direct messages, drafts, saved
  // snippets, client devices, statuses, code playgrounds, channel folders, navigation views,
  // email domains, default channel groups.
  // (One more, the members of unread group conversations, when there are any: not for this
  // new user.)
  it('POST /register with every section: one statement per section', async () => {
    const newcomer = await createTestUser(org.realm, Role.MEMBER);
    const run = () => as(newcomer, org.host).post('/register', {});
    await run();
    expect(await statements(async () => expectSuccess(await run()))).toHaveLength(32);
  });
});
