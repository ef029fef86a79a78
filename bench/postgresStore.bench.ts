/**
 * The PostgreSQL store (src/store/postgres/) beside LMDB (src/store/lmdbAsync.ts) in one run, on
 * the same imported tree: the repo layer's 1-file write + commit, and the store operations that
 * path is made of, each on both backends, so later work knows what a round trip costs and where
 * the 15 ms target of issue 15 goes. PostgreSQL runs durable (fsync on, synchronous_commit on), as
 * LMDB syncs each commit; both keep their data on the same disk.
 *
 *   npx tsx bench/postgresStore.bench.ts [--quick]
 *
 * What each task is, per backend:
 * - write 1 file + commit: writeFiles with one changed file, then commit (the service's hot path);
 * - read getVersion: one keyed read in a read transaction (PostgreSQL: one statement);
 * - read 1 object / 100 trees: getObjects of one blob, and of 100 trees in one batch, with the
 *   node's object cache off (PostgreSQL: one statement each);
 * - write bumpVersion: a write that reads and bumps the project's version (PostgreSQL: BEGIN,
 *   the project's lock with the read, the update, COMMIT);
 * - write put 1 blob: a write that only stores an object (PostgreSQL: BEGIN, one insert, COMMIT);
 * and, for PostgreSQL alone, `SELECT 1` on the driver: the floor of a round trip; and a token taken
 * from a shared rate-limit bucket (what the rate limit adds to a request on PostgreSQL).
 */
import { randomBytes } from 'node:crypto';
import { Bench } from 'tinybench';
import postgres from 'postgres';
import { SourceTree } from '../fixtures/sourceTree.js';
import type { Oid } from '../src/git/oid.js';
import { decodeTree, MODE_TREE } from '../src/git/tree.js';
import { commit } from '../src/repo/commit.js';
import { initProject } from '../src/repo/initProject.js';
import { DEFAULT_REPO_LIMITS, MAIN_BRANCH, type Repo } from '../src/repo/repo.js';
import { writeFiles, type FileWrite } from '../src/repo/writeFiles.js';
import type { CommitAuthors } from '../src/repo/writeCommit.js';
import type { AsyncStore } from '../src/store/asyncTypes.js';
import { LmdbStore } from '../src/store/lmdb.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { scratchDir } from '../test/support/git.js';
import { freshDatabase, launchPostgres } from '../test/support/postgres.js';

const quick = process.argv.includes('--quick');
const FILES = quick ? 1_000 : 10_000;
const PROJECT = 1;
const PEOPLE: CommitAuthors = {
  author: { name: 'Bench', email: 'bench@treehouse.invalid' },
  committer: { name: 'Bench', email: 'bench@treehouse.invalid' },
};

function asWrites(files: Array<{ path: string; content: Buffer }>): FileWrite[] {
  return files.map((file) => ({ path: file.path, content: file.content.toString('utf8') }));
}

interface Backend {
  name: string;
  /** The store the repo layer writes through (PostgreSQL: with its caches). */
  store: AsyncStore;
  /** The same storage with no object cache, for the reads that must reach the database. */
  uncached: AsyncStore;
}

/** Imports the tree into the backend's project; answers the time it took and the ids to read. */
async function importTree(backend: Backend, tree: SourceTree): Promise<{ importMs: number; blob: Oid; trees: Oid[] }> {
  const repo: Repo = { store: backend.store, project: PROJECT, limits: { ...DEFAULT_REPO_LIMITS, batchFilesMax: tree.size } };
  const started = performance.now();
  await initProject(repo, { files: [], people: PEOPLE });
  await writeFiles(repo, { branch: MAIN_BRANCH, files: asWrites([...tree.files()]) });
  await commit(repo, { branch: MAIN_BRANCH, message: 'Import', people: PEOPLE });
  const importMs = performance.now() - started;
  // 100 trees of the imported tree, breadth first, and one blob.
  return backend.uncached.read(async (tx) => {
    const p = tx.project(PROJECT);
    const root = (await p.getWorkingTree(MAIN_BRANCH))!.tree;
    const trees: Oid[] = [];
    let blob: Oid | undefined;
    for (let level = [root]; level.length > 0 && trees.length < 100; ) {
      const next: Oid[] = [];
      for (const object of await p.getObjects(level)) {
        for (const entry of decodeTree(object!.body)) {
          if (entry.mode === MODE_TREE) next.push(entry.oid);
          else blob ??= entry.oid;
        }
      }
      trees.push(...level);
      level = next;
    }
    return { importMs, blob: blob!, trees: trees.slice(0, 100) };
  });
}

function addTasks(suite: Bench, backend: Backend, tree: SourceTree, ids: { blob: Oid; trees: Oid[] }, roundStart: number): void {
  const repo: Repo = { store: backend.store, project: PROJECT, limits: { ...DEFAULT_REPO_LIMITS } };
  let round = roundStart;
  let next: FileWrite[] = [];
  suite.add(
    `${backend.name}: write 1 file + commit`,
    async () => {
      await writeFiles(repo, { branch: MAIN_BRANCH, files: next });
      const made = await commit(repo, { branch: MAIN_BRANCH, message: `Round ${round}`, people: PEOPLE });
      if (!made.created) throw new Error(`round ${round} made no commit`);
    },
    {
      beforeEach() {
        next = asWrites(tree.changeFiles(1, ++round));
      },
    },
  );
  suite.add(`${backend.name}: read getVersion`, async () => {
    await backend.store.read((tx) => tx.project(PROJECT).getVersion());
  });
  suite.add(`${backend.name}: read 1 object, uncached`, async () => {
    const [object] = await backend.uncached.read((tx) => tx.project(PROJECT).getObjects([ids.blob]));
    if (!object) throw new Error('the blob is missing');
  });
  suite.add(`${backend.name}: read 100 trees in one batch, uncached`, async () => {
    const objects = await backend.uncached.read((tx) => tx.project(PROJECT).getObjects(ids.trees));
    if (objects.some((object) => !object)) throw new Error('a tree is missing');
  });
  suite.add(`${backend.name}: write bumpVersion`, async () => {
    await backend.store.write((tx) => tx.project(PROJECT).bumpVersion());
  });
  suite.add(`${backend.name}: write put 1 blob`, async () => {
    await backend.store.write(async (tx) => {
      tx.project(PROJECT).putObject('blob', randomBytes(64));
    });
  });
}

async function main(): Promise<void> {
  const cluster = await launchPostgres({ durable: true });
  const database = await freshDatabase('store_bench', cluster);
  const lmdbDir = scratchDir('treehouse-store-bench-');
  const lmdb = new LmdbStore({ path: lmdbDir.path });
  const backends: Backend[] = [
    { name: 'lmdb', store: lmdb.async, uncached: lmdb.async },
    { name: 'postgres', store: await PostgresStore.open({ url: database.url }), uncached: await PostgresStore.open({ url: database.url, objectCacheBytes: 0, commitCacheBytes: 0 }) },
  ];
  const driver = postgres(database.url, { max: 1, onnotice: () => undefined, fetch_types: false });
  try {
    const tree = new SourceTree({ files: FILES });
    const suite = new Bench({ time: quick ? 300 : 2_000, warmupTime: quick ? 50 : 200, warmupIterations: 3 });
    const imports: string[] = [];
    for (const [index, backend] of backends.entries()) {
      const { importMs, ...ids } = await importTree(backend, tree);
      imports.push(`${backend.name}: import of ${FILES} files + first commit ${importMs.toFixed(0)} ms`);
      addTasks(suite, backend, tree, ids, 1_000_000 * (index + 1));
    }
    suite.add('postgres: SELECT 1 (driver, one round trip)', async () => {
      await driver`SELECT 1`;
    });
    // What the shared rate limit costs a request (src/service/rateLimiter.ts): one statement.
    const shared = backends[1].store as PostgresStore;
    suite.add('postgres: rate limit takeToken (shared bucket)', async () => {
      if ((await shared.rateLimits.takeToken('bench-key', 1_000_000, 1_000_000)).waitSeconds !== 0) throw new Error('the bench key was refused');
    });
    await suite.run();
    console.log(imports.join('\n'));
    console.table(
      suite.tasks.map((task) => {
        const result = task.result;
        if (result.state !== 'completed') throw new Error(`${task.name} did not complete: ${result.state === 'errored' ? String(result.error) : result.state}`);
        return { task: task.name, 'median ms': Number(result.latency.p50.toFixed(3)), 'p99 ms': Number(result.latency.p99.toFixed(3)), samples: result.latency.samplesCount };
      }),
    );
  } finally {
    await driver.end();
    for (const backend of backends) {
      await backend.store.close();
      if (backend.uncached !== backend.store) await backend.uncached.close();
    }
    lmdbDir.remove();
    await database.drop();
    await cluster.stop();
  }
}

await main();
