// Every test file closes the connections it opened, so jest exits without waiting.
import { stopAuthCache } from '@parley/auth';
import { disconnectPrisma } from '@parley/db';
import { disconnectRedis } from '@parley/events';
// The API's linkifier cache by its own module: loading the API app in every test file would
// cost more than the connection it closes.
import { stopLinkifierCache } from '../apps/api/src/lib/linkifier-cache';
import { outboxSettled } from '../apps/api/src/lib/outbox';
import { checkResponsesAgainstOpenApi, conformanceViolations } from './openapi-conformance';

checkResponsesAgainstOpenApi();

afterAll(() => {
  // Every answer this file's tests received matched the generated OpenAPI description.
  expect(conformanceViolations()).toEqual([]);
});

declare global {
  var closeSharedConnections: (() => Promise<void>) | undefined;
}

// Called by test/environment.ts once the file's own afterAll hooks (which stop its workers and
// servers) have run.
globalThis.closeSharedConnections = async () => {
  // Published outbox rows are deleted after their requests answered: before the pool closes.
  await outboxSettled();
  await Promise.all([disconnectPrisma(), disconnectRedis(), stopAuthCache(), stopLinkifierCache()]);
};
