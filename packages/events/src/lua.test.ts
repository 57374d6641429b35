// LuaScript against the real Redis: a script's text goes once per connection, then its digest,
// and again in full when Redis has forgotten it (a NOSCRIPT answer).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { getConfig } from '@parley/config';
import { LuaScript } from './lua';
import { createRedis } from './redis';

/** The EVAL and EVALSHA commands the test's connections write that name a key, as [command,
 * text or digest], in the order written. Read from the connections themselves, not from Redis's
 * MONITOR: a monitor sees every client of the server, and another test's command arriving
 * between MONITOR's reply and ioredis switching the connection to monitoring mode failed the
 * run ("Command queue state error"). */
const sent: { key: string; command: string; script: string }[] = [];

function watchScripts(key: string) {
  return {
    seen: (): [string, string][] =>
      sent
        .filter((entry) => entry.key === key)
        .map((entry) => [entry.command, entry.script.length === 40 ? 'digest' : 'text']),
  };
}

const watched = new WeakSet<object>();
const connections: Redis[] = [];
const connect = (options = {}) => {
  const redis = createRedis(getConfig().REDIS_URL, options);
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    // A command sent before the connection is up comes back here from the offline queue.
    if (watched.has(command)) return send(command, stream);
    watched.add(command);
    // ioredis decides between EVAL and EVALSHA as it writes the command (per socket): what
    // it writes is what Redis receives.
    const toWritable = command.toWritable.bind(command);
    command.toWritable = (socket) => {
      const written = toWritable(socket);
      const args = command.args.map(String);
      if (/^eval(sha)?$/i.test(command.name))
        for (const key of args.slice(2))
          sent.push({ key, command: command.name.toLowerCase(), script: args[0]! });
      return written;
    };
    return send(command, stream);
  };
  connections.push(redis);
  return redis;
};
afterAll(() => connections.forEach((redis) => redis.disconnect()));

const increment = () =>
  new LuaScript(`test-${randomUUID()}`, `return redis.call('INCRBY', KEYS[1], ARGV[1])`);

describe('LuaScript', () => {
  it('sends its text on a connection’s first call only, then its digest', async () => {
    const script = increment();
    const key = `test:lua:${randomUUID()}`;
    const watch = watchScripts(key);
    try {
      const redis = connect();
      expect(await script.run(redis, 1, key, 2)).toBe(2);
      expect(await script.run(redis, 1, key, 3)).toBe(5);
      const pipeline = redis.pipeline();
      script.queue(pipeline, 1, key, 4);
      expect(await pipeline.exec()).toEqual([[null, 9]]);
      // A new connection loads it again (it cannot know what Redis holds).
      expect(await script.run(connect(), 1, key, 1)).toBe(10);
      expect(watch.seen()).toEqual([
        ['eval', 'text'],
        ['evalsha', 'digest'],
        ['evalsha', 'digest'],
        ['eval', 'text'],
      ]);
    } finally {
      await connect().del(key);
    }
  });

  it('sends its text again when Redis has forgotten its scripts', async () => {
    const script = increment();
    const key = `test:lua:${randomUUID()}`;
    const redis = connect();
    const watch = watchScripts(key);
    try {
      expect(await script.run(redis, 1, key, 1)).toBe(1);
      await redis.script('FLUSH');
      expect(await script.run(redis, 1, key, 1)).toBe(2);
      // The digest was refused (NOSCRIPT), then the text went.
      expect(watch.seen()).toEqual([
        ['eval', 'text'],
        ['evalsha', 'digest'],
        ['eval', 'text'],
      ]);
    } finally {
      await redis.del(key);
    }
  });

  it('refuses a second text under a name already taken', () => {
    const name = `test-${randomUUID()}`;
    new LuaScript(name, 'return 1');
    // The same text again (a module evaluated twice) is the same script.
    expect(() => new LuaScript(name, 'return 1')).not.toThrow();
    expect(() => new LuaScript(name, 'return 2')).toThrow(`Two Lua scripts are named ${name}`);
  });

  it('runs on connections and pipelines made before the script', async () => {
    const key = `test:lua:${randomUUID()}`;
    const plain = connect();
    const autoPipelined = connect({ enableAutoPipelining: true });
    const pipeline = plain.pipeline();
    const script = increment();
    script.queue(pipeline, 1, key, 1);
    expect(await pipeline.exec()).toEqual([[null, 1]]);
    // An auto-pipelined connection queues commands of one tick into a pipeline it makes at
    // the first of them: the script must be defined by then, not at its own call.
    const [value, total] = await Promise.all([
      autoPipelined.get(key),
      script.run(autoPipelined, 1, key, 1),
    ]);
    expect([value, total]).toEqual(['1', 2]);
    await plain.del(key);
  });
});
