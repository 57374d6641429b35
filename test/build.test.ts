// The production build (scripts/build.mjs): the bundles run with node alone, from a directory
// with no node_modules above it, as in the runtime image. Catches a dependency that cannot be
// bundled, or a file the bundles read at run time and the build forgot to copy.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getConfig } from '@parley/config';
import { freePort, repoRoot } from '@parley/devservices';

const scratch = mkdtempSync(join(tmpdir(), 'parley-build-'));
const dist = join(scratch, 'dist');
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

/** Runs a bundle from the scratch directory (no node_modules anywhere above it). */
function run(bundle: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [join(dist, bundle), ...args], {
    cwd: scratch,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, NODE_ENV: 'production', ...env },
    timeout: 60_000,
  });
}

describe('production build', () => {
  beforeAll(() => {
    const built = spawnSync(
      process.execPath,
      [join(repoRoot(), 'scripts', 'build.mjs'), join(scratch, 'built')],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(built.stderr).toBe('');
    expect(built.status).toBe(0);
    cpSync(join(scratch, 'built'), dist, { recursive: true });
  }, 150_000);

  it('serves the API from dist/api.cjs with node alone', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [join(dist, 'api.cjs')], {
      cwd: scratch,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'production',
        LOG_LEVEL: 'error',
        PORT: String(port),
        DATABASE_URL: getConfig().DATABASE_URL,
        REDIS_URL: getConfig().REDIS_URL,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let answer: Record<string, unknown> | undefined;
    for (let attempt = 0; attempt < 100 && !answer; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await fetch(`http://127.0.0.1:${port}/api/v1/server_settings`)
        .then((res) => res.json() as Promise<Record<string, unknown>>)
        .catch(() => undefined);
    }
    // server_settings reads the organization through Prisma: the query compiler loaded.
    expect(answer).toMatchObject({ result: 'success', zulip_feature_level: expect.any(Number) });
    child.kill('SIGTERM');
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    expect(stderr).toBe('');
  });

  it('runs the management command from dist/manage.cjs', () => {
    const help = run('manage.cjs', ['help'], { DATABASE_URL: getConfig().DATABASE_URL });
    expect(help.stderr).toContain('create-organization');
  });

  it('carries sharp beside the bundles, so the worker can make thumbnails', () => {
    // Loaded as the worker bundle loads it (import('sharp') from a file in dist/), with no
    // node_modules but dist's own.
    writeFileSync(
      join(dist, 'sharp-probe.cjs'),
      `import('sharp').then(async ({ default: sharp }) => {
        const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: 'red' } }).png().toBuffer();
        const { info } = await sharp(png).resize(20, 20, { fit: 'inside' }).webp().toBuffer({ resolveWithObject: true });
        process.stdout.write(JSON.stringify(info));
      });`,
    );
    const probe = run('sharp-probe.cjs', []);
    expect(probe.stderr).toBe('');
    expect(JSON.parse(probe.stdout)).toMatchObject({ format: 'webp', width: 20, height: 15 });
  });
});
