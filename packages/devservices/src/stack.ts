// A whole load-balanced Parley on loopback ports, for the topology test and the benchmarks:
// API and events replicas as separate processes, nginx in front with infra/nginx.conf (its
// upstreams, port and paths rewritten for an unprivileged run in a temporary directory).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from './migrations';
import { freePort, releasePort } from './ports';

/** Children that must not outlive this process. A benchmark or test that dies on an error
 * (an uncaught exception, an unhandled rejection, process.exit) skips its `finally`; its
 * replicas then kept running, an events replica kept its shard leases, and the next
 * benchmark's fan-out ran in it, unmeasured. Node runs 'exit' handlers in those cases, not
 * when killed by a signal. */
const ownChildren = new Map<ChildProcess, NodeJS.Signals>();
process.on('exit', () => {
  for (const [child, signal] of ownChildren) child.kill(signal);
});

/** Sends `child` `signal` when this process exits (see ownChildren). */
export function endWithThisProcess(
  child: ChildProcess,
  signal: NodeJS.Signals = 'SIGKILL',
): ChildProcess {
  ownChildren.set(child, signal);
  child.once('exit', () => ownChildren.delete(child));
  return child;
}

export interface StackOptions {
  databaseUrl: string;
  redisUrl: string;
  apiReplicas: number;
  eventsReplicas: number;
  /** Extra environment for every replica (lease and heartbeat settings for tests). */
  env?: Record<string, string>;
  /** Extra environment for one replica, by name (`api1`, `events2`). */
  replicaEnv?: Record<string, Record<string, string>>;
}

export interface Replica {
  name: string;
  port: number;
  process: ChildProcess;
}

export interface Stack {
  /** nginx, in front of everything. */
  url: string;
  api: Replica[];
  events: Replica[];
  /** Starts a replica again on its port (after a kill or a graceful stop). */
  restart(replica: Replica): Promise<void>;
  /** SIGTERM, then waits for the process to exit. */
  stopGracefully(replica: Replica): Promise<number | null>;
  stop(): Promise<void>;
}

export const NGINX_HELP =
  'nginx is needed for this (Debian/Ubuntu: apt-get install nginx; macOS: brew install nginx)';

export function findNginx(): string | undefined {
  for (const candidate of [
    '/usr/sbin/nginx',
    '/usr/local/sbin/nginx',
    '/usr/local/bin/nginx',
    '/opt/homebrew/bin/nginx',
  ]) {
    if (existsSync(candidate)) return candidate;
  }
  const found = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

/** infra/nginx.conf with loopback upstreams, our port, and every path in `dir`. */
export function nginxConfig(
  dir: string,
  port: number,
  apiPorts: number[],
  eventsPorts: number[],
): string {
  const source = readFileSync(join(repoRoot(), 'infra', 'nginx.conf'), 'utf8');
  const upstream = (ports: number[]) =>
    ports.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=2s;`).join('\n');
  const config = source
    .replace(
      /upstream api \{[^}]*?keepalive/s,
      `upstream api {\n${upstream(apiPorts)}\n    keepalive`,
    )
    .replace(
      /upstream events \{[^}]*?keepalive/s,
      `upstream events {\n${upstream(eventsPorts)}\n    keepalive`,
    )
    .replace(/listen 80;/, `listen 127.0.0.1:${port};`)
    .replace(/access_log [^;]+;/, 'access_log off;')
    .replace(/worker_processes auto;/, 'worker_processes 2;');
  if (config === source || !config.includes(`127.0.0.1:${port}`))
    throw new Error('infra/nginx.conf changed shape');
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((name) => `  ${name}_temp_path ${join(dir, name)};`)
    .join('\n');
  return `pid ${join(dir, 'nginx.pid')};\nerror_log ${join(dir, 'error.log')} warn;\n${config.replace(
    /http \{/,
    `http {\n${temp}`,
  )}`;
}

const PORT_VARIABLES = {
  api: 'PORT',
  events: 'EVENTS_PORT',
  worker: 'WORKER_METRICS_PORT',
} as const;

/** The node options a tier's replicas get from the environment (see spawnReplica). */
function nodeArgsOf(kind: 'api' | 'events' | 'worker'): string[] {
  return [
    process.env.PARLEY_REPLICA_NODE_ARGS ?? '',
    process.env[`PARLEY_${kind.toUpperCase()}_NODE_ARGS`] ?? '',
  ]
    .join(' ')
    .split(' ')
    .filter(Boolean);
}

/** A replica of one tier as a process of its own on a loopback port: node itself with tsx's
 * loader (or, with PARLEY_REPLICA_BUNDLES=<dir>, the production bundle `<dir>/<kind>.cjs`; `off`:
 * the sources, to compare), so
 * SIGTERM and SIGKILL reach the server, not a wrapper. Production settings and
 * quiet logs unless `env` says otherwise; stderr is shown, and so are the errors it logs (the
 * logger writes to stdout, which is otherwise dropped). PARLEY_REPLICA_NODE_ARGS adds node
 * options to every replica (profiling a benchmark: `--cpu-prof --cpu-prof-dir=/tmp/prof`),
 * PARLEY_API_NODE_ARGS (_EVENTS_, _WORKER_) to one tier's (comparing a V8 setting on one tier).
 * A worker's port is the one of its metrics. */
export function spawnReplica(
  kind: 'api' | 'events' | 'worker',
  port: number,
  env: Record<string, string> = {},
): ChildProcess {
  const nodeArgs = nodeArgsOf(kind);
  // The production bundles when asked (the benchmarks measure what production runs), else the
  // sources through tsx.
  const bundles = process.env.PARLEY_REPLICA_BUNDLES;
  const command =
    bundles && bundles !== 'off'
      ? ['--enable-source-maps', join(bundles, `${kind}.cjs`)]
      : ['--import', 'tsx', join(repoRoot(), 'apps', kind, 'src', 'main.ts')];
  const child = endWithThisProcess(
    spawn(process.execPath, [...nodeArgs, ...command], {
      cwd: repoRoot(),
      env: {
        ...process.env,
        NODE_ENV: 'production',
        // Quiet unless asked: a benchmark at the production default (http) also measures a log
        // line per request.
        LOG_LEVEL: process.env.PARLEY_REPLICA_LOG_LEVEL ?? 'warn',
        BIND_HOST: '127.0.0.1',
        [PORT_VARIABLES[kind]]: String(port),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  // An unexpected error's line holds its stack: a test that meets a 500 shows where it came from.
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.includes('"level":"error"')) process.stderr.write(`[${kind} :${port}] ${line}\n`);
  });
  return child;
}

function startReplica(
  kind: 'api' | 'events',
  name: string,
  port: number,
  options: StackOptions,
): ChildProcess {
  return spawnReplica(kind, port, {
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    TRUST_PROXY: 'true',
    ...options.env,
    ...options.replicaEnv?.[name],
  });
}

/** Polls `check` until it holds; returns how long that took (tests measure recoveries). */
export async function waitUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return Date.now() - started;
}

export function waitForReady(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const req = request({ host: '127.0.0.1', port, path: '/ready' }, (res) => {
        res.resume();
        if (res.statusCode === 200) return resolve();
        retry();
      });
      req.on('error', retry);
      req.end();
    };
    const retry = () => {
      if (Date.now() > deadline)
        return reject(new Error(`port ${port} not ready after ${timeoutMs} ms`));
      setTimeout(attempt, 100);
    };
    attempt();
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Starts nginx on a free port (ports.ts). A program that is no caller of freePort may still
 * bind that port first: nginx then gives up after a few seconds, and it is started again on
 * another port. */
async function startNginx(
  nginx: string,
  dir: string,
  api: { port: number }[],
  events: { port: number }[],
): Promise<{ proxy: ChildProcess; nginxPort: number }> {
  const args = ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')];
  for (let attempt = 1; ; attempt++) {
    const nginxPort = await freePort();
    writeFileSync(
      join(dir, 'nginx.conf'),
      nginxConfig(
        dir,
        nginxPort,
        api.map((r) => r.port),
        events.map((r) => r.port),
      ),
    );
    const check = spawnSync(nginx, [...args, '-t'], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`nginx rejected the configuration:\n${check.stderr}`);
    const proxy = endWithThisProcess(
      spawn(nginx, [...args, '-g', 'daemon off;'], { stdio: 'inherit' }),
      // nginx's master stops its workers on SIGTERM; SIGKILL would give it no chance to.
      'SIGTERM',
    );
    const outcome = await Promise.race([
      listening(nginxPort, 10_000).then((ok) => (ok ? 'listening' : 'silent')),
      exited(proxy).then(() => 'exited'),
    ]);
    if (outcome === 'listening') return { proxy, nginxPort };
    proxy.kill('SIGKILL');
    await exited(proxy);
    if (attempt === 3)
      throw new Error(`nginx did not start (${outcome}); see ${join(dir, 'error.log')}`);
  }
}

/** Whether something accepts connections on the port within `timeoutMs`. */
async function listening(port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (accepted) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const nginx = findNginx();
  if (!nginx) throw new Error(NGINX_HELP);
  const dir = mkdtempSync(join(tmpdir(), 'parley-nginx-'));
  for (const name of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'])
    mkdirSync(join(dir, name));
  // nginx's workers drop to an unprivileged user when started as root.
  for (const name of ['', 'client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'])
    chmodSync(join(dir, name), 0o777);

  // Ports no connection takes and no other caller gets (ports.ts).
  const api: { name: string; port: number }[] = [];
  for (let i = 0; i < options.apiReplicas; i++)
    api.push({ name: `api${i + 1}`, port: await freePort() });
  const events: { name: string; port: number }[] = [];
  for (let i = 0; i < options.eventsReplicas; i++)
    events.push({ name: `events${i + 1}`, port: await freePort() });
  const replicas: Replica[] = [
    ...api.map((r) => ({ ...r, process: startReplica('api', r.name, r.port, options) })),
    ...events.map((r) => ({ ...r, process: startReplica('events', r.name, r.port, options) })),
  ];
  const kindOf = (replica: Replica) => (replica.name.startsWith('api') ? 'api' : 'events');
  await Promise.all(replicas.map((r) => waitForReady(r.port)));

  const { proxy, nginxPort } = await startNginx(nginx, dir, api, events);
  return {
    url: `http://127.0.0.1:${nginxPort}`,
    api: replicas.filter((r) => kindOf(r) === 'api'),
    events: replicas.filter((r) => kindOf(r) === 'events'),
    async restart(replica) {
      replica.process = startReplica(kindOf(replica), replica.name, replica.port, options);
      await waitForReady(replica.port);
    },
    async stopGracefully(replica) {
      const done = exited(replica.process);
      replica.process.kill('SIGTERM');
      return done;
    },
    async stop() {
      proxy.kill('SIGQUIT');
      // Profiles (any tier's node args) are written only by a process that exits itself.
      for (const replica of replicas)
        replica.process.kill(nodeArgsOf(kindOf(replica)).length > 0 ? 'SIGTERM' : 'SIGKILL');
      await Promise.all([exited(proxy), ...replicas.map((r) => exited(r.process))]);
      for (const port of [nginxPort, ...replicas.map((r) => r.port)]) releasePort(port);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
