/**
 * The git CLI doing the same work as ours.ts, timed by wall clock around the processes it spawns.
 * Writing the imported tree to disk is not timed (ours gets its input in memory too); writing the
 * edited files of a commit scenario is, as ours times writeFiles. Git runs with no system or global
 * configuration, so with its defaults (loose objects for add, zlib level 1 for them), except that
 * automatic gc is off (see GIT_ENV).
 *
 * Peak RSS comes from /usr/bin/time -f %M, in one extra run after the timed ones, so the timed runs
 * pay nothing for it; for the import the timed run itself is wrapped, since /usr/bin/time's
 * millisecond is lost in seconds.
 *
 * Every timed run has a cap (setGitCapSeconds, default 10 minutes): a command still running when its
 * run's time is up is killed, and the scenario is reported as "cap reached" with the runs it finished.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SourceTree, writeFilesToDirectory, writeSourceTree } from '../fixtures/sourceTree.js';
import { elapsedMs, settleDisk, summarise, type CapReached, type Measurement } from './measure.js';
import { LOG_LIMIT, ROUND_BASE } from './ours.js';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';

const TIME_BINARY = '/usr/bin/time';
const HISTORY_COMMITS = 250;
const OUTPUT_BYTES_MAX = 1 << 30;

const BENCH_IDENTITY = { name: 'Bench', email: 'bench@example.com' };
const GIT_ENV = isolatedGitEnv({ author: BENCH_IDENTITY, committer: BENCH_IDENTITY, noAutoGc: true });

/** The longest one timed run may take; see beginRun. */
let capMs = 600_000;
/** When the run under way must end (process.hrtime.bigint() nanoseconds), or null outside a timed run. */
let runDeadlineNs: bigint | null = null;

export function setGitCapSeconds(seconds: number): void {
  capMs = seconds * 1000;
}

/** Thrown when a timed run of git went past the cap; the command was killed. */
export class GitCapReached extends Error {
  constructor() {
    super(`a git run went past the cap of ${capMs / 1000} s`);
  }
}

/** Starts the clock of one timed run: the commands until endRun() share one cap. */
function beginRun(): bigint {
  const start = process.hrtime.bigint();
  runDeadlineNs = start + BigInt(capMs) * 1_000_000n;
  return start;
}

function endRun(start: bigint): number {
  runDeadlineNs = null;
  return elapsedMs(start);
}

/** What a scenario reports when a run hit the cap: the finished runs' times, if any. */
function capped(samples: number[]): { timing: Measurement['timing']; capReached: CapReached } {
  runDeadlineNs = null;
  return { timing: samples.length > 0 ? summarise(samples) : null, capReached: { capSeconds: capMs / 1000, runsDone: samples.length } };
}

export function gitVersion(): string {
  return runGit(['--version'], process.cwd()).stdout.trim().replace(/^git version /, '');
}

interface GitRun {
  stdout: string;
  /** Peak RSS in bytes, when run under /usr/bin/time. */
  rssBytes?: number;
}

function runGit(args: string[], cwd: string, options: { input?: string | Buffer; measureRss?: boolean } = {}): GitRun {
  const measure = options.measureRss === true && existsSync(TIME_BINARY);
  const [command, argv] = measure ? [TIME_BINARY, ['-f', '%M', 'git', ...args]] : ['git', args];
  const timeoutMs = runDeadlineNs === null ? undefined : Math.max(1, Math.ceil(Number(runDeadlineNs - process.hrtime.bigint()) / 1e6));
  const result = spawnSync(command, argv, { cwd, env: GIT_ENV, input: options.input, maxBuffer: OUTPUT_BYTES_MAX, encoding: 'buffer', timeout: timeoutMs, killSignal: 'SIGKILL' });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT') throw new GitCapReached();
  if (result.status !== 0) {
    throw new Error(`git ${args.join(' ')} failed (${result.status}): ${result.stderr.toString('utf8')}`);
  }
  const run: GitRun = { stdout: result.stdout.toString('utf8') };
  if (measure) {
    const lines = result.stderr.toString('utf8').trim().split('\n');
    run.rssBytes = Number(lines[lines.length - 1]) * 1024;
  }
  return run;
}

/** Runs several git commands in a row; returns the largest peak RSS among them. */
function runGits(commands: string[][], cwd: string, measureRss: boolean): number | undefined {
  let peak: number | undefined;
  for (const args of commands) {
    const { rssBytes } = runGit(args, cwd, { measureRss });
    if (rssBytes !== undefined) peak = Math.max(peak ?? 0, rssBytes);
  }
  return peak;
}

export interface GitScenarioOptions {
  tree: SourceTree;
  /** The repository's work tree; import (re)creates it, the other scenarios reuse it. */
  dir: string;
  reps: number;
}

/** `git init`, `git add -A`, `git commit` on a freshly written tree, `reps` times; leaves the last. */
export function gitImport({ tree, dir, reps }: GitScenarioOptions): Measurement {
  const samples: number[] = [];
  let peak = 0;
  const method = 'files written to disk (untimed), then git init + git add -A + git commit -q';
  for (let rep = 0; rep < reps; rep++) {
    rmSync(dir, { recursive: true, force: true });
    writeSourceTree(tree, dir);
    settleDisk();
    const start = beginRun();
    try {
      const rss = runGits([['init', '-q', '-b', 'main'], ['add', '-A'], ['commit', '-q', '-m', 'Import']], dir, true);
      peak = Math.max(peak, rss ?? 0);
    } catch (error) {
      if (!(error instanceof GitCapReached)) throw error;
      // The later scenarios still need the repository: finish it without a clock (the killed
      // command may have left its index lock behind).
      runDeadlineNs = null;
      rmSync(join(dir, '.git', 'index.lock'), { force: true });
      runGits([['add', '-A'], ['commit', '-q', '-m', 'Import']], dir, false);
      return { size: tree.size, scenario: 'import', side: 'git', ...capped(samples), method };
    }
    samples.push(endRun(start));
  }
  return { size: tree.size, scenario: 'import', side: 'git', timing: summarise(samples), peakRssBytes: peak || undefined, method };
}

/** Edits `count` files on disk, then `git add -A` + `git commit -q`; the same rounds as ours. */
export function gitCommit({ tree, dir, reps }: GitScenarioOptions, count: number): Measurement {
  let round = ROUND_BASE[count === 1 ? 'commit-1' : 'commit-100'];
  const commitOnce = (measureRss: boolean): number | undefined => {
    writeFilesToDirectory(dir, tree.changeFiles(count, ++round));
    return runGits([['add', '-A'], ['commit', '-q', '-m', `Edit round ${round}`]], dir, measureRss);
  };
  const samples: number[] = [];
  const base = { size: tree.size, scenario: count === 1 ? 'commit-1' : 'commit-100', side: 'git', method: `write ${count} file${count === 1 ? '' : 's'} + git add -A + git commit -q` } as const;
  settleDisk();
  try {
    for (let rep = 0; rep < reps; rep++) {
      const start = beginRun();
      commitOnce(false);
      samples.push(endRun(start));
    }
  } catch (error) {
    if (!(error instanceof GitCapReached)) throw error;
    runDeadlineNs = null;
    rmSync(join(dir, '.git', 'index.lock'), { force: true });
    runGits([['add', '-A'], ['commit', '-q', '-m', `Edit round ${round}`]], dir, false);
    return { ...base, ...capped(samples) };
  }
  return { ...base, timing: summarise(samples), peakRssBytes: commitOnce(true) };
}

/** Times `action` `reps` times; stops at the first run that reaches the cap. */
function timeRepeated(reps: number, action: () => void): { timing: Measurement['timing']; capReached?: CapReached } {
  const samples: number[] = [];
  try {
    for (let rep = 0; rep < reps; rep++) {
      const start = beginRun();
      action();
      samples.push(endRun(start));
    }
  } catch (error) {
    if (!(error instanceof GitCapReached)) throw error;
    return capped(samples);
  }
  return { timing: summarise(samples) };
}

/** `git ls-files -s` (the index: mode, id, path); `git ls-tree -r HEAD` is timed alongside for the notes. */
export function gitList({ tree, dir, reps }: GitScenarioOptions): { listing: Measurement; lsTree: Measurement } {
  const expectLines = (stdout: string) => {
    const lines = stdout.length === 0 ? 0 : stdout.split('\n').length - 1;
    if (lines !== tree.size) throw new Error(`git listed ${lines} files, expected ${tree.size}`);
  };
  const listing = timeRepeated(reps, () => expectLines(runGit(['ls-files', '-s'], dir).stdout));
  const lsTree = timeRepeated(reps, () => expectLines(runGit(['ls-tree', '-r', 'HEAD'], dir).stdout));
  const base = { size: tree.size, scenario: 'list', side: 'git' } as const;
  return {
    listing: { ...base, ...listing, peakRssBytes: runGit(['ls-files', '-s'], dir, { measureRss: true }).rssBytes, method: 'git ls-files -s' },
    lsTree: { ...base, ...lsTree, peakRssBytes: runGit(['ls-tree', '-r', 'HEAD'], dir, { measureRss: true }).rssBytes, method: 'git ls-tree -r HEAD' },
  };
}

/**
 * Adds HISTORY_COMMITS one-file commits cheaply with one `git fast-import`, then times
 * `git log -n 200`. Last of the git scenarios: the work tree no longer matches HEAD afterwards.
 */
export function gitLog({ tree, dir, reps }: GitScenarioOptions): Measurement {
  addHistory(dir, tree);
  const timed = timeRepeated(reps, () => {
    const commits = runGit(['log', '-n', String(LOG_LIMIT)], dir).stdout.match(/^commit /gm)?.length ?? 0;
    if (commits !== LOG_LIMIT) throw new Error(`git log printed ${commits} commits`);
  });
  return {
    size: tree.size,
    scenario: 'log-200',
    side: 'git',
    ...timed,
    peakRssBytes: runGit(['log', '-n', String(LOG_LIMIT)], dir, { measureRss: true }).rssBytes,
    method: `git log -n ${LOG_LIMIT} (history: ${HISTORY_COMMITS} one-file commits added by git fast-import)`,
  };
}

/**
 * Adds HISTORY_COMMITS one-file commits on main of the repository in `dir` with one
 * `git fast-import` (untimed setup; isomorphic-git's log scenario uses it too).
 */
export function addHistory(dir: string, tree: SourceTree): void {
  runGit(['fast-import', '--quiet'], dir, { input: historyStream(tree) });
}

/** Runs git in `dir` outside any timed run (setup work), with the benchmark's environment. */
export function gitSetup(args: string[], dir: string): string {
  return runGit(args, dir).stdout;
}

export const HISTORY_COMMIT_COUNT = HISTORY_COMMITS;

/** A fast-import stream of one-file commits on main (gitformat: git-fast-import(1) "commit"). */
function historyStream(tree: SourceTree): Buffer {
  const parts: Buffer[] = [];
  const text = (value: string) => parts.push(Buffer.from(value, 'utf8'));
  const data = (bytes: Buffer) => {
    text(`data ${bytes.length}\n`);
    parts.push(bytes);
    text('\n');
  };
  const startSeconds = Math.floor(Date.now() / 1000);
  for (let i = 1; i <= HISTORY_COMMITS; i++) {
    const round = ROUND_BASE.history + i;
    const [edit] = tree.changeFiles(1, round);
    text(`commit refs/heads/main\ncommitter Bench <bench@example.com> ${startSeconds + i} +0000\n`);
    data(Buffer.from(`History ${round}\n`, 'utf8'));
    if (i === 1) text('from refs/heads/main^0\n');
    text(`M 100644 inline ${edit.path}\n`);
    data(edit.content);
  }
  return Buffer.concat(parts);
}
