/**
 * isomorphic-git doing the same work as ours.ts and gitCli.ts, with its node `fs` backend on a
 * directory of bench/.work/. Each scenario runs in a child process of its own (this script with
 * --child) under a cap per run (capped.ts), because isomorphic-git is 6x-1000x slower than git and
 * one run at 100,000 files can take minutes; a run stopped at the cap is reported, not dropped.
 *
 *   npx tsx bench/isogit.ts [--size=1000] [--cap-seconds=600]     # import, commits, list, log of one size
 *
 * The same work as the git CLI side: import = files written to disk (untimed), then init, add, commit;
 * commit-N = write the N changed files, add them, commit (the same edit rounds as git; the changed
 * paths are passed to add, where git runs `add -A`: isomorphic-git has no cheap "add all changes", its
 * statusMatrix reads every file); list = listFiles (the index, like `git ls-files`); log = log with
 * depth 200 on the same 250-commit history (added by git fast-import, untimed). `add({filepath: '.'})`
 * fails with EMFILE at 100,000 files (it opens every file at once), so paths are added in batches of
 * ADD_BATCH_FILES. Each run gets a new `cache` object, shared by the calls of that run: a run starts
 * cold, as each git command is a new process (with one cache for the whole process, list would
 * answer from the index it parsed before, after one stat).
 */
import fs, { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { SourceTree, writeFilesToDirectory, writeSourceTree } from '../fixtures/sourceTree.js';
import { reportResult, reportRun, reportStep, runCapped, type CappedOutcome } from './capped.js';
import { addHistory, gitSetup } from './gitCli.js';
import { elapsedMs, summarise, type Measurement, type ScenarioId } from './measure.js';
import { LOG_LIMIT, ROUND_BASE } from './ours.js';

const SCRIPT = import.meta.filename;
/** Paths per add() call: add opens every file of a call at once (EMFILE at 100,000). */
export const ADD_BATCH_FILES = 2_000;
const AUTHOR = { name: 'Bench', email: 'bench@example.com', timestamp: 1_700_000_000, timezoneOffset: 0 };

type IsogitScenario = 'import' | 'commit-1' | 'commit-100' | 'list' | 'log-200' | 'merge' | 'clone';

export interface IsogitRepetitions {
  import: number;
  commit: number;
  list: number;
  log: number;
}

export function isogitVersion(): string {
  return git.version();
}

function toMeasurement(size: number, scenario: ScenarioId, outcome: CappedOutcome<unknown>, method: string): Measurement {
  return {
    size,
    scenario,
    side: 'isogit',
    timing: outcome.samples.length > 0 ? summarise(outcome.samples) : null,
    capReached: outcome.capReached,
    failed: outcome.failed,
    peakRssBytes: outcome.peakRssBytes || undefined,
    method,
  };
}

async function runScenario(scenario: IsogitScenario, args: Record<string, string | number>, capSeconds: number): Promise<CappedOutcome<unknown>> {
  const argv = [`--child`, `--scenario=${scenario}`, ...Object.entries(args).map(([name, value]) => `--${name}=${value}`)];
  return runCapped(SCRIPT, argv, capSeconds);
}

/** Added to the edit rounds of the commit scenarios: the repository they use is a copy of the git CLI's, which has seen the default rounds. */
export const ISOGIT_ROUND_OFFSET = 500_000;

export interface IsogitSizeOptions {
  size: number;
  /** Where the import runs (removed afterwards). */
  importDir: string;
  /**
   * The repository the other scenarios use: a copy of the git CLI's after its commit scenarios
   * (bench/run.ts makes it), or, when there is none, one made here with the git CLI (untimed).
   */
  repoDir: string;
  reps: IsogitRepetitions;
  capSeconds: number;
  progress: (text: string) => void;
}

/** Import, commit-1, commit-100, list and log of one size, in that order. */
export async function isogitForSize(options: IsogitSizeOptions): Promise<Measurement[]> {
  const { size, reps, capSeconds, progress } = options;
  const out: Measurement[] = [];
  const note = (m: Measurement) => {
    const time = m.timing ? `${m.timing.medianMs.toFixed(1)} ms median of ${m.timing.n}` : 'no run finished';
    progress(`${size} isogit ${m.scenario}: ${time}${m.capReached ? ` (cap of ${capSeconds} s reached)` : ''}${m.failed ? ` (failed: ${m.failed})` : ''}`);
    out.push(m);
  };
  const imported = await runScenario('import', { size, dir: options.importDir, reps: reps.import }, capSeconds);
  rmSync(options.importDir, { recursive: true, force: true });
  note(toMeasurement(size, 'import', imported, `files written to disk (untimed), then init + add (${ADD_BATCH_FILES} paths per call) + commit`));
  const dir = options.repoDir;
  if (!existsSync(join(dir, '.git'))) {
    progress(`${size} isogit: making the repository for the scenarios after the import with the git CLI`);
    rmSync(dir, { recursive: true, force: true });
    writeSourceTree(new SourceTree({ files: size }), dir);
    gitSetup(['init', '-q', '-b', 'main'], dir);
    gitSetup(['add', '-A'], dir);
    gitSetup(['commit', '-q', '-m', 'Import'], dir);
  }
  const common = { size, dir };
  for (const count of [1, 100] as const) {
    const scenario = count === 1 ? 'commit-1' : 'commit-100';
    const outcome = await runScenario(scenario, { ...common, reps: reps.commit, 'round-offset': ISOGIT_ROUND_OFFSET }, capSeconds);
    note(toMeasurement(size, scenario, outcome, `write ${count} file${count === 1 ? '' : 's'} + add(the changed paths) + commit, on a copy of the git CLI's repository`));
  }
  note(toMeasurement(size, 'list', await runScenario('list', { ...common, reps: reps.list }, capSeconds), 'listFiles (the index)'));
  note(toMeasurement(size, 'log-200', await runScenario('log-200', { ...common, reps: reps.log }, capSeconds), `log({depth: ${LOG_LIMIT}}) (history: one-file commits added by git fast-import)`));
  return out;
}

export interface MergePair {
  a: string;
  b: string;
  /** The tree `git merge-tree --write-tree a b` gave, to check isomorphic-git's merge against. */
  gitTree: string;
}

/** merge({ours: a, theirs: b}) of every pair, in the bare repository `gitdir` (it moves each a). */
export async function isogitMerge(size: number, gitdir: string, pairs: MergePair[], capSeconds: number): Promise<Measurement> {
  const pairsFile = join(gitdir, '..', 'isogit-pairs.json');
  writeFileSync(pairsFile, JSON.stringify(pairs));
  const outcome = await runScenario('merge', { size, gitdir, pairs: pairsFile }, capSeconds);
  const result = outcome.result as { treesEqual: boolean } | undefined;
  const check = result === undefined ? '' : result.treesEqual ? '; every merged tree equals git merge-tree\'s' : '; **a merged tree differs from git merge-tree\'s**';
  return toMeasurement(size, 'merge', outcome, `merge({ours, theirs}) of a fresh pair of branches per run, on the packed bare repository git merge-tree reads${check}`);
}

/** clone({noCheckout: true}) over HTTP with isomorphic-git/http/node, `reps` times. */
export async function isogitClone(size: number, url: string, target: string, reps: number, capSeconds: number): Promise<Measurement> {
  const outcome = await runScenario('clone', { size, url, dir: target, reps }, capSeconds);
  rmSync(target, { recursive: true, force: true });
  return toMeasurement(size, 'clone', outcome, 'clone({noCheckout: true}) with isomorphic-git/http/node from git http-backend');
}

// ---- child side -----------------------------------------------------------------------------

function option(argv: string[], name: string): string {
  const found = argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  if (found === undefined) throw new Error(`isogit child needs --${name}=`);
  return found;
}

async function timed(action: () => Promise<void>): Promise<void> {
  const start = process.hrtime.bigint();
  await action();
  reportRun(elapsedMs(start));
}

async function addPaths(dir: string, paths: readonly string[], cache: object): Promise<void> {
  for (let i = 0; i < paths.length; i += ADD_BATCH_FILES) {
    await git.add({ fs, dir, filepath: paths.slice(i, i + ADD_BATCH_FILES), cache });
  }
}

async function child(argv: string[]): Promise<void> {
  const scenario = option(argv, 'scenario') as IsogitScenario;
  const size = Number(option(argv, 'size'));
  switch (scenario) {
    case 'import': {
      const dir = option(argv, 'dir');
      const tree = new SourceTree({ files: size });
      for (let rep = 0; rep < Number(option(argv, 'reps')); rep++) {
        rmSync(dir, { recursive: true, force: true });
        writeSourceTree(tree, dir);
        reportStep('tree written');
        await timed(async () => {
          const cache = {};
          await git.init({ fs, dir, defaultBranch: 'main' });
          await addPaths(dir, tree.paths, cache);
          await git.commit({ fs, dir, message: 'Import', author: AUTHOR, cache });
        });
      }
      return;
    }
    case 'commit-1':
    case 'commit-100': {
      const dir = option(argv, 'dir');
      const tree = new SourceTree({ files: size });
      const count = scenario === 'commit-1' ? 1 : 100;
      let round = ROUND_BASE[scenario] + Number(option(argv, 'round-offset'));
      for (let rep = 0; rep < Number(option(argv, 'reps')); rep++) {
        const changes = tree.changeFiles(count, ++round);
        await timed(async () => {
          const cache = {};
          writeFilesToDirectory(dir, changes);
          await addPaths(
            dir,
            changes.map((file) => file.path),
            cache,
          );
          await git.commit({ fs, dir, message: `Edit round ${round}`, author: AUTHOR, cache });
        });
      }
      return;
    }
    case 'list': {
      const dir = option(argv, 'dir');
      for (let rep = 0; rep < Number(option(argv, 'reps')); rep++) {
        await timed(async () => {
          const files = await git.listFiles({ fs, dir, cache: {} });
          if (files.length !== size) throw new Error(`listFiles returned ${files.length} files, expected ${size}`);
        });
      }
      return;
    }
    case 'log-200': {
      const dir = option(argv, 'dir');
      addHistory(dir, new SourceTree({ files: size }));
      reportStep('history added');
      for (let rep = 0; rep < Number(option(argv, 'reps')); rep++) {
        await timed(async () => {
          const commits = await git.log({ fs, dir, depth: LOG_LIMIT, cache: {} });
          if (commits.length !== LOG_LIMIT) throw new Error(`log returned ${commits.length} commits`);
        });
      }
      return;
    }
    case 'merge': {
      const gitdir = option(argv, 'gitdir');
      const pairs = JSON.parse(fs.readFileSync(option(argv, 'pairs'), 'utf8')) as MergePair[];
      let treesEqual = true;
      for (const pair of pairs) {
        let oid = '';
        const cache = {};
        await timed(async () => {
          const merged = await git.merge({ fs, gitdir, ours: pair.a, theirs: pair.b, author: AUTHOR, cache });
          if (!merged.oid || merged.fastForward || merged.alreadyMerged) throw new Error(`merge of ${pair.b} into ${pair.a} made no merge commit`);
          oid = merged.oid;
        });
        const { commit } = await git.readCommit({ fs, gitdir, oid, cache });
        if (commit.tree !== pair.gitTree) treesEqual = false;
      }
      reportResult({ treesEqual });
      return;
    }
    case 'clone': {
      const dir = option(argv, 'dir');
      const url = option(argv, 'url');
      for (let rep = 0; rep < Number(option(argv, 'reps')); rep++) {
        rmSync(dir, { recursive: true, force: true });
        reportStep('target removed');
        await timed(() => git.clone({ fs, http, dir, url, noCheckout: true, cache: {} }));
      }
      return;
    }
  }
}

async function standalone(argv: string[]): Promise<void> {
  const size = Number(argv.find((arg) => arg.startsWith('--size='))?.slice(7) ?? 1000);
  const capSeconds = Number(argv.find((arg) => arg.startsWith('--cap-seconds='))?.slice(14) ?? 600);
  const work = join(import.meta.dirname, '.work', `isogit-${size}-${process.pid}`);
  try {
    const measurements = await isogitForSize({
      size,
      importDir: join(work, 'import'),
      repoDir: join(work, 'repo'),
      reps: { import: 1, commit: 3, list: 3, log: 3 },
      capSeconds,
      progress: (text) => process.stderr.write(`${text}\n`),
    });
    console.log(JSON.stringify(measurements, null, 2));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === SCRIPT) {
  await (process.argv.includes('--child') ? child(process.argv) : standalone(process.argv));
}
