/**
 * Garbage collection on a real server (issue 18, item 1): the store after 10,000 overwrite cycles
 * and a collection, against a fresh store holding only the final state; a branch deleted over the
 * API; the schedule; a project deleted during its collection. Clones are checked with
 * `git fsck --strict`.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashObject } from '../../src/git/oid.js';
import { commitInTx } from '../../src/repo/commit.js';
import { CollectionLostError } from '../../src/repo/gc/collect.js';
import { inWriteTx } from '../../src/repo/repo.js';
import { prepareBatch, writeFilesInTx } from '../../src/repo/writeFiles.js';
import type { ProjectRecord } from '../../src/service/projects.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import type { LmdbAsyncStore } from '../../src/store/lmdbAsync.js';
import type { CollectionReads, ProjectReads } from '../../src/store/asyncTypes.js';
import { copyProject, expectFormsSound, expectOnlyReachable, storedHexes } from '../support/gc.js';
import { git, gitAsyncOk, scratchDir } from '../support/git.js';
import { remoteUrl } from '../support/history.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { testPeople } from '../support/store.js';

const work = scratchDir('treehouse-gc-e2e-');
let server: TestServer;
beforeAll(async () => {
  // The schedule stays off here: each test collects when it means to.
  server = await startTestServer({ env: { TREEHOUSE_GC_NEW_OBJECTS: '0', TREEHOUSE_GC_INTERVAL_SECONDS: '0' } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

async function createProject(title: string, files: Record<string, string> = {}): Promise<ProjectRecord> {
  const created = await server.call('POST', '/api/v1/projects', { title, source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) } });
  expect(created.status).toBe(201);
  return (await server.th.projects.byId(created.body.project.id))!;
}

/** Clones the project, checks the clone with `git fsck --strict`, and returns its directory. */
async function cloneChecked(id: string, name: string): Promise<string> {
  const dir = join(work.path, name);
  await gitAsyncOk(['clone', '-q', remoteUrl(server, id), dir]);
  git(['fsck', '--strict', '--no-dangling'], { cwd: dir });
  return dir;
}

/** A file that grows a paragraph per version (the deflate cache keeps each version as a delta on the one before). */
function version(name: string, round: number): string {
  return `${Array.from({ length: round + 1 }, (_, i) => `export const v${i} = ${i}; // paragraph ${i} of ${name}, long enough to be worth a delta`).join('\n')}\n`;
}

const FILES = 100;
const CYCLES = 10_000;
const CYCLES_PER_WRITE = 100;
const CYCLES_PER_COMMIT = 1_000;
const filePath = (file: number) => `dir${file % 10}/file${file}.txt`;

describe('garbage collection on a server', () => {
  it('leaves the store within 1.2x of a fresh store holding only the final state after 10,000 overwrite cycles of 100 files', async () => {
    // Without the deflate cache's forms: filling in 30,000 of them took most of this test's time
    // (16 s of 25 on a quiet machine, a minute under load). Collections with forms: the rewrite of
    // a kept form whose base goes (test/repo/gc/collect.test.ts), and gcCli.test.ts, whose server
    // fills them in while the collections run.
    await server.th.deflateCache.stop();
    const record = await createProject('Overwritten', Object.fromEntries(Array.from({ length: FILES }, (_, file) => [filePath(file), 'first\n'])));
    const repo = server.th.projects.repo(record);
    // Each cycle overwrites one of the 100 files through the batch write's core (each file 100
    // times), a hundred cycles per write so the test runs in seconds; every 1,000 cycles commit.
    for (let cycle = 0; cycle < CYCLES; cycle += CYCLES_PER_WRITE) {
      await inWriteTx(repo, async (tx) => {
        for (let c = cycle; c < cycle + CYCLES_PER_WRITE; c++) {
          await writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'main', files: [{ path: filePath(c % FILES), content: `cycle ${c} of file ${c % FILES}\n` }] }));
        }
        if ((cycle + CYCLES_PER_WRITE) % CYCLES_PER_COMMIT === 0) await commitInTx(tx, { branch: 'main', message: `after cycle ${cycle + CYCLES_PER_WRITE}`, people: testPeople });
      });
    }
    // The page counts are LMDB's own (the test judges the LMDB backend's collection).
    const store = (server.th.store as LmdbAsyncStore).sync;
    const before = store.pagesInUseBytes();
    const report = await server.th.gc.collect(record, { graceMs: 0 });
    expect(report.removedObjects).toBeGreaterThan(CYCLES - FILES * (CYCLES / CYCLES_PER_COMMIT));
    await expectOnlyReachable(repo);
    const after = store.pagesInUseBytes();

    // The same final state written into a fresh store: the project's objects, forms, refs and
    // working tree, and every record the server keeps.
    const fresh = scratchDir('treehouse-gc-fresh-');
    const freshStore = new LmdbStore({ path: fresh.path });
    try {
      await copyProject(repo, freshStore.async, record.seq);
      const records = await server.th.store.read(async (tx) => tx.listRecords<unknown>(''));
      await freshStore.async.write(async (tx) => {
        for (const { key, value } of records) tx.putRecord(key, value);
      });
      const live = freshStore.pagesInUseBytes();
      expect(after).toBeLessThanOrEqual(1.2 * live);
      // And the collection mattered: the store held several times the live state before it.
      expect(before).toBeGreaterThan(3 * live);
      process.stdout.write(`gc e2e: pages in use ${before} before, ${after} after, ${live} in a fresh store of the final state (${(after / live).toFixed(2)}x)\n`);
    } finally {
      await freshStore.close();
      fresh.remove();
    }
    const clone = await cloneChecked(record.id, 'overwritten');
    for (const file of [0, 37, 99]) expect(git(['show', `HEAD:${filePath(file)}`], { cwd: clone })).toBe(`cycle ${CYCLES - FILES + file} of file ${file}\n`);
    expect(git(['rev-list', '--count', 'HEAD'], { cwd: clone }).trim()).toBe(String(1 + CYCLES / CYCLES_PER_COMMIT));
    server.th.deflateCache.start();
  }, 180_000);

  it("collects an unmerged branch deleted over the API: its commits are gone, and a clone is fsck-clean", async () => {
    const record = await createProject('Deleted branch', { 'a.txt': 'a\n' });
    const base = `/api/v1/projects/${record.id}`;
    expect((await server.call('POST', `${base}/git/branches`, { name: 'idea' })).status).toBe(201);
    const commits: string[] = [];
    for (let i = 0; i < 3; i++) {
      expect((await server.call('POST', `${base}/files/batch`, { branch: 'idea', files: [{ path: `idea/${i}.txt`, content: `idea ${i}\n` }] })).status).toBe(200);
      const made = await server.call('POST', `${base}/git/commit`, { branch: 'idea', message: `idea ${i}` });
      expect(made.status).toBe(201);
      commits.push(made.body.commit.oid);
    }
    expect((await server.call('GET', `${base}/git/commits/${commits[2]}`)).status).toBe(200);
    expect((await server.call('DELETE', `${base}/git/branches/idea`)).status).toBe(200);
    // Until a collection, a deleted branch's commits can still be named (and restored).
    expect((await server.call('GET', `${base}/git/commits/${commits[2]}`)).status).toBe(200);
    const report = await server.th.gc.collect(record, { graceMs: 0 });
    expect(report.removedObjects).toBeGreaterThanOrEqual(3 * 4);
    for (const oid of commits) expect((await server.call('GET', `${base}/git/commits/${oid}`)).status).toBe(404);
    await expectOnlyReachable(server.th.projects.repo(record));
    const clone = await cloneChecked(record.id, 'deleted-branch');
    expect(git(['show', 'HEAD:a.txt'], { cwd: clone })).toBe('a\n');
  });

  it('stops a collection whose project is deleted during its grace period, and leaves nothing of the project', async () => {
    const record = await createProject('Deleted while collected', { 'a.txt': 'a\n' });
    const base = `/api/v1/projects/${record.id}`;
    expect((await server.call('POST', `${base}/files/batch`, { files: [{ path: 'a.txt', content: 'b\n' }] })).status).toBe(200);
    let endGrace!: () => void;
    let graceBegan!: () => void;
    const began = new Promise<void>((resolve) => (graceBegan = resolve));
    const running = server.th.gc.collect(record, {
      graceMs: 60_000,
      wait: () => {
        graceBegan();
        return new Promise<void>((resolve) => (endGrace = resolve));
      },
    });
    await began;
    expect((await server.call('DELETE', base)).status).toBe(200);
    endGrace();
    await expect(running).rejects.toBeInstanceOf(CollectionLostError);
    await server.th.projects.drops.idle();
    expect(await storedHexes(server.th.projects.repo(record))).toEqual([]);
    const records = await server.th.store.read(async (tx) => tx.listRecords(`gc-`));
    expect(records.filter(({ key }) => key.endsWith(`/${record.seq}`))).toEqual([]);
  });

  it('keeps a history written through the API as forms alone, with the same clone and the same answers for its old commits', async () => {
    const record = await createProject('Written through the API', { 'src/app.ts': version('app', 0), 'README.md': 'read me\n' });
    const base = `/api/v1/projects/${record.id}`;
    const commits: string[] = [];
    for (let round = 1; round <= 24; round++) {
      const files = [{ path: 'src/app.ts', content: version('app', round) }, { path: `src/part${round % 4}.ts`, content: version(`part ${round % 4}`, round) }];
      expect((await server.call('POST', `${base}/files/batch`, { files })).status).toBe(200);
      if (round === 12) expect((await server.call('POST', `${base}/files/move`, { from: 'src/part1.ts', to: 'lib/part1.ts' })).status).toBe(200);
      const made = await server.call('POST', `${base}/git/commit`, { message: `round ${round}` });
      expect(made.status).toBe(201);
      commits.push(made.body.commit.oid);
    }
    await server.th.deflateCache.idle();
    const reads = [
      `${base}/git/commits/${commits[3]}`,
      `${base}/git/commits/${commits[11]}?content=false`,
      `${base}/git/blame/src/app.ts?ref=${commits[9]}`,
      `${base}/git/blame/src/app.ts`,
      `${base}/git/log?path=src&limit=100`,
      `${base}/git/compare?base=${commits[2]}&head=main`,
      `${base}/files?content=true`,
      `${base}/search?q=paragraph%2012&ref=${commits[14]}`,
    ];
    const answers = async () => Promise.all(reads.map(async (path) => server.call('GET', path)));
    const before = await answers();
    expect(before.map((answer) => answer.status)).toEqual(reads.map(() => 200));
    const beforeClone = await cloneChecked(record.id, 'api-history-before');
    const repo = server.th.projects.repo(record);
    const rawBytes = async () => {
      const hexes = await storedHexes(repo);
      const entries = await server.th.store.read((tx) => (tx.project(record.seq) as ProjectReads & CollectionReads).describeStored(hexes.map((hex) => Buffer.from(hex, 'hex'))));
      return entries.reduce((sum, entry) => sum + entry!.rawBytes, 0);
    };
    const rawBefore = await rawBytes();

    const report = await server.th.gc.collect(record, { graceMs: 0 });
    expect(report.coldKept.rawDropped).toBeGreaterThan(0);
    expect(report.newestWhole.chains).toBeGreaterThan(0);
    expect(await rawBytes()).toBeLessThan(rawBefore / 3);
    expect((await answers()).map((answer) => answer.body)).toEqual(before.map((answer) => answer.body));
    const afterClone = await cloneChecked(record.id, 'api-history-after');
    const objects = (dir: string) => git(['rev-list', '--objects', '--all'], { cwd: dir }).split('\n').filter(Boolean).sort();
    // Ids are their contents' hashes, which fsck --strict checked: the same ids are the same bytes.
    expect(objects(afterClone)).toEqual(objects(beforeClone));
    await expectFormsSound(repo);
  }, 120_000);

  it('collects on its schedule once a project has stored enough new versions, and not after an import of new files', async () => {
    const scheduled = await startTestServer({ env: { TREEHOUSE_GC_NEW_OBJECTS: '60', TREEHOUSE_GC_GRACE_SECONDS: '0', TREEHOUSE_GC_INTERVAL_SECONDS: '0' } });
    try {
      const created = await scheduled.call('POST', '/api/v1/projects', { title: 'Scheduled' });
      const id = created.body.project.id as string;
      // An import in three batches: 300 files at new paths, some 400 objects, and only the root and
      // the directories shared between batches replaced (some 24 versions): nothing to collect.
      for (let batch = 0; batch < 3; batch++) {
        const files = Array.from({ length: 100 }, (_, i) => ({ path: `src/dir${i % 10}/file${batch * 100 + i}.ts`, content: `export const n = ${batch * 100 + i};\n` }));
        expect((await scheduled.call('POST', `/api/v1/projects/${id}/files/batch`, { files })).status).toBe(200);
      }
      expect((await scheduled.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'Import' })).status).toBe(201);
      await scheduled.th.gc.idle();
      expect(scheduled.th.gc.runs).toEqual([]);
      const first = hashObject('blob', Buffer.from('version 0\n'));
      for (let i = 0; i < 40; i++) {
        expect((await scheduled.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'notes/a.txt', content: `version ${i}\n` }] })).status).toBe(200);
      }
      await scheduled.th.gc.idle();
      expect(scheduled.th.gc.runs.length).toBeGreaterThanOrEqual(1);
      expect(scheduled.th.gc.runs[0].removedObjects).toBeGreaterThan(0);
      const record = (await scheduled.th.projects.byId(id))!;
      expect(await scheduled.th.store.read((tx) => tx.project(record.seq).hasObjects([first]))).toEqual([false]);
      expect((await scheduled.call('GET', `/api/v1/projects/${id}/files/notes/a.txt`)).body.content).toBe('version 39\n');
    } finally {
      await scheduled.close();
    }
  });
});
