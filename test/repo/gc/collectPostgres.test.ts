/**
 * Garbage collection on PostgreSQL beyond what collect.test.ts runs on both backends (issue 18 item
 * 1): the size of a project after 10,000 overwrite cycles and a collection, against a fresh
 * database holding only its final state, and whether the space the collection freed is used again;
 * collections on one node while a writer and a cloner work on another (two stores on one
 * database), which lose nothing acknowledged and leave every clone `git fsck --strict` clean; and a
 * project of 200,000 unreachable entries.
 *
 * Sizes on PostgreSQL (README "Garbage collection"): a table's files do not shrink when rows are
 * deleted; VACUUM (autovacuum, run here by hand so the test need not wait for it) marks the space
 * of deleted rows free for the table's next rows, as LMDB's free list does its pages. So the
 * project's *live size* is the bytes its rows take (pg_column_size of each row, bodies as stored,
 * TOASTed or compressed, with their headers) in every table of project data; and the files are
 * judged by whether a second round of as many overwrites, after the first was collected and
 * vacuumed, fits in them rather than adding as much again.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidToHex, type Oid } from '../../../src/git/oid.js';
import { branchRef } from '../../../src/git/refname.js';
import { encodeTree } from '../../../src/git/tree.js';
import { commit, commitInTx } from '../../../src/repo/commit.js';
import { createBranch } from '../../../src/repo/createBranch.js';
import { deleteBranch } from '../../../src/repo/deleteBranch.js';
import { collectGarbage } from '../../../src/repo/gc/collect.js';
import { listFiles } from '../../../src/repo/listFiles.js';
import { inReadTx, inWriteTx, type Repo } from '../../../src/repo/repo.js';
import { uploadPackV0 } from '../../../src/repo/wire/uploadPack.js';
import { prepareBatch, writeFiles, writeFilesInTx } from '../../../src/repo/writeFiles.js';
import { PostgresStore } from '../../../src/store/postgres/store.js';
import { copyProject, expectOnlyReachable, fsckAndReachable, storedHexes, writeAndCommit } from '../../support/gc.js';
import { gitAsyncOk, scratchDir } from '../../support/git.js';
import { freshDatabase } from '../../support/postgres.js';
import { newTestRepoIn, testPeople, text } from '../../support/store.js';

/** Every table of project data (src/store/postgres/migrations.ts). */
const PROJECT_TABLES = [
  'treehouse_objects',
  'treehouse_forms',
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
        await writeFilesInTx(
          tx,
          prepareBatch(repo.limits, { branch: 'main', files: [{ path: filePath(c % FILES), content: `round ${round} cycle ${c} of file ${c % FILES}\n` }] }),
        );
      }
      if ((cycle + CYCLES_PER_WRITE) % CYCLES_PER_COMMIT === 0)
        await commitInTx(tx, { branch: 'main', message: `round ${round} after cycle ${cycle + CYCLES_PER_WRITE}`, people: testPeople });
    });
  }
}

/**
 * A clone of `tip` as git makes one: the pack upload-pack answers for it (the clone path of the
 * smart-HTTP export), indexed by git with --strict into a new repository, checked with `git fsck
 * --strict`. Async throughout, so the collection and the writer go on meanwhile.
 */
async function cloneChecked(repo: Repo, tip: Oid, dir: string): Promise<void> {
  const chunks: Buffer[] = [];
  const request = {
    wants: [tip],
    haves: [],
    clientShallows: [],
    depth: null,
    deepenRelative: false,
    deepenSince: null,
    deepenNot: [],
    filter: null,
    done: true,
    negotiates: true,
    capabilities: new Set(['ofs-delta']),
  };
  for await (const chunk of uploadPackV0(repo, request)) chunks.push(chunk);
  const answer = Buffer.concat(chunks);
  await gitAsyncOk(['init', '-q', '--bare', dir]);
  await gitAsyncOk(['index-pack', '--stdin', '--strict'], { cwd: dir, input: answer.subarray(answer.indexOf('PACK')) });
  await gitAsyncOk(['update-ref', 'refs/heads/main', oidToHex(tip)], { cwd: dir });
  await gitAsyncOk(['fsck', '--strict', '--no-dangling'], { cwd: dir });
}

let database: { url: string; drop: () => Promise<void> };
let admin: postgres.Sql;
let store: PostgresStore;
const work = scratchDir('treehouse-gc-pg-');
beforeAll(async () => {
  // A database of its own: the tables' files hold this file's projects alone.
  database = await freshDatabase('gc_size');
  admin = postgres(database.url, { max: 1, onnotice: () => undefined });
  store = await PostgresStore.open({ url: database.url });
}, 120_000);
afterAll(async () => {
  await store?.close();
  await admin?.end();
  await database?.drop();
  work.remove();
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

  it('loses nothing a writer and a cloner on another node do while collections run on this one, and every clone is fsck-clean', async () => {
    const node = await PostgresStore.open({ url: database.url });
    try {
      const here = await newTestRepoIn(store, [text('keep.txt', 'keep\n')]);
      const there: Repo = { ...here, store: node };
      // Garbage for the first collection: a branch thrown away, and overwritten working-tree states.
      await createBranch(here, { name: 'doomed' });
      for (let i = 0; i < 5; i++) await writeAndCommit(here, { [`doomed/${i}.txt`]: `doomed ${i}\n` }, 'doomed');
      await deleteBranch(here, { name: 'doomed' });
      for (let i = 0; i < 10; i++) await writeFiles(here, { branch: 'main', files: [{ path: 'keep.txt', content: `overwritten ${i}\n` }] });

      let collecting = false;
      let stop = false;
      let writes = 0;
      let writesDuringCollections = 0;
      let clones = 0;
      let clonesDuringCollections = 0;
      const acknowledged = new Map<string, string>();
      // The writer (bounded: it stops when the collections are done, or after 2,000 writes).
      const writer = (async () => {
        for (let i = 0; !stop && i < 2_000; i++) {
          const path = `w/${i % 7}.txt`;
          const content = `write ${i}\n`;
          await writeFiles(there, { branch: 'main', files: [{ path, content }] });
          acknowledged.set(path, content);
          writes++;
          if (collecting) writesDuringCollections++;
          if (i % 5 === 4) await commit(there, { branch: 'main', people: testPeople });
          if (i % 10 === 9) {
            // A branch made, written, committed and thrown away: garbage for the next collection.
            await createBranch(there, { name: `tmp${i}` });
            await writeAndCommit(there, { 'tmp.txt': `thrown away ${i}\n` }, `tmp${i}`);
            await deleteBranch(there, { name: `tmp${i}` });
          }
        }
      })();
      // The cloner: main's tip when each clone begins (main is never deleted or rewound).
      const cloner = (async () => {
        for (let i = 0; !stop && i < 500; i++) {
          const tip = (await inReadTx(there, (tx) => tx.getRef(branchRef('main'))))!;
          await cloneChecked(there, tip, join(work.path, `clone-${i}`));
          clones++;
          if (collecting) clonesDuringCollections++;
        }
      })();
      let removed = 0;
      try {
        // Collections one after another until enough ran beside the writer and the cloner (at most 100).
        for (let round = 0; round < 100 && (writesDuringCollections < 40 || clonesDuringCollections < 5); round++) {
          collecting = true;
          removed += (await collectGarbage(here, { graceMs: 0, batchIds: 20 })).removedObjects;
          collecting = false;
          // A turn for the writer and the cloner between collections.
          await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        stop = true;
        await Promise.all([writer, cloner]);
      }
      expect(writesDuringCollections).toBeGreaterThanOrEqual(40);
      expect(clonesDuringCollections).toBeGreaterThanOrEqual(5);
      expect(removed).toBeGreaterThan(0);
      // Every acknowledged write is there, read on either node.
      for (const repo of [here, there]) {
        const files = new Map((await listFiles(repo, { branch: 'main', content: true })).map((file) => [file.path, file.content]));
        for (const [path, content] of acknowledged) expect(files.get(path)).toBe(content);
        expect(files.get('keep.txt')).toBe('overwritten 9\n');
      }
      // Everything the refs reach is whole; once the working tree is committed, a collection leaves exactly that.
      await fsckAndReachable(here);
      await commit(here, { branch: 'main', people: testPeople });
      await collectGarbage(here, { graceMs: 0 });
      await expectOnlyReachable(here);
      process.stdout.write(
        `gc postgres, two nodes: ${writes} writes (${writesDuringCollections} during collections), ${clones} clones (${clonesDuringCollections} during), ${removed} objects removed\n`,
      );
    } finally {
      await node.close();
    }
  }, 300_000);

  it('collects 200,000 unreachable entries, listed and described in pages and removed in writes of 10,000, and keeps exactly what the refs reach', async () => {
    const BLOBS = 160_000;
    const TREES = 40_000;
    const repo = await newTestRepoIn(store);
    const kept = await storedHexes(repo);
    const blobIds: Buffer[] = [];
    for (let start = 0; start < BLOBS; start += 40_000) {
      await store.write(async (tx) => {
        const p = tx.project(repo.project);
        for (let i = start; i < start + 40_000; i++) {
          // Blobs are never read by a collection: random ids with a small body stand in for their hashes.
          const oid = randomBytes(20);
          p.putObjectWithId(oid, 'blob', Buffer.from(`garbage ${i}\n`));
          if (i < TREES) blobIds.push(oid);
        }
      });
    }
    await store.write(async (tx) => {
      const p = tx.project(repo.project);
      for (let i = 0; i < TREES; i++) p.putObject('tree', encodeTree([{ name: `f${i}`, mode: '100644', oid: blobIds[i] }]));
    });
    blobIds.length = 0;
    const started = performance.now();
    const report = await collectGarbage(repo, { graceMs: 0, batchIds: 10_000 });
    const seconds = (performance.now() - started) / 1000;
    expect(report.removedObjects).toBe(BLOBS + TREES);
    expect(report.removedBytes).toBeGreaterThan(0);
    expect(await storedHexes(repo)).toEqual(kept);
    await expectOnlyReachable(repo);
    // The collector's memory bound per entry is the same code's on every backend (largeGarbage.test.ts).
    process.stdout.write(`gc postgres: ${BLOBS + TREES} unreachable entries collected in ${seconds.toFixed(1)} s\n`);
  }, 180_000);
});
