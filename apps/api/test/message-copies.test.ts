// The link between a message and its copies (user_message), kept by triggers rather than a
// foreign key (migration 20261129000000): a copy's message must exist, and is locked while
// the copy's transaction lasts; deleting messages deletes their copies. Tested on the database
// itself, with two connections where transactions race.
import pg from 'pg';
import { getPrisma } from '@parley/db';
import { waitUntil } from '@parley/devservices';
import { as, expectSuccess } from './helpers';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';

const prisma = () => getPrisma();

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  return client;
}

async function sendToGeneral(org: MessageOrg, content: string): Promise<number> {
  const res = await send(org.owner, org.host, {
    type: 'stream',
    to: 'general',
    topic: 'copies',
    content,
  });
  return expectSuccess(res).id as number;
}

const copiesOf = (messageId: number) => prisma().userMessage.count({ where: { messageId } });

/** Waits until the connection with this backend pid waits for a lock. */
async function waitsForLock(observer: pg.Client, pid: number): Promise<void> {
  await waitUntil(
    async () =>
      (
        await observer.query<{ waiting: boolean }>(
          `SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1`,
          [pid],
        )
      ).rows[0]?.waiting === true,
    10_000,
    `backend ${pid} to wait for a lock`,
  );
}

const pidOf = async (client: pg.Client) =>
  (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

describe('user_message and message', () => {
  let org: MessageOrg;
  let a: pg.Client;
  let b: pg.Client;
  /** Outside any transaction: pg_stat_activity is read once per transaction. */
  let observer: pg.Client;
  beforeAll(async () => {
    org = await createMessageOrg();
    [a, b, observer] = await Promise.all([connect(), connect(), connect()]);
  });
  afterAll(async () => {
    await Promise.all([a.end(), b.end(), observer.end()]);
  });

  it("deletes a message's copies with it, through the API and in bulk", async () => {
    const first = await sendToGeneral(org, 'one');
    const second = await sendToGeneral(org, 'two');
    const third = await sendToGeneral(org, 'three');
    expect(await copiesOf(first)).toBe(4);
    expectSuccess(await as(org.owner, org.host).delete(`/messages/${first}`));
    expect(await copiesOf(first)).toBe(0);
    await a.query('DELETE FROM message WHERE id = ANY($1::int[])', [[second, third]]);
    expect(await copiesOf(second)).toBe(0);
    expect(await copiesOf(third)).toBe(0);
  });

  it('refuses a copy of a message that does not exist, inserted or moved there', async () => {
    const id = await sendToGeneral(org, 'kept');
    const missing = (await a.query<{ id: number }>('SELECT max(id) + 1000 AS id FROM message'))
      .rows[0]!.id;
    await expect(
      a.query('INSERT INTO user_message (user_profile_id, message_id) VALUES ($1, $2), ($1, $3)', [
        org.admin.id,
        id,
        missing,
      ]),
    ).rejects.toMatchObject({ code: '23503' });
    await expect(
      a.query('UPDATE user_message SET message_id = $2 WHERE message_id = $1', [id, missing]),
    ).rejects.toMatchObject({ code: '23503' });
    // Neither statement left anything behind; a valid insert passes.
    expect(await copiesOf(id)).toBe(4);
    await a.query('INSERT INTO user_message (user_profile_id, message_id) VALUES ($1, $2)', [
      org.admin.id,
      id,
    ]);
    expect(await copiesOf(id)).toBe(5);
  });

  it('fails a copy whose message a concurrent transaction deleted first', async () => {
    const id = await sendToGeneral(org, 'deleted while copied');
    const bPid = await pidOf(b);
    await a.query('BEGIN');
    await a.query('DELETE FROM message WHERE id = $1', [id]);
    const insert = b
      .query('INSERT INTO user_message (user_profile_id, message_id) VALUES ($1, $2)', [
        org.admin.id,
        id,
      ])
      .then(
        () => null,
        (error: { code?: string }) => error,
      );
    await waitsForLock(observer, bPid);
    await a.query('COMMIT');
    expect(await insert).toMatchObject({ code: '23503' });
    expect(await copiesOf(id)).toBe(0);
  });

  it('deletes a copy a concurrent transaction added first, once that one commits', async () => {
    const id = await sendToGeneral(org, 'copied while deleted');
    const bPid = await pidOf(b);
    await a.query('BEGIN');
    await a.query('INSERT INTO user_message (user_profile_id, message_id) VALUES ($1, $2)', [
      org.admin.id,
      id,
    ]);
    const deletion = b.query('DELETE FROM message WHERE id = $1', [id]);
    await waitsForLock(observer, bPid);
    await a.query('COMMIT');
    await deletion;
    expect(await copiesOf(id)).toBe(0);
  });
});
