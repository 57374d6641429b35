// One jest run for the whole workspace: unit tests beside the code (*.test.ts under src/) and
// integration tests under apps/*/test, all against the real PostgreSQL and Redis that
// test/global-setup.ts finds or starts.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/packages', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2023' } }] },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  setupFiles: ['<rootDir>/test/env.ts'],
  setupFilesAfterEnv: ['<rootDir>/test/after-env.ts'],
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  testTimeout: 30000,
};
