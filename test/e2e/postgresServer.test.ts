/**
 * The server process and the command-line tool on PostgreSQL (TREEHOUSE_DATABASE_URL), each on a
 * database of its own on the test run's cluster (test/support/postgres.ts): what selecting the
 * backend does, and what it refuses.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/store/postgres/migrations.js';
import { scratchDir } from '../support/git.js';
import { freshDatabase } from '../support/postgres.js';
import { freePort, repoRoot, startServerProcess, type ServerProcess } from '../support/process.js';

const work = scratchDir('treehouse-pg-server-');
const servers: ServerProcess[] = [];
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const server of servers) server.child.kill('SIGKILL');
  await Promise.all(servers.map((server) => server.exited));
  for (const drop of drops) await drop();
  work.remove();
});

const SECRET = 'a-secret-every-node-shares';

async function database(): Promise<string> {
  const made = await freshDatabase('server');
  drops.push(made.drop);
  return made.url;
}

/** The environment of a node of `url`; its data directory is a path that does not exist. */
function nodeEnv(url: string, name: string): Record<string, string> {
  return { TREEHOUSE_DATABASE_URL: url, TREEHOUSE_SECRET: SECRET, TREEHOUSE_DATA_DIR: join(work.path, name), TREEHOUSE_RATE_PER_SECOND: '0' };
}

async function start(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess(env);
  servers.push(server);
  return server;
}

/** Runs a program of the repository (the server or the CLI) to its exit, with `env` over ours minus the test backend's. */
function run(script: 'server.ts' | 'cli.ts', args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(repoRoot, 'src', script), ...args],
      { cwd: repoRoot, env: { ...process.env, TREEHOUSE_DATABASE_URL: '', TREEHOUSE_SECRET: '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

/** A server that must refuse to start: its exit code and output. */
async function refusedStart(env: Record<string, string>): Promise<{ code: number; output: string }> {
  return run('server.ts', [], { PORT: String(await freePort()), HOST: '127.0.0.1', ...env });
}

async function teamNames(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    const [{ count }] = await sql`SELECT count(*)::int AS count FROM treehouse_records WHERE key LIKE 'team-name/%'`;
    return count;
  } finally {
    await sql.end();
  }
}

describe('the server on PostgreSQL', () => {
  it('starts on an empty database with a first key, keeps nothing on disk, and keeps acknowledged writes across kill -9', async () => {
    const url = await database();
    const env = nodeEnv(url, 'node-a');
    const server = await start(env);
    const key = (await server.waitFor(/^API key for team default: (th_\S+)$/m))[1];
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.url}/api/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ title: 'On PostgreSQL' }) });
    expect(created.status).toBe(201);
    const project = (await created.json()).project.id;
    const written = await fetch(`${server.url}/api/v1/projects/${project}/files/batch`, { method: 'POST', headers, body: JSON.stringify({ files: [{ path: 'durable.txt', content: 'kept' }] }) });
    expect(written.status).toBe(200);
    server.child.kill('SIGKILL');
    await server.exited;
    // A stateless node: no data directory, no generated secret.
    expect(existsSync(env.TREEHOUSE_DATA_DIR)).toBe(false);

    const again = await start(nodeEnv(url, 'node-b'));
    expect(again.output()).not.toContain('API key for team default');
    const file = await (await fetch(`${again.url}/api/v1/projects/${project}/files/durable.txt`, { headers })).json();
    expect(file.content).toBe('kept');
    again.child.kill('SIGTERM');
    expect(await again.exited).toEqual({ code: 0, signal: null });
  });

  it('manages teams and keys from the command line on the same database, and refuses backup and restore there', async () => {
    const url = await database();
    const env = nodeEnv(url, 'cli');
    const team = await run('cli.ts', ['teams', 'create', 'acme'], env);
    expect(team.code, team.output).toBe(0);
    const created = await run('cli.ts', ['keys', 'create', '--team', 'acme', '--name', 'ci'], env);
    expect(created.code, created.output).toBe(0);
    const acmeKey = created.output.trim().split('\n').at(-1)!;
    expect(acmeKey).toMatch(/^th_[A-Za-z0-9_-]{32,}$/);
    const listed = await run('cli.ts', ['keys', 'list', '--team', 'acme'], env);
    expect(listed.output).toMatch(/^key_\S+\tci\t.*\tactive$/m);
    const keyId = listed.output.split('\t')[0];

    const server = await start(nodeEnv(url, 'cli-node'));
    // Team acme exists, so the database is not empty: no first key.
    expect(server.output()).not.toContain('API key for team default');
    const asAcme = { authorization: `Bearer ${acmeKey}` };
    expect((await fetch(`${server.url}/api/v1/projects`, { headers: asAcme })).status).toBe(200);
    const revoked = await run('cli.ts', ['keys', 'revoke', keyId], env);
    expect(revoked.output).toContain(`revoked key ${keyId}`);
    // The server knew the key (it may keep live keys): the revocation's signal makes it forget.
    for (let tries = 0; (await fetch(`${server.url}/api/v1/projects`, { headers: asAcme })).status !== 401; tries++) {
      expect(tries, 'the revoked key is still accepted').toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const backupDir = join(work.path, 'backup');
    const backup = await run('cli.ts', ['backup', backupDir], env);
    expect(backup.code).toBe(1);
    expect(backup.output).toContain('pg_dump');
    expect(existsSync(backupDir)).toBe(false);
    const restore = await run('cli.ts', ['restore', backupDir], env);
    expect(restore.code).toBe(1);
    expect(restore.output).toContain('pg_restore');
    expect(existsSync(env.TREEHOUSE_DATA_DIR)).toBe(false);
  });

  it('refuses to start without TREEHOUSE_SECRET, or with another secret than the database was first used with, and writes nothing', async () => {
    const url = await database();
    const noSecret = await refusedStart({ TREEHOUSE_DATABASE_URL: url, TREEHOUSE_DATA_DIR: join(work.path, 'no-secret') });
    expect(noSecret.code).toBe(1);
    expect(noSecret.output).toContain('TREEHOUSE_DATABASE_URL needs TREEHOUSE_SECRET');
    expect(existsSync(join(work.path, 'no-secret'))).toBe(false);

    const first = await start(nodeEnv(url, 'first'));
    await first.waitFor(/^API key for team default: /m);
    const other = await refusedStart({ ...nodeEnv(url, 'other'), TREEHOUSE_SECRET: 'not-the-secret-of-this-database' });
    expect(other.code).toBe(1);
    expect(other.output).toContain('sealed with another secret');
    expect(other.output).not.toContain('API key for team default');
    expect(await teamNames(url)).toBe(1);
    // The node with the right secret still serves.
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
  });

  it('refuses a URL that is not postgres://, a database it cannot reach, and a schema newer than it knows', async () => {
    const notPostgres = await refusedStart({ TREEHOUSE_DATABASE_URL: 'mysql://localhost/treehouse', TREEHOUSE_SECRET: SECRET });
    expect(notPostgres.code).toBe(1);
    expect(notPostgres.output).toContain('must start with postgres://');

    const closedPort = await freePort();
    const unreachable = await refusedStart({ TREEHOUSE_DATABASE_URL: `postgres://treehouse:x@127.0.0.1:${closedPort}/treehouse`, TREEHOUSE_SECRET: SECRET });
    expect(unreachable.code).toBe(1);
    expect(unreachable.output).toContain('StoreUnavailableError');

    const url = await database();
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      await sql`CREATE TABLE treehouse_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
      await sql`INSERT INTO treehouse_schema_migrations (version, name) VALUES (${SCHEMA_VERSION + 1}, 'from a newer build')`;
    } finally {
      await sql.end();
    }
    const tooNew = await refusedStart({ TREEHOUSE_DATABASE_URL: url, TREEHOUSE_SECRET: SECRET });
    expect(tooNew.code).toBe(1);
    expect(tooNew.output).toContain('Upgrade Treehouse');
    const check = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      const tables = await check`SELECT tablename FROM pg_tables WHERE tablename LIKE 'treehouse_%'`;
      expect(tables.map((row) => row.tablename)).toEqual(['treehouse_schema_migrations']);
    } finally {
      await check.end();
    }
  });
});
