import { makeQueueId, parseQueueId } from './queue-id';

describe('queue ids', () => {
  it('carry their shard', () => {
    const queueId = makeQueueId(13);
    expect(queueId).toMatch(/^13:[0-9a-f-]{36}$/);
    expect(parseQueueId(queueId, 16)).toEqual({ shard: 13, queueId });
  });

  it.each([
    ['a shard beyond the deployment', `16:${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`],
    ['no shard', '00000000-0000-0000-0000-000000000000'],
    ['a Zulip-style id', '1517975029:0'],
    ['garbage', 'nonsense'],
    ['an empty string', ''],
    ['a key-injection attempt', '1:00000000-0000-0000-0000-000000000000}:x'],
  ])('rejects %s', (_label, queueId) => {
    expect(parseQueueId(queueId, 16)).toBeNull();
  });
});
