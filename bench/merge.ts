/**
 * Merge of two branches that each changed 100 different files of an N-file tree: Treehouse's
 * mergeBranches (in-process, a real LmdbStore) against `git merge-tree --write-tree` on the same
 * repository, in the same run. The repository git reads is the project exported object by object
 * (exportToBareRepo) and packed, so both merge byte-identical commits; the test asserts equal trees.
 *
 *   npx tsx bench/merge.ts [--size=100000] [--pairs=7] [--warmup=2] [--conflicts=0]
 *     [--isogit-cap-seconds=600] [--isogit-pairs=3] [--work=DIR] [--result=FILE]
 *
 * Each measured merge is a fresh pair of branches (a merge is a write: the target moves), so ours is
 * timed once per pair including its durable commit; git's merge-tree writes nothing and is timed on
 * every pair too. Before the timed pairs, --warmup more pairs are merged untimed (ours only): the
 * first merges of a fresh process run in V8's interpreter (the first took 50-100 ms where the
 * tenth took 12), and a server merges warm; the first merge's time is reported on its own
 * (oursFirstMs), so the cold figure stays in sight. isomorphic-git (when --isogit-cap-seconds is not 0) merges the first pairs in the
 * same exported repository afterwards, in a capped child process (bench/isogit.ts), and its merged
 * trees are checked against git's. bench/run.ts runs this file as a child (--result) for each size.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SourceTree, type SourceFile } from '../fixtures/sourceTree.js';
import { commit } from '../src/repo/commit.js';
import { createBranch } from '../src/repo/createBranch.js';
import { exportToBareRepo } from '../src/repo/wire/exportToBareRepo.js';
import { initProject } from '../src/repo/initProject.js';
import { mergeBranches } from '../src/repo/merge/mergeBranches.js';
import { DEFAULT_REPO_LIMITS, type Repo } from '../src/repo/repo.js';
import { showCommit } from '../src/repo/showCommit.js';
import { writeFiles } from '../src/repo/writeFiles.js';
import type { CommitAuthors } from '../src/repo/writeCommit.js';
import { LmdbStore } from '../src/store/lmdb.js';
import { isogitMerge, type MergePair } from './isogit.js';
import { resetPeakRss, settleDisk, statusBytes, summarise, type Measurement, type Summary } from './measure.js';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';

const PEOPLE: CommitAuthors = { author: { name: 'Bench', email: 'bench@treehouse.invalid' }, committer: { name: 'Bench', email: 'bench@treehouse.invalid' } };
export const CHANGED_PER_SIDE = 100;
const TIME_BINARY = '/usr/bin/time';
const GIT_ENV = isolatedGitEnv({ noAutoGc: true });

export interface MergeBenchResult {
  files: number;
  conflicts: number;
  ours: Summary;
  git: Summary;
  treesEqual: boolean;
  /** The process's first merge (the first warm-up merge, or the first timed one without warm-up): V8 has optimised nothing yet. */
  oursFirstMs?: number;
  /** How many pairs were merged untimed before the timed ones. */
  warmupPairs: number;
  /** This process's peak RSS during the merges (VmHWM reset after the setup, so the import is not in it). */
  oursPeakRssBytes?: number;
  /** One more `git merge-tree` of the first pair under /usr/bin/time. */
  gitPeakRssBytes?: number;
  /** isomorphic-git's merges of the first pairs, when asked for. */
  isogit?: Measurement;
}

export interface MergeBenchOptions {
  /** Cap per isomorphic-git merge; 0 or absent: isomorphic-git is not run. */
  isogitCapSeconds?: number;
  /** How many of the pairs isomorphic-git merges (default all). */
  isogitPairs?: number;
  /** Pairs merged untimed before the timed ones (default 0). */
  warmupPairs?: number;
}

/**
 * The two sides of pair `pair`: 100 changed files each, disjoint except for `conflicts` files that
 * both sides change in the same line region. Shared with the HTTP benchmark (bench/http.ts).
 */
export function pairChanges(tree: SourceTree, pair: number, conflicts: number): { left: SourceFile[]; right: SourceFile[] } {
  const left = tree.changeFiles(CHANGED_PER_SIDE, 10 * pair + 1);
  const taken = new Set(left.map((file) => file.path));
  const right = tree.changeFiles(CHANGED_PER_SIDE * 3, 10 * pair + 2).filter((file) => !taken.has(file.path)).slice(0, CHANGED_PER_SIDE - conflicts);
  for (const file of left.slice(0, conflicts)) right.push({ path: file.path, content: Buffer.from(`${file.content.toString('utf8')}// other side\n`) });
  return { left, right };
}

function argument(name: string, fallback: number): number {
  const found = process.argv.find((arg) => arg.startsWith(`--${name}=`));
  return found ? Number(found.split('=')[1]) : fallback;
}

function git(args: string[], cwd: string): string {
  const result = spawnSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (result.status !== 0 && !(args[0] === 'merge-tree' && result.status === 1)) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** `git merge-tree` timed as a process, like a caller would run it. */
async function timeGitMergeTree(cwd: string, a: string, b: string): Promise<{ ms: number; tree: string }> {
  const start = process.hrtime.bigint();
  const child = spawn('git', ['merge-tree', '--write-tree', '--name-only', a, b], { cwd, env: GIT_ENV });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (err += chunk));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  // 1 is a conflicted merge; anything else means git could not merge (a timing of a failure is no timing).
  if (status !== 0 && status !== 1) throw new Error(`git merge-tree ${a} ${b} exited ${status}: ${err}`);
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, tree: out.split('\n')[0] };
}

/**
 * Imports the fixture and commits each pair's two branches. Kept apart from the timing, so nothing
 * of the fixture stays reachable from the frame that times the merges.
 */
async function preparePairs(repo: Repo, files: number, total: number, timed: number, conflicts: number): Promise<{ branchPairs: Array<[string, string]>; warmup: Array<[string, string]> }> {
  const tree = new SourceTree({ files });
  await initProject(repo, { files: [], people: PEOPLE });
  await writeFiles(repo, { branch: 'main', files: tree.paths.map((path, index) => ({ path, content: tree.content(index).toString('utf8') })) });
  await commit(repo, { branch: 'main', message: 'Import', people: PEOPLE });
  // Each pair: two branches off main changing 100 files each, disjoint except for `conflicts` files.
  // The warm-up pairs come after the timed ones in pairChanges' numbering, so the timed pairs are the same with or without them.
  const branchPairs: Array<[string, string]> = [];
  const warmup: Array<[string, string]> = [];
  for (let pair = 0; pair < total; pair++) {
    const { left, right } = pairChanges(tree, pair, conflicts);
    const [a, b] = [`pair-${pair}-a`, `pair-${pair}-b`];
    for (const [branch, changes] of [[a, left], [b, right]] as const) {
      await createBranch(repo, { name: branch, from: 'main' });
      await writeFiles(repo, { branch, files: changes.map((file) => ({ path: file.path, content: file.content.toString('utf8') })) });
      await commit(repo, { branch, message: `${branch} changes`, people: PEOPLE });
    }
    (pair < timed ? branchPairs : warmup).push([a, b]);
  }
  return { branchPairs, warmup };
}

/** A full collection, whether or not node was started with --expose-gc. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

export async function runMergeBench(
  files: number,
  pairs: number,
  conflicts: number,
  workRoot = join(import.meta.dirname, '.work'),
  options: MergeBenchOptions = {},
): Promise<MergeBenchResult> {
  const dir = join(workRoot, `merge-${files}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const store = new LmdbStore({ path: join(dir, 'store') });
  const repo: Repo = { store: store.async, project: 1, limits: { ...DEFAULT_REPO_LIMITS, batchFilesMax: files } };
  try {
    const warmupPairs = options.warmupPairs ?? 0;
    const { branchPairs, warmup } = await preparePairs(repo, files, pairs + warmupPairs, pairs, conflicts);
    const bare = join(dir, 'git.git');
    git(['init', '-q', '--bare', bare], dir);
    await exportToBareRepo(repo, bare);
    git(['repack', '-adq'], bare);
    git(['prune-packed'], bare);
    // The fixture (its 100,000 contents, 400-500 MB of heap) is garbage now: a server merging holds
    // no such thing. (With it alive scavenges inside the merges took 2-14 ms; the medians did not
    // move visibly once it was let go, README "Performance".)
    collectGarbage();

    const oursTimes: number[] = [];
    const gitTimes: number[] = [];
    const isogitPairs: MergePair[] = [];
    let treesEqual = true;
    // The setup wrote the store and git's pack: their writeback is not the merges' to wait for (as every scenario, bench/run.ts).
    settleDisk();
    const rssReset = resetPeakRss(process.pid);
    let oursFirstMs: number | undefined;
    for (const [a, b] of warmup) {
      const start = process.hrtime.bigint();
      await mergeBranches(repo, { source: b, target: a, people: PEOPLE });
      oursFirstMs ??= Number(process.hrtime.bigint() - start) / 1e6;
    }
    for (const [a, b] of branchPairs) {
      const gitRun = await timeGitMergeTree(bare, a, b);
      gitTimes.push(gitRun.ms);
      isogitPairs.push({ a, b, gitTree: gitRun.tree });
      const start = process.hrtime.bigint();
      let merged: string | null = null;
      try {
        merged = (await mergeBranches(repo, { source: b, target: a, people: PEOPLE })).oid;
      } catch (error) {
        if ((error as { code?: string }).code !== 'merge_conflict') throw error;
      }
      oursTimes.push(Number(process.hrtime.bigint() - start) / 1e6);
      oursFirstMs ??= oursTimes[0];
      const oursTree = merged ? (await showCommit(repo, { oid: merged, content: false })).tree_oid : null;
      if (conflicts === 0 && oursTree !== gitRun.tree) treesEqual = false;
    }
    const oursPeakRssBytes = rssReset ? statusBytes(process.pid, 'VmHWM') : undefined;
    const result: MergeBenchResult = { files, conflicts, ours: summarise(oursTimes), git: summarise(gitTimes), treesEqual, oursPeakRssBytes, oursFirstMs, warmupPairs };
    result.gitPeakRssBytes = gitMergeTreeRss(bare, branchPairs[0][0], branchPairs[0][1]);
    if (options.isogitCapSeconds) {
      // The git side has finished reading the pairs; isomorphic-git's merges move each pair's `a`.
      result.isogit = await isogitMerge(files, bare, isogitPairs.slice(0, options.isogitPairs ?? pairs), options.isogitCapSeconds);
    }
    return result;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Peak RSS of one `git merge-tree` (it writes nothing, so a pair can be merged again). */
function gitMergeTreeRss(cwd: string, a: string, b: string): number | undefined {
  if (!existsSync(TIME_BINARY)) return undefined;
  const result = spawnSync(TIME_BINARY, ['-f', '%M', 'git', 'merge-tree', '--write-tree', '--name-only', a, b], { cwd, env: GIT_ENV, encoding: 'utf8', maxBuffer: 1 << 28 });
  const lines = result.stderr.trim().split('\n');
  const kilobytes = Number(lines[lines.length - 1]);
  return Number.isFinite(kilobytes) ? kilobytes * 1024 : undefined;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const work = process.argv.find((arg) => arg.startsWith('--work='))?.slice('--work='.length);
  const resultPath = process.argv.find((arg) => arg.startsWith('--result='))?.slice('--result='.length);
  const isogitCapSeconds = argument('isogit-cap-seconds', 600);
  const result = await runMergeBench(argument('size', 100_000), argument('pairs', 7), argument('conflicts', 0), work, {
    isogitCapSeconds,
    isogitPairs: argument('isogit-pairs', 3),
    warmupPairs: argument('warmup', 2),
  });
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
  else console.log(JSON.stringify(result, null, 2));
}
