// The event outbox: a committed change's notifications survive the death of the process that
// committed it, and are published exactly once however many publishers try.
import pg from 'pg';
import type { Response } from 'supertest';
import { getPrisma, outsideTransaction, query, runAction, statement } from '@parley/db';
import { getConfig } from '@parley/config';
import { getRedis, publishOutboxRows } from '@parley/events';
import { freePort, requestJson, spawnReplica, waitForReady } from '@parley/devservices';
import {
  outboxSettled,
  publishesSettled,
  relayOutbox,
  writeOutbox,
  type OutboxColumns,
} from '../src/lib/outbox';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectSuccess,
  recordPostAnswers,
} from './helpers';
import { createMessageOrg, send } from './message-helpers';

/** Outbox rows holding a user_settings event for `userId`. */
const rowsFor = async (userId: number) =>
  (
    await getPrisma().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM event_outbox
      WHERE notification->'event'->>'type' = 'user_settings'
        AND notification::jsonb->'users' @> ${JSON.stringify([userId])}::jsonb`
  )[0]!.n;

/** A row as PostgreSQL keeps it: its text, and how it compressed it (null: not at all). */
const storedForm = statement<{ text: string; compression: string | null }, [string]>(`
  SELECT notification::text AS text, pg_column_compression(notification) AS compression
  FROM event_outbox WHERE id = $1::bigint`);

/** Carries a row read inside a transaction out of it, rolling the transaction back. */
class StoredForm extends Error {
  constructor(readonly row: { text: string; compression: string | null }) {
    super('rolled back on purpose');
  }
}

/** Holds this process's first Redis publish whose script arguments match `carries` until
 * `release(fail)`; `isHeld` resolves once it waits. Restore with `restore()`. */
function holdPublish(carries: (payload: string) => boolean) {
  let release!: (fail: boolean) => void;
  const released = new Promise<boolean>((resolve) => (release = resolve));
  let held!: () => void;
  const isHeld = new Promise<void>((resolve) => (held = resolve));
  const redis = getRedis();
  const pipeline = redis.pipeline.bind(redis);
  let holding = true;
  const spy = jest.spyOn(redis, 'pipeline').mockImplementation((...args) => {
    const made = pipeline(...(args as []));
    // Every command the pipeline queues (scripts are queued by their digest, see LuaScript).
    const queued = made as unknown as { sendCommand(command: { args: unknown[] }): unknown };
    const sendCommand = queued.sendCommand.bind(queued);
    let carriesIt = false;
    queued.sendCommand = (command) => {
      // The notification, wherever the script's arguments put it.
      if (carries(command.args.map(String).join('\n'))) carriesIt = true;
      return sendCommand(command);
    };
    const exec = made.exec.bind(made);
    made.exec = (async () => {
      if (carriesIt && holding) {
        holding = false;
        held();
        if (await released) throw new Error('Redis went away');
      }
      return exec();
    }) as typeof made.exec;
    return made;
  });
  return {
    isHeld,
    release: (fail = false) => release(fail),
    restore: () => {
      release(false);
      spy.mockRestore();
    },
  };
}

/** Two changes of the owner's settings in this process, the second made while the first
 * one's publish is held (its Redis pipeline waits until released, then runs or, with
 * `failFirst`, fails). Returns the values published, in order, and the statements sent. */
async function secondWhileFirstPublishes(
  org: Awaited<ReturnType<typeof createTestRealm>>,
  { failFirst }: { failFirst: boolean },
): Promise<{ values: unknown[]; texts: string[] }> {
  const publish = holdPublish(
    (payload) => payload.includes('enable_sounds') && payload.includes('"value":false'),
  );
  const pgSpy = jest.spyOn(pg.Client.prototype, 'query');
  try {
    const published = await captureEvents(org.realm.id, async () => {
      // supertest sends a request once it is awaited: `then` starts it.
      const first = as(org.owner, org.host)
        .patch('/settings', { enable_sounds: false })
        .then((answer) => answer);
      await publish.isHeld;
      const second = as(org.owner, org.host)
        .patch('/settings', { enable_sounds: true })
        .then((answer) => answer);
      // The second change is committed and waits for the first one's publish.
      await new Promise((resolve) => setTimeout(resolve, 200));
      publish.release(failFirst);
      // Committed either way: a failed publish leaves the rows to the relay.
      expectSuccess(await first);
      expectSuccess(await second);
    });
    const texts = pgSpy.mock.calls.map((call) => {
      const config = call[0] as unknown;
      return typeof config === 'string' ? config : ((config as { text?: string }).text ?? '');
    });
    return { values: published.map((entry) => entry.event.value), texts };
  } finally {
    publish.restore();
    pgSpy.mockRestore();
  }
}

/** Runs every node-postgres query of this process through `intercept`, given its text,
 * values, connection and a function that sends it, until the returned spy is restored. */
function interceptQueries(
  intercept: (query: {
    text: string;
    values: unknown[] | undefined;
    client: pg.Client;
    send: () => Promise<pg.QueryResult>;
  }) => Promise<pg.QueryResult>,
) {
  const query = pg.Client.prototype.query as (...args: unknown[]) => Promise<pg.QueryResult>;
  return jest.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
    this: pg.Client,
    ...args: unknown[]
  ) {
    const config = args[0] as string | { text?: string; values?: unknown[] };
    const text = typeof config === 'string' ? config : (config.text ?? '');
    // The pool runs its own queries (`query` outside a transaction) with a callback.
    const callback =
      typeof args[args.length - 1] === 'function'
        ? (args.pop() as (error: unknown, result?: pg.QueryResult) => void)
        : undefined;
    const values = typeof config === 'string' ? (args[1] as unknown[]) : config.values;
    const answer = intercept({ text, values, client: this, send: () => query.apply(this, args) });
    if (!callback) return answer as never;
    answer.then(
      (result) => callback(null, result),
      (error: unknown) => callback(error),
    );
    return undefined as never;
  });
}

/** Two sends of the member to topic `topic` (`<topic> one`, then `<topic> two`), the second
 * made once the first one's statement has committed but while its answer from PostgreSQL is
 * held: given after the second has answered, or with `lose`, lost as with a connection that
 * died. Returns the messages' contents as published, in order, the statements sent, the first
 * send's answer, its outbox row and the rows the second one's statement found waiting. */
async function secondWhileFirstAnswerHeld(
  org: Awaited<ReturnType<typeof createMessageOrg>>,
  topic: string,
  { lose }: { lose: boolean },
) {
  const form = { type: 'stream', to: 'general', topic, content: 'first' };
  // The member's first send there follows the topic (a transaction); the next ones are one
  // statement.
  expectSuccess(await send(org.member, org.host, form));
  await outboxSettled();
  let firstCommitted!: () => void;
  const isFirstCommitted = new Promise<void>((resolve) => (firstCommitted = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let firstRow: string | undefined;
  let secondWaiting: string[] = [];
  const texts: string[] = [];
  const spy = interceptQueries(({ text, values, send: run }) => {
    texts.push(text);
    const writes = (marker: string) =>
      text.includes('INSERT INTO event_outbox') && JSON.stringify(values).includes(marker);
    if (writes(`${topic} one`))
      return run().then(async (result) => {
        firstRow = (result.rows[0] as OutboxColumns).outbox_ids[0];
        firstCommitted();
        await released;
        if (lose) throw new Error('Connection terminated unexpectedly');
        return result;
      });
    if (writes(`${topic} two`))
      return run().then((result) => {
        secondWaiting = (result.rows[0] as OutboxColumns).outbox_waiting;
        return result;
      });
    return run();
  });
  try {
    let first!: Response;
    const published = await captureEvents(org.realm.id, async () => {
      const answered = send(org.member, org.host, { ...form, content: `${topic} one` }).then(
        (answer) => answer,
      );
      await isFirstCommitted;
      expectSuccess(await send(org.member, org.host, { ...form, content: `${topic} two` }));
      release();
      first = await answered;
    });
    await outboxSettled();
    return {
      published: published.map((entry) => (entry.event.message as { content: string }).content),
      texts,
      first,
      firstRow,
      secondWaiting,
    };
  } finally {
    release();
    spy.mockRestore();
  }
}

const readsWaitingRows = (text: string) => /SELECT id, .* FROM event_outbox/.test(text);

describe('the event outbox', () => {
  it('publishes after commit and deletes the rows', async () => {
    const org = await createTestRealm();
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).patch('/settings', { enable_sounds: false }));
    });
    expect(published.map((entry) => entry.event.type)).toEqual(['user_settings']);
    await outboxSettled();
    expect(await rowsFor(org.owner.id)).toBe(0);
  });

  it('stores a large notification as sent, never compressed', async () => {
    // A message to a channel of 2,000 members: its notification's user list alone is about
    // 16 KB. jsonb converted it and pglz compressed it, for a row deleted milliseconds later.
    const notification = {
      event: { type: 'user_settings', op: 'update', property: 'enable_sounds', value: true },
      users: Array.from({ length: 2000 }, (_, i) => 1_000_000 + i),
    };
    const stored = await runAction(
      async (ctx) => {
        const written = await writeOutbox(ctx, [notification]);
        const [row] = await query(storedForm, [written.rows[0]!.id]);
        throw new StoredForm(row!);
      },
      { prisma: false },
    ).catch((error: unknown) => {
      if (error instanceof StoredForm) return error.row;
      throw error;
    });
    expect(stored).toEqual({ text: JSON.stringify(notification), compression: null });
  });

  it('deletes published rows in a transaction of their own that does not wait for the disk', async () => {
    const org = await createTestRealm();
    // This test's rows, and each deletion of them with the connection that ran it (other
    // test files' rows may be published and deleted by this process too, by other statements).
    const ours = new Set<string>();
    const deletions: { text: string; client: pg.Client }[] = [];
    const spy = interceptQueries(({ text, values, client, send }) => {
      const result = send();
      if (text.includes('DELETE FROM event_outbox')) {
        const ids = (values?.[0] ?? []) as string[];
        if (ids.some((id) => ours.has(id))) deletions.push({ text, client });
      } else if (
        text.includes('INSERT INTO event_outbox') &&
        String(values?.[0]).includes(`[${org.owner.id}]`)
      )
        void result.then((answer) => {
          for (const row of answer.rows as { outbox_ids: string[] }[])
            for (const id of row.outbox_ids) ours.add(id);
        });
      return result;
    });
    try {
      expectSuccess(await as(org.owner, org.host).patch('/settings', { enable_sounds: false }));
      await outboxSettled();
    } finally {
      spy.mockRestore();
    }
    expect(await rowsFor(org.owner.id)).toBe(0);
    expect(ours.size).toBe(1);
    expect(deletions).toHaveLength(1);
    const [{ text, client }] = deletions as [(typeof deletions)[0]];
    // Its pooled connection is back to durable commits for whatever it runs next.
    expect((await client.query('SHOW synchronous_commit')).rows).toEqual([
      { synchronous_commit: 'on' },
    ]);
    // The statement sets asynchronous commit for the transaction that runs it, and only that.
    const direct = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await direct.connect();
    try {
      const setting = "SELECT current_setting('synchronous_commit') AS value";
      await direct.query('BEGIN');
      await direct.query(text, [[]]);
      expect((await direct.query(setting)).rows).toEqual([{ value: 'off' }]);
      await direct.query('ROLLBACK');
      expect((await direct.query(setting)).rows).toEqual([{ value: 'on' }]);
    } finally {
      await direct.end();
    }
  });

  it('answers without waiting for the deletion, and a published row waits for nobody', async () => {
    const org = await createTestRealm();
    // The rows of this test's first change, and what later outbox writes were told.
    const first = new Set<string>();
    const excluded: string[][] = [];
    const ofThisTest = (values: unknown[] | undefined) =>
      String(values?.[0]).includes('user_settings') &&
      String(values?.[0]).includes(`[${org.owner.id}]`);
    // Hold the deletion of the first change's rows until released (other rows, such as other
    // test files' left in the table, go through).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const spy = interceptQueries(({ text, values, send }) => {
      if (text.includes('DELETE FROM event_outbox')) {
        const ids = (values?.[0] ?? []) as string[];
        return ids.some((id) => first.has(id)) ? held.then(send) : send();
      }
      if (text.includes('INSERT INTO event_outbox') && ofThisTest(values)) {
        excluded.push([...((values?.[1] ?? []) as string[])]);
        return send().then((result) => {
          if (first.size === 0)
            for (const row of result.rows as { outbox_ids: string[] }[])
              for (const id of row.outbox_ids) first.add(id);
          return result;
        });
      }
      return send();
    });
    try {
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await as(org.owner, org.host).patch('/settings', { enable_sounds: false }));
        // Answered while its row's deletion is held: the row is still there.
        expect(await rowsFor(org.owner.id)).toBe(1);
        expectSuccess(await as(org.owner, org.host).patch('/settings', { enable_sounds: true }));
      });
      // The second change was told the first one's row is published, so it is not taken for
      // a row still waiting, and each event went out once, in order.
      expect(first.size).toBe(1);
      expect(excluded).toHaveLength(2);
      expect(excluded[1]).toEqual(expect.arrayContaining([...first]));
      expect(published.map((entry) => entry.event.value)).toEqual([false, true]);
    } finally {
      release();
      await outboxSettled();
      spy.mockRestore();
    }
    expect(await rowsFor(org.owner.id)).toBe(0);
  });

  it('answers a message send before its publish is done, which goes out ahead of a later change', async () => {
    const org = await createMessageOrg();
    const form = { type: 'stream', to: 'general', topic: 'held', content: 'first' };
    // The member's first send there also follows the topic (a transaction, published before
    // the answer); the sends after it are written in one statement.
    expectSuccess(await send(org.member, org.host, form));
    // Hold the publish of the next message until released.
    const publish = holdPublish((payload) => payload.includes('held publish'));
    try {
      const published = await captureEvents(org.realm.id, async () => {
        const answered = await Promise.race([
          send(org.member, org.host, { ...form, content: 'held publish' }).then((r) => r),
          new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000)),
        ]);
        // Answered while its publish is held.
        expect(answered && expectSuccess(answered).id).toEqual(expect.any(Number));
        let settled = false;
        const settling = publishesSettled().then(() => (settled = true));
        // A later change of this process publishes after it.
        const later = as(org.member, org.host)
          .patch('/settings', { enable_sounds: false })
          .then((r) => r);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(settled).toBe(false);
        publish.release();
        expectSuccess(await later);
        await settling;
      });
      expect(
        published
          .filter((entry) => ['message', 'user_settings'].includes(entry.event.type as string))
          .map((entry) => entry.event.type),
      ).toEqual(['message', 'user_settings']);
    } finally {
      publish.restore();
    }
    await outboxSettled();
  });

  it("writes a message send's answer before its publish begins", async () => {
    const org = await createMessageOrg();
    const form = { type: 'stream', to: 'general', topic: 'order', content: 'first' };
    // The member's first send there also follows the topic (a transaction); the next one is
    // written in one statement.
    expectSuccess(await send(org.member, org.host, form));
    const order: string[] = [];
    const publish = holdPublish((payload) => payload.includes('answered first'));
    void publish.isHeld.then(() => {
      order.push('published');
      publish.release();
    });
    const ends = recordPostAnswers(order);
    try {
      expectSuccess(await send(org.member, org.host, { ...form, content: 'answered first' }));
      await publishesSettled();
    } finally {
      ends.mockRestore();
      publish.restore();
    }
    expect(order).toEqual(['answered', 'published']);
    await outboxSettled();
  });

  it('publishes a row left behind exactly once, even with two relays at once', async () => {
    const org = await createTestRealm();
    const notification = {
      event: { type: 'user_settings', op: 'update', property: 'enable_sounds', value: true },
      users: [org.owner.id],
    };
    await getPrisma().$executeRaw`
      INSERT INTO event_outbox (notification, created_at)
      VALUES (${JSON.stringify(notification)}::jsonb, now() - interval '1 minute')`;
    const published = await captureEvents(org.realm.id, async () => {
      await Promise.all([relayOutbox(), relayOutbox()]);
      await relayOutbox();
    });
    expect(published).toEqual([notification]);
    expect(await rowsFor(org.owner.id)).toBe(0);
  });

  it('names a row alike after commit and in the relay: a row whose deletion was lost goes out once', async () => {
    const org = await createTestRealm();
    const notification = {
      event: { type: 'user_settings', op: 'update', property: 'enable_sounds', value: true },
      users: [org.owner.id],
    };
    // Written in a transaction and published as after its commit, but not deleted.
    const write = await runAction((ctx) => writeOutbox(ctx, [notification]));
    const published = await captureEvents(org.realm.id, async () => {
      await publishOutboxRows(getRedis(), getConfig().EVENT_SHARDS, write.rows);
      await relayOutbox({ below: String(BigInt(write.rows[0]!.id) + 1n) });
    });
    expect(published).toEqual([notification]);
    expect(await rowsFor(org.owner.id)).toBe(0);
  });

  it('publishes rows still waiting from before ahead of a new change, in commit order', async () => {
    const org = await createTestRealm();
    // A row whose publish failed a moment ago (too recent for the relay to take yet).
    const waiting = {
      event: { type: 'user_settings', op: 'update', property: 'enable_sounds', value: true },
      users: [org.owner.id],
    };
    await getPrisma().$executeRaw`
      INSERT INTO event_outbox (notification) VALUES (${JSON.stringify(waiting)}::jsonb)`;
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.owner, org.host).patch('/settings', { enable_sounds: false }));
    });
    expect(published).toEqual([
      waiting,
      {
        event: { type: 'user_settings', op: 'update', property: 'enable_sounds', value: false },
        users: [org.owner.id],
      },
    ]);
    await outboxSettled();
    expect(await rowsFor(org.owner.id)).toBe(0);
  });

  it('waits for the rows its own process is publishing instead of publishing them again', async () => {
    const org = await createTestRealm();
    const { values, texts } = await secondWhileFirstPublishes(org, { failFirst: false });
    expect(values).toEqual([false, true]);
    // Neither change read the other's rows back from the table.
    expect(texts.filter(readsWaitingRows)).toEqual([]);
  });

  it('publishes, from the table and first, the rows whose own publish it waited for and failed', async () => {
    const org = await createTestRealm();
    const { values, texts } = await secondWhileFirstPublishes(org, { failFirst: true });
    expect(values).toEqual([false, true]);
    expect(texts.filter(readsWaitingRows)).toHaveLength(1);
    await outboxSettled();
    expect(await rowsFor(org.owner.id)).toBe(0);
  });

  it('takes a row published and deleted since a send read it as waiting for settled', async () => {
    const org = await createMessageOrg();
    const form = { type: 'stream', to: 'general', topic: 'settled', content: 'first' };
    // The first send there follows the topic (a transaction); the next ones are one statement.
    expectSuccess(await send(org.member, org.host, form));
    await outboxSettled();
    // The first message's publish is held while the second is written, so the second's
    // statement sees its row waiting; the second's answer from PostgreSQL is then held until
    // that row is published and deleted.
    const publish = holdPublish((payload) => payload.includes('settled one'));
    let firstRow: string | undefined;
    let secondWritten!: () => void;
    const isSecondWritten = new Promise<void>((resolve) => (secondWritten = resolve));
    let firstDeleted!: () => void;
    const isFirstDeleted = new Promise<void>((resolve) => (firstDeleted = resolve));
    const texts: string[] = [];
    const spy = interceptQueries(({ text, values, send: run }) => {
      texts.push(text);
      const writes = (marker: string) =>
        text.includes('INSERT INTO event_outbox') && JSON.stringify(values).includes(marker);
      if (writes('settled one'))
        return run().then((result) => {
          firstRow = (result.rows[0] as OutboxColumns).outbox_ids[0];
          return result;
        });
      if (writes('settled two'))
        return run().then(async (result) => {
          expect((result.rows[0] as OutboxColumns).outbox_waiting).toContain(firstRow);
          secondWritten();
          // The first row's deletion committed and its batch done.
          await isFirstDeleted;
          await outboxSettled();
          return result;
        });
      if (text.includes('DELETE FROM event_outbox') && firstRow !== undefined)
        return run().then((result) => {
          if ((values?.[0] as string[]).includes(firstRow!)) firstDeleted();
          return result;
        });
      return run();
    });
    try {
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await send(org.member, org.host, { ...form, content: 'settled one' }));
        const second = send(org.member, org.host, { ...form, content: 'settled two' }).then(
          (answer) => answer,
        );
        await isSecondWritten;
        publish.release();
        expectSuccess(await second);
      });
      expect(published.map((entry) => entry.event.message)).toEqual([
        expect.objectContaining({ content: '<p>settled one</p>' }),
        expect.objectContaining({ content: '<p>settled two</p>' }),
      ]);
      // The second send did not read the first one's row back from the table.
      expect(texts.filter(readsWaitingRows)).toEqual([]);
    } finally {
      publish.restore();
      spy.mockRestore();
    }
    await outboxSettled();
  });

  it('waits for a send of its own process whose answer it has not read yet', async () => {
    const org = await createMessageOrg();
    const { published, texts, first, firstRow, secondWaiting } = await secondWhileFirstAnswerHeld(
      org,
      'in flight',
      { lose: false },
    );
    expect(secondWaiting).toContain(firstRow);
    expectSuccess(first);
    expect(published).toEqual(['<p>in flight one</p>', '<p>in flight two</p>']);
    expect(texts.filter(readsWaitingRows)).toEqual([]);
  });

  it('publishes from the table, first, the row of its own send whose answer was lost', async () => {
    const org = await createMessageOrg();
    const { published, texts, first, firstRow, secondWaiting } = await secondWhileFirstAnswerHeld(
      org,
      'lost',
      { lose: true },
    );
    expect(secondWaiting).toContain(firstRow);
    // The database's failure, not a bug: 503, though the message was committed.
    expect(first.status).toBe(503);
    expect(published).toEqual(['<p>lost one</p>', '<p>lost two</p>']);
    // Once the first send was done, the second one read its row from the table.
    expect(texts.filter(readsWaitingRows)).toHaveLength(1);
    const left = await getPrisma().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM event_outbox WHERE id = ${firstRow}::bigint`;
    expect(left).toEqual([{ n: 0 }]);
  });

  it("publishes another process's waiting row without waiting for its own later sends", async () => {
    const org = await createMessageOrg();
    const form = { type: 'stream', to: 'general', topic: 'later', content: 'first' };
    expectSuccess(await send(org.member, org.host, form));
    await outboxSettled();
    // A row of another replica, committed and not yet published.
    const waiting = {
      event: { type: 'user_settings', op: 'update', property: 'enable_sounds', value: true },
      users: [org.owner.id],
    };
    await getPrisma().$executeRaw`
      INSERT INTO event_outbox (notification) VALUES (${JSON.stringify(waiting)}::jsonb)`;
    // A change whose outbox write sees that row; a send begins after its write and is held in
    // flight (its statement not sent) until the change has answered, which it does only once
    // its events are published.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let later: Promise<Response> | undefined;
    let laterDue!: () => void;
    const isLaterDue = new Promise<void>((resolve) => (laterDue = resolve));
    const spy = interceptQueries(({ text, values, send: run }) => {
      if (text.includes('INSERT INTO message') && JSON.stringify(values).includes('later send')) {
        // The send is in flight from here on, its statement held.
        laterDue();
        return released.then(run);
      }
      if (
        !text.includes('INSERT INTO event_outbox') ||
        !String(values?.[0]).includes('"value":false')
      )
        return run();
      return run().then(async (result) => {
        // Outside the change's transaction, as another request would be (the test app's
        // server, made per request, would otherwise carry it).
        later = outsideTransaction(() =>
          send(org.member, org.host, { ...form, content: 'later send' }).then((r) => r),
        );
        await isLaterDue;
        return result;
      });
    });
    try {
      const published = await captureEvents(org.realm.id, async () => {
        const change = as(org.owner, org.host)
          .patch('/settings', { enable_sounds: false })
          .then((r) => r);
        const answered = await Promise.race([
          change,
          new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000)),
        ]);
        expect(answered && expectSuccess(answered)).toBeTruthy();
        release();
        expectSuccess(await later!);
      });
      expect(
        published.map((entry) =>
          entry.event.type === 'message'
            ? (entry.event.message as { content: string }).content
            : entry.event.value,
        ),
      ).toEqual([true, false, '<p>later send</p>']);
    } finally {
      release();
      spy.mockRestore();
    }
    await outboxSettled();
  });

  it('delivers the events of a change whose API process died right after commit', async () => {
    const org = await createTestRealm();
    const user = await createTestUser(org.realm);
    const port = await freePort();
    const replica = spawnReplica('api', port, {
      LOG_LEVEL: 'error',
      PARLEY_FAULT_KILL_AFTER_COMMIT: '1',
    });
    const exited = new Promise((resolve) => replica.once('exit', resolve));
    try {
      await waitForReady(port, 60_000);
      // The replica commits the change, then dies before publishing: the request fails.
      const answer = await requestJson(`http://127.0.0.1:${port}`, {
        host: org.host,
        user,
        method: 'PATCH',
        path: '/api/v1/settings',
        form: { enable_sounds: 'false' },
      }).catch(() => null);
      expect(answer).toBeNull();
      await exited;
    } finally {
      replica.kill('SIGKILL');
    }
    const stored = await getPrisma().user.findUniqueOrThrow({ where: { id: user.id } });
    expect(stored.enableSounds).toBe(false);
    expect(await rowsFor(user.id)).toBe(1);
    // Another replica's relay publishes it, once.
    const published = await captureEvents(org.realm.id, async () => {
      await relayOutbox({ olderThanMs: 0 });
      await relayOutbox({ olderThanMs: 0 });
    });
    expect(published).toEqual([
      {
        event: { type: 'user_settings', op: 'update', property: 'enable_sounds', value: false },
        users: [user.id],
      },
    ]);
    expect(await rowsFor(user.id)).toBe(0);
  }, 90_000);
});
