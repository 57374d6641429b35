#!/usr/bin/env node
// `npm start` and `npm test` on a fresh clone need nothing but Node.js 20+: this installs the
// workspace with the pinned pnpm (through npx when pnpm is not installed) whenever the
// lockfile changed since the last install, regenerates the Prisma client whenever the schema
// changed since it was generated (a pull can change one without the other), then runs the
// real command.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PNPM_VERSION = '12.21.0';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const commands = {
  start: [['run', 'serve']],
  test: [
    ['run', 'lint'],
    ['run', 'typecheck'],
    ['run', 'jest'],
  ],
};

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 12)) {
  console.error(`Parley needs Node.js 20.12 or newer; this is ${process.version}.`);
  process.exit(1);
}

const steps = commands[process.argv[2]];
if (!steps) {
  console.error(`usage: node scripts/bootstrap.mjs ${Object.keys(commands).join('|')}`);
  process.exit(2);
}

function pnpm() {
  const found = spawnSync('pnpm', ['--version'], {
    encoding: 'utf8',
    shell: process.platform === 'win32',
  });
  if (found.status === 0 && found.stdout.trim() === PNPM_VERSION) return ['pnpm'];
  return ['npx', '--yes', `pnpm@${PNPM_VERSION}`];
}

function run(argv, extraEnv = {}) {
  const [command, ...args] = argv;
  const result = spawnSync(command, args, {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...extraEnv },
    shell: process.platform === 'win32',
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const manager = pnpm();
const marker = join(root, 'node_modules', '.modules.yaml');
const lockfile = join(root, 'pnpm-lock.yaml');
if (!existsSync(marker) || statSync(lockfile).mtimeMs > statSync(marker).mtimeMs) {
  run([...manager, 'install', '--frozen-lockfile'], { CI: 'true', CHECKPOINT_DISABLE: '1' });
}
const schema = join(root, 'prisma', 'schema.prisma');
const generated = generatedSchema();
if (!generated || statSync(schema).mtimeMs > statSync(generated).mtimeMs) {
  run([...manager, 'exec', 'prisma', 'generate'], { CHECKPOINT_DISABLE: '1' });
}
for (const step of steps) run([...manager, ...step, ...process.argv.slice(3)]);

/** The schema copy `prisma generate` leaves beside the client it generated, if any. */
function generatedSchema() {
  try {
    const client = createRequire(join(root, 'package.json')).resolve('@prisma/client/package.json');
    const copy = join(
      realpathSync(dirname(client)),
      '..',
      '..',
      '.prisma',
      'client',
      'schema.prisma',
    );
    return existsSync(copy) ? copy : null;
  } catch {
    return null;
  }
}
