// Every test file closes the connections it opened, so jest exits without waiting.
import { stopAuthCache } from '@parley/auth';
import { disconnectPrisma } from '@parley/db';
import { disconnectRedis } from '@parley/events';

afterAll(async () => {
  await Promise.all([disconnectPrisma(), disconnectRedis(), stopAuthCache()]);
});
