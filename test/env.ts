// Runs in every test worker before the tests: the services global-setup.ts found, quiet logs,
// and uploads in a scratch directory, never in the checkout.
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.NODE_ENV = 'test';
process.env.LOG_LEVEL ??= 'error';
// Every test client runs on localhost; rate-limits.test.ts turns the limits back on.
process.env.RATE_LIMITING_EXEMPT_LOCALHOST ??= 'true';
process.env.LOCAL_UPLOADS_DIR ??= join(tmpdir(), 'parley-test-uploads');
