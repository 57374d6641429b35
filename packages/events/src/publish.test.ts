// publishNotification against the real Redis: one stream entry per shard, each carrying the
// event and that shard's recipients.
import { randomBytes } from 'node:crypto';
import { getConfig } from '@parley/config';
import { keys, SHARD_USER_RANGE } from './keys';
import { publishNotification } from './publish';
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
});
