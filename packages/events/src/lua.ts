// Lua scripts called by their SHA1 digest (EVALSHA) through ioredis's defineCommand: on each
// connection a script goes in full (EVAL) the first time only, which loads it, and again if
// Redis answers NOSCRIPT (its script cache flushed). With EVAL every call carried the script's
// text: the long-poll's 1.3 KB POLL took 18 to 25 µs per call in a pipeline, against 9 to 11 µs
// by digest (20,000 calls; Redis's own time per call was the same, about 2 µs), the rest being
// the client's writing and Redis's reading of the text. A send runs about one script per
// receiving long-poll.
import type { ChainableCommander, Redis } from 'ioredis';

type ScriptArgument = string | number;
type ScriptFunction = (numberOfKeys: number, ...args: ScriptArgument[]) => unknown;

const scripts: LuaScript[] = [];
const connections = new Set<Redis>();

export class LuaScript {
  private readonly property: string;

  /** `name` tells the script apart on a connection; it is not sent to Redis. */
  constructor(
    name: string,
    readonly lua: string,
  ) {
    this.property = `lua:${name}`;
    // A connection knows a script by its name: a second text under the same name would run
    // whichever of the two it met first.
    if (scripts.some((other) => other.property === this.property && other.lua !== lua))
      throw new Error(`Two Lua scripts are named ${name}`);
    scripts.push(this);
    for (const redis of connections) this.defineOn(redis);
  }

  /** Runs the script (keys first, then arguments, as EVAL takes them). */
  run(redis: Redis, numberOfKeys: number, ...args: ScriptArgument[]): Promise<unknown> {
    return this.functionOn(redis).call(redis, numberOfKeys, ...args) as Promise<unknown>;
  }

  /** Queues the script in a pipeline of `redis`. */
  queue(
    pipeline: ChainableCommander,
    numberOfKeys: number,
    ...args: ScriptArgument[]
  ): ChainableCommander {
    const { redis } = pipeline as unknown as { redis: Redis };
    // The connection's function, run with the pipeline as `this` (what a pipeline copies).
    this.functionOn(redis).call(pipeline, numberOfKeys, ...args);
    return pipeline;
  }

  defineOn(redis: Redis): void {
    if (!Object.hasOwn(redis.scriptsSet, this.property))
      redis.defineCommand(this.property, { lua: this.lua });
  }

  private functionOn(redis: Redis): ScriptFunction {
    this.defineOn(redis);
    return (redis as unknown as Record<string, ScriptFunction>)[this.property]!;
  }
}

/** Defines every script on a new connection, and the ones made later as they are: before any
 * command, since a pipeline (an auto-pipelined connection's too) has only the scripts its
 * connection had when it was made. */
export function defineScripts(redis: Redis): void {
  for (const script of scripts) script.defineOn(redis);
  connections.add(redis);
  redis.once('end', () => connections.delete(redis));
}
