/**
 * The PostgreSQL schema's migrations on a real server (test/support/postgres.ts): applied once even
 * when several nodes start together, a database of an earlier schema is brought up to date with
 * its data kept, and a schema newer than the build is refused.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate, SCHEMA_VERSION, SchemaTooNewError } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { freshDatabase } from '../support/postgres.js';

let database: { url: string; drop: () => Promise<void> };
beforeAll(async () => {
  database = await freshDatabase('migrations');
}, 120_000);
afterAll(() => database?.drop());

describe('migrations', () => {
  it('apply once, under one lock, however many nodes start at the same time', async () => {
    const nodes = Array.from({ length: 4 }, () => postgres(database.url, { max: 1, onnotice: () => undefined }));
    try {
      const results = await Promise.all(nodes.map((sql) => migrate(sql)));
      expect(results.filter((result) => result.from === 0)).toHaveLength(1);
      expect(results.every((result) => result.to === SCHEMA_VERSION)).toBe(true);
      const applied = await nodes[0]`SELECT version, name FROM treehouse_schema_migrations ORDER BY version`;
      expect(applied.map((row) => row.version)).toEqual(MIGRATIONS.map((migration) => migration.version));
      const tables = await nodes[0]`SELECT tablename FROM pg_tables WHERE tablename LIKE 'treehouse_%' ORDER BY tablename`;
      expect(tables.map((row) => row.tablename)).toEqual([
        'treehouse_collection_journal',
        'treehouse_collections',
        'treehouse_commit_objects',
        'treehouse_commits',
        'treehouse_forms',
        'treehouse_objects',
        'treehouse_rate_buckets',
        'treehouse_records',
        'treehouse_refs',
        'treehouse_schema_migrations',
        'treehouse_versions',
        'treehouse_worktrees',
      ]);
      // Every table of project data leads its key with project_id (distribution by project).
      const keys = await nodes[0]`
        SELECT c.relname AS table, a.attname AS first
        FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
        WHERE i.indisprimary AND c.relname LIKE 'treehouse_%' AND c.relname NOT IN ('treehouse_records', 'treehouse_rate_buckets', 'treehouse_schema_migrations')`;
      for (const row of keys) expect(row.first, row.table).toBe('project_id');
      // Running again changes nothing.
      expect(await migrate(nodes[1])).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
    } finally {
      await Promise.all(nodes.map((sql) => sql.end()));
    }
  });

  it("brings a database of the first release's schema, with data in it, up to date and keeps the data", async () => {
    const older = await freshDatabase('migrations_v1');
    const sql = postgres(older.url, { max: 1, onnotice: () => undefined });
    try {
      // What a build that knew migration 1 alone left behind.
      await sql.begin(async (tx) => {
        await tx.unsafe(MIGRATIONS[0].sql);
        await tx`CREATE TABLE treehouse_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
        await tx`INSERT INTO treehouse_schema_migrations (version, name) VALUES (1, ${MIGRATIONS[0].name})`;
        await tx`INSERT INTO treehouse_objects (project_id, oid, type, body) VALUES (7, ${Buffer.alloc(20, 1)}, 3, ${Buffer.from('kept')})`;
      });
      expect(await migrate(sql)).toEqual({ from: 1, to: SCHEMA_VERSION });
      expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(2);
      const [{ body }] = await sql`SELECT body FROM treehouse_objects WHERE project_id = 7`;
      expect(body).toEqual(Buffer.from('kept'));
      await sql`INSERT INTO treehouse_collection_journal (project_id, oid) VALUES (7, ${Buffer.alloc(20, 1)})`;
      expect((await sql`SELECT count(*)::int AS count FROM treehouse_collection_journal`)[0].count).toBe(1);
      // Objects stored before pack-ready forms (migration 5) have none: the deflate cache's scan at start finds them.
      const store = await PostgresStore.open({ url: older.url });
      try {
        expect(await store.listUndeflated!(null, 10)).toEqual({ undeflated: [{ project: 7, oid: Buffer.alloc(20, 1) }], next: null });
      } finally {
        await store.close();
      }
    } finally {
      await sql.end();
      await older.drop();
    }
  });

  it('refuses a database whose schema is newer than this build knows, and changes nothing', async () => {
    const sql = postgres(database.url, { max: 1, onnotice: () => undefined });
    try {
      await sql`INSERT INTO treehouse_schema_migrations (version, name) VALUES (${SCHEMA_VERSION + 1}, 'from the future')`;
      await expect(migrate(sql)).rejects.toBeInstanceOf(SchemaTooNewError);
      await expect(migrate(sql)).rejects.toThrow(/newer|Upgrade Treehouse/);
      const [{ count }] = await sql`SELECT count(*)::int AS count FROM treehouse_schema_migrations`;
      expect(count).toBe(MIGRATIONS.length + 1);
    } finally {
      await sql.end();
    }
  });
});
