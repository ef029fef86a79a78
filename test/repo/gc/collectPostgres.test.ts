/**
 * Garbage collection on PostgreSQL beyond what collect.test.ts runs on both backends (issue 18 item
 * 1): the size of a project after 10,000 overwrite cycles and a collection, against a fresh
 * database holding only its final state, and whether the space the collection freed is used again.
 *
 * Sizes on PostgreSQL (README "Garbage collection"): a table's files do not shrink when rows are
 * deleted; VACUUM (autovacuum, run here by hand so the test need not wait for it) marks the space
 * of deleted rows free for the table's next rows, as LMDB's free list does its pages. So the
 * project's *live size* is the bytes its rows take (pg_column_size of each row, bodies as stored,
 * TOASTed or compressed, with their headers) in every table of project data; and the files are
 * judged by whether a second round of as many overwrites, after the first was collected and
 * vacuumed, fits in them rather than adding as much again.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitInTx } from '../../../src/repo/commit.js';
import { collectGarbage } from '../../../src/repo/gc/collect.js';
import { inWriteTx, type Repo } from '../../../src/repo/repo.js';
import { prepareBatch, writeFilesInTx } from '../../../src/repo/writeFiles.js';
import { PostgresStore } from '../../../src/store/postgres/store.js';
import { copyProject, expectOnlyReachable } from '../../support/gc.js';
import { freshDatabase } from '../../support/postgres.js';
import { newTestRepoIn, testPeople, text } from '../../support/store.js';

/** Every table of project data (src/store/postgres/migrations.ts). */
const PROJECT_TABLES = [
  'treehouse_objects',
  'treehouse_commits',
  'treehouse_commit_objects',
  'treehouse_refs',
  'treehouse_worktrees',
  'treehouse_versions',
  'treehouse_collections',
  'treehouse_collection_journal',
];

/** Bytes the project's rows take in every table of project data. */
async function projectRowBytes(sql: postgres.Sql, project: number): Promise<number> {
  const sums = PROJECT_TABLES.map((table) => `(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM ${table} t WHERE t.project_id = $1)`);
  const [row] = await sql.unsafe(`SELECT (${sums.join(' + ')})::float8 AS bytes`, [project]);
  return row.bytes as number;
}

/** What autovacuum does in time: deleted rows' space marked free for the tables' next rows. */
async function vacuum(sql: postgres.Sql): Promise<void> {
  await sql.unsafe(`VACUUM ${PROJECT_TABLES.join(', ')}`);
}

const FILES = 100;
const CYCLES = 10_000;
const CYCLES_PER_WRITE = 100;
const CYCLES_PER_COMMIT = 1_000;
const filePath = (file: number) => `dir${file % 10}/file${file}.txt`;

/** 10,000 overwrite cycles: each overwrites one of the 100 files (a hundred cycles to a write), a commit every 1,000. */
async function overwrite(repo: Repo, round: number): Promise<void> {
  for (let cycle = 0; cycle < CYCLES; cycle += CYCLES_PER_WRITE) {
    await inWriteTx(repo, async (tx) => {
      for (let c = cycle; c < cycle + CYCLES_PER_WRITE; c++) {
        await writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'main', files: [{ path: filePath(c % FILES), content: `round ${round} cycle ${c} of file ${c % FILES}\n` }] }));
      }
      if ((cycle + CYCLES_PER_WRITE) % CYCLES_PER_COMMIT === 0) await commitInTx(tx, { branch: 'main', message: `round ${round} after cycle ${cycle + CYCLES_PER_WRITE}`, people: testPeople });
    });
  }
}

let database: { url: string; drop: () => Promise<void> };
let admin: postgres.Sql;
let store: PostgresStore;
beforeAll(async () => {
  // A database of its own: the tables' files hold this test's project alone.
  database = await freshDatabase('gc_size');
  admin = postgres(database.url, { max: 1, onnotice: () => undefined });
  store = await PostgresStore.open({ url: database.url });
}, 120_000);
afterAll(async () => {
  await store?.close();
  await admin?.end();
  await database?.drop();
});

describe('garbage collection on PostgreSQL', () => {
  it('leaves the project within 1.2x of its live size after 10,000 overwrite cycles of 100 files, and a second round fits in the space freed', async () => {
    const repo = await newTestRepoIn(
      store,
      Array.from({ length: FILES }, (_, file) => text(filePath(file), 'first\n')),
    );
    await overwrite(repo, 1);
    const rowsBefore = await projectRowBytes(admin, repo.project);
    const filesBefore = await store.storageUsedBytes();
    const report = await collectGarbage(repo, { graceMs: 0 });
    expect(report.removedObjects).toBeGreaterThan(CYCLES - FILES * (CYCLES / CYCLES_PER_COMMIT));
    await expectOnlyReachable(repo);
    const rowsAfter = await projectRowBytes(admin, repo.project);

    // The same final state written into a fresh database.
    const fresh = await freshDatabase('gc_live');
    const freshAdmin = postgres(fresh.url, { max: 1, onnotice: () => undefined });
    const freshStore = await PostgresStore.open({ url: fresh.url });
    let live: number;
    try {
      await copyProject(repo, freshStore, repo.project);
      live = await projectRowBytes(freshAdmin, repo.project);
    } finally {
      await freshStore.close();
      await freshAdmin.end();
      await fresh.drop();
    }
    expect(rowsAfter).toBeLessThanOrEqual(1.2 * live);
    // And the collection mattered: the rows took several times the live size before it.
    expect(rowsBefore).toBeGreaterThan(3 * live);

    // The files keep their size; once vacuumed, a second round of as many overwrites reuses them.
    await vacuum(admin);
    const filesCollected = await store.storageUsedBytes();
    await overwrite(repo, 2);
    const filesSecondRound = await store.storageUsedBytes();
    await collectGarbage(repo, { graceMs: 0 });
    await expectOnlyReachable(repo);
    process.stdout.write(
      `gc postgres: project rows ${rowsBefore} bytes before, ${rowsAfter} after, ${live} in a fresh database of the final state (${(rowsAfter / live).toFixed(2)}x); ` +
        `table files ${filesBefore} before, ${filesCollected} collected and vacuumed, ${filesSecondRound} after a second round (${(filesSecondRound / filesBefore).toFixed(2)}x the first)\n`,
    );
    expect(filesSecondRound).toBeLessThanOrEqual(1.2 * filesBefore);
  }, 300_000);
});
