import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.js';
import { loadConfig, type Limits } from '../../src/service/config.js';
import { openTreehouse, type Treehouse } from '../../src/service/treehouse.js';
import { openStore } from '../../src/store/open.js';
import { scratchDir } from './git.js';
import { freshDatabase } from './postgres.js';

/**
 * The backend test servers run on: `postgres` when TREEHOUSE_TEST_BACKEND says so (the PostgreSQL
 * project of vitest.config.ts, which runs the HTTP and interop suites a second time), else LMDB.
 */
export const TEST_BACKEND: 'lmdb' | 'postgres' = process.env.TREEHOUSE_TEST_BACKEND === 'postgres' ? 'postgres' : 'lmdb';
/** The secret of PostgreSQL test servers (the backend requires a configured one). */
const TEST_SECRET = 'treehouse-test-secret';

/**
 * On PostgreSQL, the database standing for each reused data directory (a test that restarts a
 * server on the same data finds it there): kept until the run's cluster stops.
 */
const databasesByDataDir = new Map<string, Promise<string>>();

/**
 * The environment that puts a test server on PostgreSQL, and how to drop its database after it: the
 * database of `dataDir` when a server had one (a restart on the same data), else a fresh one.
 * `kept`: the caller chose the data directory and keeps it, so its database is kept too.
 */
async function postgresEnv(dataDir: string, kept: boolean): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  let drop = async () => {};
  let url = databasesByDataDir.get(dataDir);
  if (!url) {
    const database = freshDatabase('http');
    url = database.then((made) => made.url);
    databasesByDataDir.set(dataDir, url);
    if (!kept) {
      drop = async () => {
        databasesByDataDir.delete(dataDir);
        await (await database).drop();
      };
    }
  }
  // Small pools: a test file may hold several servers, and the cluster is shared by the whole run.
  const env = { TREEHOUSE_DATABASE_URL: await url, TREEHOUSE_SECRET: TEST_SECRET, TREEHOUSE_DATABASE_READ_CONNECTIONS: '4', TREEHOUSE_DATABASE_WRITE_CONNECTIONS: '4' };
  return { env, drop };
}

export interface TestServer {
  url: string;
  key: string;
  th: Treehouse;
  app: FastifyInstance;
  dataDir: string;
  call(method: string, path: string, body?: unknown, options?: { key?: string | null; headers?: Record<string, string>; raw?: string }): Promise<ApiResponse>;
  close(): Promise<void>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

/**
 * A real server on 127.0.0.1 with a fresh data directory (on PostgreSQL, TEST_BACKEND, also a fresh
 * database), team "default" and its first key.
 */
export async function startTestServer(
  options: { limits?: Partial<Limits>; env?: Record<string, string>; /** Reuse (and keep) this data directory. */ dataDir?: string } = {},
): Promise<TestServer> {
  const dir = options.dataDir ? { path: options.dataDir, remove: () => {} } : scratchDir('treehouse-http-');
  // A long keep-alive: the server runs in the test's process, so a test that blocks the loop with
  // synchronous git for seconds stops both sides' idle timers, and a client reusing a pooled
  // connection could race the server closing it (ECONNRESET). Tests of the timeout set their own.
  const database = TEST_BACKEND === 'postgres' ? await postgresEnv(dir.path, options.dataDir !== undefined) : { env: {}, drop: async () => {} };
  const config = loadConfig({ TREEHOUSE_DATA_DIR: dir.path, PORT: '0', TREEHOUSE_KEEP_ALIVE_TIMEOUT_MS: '60000', ...database.env, ...options.env });
  config.limits = { ...config.limits, ...options.limits };
  const th = openTreehouse(config, await openStore(config));
  await th.checkSecret();
  // A reused data directory already has team default: give this server a key of its own.
  const key = (await th.accounts.bootstrap()) ?? (await th.accounts.createKey('default', 'test')).key;
  const app = buildApp(th, { logLevel: 'silent' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  config.publicBaseUrl = url;
  th.start();
  return {
    url,
    key,
    th,
    app,
    dataDir: dir.path,
    async call(method, path, body, callOptions = {}) {
      const headers: Record<string, string> = { ...callOptions.headers };
      const useKey = callOptions.key === undefined ? key : callOptions.key;
      if (useKey) headers.authorization = `Bearer ${useKey}`;
      let payload: string | undefined = callOptions.raw;
      if (body !== undefined) payload = JSON.stringify(body);
      if (payload !== undefined) headers['content-type'] ??= 'application/json';
      const response = await fetch(url + path, { method, headers, body: payload });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not JSON: keep the text.
      }
      return { status: response.status, headers: response.headers, body: parsed };
    },
    async close() {
      await app.close();
      await th.stop();
      await th.close();
      await database.drop();
      dir.remove();
    },
  };
}
