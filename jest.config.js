// One jest run for the whole workspace: unit tests beside the code (*.test.ts under src/) and
// integration tests under apps/*/test, all against the real PostgreSQL and Redis that
// test/global-setup.ts finds or starts.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: '<rootDir>/test/environment.ts',
  roots: ['<rootDir>/apps', '<rootDir>/packages', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2023' } }],
    // ESM-only dependencies (the tus server and its srvx), compiled to CommonJS for jest's
    // module system; node itself (tsx, the bundles) loads them as they are.
    '/node_modules/(@tus/[^/]+|srvx)/.+\\.m?js$': [
      '@swc/jest',
      { jsc: { target: 'es2023' }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?(@tus[+/]|srvx[@/]))'],
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  setupFiles: ['<rootDir>/test/env.ts'],
  setupFilesAfterEnv: ['<rootDir>/test/after-env.ts'],
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  testTimeout: 30000,
  // Tests run in one process on a two-core machine (maxWorkers 1 means in band); a connection
  // some test file leaves open must not hold the whole run past its last test. Jest still
  // prints "did not exit" for such a leak: it is a bug to find, not to live with.
  forceExit: true,
};
