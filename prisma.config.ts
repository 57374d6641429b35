// Prisma 6.19 with the WASM ("js") schema engine: the only Prisma line whose CLI can migrate
// without downloading a native engine (see README, "Why Prisma 6").
import { existsSync } from 'node:fs';
import { PrismaPg } from '@prisma/adapter-pg';
import { defineConfig } from 'prisma/config';
import { reportCatalogTypesAsText } from './prisma/catalog-types';

reportCatalogTypesAsText();

// Same precedence as packages/config: the environment first, then a local .env file.
if (existsSync('.env')) process.loadEnvFile('.env');

// The schema's datasource reads env("DATABASE_URL"); Prisma silently falls back to downloading
// a native engine when it cannot, so it must always be set.
process.env.DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/parley';

export default defineConfig({
  engine: 'js',
  experimental: { adapter: true },
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  adapter: () => Promise.resolve(new PrismaPg({ connectionString: process.env.DATABASE_URL })),
});
