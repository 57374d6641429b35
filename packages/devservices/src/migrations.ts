// Applies the committed SQL migrations with `prisma migrate deploy` (Prisma 6's WASM engine:
// nothing to download).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

const DONE = /All migrations have been successfully applied|No pending migrations to apply/;

export function repoRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'pnpm-workspace.yaml'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('Cannot find the repository root (pnpm-workspace.yaml)');
    dir = parent;
  }
  return dir;
}

export function runMigrations(databaseUrl: string): Promise<void> {
  const root = repoRoot();
  const cli = require.resolve('prisma/build/index.js', { paths: [root] });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'migrate', 'deploy'], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        CHECKPOINT_DISABLE: '1',
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let succeeded = false;
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      // The WASM schema engine keeps the process alive 10-60 s after finishing; once Prisma
      // says the work is done there is nothing left to wait for.
      if (!succeeded && DONE.test(output)) {
        succeeded = true;
        child.kill('SIGTERM');
      }
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('exit', (code) => {
      if (succeeded || code === 0) resolve();
      else reject(new Error(`prisma migrate deploy failed (exit ${String(code)}):\n${output}`));
    });
  });
}
