/**
 * vitest global setup: one PostgreSQL cluster for the whole test run (test/support/postgres.ts),
 * started before the test files and stopped after them. Its URL reaches the test processes through
 * the environment, which the forked workers inherit; each test file makes a database of its own.
 */
import { startPostgres } from './postgres.js';

export const POSTGRES_URL_ENV = 'TREEHOUSE_TEST_POSTGRES_URL';

export default async function setup(): Promise<() => Promise<void>> {
  const cluster = await startPostgres();
  process.env[POSTGRES_URL_ENV] = cluster.url;
  return () => cluster.stop();
}
