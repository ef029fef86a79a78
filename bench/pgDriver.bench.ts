/**
 * The PostgreSQL driver for the store (issue 15: "the `pg` driver or `postgres` (porsager), your
 * choice, measured"): the operations the store makes most, on the same embedded cluster, with
 * each driver: a read of one object by key (one round trip), a batch of 1,000 objects of about
 * 3.4 KB in one statement, and a compare-and-swap of a ref in a transaction.
 *
 *   npx tsx bench/pgDriver.bench.ts
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import postgres from 'postgres';
import { Bench } from 'tinybench';
import { freshDatabase, startPostgres } from '../test/support/postgres.js';

const OBJECT_BYTES = 3_400;
const BATCH = 1_000;

async function main(): Promise<void> {
  const database = await freshDatabase('driver_bench');
  const pool = new pg.Pool({ connectionString: database.url, max: 4 });
  const sql = postgres(database.url, { max: 4, onnotice: () => undefined });
  await pool.query(`CREATE TABLE objects (project_id int NOT NULL, oid bytea NOT NULL, body bytea NOT NULL, PRIMARY KEY (project_id, oid))`);
  await pool.query(`CREATE TABLE refs (project_id int NOT NULL, name text NOT NULL, oid bytea NOT NULL, PRIMARY KEY (project_id, name))`);
  const seedIds: Buffer[] = [];
  for (let i = 0; i < 2_000; i++) seedIds.push(randomBytes(20));
  await pool.query(`INSERT INTO objects SELECT 1, unnest($1::bytea[]), $2`, [seedIds, randomBytes(OBJECT_BYTES)]);
  await pool.query(`INSERT INTO refs VALUES (1, 'refs/heads/main', $1)`, [randomBytes(20)]);
  let project = 100;

  const bench = new Bench({ time: 2_000, warmupTime: 300 });
  bench
    .add('pg: read one object by key', async () => {
      await pool.query('SELECT body FROM objects WHERE project_id = 1 AND oid = $1', [seedIds[(Math.random() * seedIds.length) | 0]]);
    })
    .add('postgres: read one object by key', async () => {
      await sql`SELECT body FROM objects WHERE project_id = 1 AND oid = ${seedIds[(Math.random() * seedIds.length) | 0]}`;
    })
    .add(`pg: insert ${BATCH} objects in one statement`, async () => {
      const ids = Array.from({ length: BATCH }, () => randomBytes(20));
      const bodies = Array.from({ length: BATCH }, () => randomBytes(OBJECT_BYTES));
      await pool.query('INSERT INTO objects SELECT $1, * FROM unnest($2::bytea[], $3::bytea[]) ON CONFLICT DO NOTHING', [project++, ids, bodies]);
    })
    .add(`postgres: insert ${BATCH} objects in one statement`, async () => {
      const rows = Array.from({ length: BATCH }, () => ({ project_id: project, oid: randomBytes(20), body: randomBytes(OBJECT_BYTES) }));
      project++;
      await sql`INSERT INTO objects ${sql(rows)} ON CONFLICT DO NOTHING`;
    })
    .add('pg: compare-and-swap a ref in a transaction', async () => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const current = await client.query('SELECT oid FROM refs WHERE project_id = 1 AND name = $1', ['refs/heads/main']);
        await client.query('UPDATE refs SET oid = $1 WHERE project_id = 1 AND name = $2 AND oid = $3', [randomBytes(20), 'refs/heads/main', current.rows[0].oid]);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    })
    .add('postgres: compare-and-swap a ref in a transaction', async () => {
      await sql.begin(async (tx) => {
        const [current] = await tx`SELECT oid FROM refs WHERE project_id = 1 AND name = ${'refs/heads/main'}`;
        await tx`UPDATE refs SET oid = ${randomBytes(20)} WHERE project_id = 1 AND name = ${'refs/heads/main'} AND oid = ${current.oid}`;
      });
    });
  await bench.run();
  console.table(bench.table());
  await pool.end();
  await sql.end();
  await database.drop();
  await (await startPostgres()).stop();
}

await main();
