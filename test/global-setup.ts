// Finds (or starts) PostgreSQL and Redis once for the whole run, creates and migrates the test
// database, and hands the URLs to the workers through the environment.
import { join } from 'node:path';
import { repoRoot, resolveServices, runMigrations, type Services } from '@parley/devservices';

declare global {
  var __parleyServices: Services | undefined;
}

export default async function globalSetup(): Promise<void> {
  const services = await resolveServices({
    stateDir: join(repoRoot(), '.parley', 'test'),
    databaseName: 'parley_test',
    env: {
      ...process.env,
      DATABASE_URL: process.env.TEST_DATABASE_URL,
      REDIS_URL: process.env.TEST_REDIS_URL,
    },
  });
  await runMigrations(services.databaseUrl);
  process.env.DATABASE_URL = services.databaseUrl;
  // Tests use their own Redis database unless told otherwise, so a development server on the
  // same Redis never sees test notifications (and tests never see its).
  const redisUrl = new URL(services.redisUrl);
  if (!process.env.TEST_REDIS_URL) redisUrl.pathname = '/15';
  process.env.REDIS_URL = redisUrl.toString();
  globalThis.__parleyServices = services;
}
