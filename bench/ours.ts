/**
 * Treehouse's side of the benchmark, in-process: the src/repo verbs on a real LmdbStore. Each
 * scenario runs in a child process of its own (see run.ts), so its peak RSS is its own; the store
 * made by the import is reopened by the scenarios after it.
 *
 * Inputs (file contents as the strings the API receives) are generated before the clock starts;
 * what is timed is the verbs: writeFiles (which decodes, hashes and stores the blobs, updates the
 * working tree and hashes and stores the trees of the changed directories) and commit (which writes
 * the commit and moves the ref).
 * Every write awaits durability, as the service does before it answers.
 */
import { Bench } from 'tinybench';
import { SourceTree } from '../fixtures/sourceTree.js';
import { LmdbStore } from '../src/store/lmdb.js';
import { DEFAULT_REPO_LIMITS, MAIN_BRANCH, type Repo } from '../src/repo/repo.js';
import { initProject } from '../src/repo/initProject.js';
import { writeFiles, type FileWrite } from '../src/repo/writeFiles.js';
import { commit } from '../src/repo/commit.js';
import { log } from '../src/repo/log.js';
import { listFiles } from '../src/repo/listFiles.js';
import type { CommitAuthors } from '../src/repo/writeCommit.js';
import { elapsedMs, peakRssBytes, summarise, summariseTask, type Measurement, type ScenarioId } from './measure.js';

export const BENCH_PROJECT = 1;
const PEOPLE: CommitAuthors = {
  author: { name: 'Bench', email: 'bench@treehouse.invalid' },
  committer: { name: 'Bench', email: 'bench@treehouse.invalid' },
};
/** First edit round of each scenario; the git side uses the same rounds, so both change the same files. */
export const ROUND_BASE: Record<'commit-1' | 'commit-100' | 'history', number> = {
  'commit-1': 1_000_000,
  'commit-100': 2_000_000,
  history: 3_000_000,
};
export const LOG_LIMIT = 200;

export interface OursChildOptions {
  scenario: ScenarioId;
  size: number;
  storePath: string;
  /** Shorter tinybench budgets for --quick. */
  quick: boolean;
  /**
   * Added to every edit round, so a scenario can be rerun by hand on a store it already changed
   * (the same rounds again would change nothing). 0 in bench runs.
   */
  roundOffset: number;
}

export async function runOursScenario(options: OursChildOptions): Promise<Measurement> {
  const tree = new SourceTree({ files: options.size });
  switch (options.scenario) {
    case 'import':
    case 'import-batches':
      return importScenario(tree, options);
    case 'commit-1':
    case 'commit-100':
      return commitScenario(tree, options, options.scenario === 'commit-1' ? 1 : 100);
    case 'log-200':
      return logScenario(tree, options);
    case 'list':
      return listScenario(tree, options);
    case 'merge':
    case 'clone':
      throw new Error(`${options.scenario} is measured by bench/${options.scenario}.ts, not by an ours.ts child`);
  }
}

function openRepo(storePath: string, batchFilesMax = DEFAULT_REPO_LIMITS.batchFilesMax): Repo {
  const store = new LmdbStore({ path: storePath });
  return { store: store.async, project: BENCH_PROJECT, limits: { ...DEFAULT_REPO_LIMITS, batchFilesMax } };
}

function bench(quick: boolean, minIterations: number): Bench {
  return new Bench({ time: quick ? 300 : 2_000, iterations: minIterations, warmupTime: quick ? 50 : 200, warmupIterations: 3 });
}

function asWrites(files: Array<{ path: string; content: Buffer }>): FileWrite[] {
  return files.map((file) => ({ path: file.path, content: file.content.toString('utf8') }));
}

/**
 * One import into an empty store: initProject with an empty tree, then writeFiles and commit.
 * "import" raises repo.limits.batchFilesMax to the file count and sends one batch; "import-batches"
 * keeps the default limit (10,000) and sends as many batches as that takes.
 */
async function importScenario(tree: SourceTree, options: OursChildOptions): Promise<Measurement> {
  const oneBatch = options.scenario === 'import';
  const batchSize = oneBatch ? Math.max(tree.size, DEFAULT_REPO_LIMITS.batchFilesMax) : DEFAULT_REPO_LIMITS.batchFilesMax;
  const writes = asWrites([...tree.files()]);
  const repo = openRepo(options.storePath, batchSize);
  const start = process.hrtime.bigint();
  await initProject(repo, { files: [], people: PEOPLE });
  const initMs = elapsedMs(start);
  const writeStart = process.hrtime.bigint();
  for (let i = 0; i < writes.length; i += batchSize) {
    await writeFiles(repo, { branch: MAIN_BRANCH, files: writes.slice(i, i + batchSize) });
  }
  const writeMs = elapsedMs(writeStart);
  const commitStart = process.hrtime.bigint();
  const result = await commit(repo, { branch: MAIN_BRANCH, message: 'Import', people: PEOPLE });
  const commitMs = elapsedMs(commitStart);
  const totalMs = elapsedMs(start);
  if (!result.created) throw new Error('the import commit was empty');
  await repo.store.close();
  const batches = Math.ceil(writes.length / batchSize);
  return {
    size: tree.size,
    scenario: options.scenario,
    side: 'ours',
    timing: summarise([totalMs]),
    peakRssBytes: peakRssBytes(),
    phases: { initProject: summarise([initMs]), writeFiles: summarise([writeMs]), commit: summarise([commitMs]) },
    method: `initProject (empty tree), writeFiles in ${batches} batch${batches === 1 ? '' : 'es'} of at most ${batchSize}, commit`,
  };
}

/** writeFiles with `count` changed files, then commit; every iteration is a new edit round. */
async function commitScenario(tree: SourceTree, options: OursChildOptions, count: number): Promise<Measurement> {
  const repo = openRepo(options.storePath);
  let round = ROUND_BASE[count === 1 ? 'commit-1' : 'commit-100'] + options.roundOffset;
  let next: FileWrite[] = [];
  let timed = false;
  const writeSamples: number[] = [];
  const commitSamples: number[] = [];
  const suite = bench(options.quick, 10);
  suite.add(
    `commit-${count}`,
    async () => {
      const start = process.hrtime.bigint();
      await writeFiles(repo, { branch: MAIN_BRANCH, files: next });
      const middle = process.hrtime.bigint();
      const result = await commit(repo, { branch: MAIN_BRANCH, message: `Edit round ${round}`, people: PEOPLE });
      if (!result.created) throw new Error(`edit round ${round} made no commit`);
      if (timed) {
        writeSamples.push(Number(middle - start) / 1e6);
        commitSamples.push(elapsedMs(middle));
      }
    },
    {
      beforeEach(mode) {
        timed = mode === 'run';
        next = asWrites(tree.changeFiles(count, ++round));
      },
    },
  );
  await suite.run();
  await repo.store.close();
  return {
    size: tree.size,
    scenario: options.scenario,
    side: 'ours',
    timing: summariseTask(suite.tasks[0]),
    peakRssBytes: peakRssBytes(),
    phases: { writeFiles: summarise(writeSamples), commit: summarise(commitSamples) },
    method: `writeFiles(${count} file${count === 1 ? '' : 's'}) + commit, tinybench`,
  };
}

/** Tops the history up to more than LOG_LIMIT commits with one-file commits, then times log(). */
async function logScenario(tree: SourceTree, options: OursChildOptions): Promise<Measurement> {
  const repo = openRepo(options.storePath);
  let round = ROUND_BASE.history + options.roundOffset;
  let added = 0;
  while ((await log(repo, { branch: MAIN_BRANCH, limit: LOG_LIMIT })).next_cursor === null) {
    await writeFiles(repo, { branch: MAIN_BRANCH, files: asWrites(tree.changeFiles(1, ++round)) });
    await commit(repo, { branch: MAIN_BRANCH, message: `History ${round}`, people: PEOPLE });
    added++;
  }
  const suite = bench(options.quick, 50);
  suite.add('log-200', async () => {
    const page = await log(repo, { branch: MAIN_BRANCH, limit: LOG_LIMIT });
    if (page.commits.length !== LOG_LIMIT) throw new Error(`log returned ${page.commits.length} commits`);
  });
  await suite.run();
  await repo.store.close();
  return {
    size: tree.size,
    scenario: 'log-200',
    side: 'ours',
    timing: summariseTask(suite.tasks[0]),
    peakRssBytes: peakRssBytes(),
    method: `log({limit: 200}) (history topped up with ${added} one-file commits), tinybench`,
  };
}

async function listScenario(tree: SourceTree, options: OursChildOptions): Promise<Measurement> {
  const repo = openRepo(options.storePath);
  const suite = bench(options.quick, 5);
  suite.add('list', async () => {
    const files = await listFiles(repo, { branch: MAIN_BRANCH });
    if (files.length !== tree.size) throw new Error(`listFiles returned ${files.length} files`);
  });
  await suite.run();
  await repo.store.close();
  return {
    size: tree.size,
    scenario: 'list',
    side: 'ours',
    timing: summariseTask(suite.tasks[0]),
    peakRssBytes: peakRssBytes(),
    method: 'listFiles({branch: main}) (path, size, oid, lock of every file), tinybench',
  };
}
