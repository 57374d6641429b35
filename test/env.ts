// Runs in every test worker before the tests: the services global-setup.ts found, and quiet
// logs.
process.env.NODE_ENV = 'test';
process.env.LOG_LEVEL ??= 'error';
