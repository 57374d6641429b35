// publishNotification against the real Redis: one stream entry per shard, each carrying the
// event, that shard's recipients and their queues.
import { randomBytes } from 'node:crypto';
import { getConfig } from '@parley/config';
import { keys, SHARD_USER_RANGE } from './keys';
import { CARRIED_QUEUES_MAX, publishNotification, publishOutboxRows } from './publish';
import { getRedis } from './redis';

describe('publishNotification', () => {
  it('appends the event to the log of each recipient shard with that shard’s users', async () => {
    const redis = getRedis();
    // A shard count no deployment uses, so the two shard logs are this test's alone.
    const shards = 100_000;
    const [a, b] = [50_000, 50_001].map(
      (k) => k + (Number.parseInt(randomBytes(2).toString('hex'), 16) % 20_000) * 2,
    );
    // Users of shard a (the first ids of its range and of the same range a round later) and b.
    const [userA, userA2, userB] = [a!, shards + a!, b!].map((range) => range * SHARD_USER_RANGE);
    const event = { type: 'realm_user', op: 'update', person: { user_id: 1, full_name: 'X' } };
    await publishNotification(redis, shards, { event, users: [userA!, userA2!, userB!] });
    const read = async (shard: number) =>
      (await redis.xrange(keys.shardLog(shard), '-', '+')).map(
        ([, fields]) => JSON.parse(fields[1]!) as unknown,
      );
    expect(await read(a!)).toEqual([{ event, users: [userA, userA2] }]);
    expect(await read(b!)).toEqual([{ event, users: [userB] }]);
    // The same text as serializing the entry whole (the event is serialized once for all).
    const [[, fields]] = (await redis.xrange(keys.shardLog(b!), '-', '+')) as [[string, string[]]];
    expect(fields[1]).toBe(JSON.stringify({ event, users: [userB] }));
    await redis.del(keys.shardLog(a!), keys.shardLog(b!));
  });

  it('publishes nothing for an empty recipient list', async () => {
    const redis = getRedis();
    const spy = jest.spyOn(redis, 'pipeline');
    await publishNotification(redis, getConfig().EVENT_SHARDS, { event: { type: 'x' }, users: [] });
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });

  describe('the recipients’ queues', () => {
    // A shard of this test's own (see above), with one user in it.
    const shards = 100_000;
    const shard = 60_000 + (Number.parseInt(randomBytes(2).toString('hex'), 16) % 20_000);
    const user = shard * SHARD_USER_RANGE;
    const other = user + 1;
    const event = { type: 'sequence' };
    const entries = async () =>
      (await getRedis().xrange(keys.shardLog(shard), '-', '+')).map(([, fields]) => fields);
    const carried = (fields: string[]) =>
      fields[2] === 'q' ? fields[3]!.split(' ').filter(Boolean).sort() : null;
    afterEach(() =>
      getRedis().del(
        keys.shardLog(shard),
        keys.userQueues(shard, user),
        keys.userQueues(shard, other),
        keys.published(shard, '1', '1'),
      ),
    );

    it('go with the entry as they are when it is published, whichever publisher', async () => {
      const redis = getRedis();
      await redis.sadd(keys.userQueues(shard, user), 'q1', 'q2');
      // A user named twice, and one without queues.
      await publishNotification(redis, shards, { event, users: [user, other, user] });
      await publishOutboxRows(redis, shards, [
        { id: '1', written: '1', notification: { event, users: [other] } },
      ]);
      await redis.sadd(keys.userQueues(shard, other), 'q3');
      await publishNotification(redis, shards, { event, users: [user, other] });
      const published = await entries();
      expect(published.map(carried)).toEqual([['q1', 'q2'], [], ['q1', 'q2', 'q3']]);
      expect(published.map((fields) => fields.length)).toEqual([4, 4, 4]);
      expect(JSON.parse(published[0]![1]!)).toEqual({ event, users: [user, other, user] });
    });

    it('are read for every recipient, however many', async () => {
      const redis = getRedis();
      // Read in chunks: recipients in the first, a middle and the last one.
      const many = Array.from({ length: 300 }, (_, i) => user + 2 + i);
      const holders = [many[0]!, many[150]!, many[299]!];
      for (const holder of holders) await redis.sadd(keys.userQueues(shard, holder), `q${holder}`);
      await publishNotification(redis, shards, { event, users: many });
      expect((await entries()).map(carried)).toEqual([holders.map((id) => `q${id}`).sort()]);
      await redis.del(...holders.map((holder) => keys.userQueues(shard, holder)));
    });

    it(`are left out beyond ${CARRIED_QUEUES_MAX}, or when Redis cannot read them`, async () => {
      const redis = getRedis();
      const many = Array.from({ length: CARRIED_QUEUES_MAX }, (_, i) => `q${i}`);
      await redis.sadd(keys.userQueues(shard, user), ...many);
      await publishNotification(redis, shards, { event, users: [user] });
      await redis.sadd(keys.userQueues(shard, other), 'one more');
      await publishNotification(redis, shards, { event, users: [user, other] });
      // Not a set: the entry is published all the same, for the fan-out to read and fail on.
      await redis.del(keys.userQueues(shard, other));
      await redis.set(keys.userQueues(shard, other), 'not a set');
      await publishOutboxRows(redis, shards, [
        { id: '1', written: '1', notification: { event, users: [other] } },
      ]);
      const published = await entries();
      expect(published.map((fields) => carried(fields)?.length ?? null)).toEqual([
        CARRIED_QUEUES_MAX,
        null,
        null,
      ]);
      expect(published.map((fields) => fields.slice(0, 1))).toEqual([['n'], ['n'], ['n']]);
    });
  });
});

describe('publishOutboxRows', () => {
  const shards = 100_000;
  const shard = 80_000 + (Number.parseInt(randomBytes(2).toString('hex'), 16) % 20_000);
  const user = shard * SHARD_USER_RANGE;
  const logged = async () =>
    (await getRedis().xrange(keys.shardLog(shard), '-', '+')).map(
      ([, fields]) => (JSON.parse(fields[1]!) as { event: unknown }).event,
    );
  afterEach(() =>
    getRedis().del(
      keys.shardLog(shard),
      keys.published(shard, '7', '1000'),
      keys.published(shard, '7', '2000'),
    ),
  );

  it('appends each row once, whoever publishes it and however often', async () => {
    const row = {
      id: '7',
      written: '1000',
      notification: { event: { type: 'x', n: 1 }, users: [user] },
    };
    await publishOutboxRows(getRedis(), shards, [row]);
    await publishOutboxRows(getRedis(), shards, [row, row]);
    expect(await logged()).toEqual([{ type: 'x', n: 1 }]);
  });

  it('appends a row of a restored or recreated database that reuses a published id', async () => {
    const redis = getRedis();
    await publishOutboxRows(redis, shards, [
      { id: '7', written: '1000', notification: { event: { type: 'x', n: 1 }, users: [user] } },
    ]);
    // The sequence starts again: id 7 is handed out anew, later.
    await publishOutboxRows(redis, shards, [
      { id: '7', written: '2000', notification: { event: { type: 'x', n: 2 }, users: [user] } },
    ]);
    expect(await logged()).toEqual([
      { type: 'x', n: 1 },
      { type: 'x', n: 2 },
    ]);
  });
});
