/**
 * The PostgreSQL schema, as numbered migrations applied in order at start. Several nodes may start
 * at once: the migrations run in one transaction under an advisory lock, so exactly one node
 * applies each and the others wait and then see them done. A database whose schema is newer than
 * this build knows is refused: an older node must not write to a layout it does not understand.
 *
 * Layout (README "PostgreSQL"): every table of project data is keyed by (project_id, …), so it can
 * be distributed by project with Citus (`create_distributed_table(table, 'project_id')`) and no
 * request joins or transacts across projects; service records (teams, keys, the project index,
 * queues) live in one small key-value table, a Citus reference table. Names that are bytes in git
 * (ref names, branch names, locked paths) are stored as bytea; object ids are 20-byte bytea.
 *
 * - objects: the raw body and its annex (src/store/asyncTypes.ts putObject), type as a code
 *   (src/store/postgres/codec.ts); immutable, inserted with ON CONFLICT DO NOTHING.
 * - commits: the commit index (src/store/types.ts CommitInfo); `parents` is the parents' ids
 *   concatenated (20 bytes each), so a batch of commits goes in one multi-row statement.
 * - commit_objects: a commit's introducedObjects() list (src/git/introducedObjects.ts).
 * - refs, worktrees: moved by compare-and-swap in the transaction that writes the change; a
 *   working tree's locked paths are one bytea, each path's bytes followed by a NUL (codec.ts).
 * - versions: one row per project; a write transaction locks it (SELECT … FOR UPDATE) before it
 *   reads or writes the project's refs, working trees or version (src/store/postgres/writeTx.ts).
 * - records: service records, msgpack-encoded, in key order (COLLATE "C": byte order).
 * - rate_buckets (migration 2): the token buckets of the rate limits, one per API key, shared by
 *   the nodes (src/store/asyncTypes.ts SharedRateLimits); unlogged.
 *
 * - objects' bodies are kept uncompressed, in the row up to a page (migration 4).
 * - forms (migration 5): pack-ready forms (src/store/types.ts DeflatedObject), one row per object
 *   that has one, beside its raw copy (every object keeps its raw copy on this backend): the zlib
 *   stream, the object's type and body size, and for a delta its base, the delta's size and depth.
 *   Inserted with ON CONFLICT DO NOTHING (a form, once kept, is replaced only by a collection).
 * - collections, collection_journal (migration 2): a project's garbage collection under way, one
 *   row while it runs (src/store/asyncTypes.ts CollectionWrites), and the ids its writers journal
 *   meanwhile (src/store/postgres/writeTx.ts).
 *
 * Migration 1 was edited before any release (the groundwork's version had no table for commit
 * object lists, parents and locked paths as bytea[], and an unused pack-form table); no database outside the tests
 * ever held it. From the first release on, a change is a new migration.
 */
import type { Sql } from 'postgres';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** pg_advisory_xact_lock key of the migrations (any constant shared by every node). */
export const MIGRATION_LOCK_KEY = 0x7ee_4005;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'objects, commit index, commit object lists, refs, working trees, versions, records',
    sql: `
      CREATE TABLE treehouse_objects (
        project_id bigint NOT NULL,
        oid bytea NOT NULL,
        type smallint NOT NULL,
        body bytea NOT NULL,
        annex bytea,
        PRIMARY KEY (project_id, oid)
      );
      CREATE TABLE treehouse_commits (
        project_id bigint NOT NULL,
        oid bytea NOT NULL,
        tree bytea NOT NULL,
        parents bytea NOT NULL,
        commit_time double precision NOT NULL,
        generation integer NOT NULL,
        PRIMARY KEY (project_id, oid)
      );
      CREATE TABLE treehouse_commit_objects (
        project_id bigint NOT NULL,
        oid bytea NOT NULL,
        records bytea NOT NULL,
        PRIMARY KEY (project_id, oid)
      );
      CREATE TABLE treehouse_refs (
        project_id bigint NOT NULL,
        name bytea NOT NULL,
        oid bytea NOT NULL,
        PRIMARY KEY (project_id, name)
      );
      CREATE TABLE treehouse_worktrees (
        project_id bigint NOT NULL,
        branch bytea NOT NULL,
        tree bytea NOT NULL,
        locks bytea NOT NULL,
        PRIMARY KEY (project_id, branch)
      );
      CREATE TABLE treehouse_versions (
        project_id bigint PRIMARY KEY,
        version bigint NOT NULL
      );
      CREATE TABLE treehouse_records (
        key text COLLATE "C" PRIMARY KEY,
        value bytea NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'garbage collection: the collection under way per project and its journal',
    // The collection's fields are kept as given (text), so a collector reads back exactly the
    // state it wrote and tells its own run from one that took over.
    sql: `
      CREATE TABLE treehouse_collections (
        project_id bigint PRIMARY KEY,
        id text NOT NULL,
        started_at text NOT NULL
      );
      CREATE TABLE treehouse_collection_journal (
        project_id bigint NOT NULL,
        oid bytea NOT NULL,
        PRIMARY KEY (project_id, oid)
      );
    `,
  },
  {
    version: 3,
    name: 'rate limit buckets shared by the nodes',
    // UNLOGGED: a bucket is not worth a WAL record per request; one lost to a crash (or absent on a
    // promoted standby) starts full again, which only lets a key burst once more.
    sql: `
      CREATE UNLOGGED TABLE treehouse_rate_buckets (
        key text COLLATE "C" PRIMARY KEY,
        tokens double precision NOT NULL,
        taken boolean NOT NULL,
        updated_at timestamptz NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'object bodies kept uncompressed, in the row up to a page',
    // Bodies are kept as they are, not through pglz, and in the row itself while it fits a page
    // (toast_tuple_target 8160, the most PostgreSQL takes), out of line beyond: no compression and
    // no TOAST rows for a typical source file. 10,000 objects of 3.4 KB by COPY in one durable
    // transaction: 230-560 ms of database CPU compressed, 200-310 uncompressed out of line, 110-230
    // in the row (README "PostgreSQL", "Large writes by COPY"). The raw copies take what LMDB's raw copies take.
    // Rows stored before keep their layout.
    sql: `
      ALTER TABLE treehouse_objects ALTER COLUMN body SET STORAGE EXTERNAL;
      ALTER TABLE treehouse_objects SET (toast_tuple_target = 8160);
    `,
  },
  {
    version: 5,
    name: 'pack-ready forms',
    // A table of its own rather than columns of treehouse_objects: a form is added after its object
    // (the deflate cache), and an UPDATE of an object's row would write its body again (in the row up
    // to a page). Type and body size are copied from the object when the form is inserted, so a
    // clone reads forms alone. Forms are zlib streams already: no pglz, in the row up to a page.
    sql: `
      CREATE TABLE treehouse_forms (
        project_id bigint NOT NULL,
        oid bytea NOT NULL,
        type smallint NOT NULL,
        inflated_bytes bigint NOT NULL,
        deflated bytea NOT NULL,
        base bytea,
        delta_bytes bigint,
        depth integer NOT NULL,
        PRIMARY KEY (project_id, oid)
      );
      ALTER TABLE treehouse_forms ALTER COLUMN deflated SET STORAGE EXTERNAL;
      ALTER TABLE treehouse_forms SET (toast_tuple_target = 8160);
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';
}

/** Applies the migrations the database lacks; returns the versions before and after. */
export async function migrate(sql: Sql): Promise<{ from: number; to: number }> {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    await tx`
      CREATE TABLE IF NOT EXISTS treehouse_schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`;
    const [{ current }] = await tx<Array<{ current: number | null }>>`SELECT max(version) AS current FROM treehouse_schema_migrations`;
    const from = current ?? 0;
    if (from > SCHEMA_VERSION) {
      throw new SchemaTooNewError(`The database's Treehouse schema is version ${from}; this build knows versions up to ${SCHEMA_VERSION}. Upgrade Treehouse before starting it on this database.`);
    }
    for (const migration of MIGRATIONS) {
      if (migration.version <= from) continue;
      await tx.unsafe(migration.sql);
      await tx`INSERT INTO treehouse_schema_migrations (version, name) VALUES (${migration.version}, ${migration.name})`;
    }
    return { from, to: SCHEMA_VERSION };
  });
}
