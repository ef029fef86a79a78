/**
 * One benchmark run that measures Treehouse against git and isomorphic-git on the same work
 * (issue #7, with the targets of issues #2, #4, #5 and #6), for each tree size:
 *
 *   npm run bench                         # 1,000, 10,000 and 100,000 files
 *   npm run bench -- --quick              # 1,000 and 10,000 files, fewer runs, isomorphic-git capped hard,
 *                                         # no micro or lint benchmarks (under 2 minutes)
 *   npm run bench -- --sizes=1000,10000   # chosen sizes
 *   npm run bench -- --render=bench/.work/report-<date>.json   # the page again from a run's kept data
 *   options: --out=FILE (default bench/RESULTS.md), --cap-seconds=N (per peer run, default 600),
 *            --isogit-cap-seconds=N (isomorphic-git's runs; default the cap, 5 with --quick), --load-seconds=N (HTTP load; default 20, 5 with --quick), --keep (keep
 *            bench/.work/<run>), --history-reps=N (default 3), and --no-X to leave a part out: git,
 *            isogit, http, merge, clone, load, lint, micro, history, workspace, nodes
 *
 * Per size, in this order: Treehouse through its library (bench/ours.ts; each scenario in a child
 * process of this script, `--child`, so each has its own peak RSS and a cold start like a fresh
 * server's; the store the import leaves is reused by the commit, list and log scenarios that follow),
 * Treehouse through HTTP (bench/http.ts, a real server process), the git CLI (bench/gitCli.ts),
 * isomorphic-git (bench/isogit.ts, capped child processes), merge (bench/merge.ts: library, git
 * merge-tree, isomorphic-git) and clone (bench/clone.ts: our server, git http-backend, isomorphic-git).
 * Then the HTTP load scenario, the histories of issue 13 (bench/history.ts: seed, clone, fetch, push
 * and store of realistic histories beside git http-backend; not with --quick), the hashing micro
 * benchmarks and the lint benchmark (bench/lint.ts, whose section is copied into the results). Scratch data goes to bench/.work/run-<date>/ (gitignored),
 * emptied after each size.
 *
 * To profile one of our scenarios, run its child by hand on a kept store, for example:
 *   node --cpu-prof --import tsx bench/run.ts --child --scenario=commit-100 --size=100000 \
 *     --store=bench/.work/store --result=/tmp/result.json --round-offset=100000
 * (--round-offset makes the edit rounds new when the store has seen the default ones.)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem, type as osType } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SourceTree } from '../fixtures/sourceTree.js';
import { DEFAULT_REPO_LIMITS } from '../src/repo/repo.js';
import { defaultPoolSize } from '../src/service/lint/formatter.js';
import type { CloneResult } from './clone.js';
import type { HistoryBenchResult } from './historyReport.js';
import type { NodesBenchResult } from './nodes.js';
import { gitCommit, gitImport, gitList, gitLog, gitVersion, setGitCapSeconds } from './gitCli.js';
import { runHashBench } from './hash.bench.js';
import type { LoadSummary } from './http.js';
import type { LagResult } from './lag.js';
import type { LagRun } from './report.js';
import { isogitForSize, isogitVersion } from './isogit.js';
import { markedSection, SCENARIOS, settleDisk, summarise, type Measurement, type ScenarioId, type Summary } from './measure.js';
import type { MergeBenchResult } from './merge.js';
import type { WorkspaceBenchResult } from './workspace.js';
import { runOursScenario } from './ours.js';
import { formatMs, renderResults, scenarioTable, targetSummary, type CloneDetails, type LintDetails, type MachineInfo, type Report } from './report.js';

const SCRIPT = fileURLToPath(import.meta.url);
const BENCH_DIR = dirname(SCRIPT);
const REPO_ROOT = dirname(BENCH_DIR);
const DEFAULT_SIZES = [1_000, 10_000, 100_000];
const QUICK_SIZES = [1_000, 10_000];
/** Cap per peer run; with --quick, isomorphic-git gets a hard cap of its own (git never comes near either). */
const CAP_SECONDS = 600;
const ISOGIT_QUICK_CAP_SECONDS = 5;
const LOAD_SECONDS = { full: 20, quick: 5 };
const LOAD_CLIENTS = 32;
/** The loads bench/lag.ts runs: the one issue 11 judges, and everything at once for comparison. */
const LAG_MIXES = [
  { name: 'clones, pushes and API writes', judged: true, args: ['--without=seed', '--cloners=1'] },
  { name: 'all of it: two cloners, pushes, git seeds and API writes', judged: false, args: [] },
];
/** bench/lint.ts's section markers (that file runs its benchmark when imported, so they are repeated here). */
const LINT_SECTION_START = '<!-- bench/lint.ts: start -->';
const LINT_SECTION_END = '<!-- bench/lint.ts: end -->';
const LINT_FILES = 1_000;
/** bench/workspace.ts's section markers (as for lint: that file runs its benchmark when run, so they are repeated here). */
const WORKSPACE_SECTION_START = '<!-- bench/workspace.ts: start -->';
const WORKSPACE_SECTION_END = '<!-- bench/workspace.ts: end -->';
/** bench/nodes.ts's section markers (importing that file would load the server's modules into this runner). */
const NODES_SECTION_START = '<!-- bench/nodes.ts: start -->';
const NODES_SECTION_END = '<!-- bench/nodes.ts: end -->';
/** Marked sections of other scripts, kept from the page when this run leaves their part out. */
const MARKED_SECTIONS: ReadonlyArray<{ part: Part; start: string; end: string }> = [
  { part: 'lint', start: LINT_SECTION_START, end: LINT_SECTION_END },
  { part: 'workspace', start: WORKSPACE_SECTION_START, end: WORKSPACE_SECTION_END },
  { part: 'nodes', start: NODES_SECTION_START, end: NODES_SECTION_END },
];
const PARTS = ['git', 'isogit', 'http', 'merge', 'clone', 'load', 'lag', 'lint', 'micro', 'history', 'workspace', 'nodes'] as const;
type Part = (typeof PARTS)[number];
/** Parts --quick leaves out to stay under two minutes (the lint benchmark alone takes 15 s or more, the histories minutes). */
const QUICK_LEAVES_OUT: readonly Part[] = ['micro', 'lint', 'history', 'workspace', 'nodes'];
const RUN_ALONE: Partial<Record<Part, string>> = { micro: 'npx tsx bench/hash.bench.ts', lint: 'npm run bench:lint', history: 'npx tsx bench/history.ts', workspace: 'npm run bench:workspace', nodes: 'npm run bench:nodes' };
const HISTORY_REPS = 3;

interface Options {
  sizes: number[];
  quick: boolean;
  parts: Set<Part>;
  capSeconds: number;
  isogitCapSeconds: number;
  loadSeconds: number;
  keep: boolean;
  out: string;
  historyReps: number;
}

function parseOptions(argv: string[]): Options {
  const value = (name: string) => argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const quick = argv.includes('--quick');
  const sizes = value('sizes')?.split(',').map((text) => Number(text.replace(/_/g, ''))) ?? (quick ? QUICK_SIZES : DEFAULT_SIZES);
  if (sizes.some((size) => !Number.isSafeInteger(size) || size < 100)) throw new Error('--sizes takes file counts of at least 100');
  const capSeconds = Number(value('cap-seconds') ?? CAP_SECONDS);
  const isogitCapSeconds = Number(value('isogit-cap-seconds') ?? (quick ? Math.min(ISOGIT_QUICK_CAP_SECONDS, capSeconds) : capSeconds));
  const loadSeconds = Number(value('load-seconds') ?? (quick ? LOAD_SECONDS.quick : LOAD_SECONDS.full));
  if (!(capSeconds > 0) || !(isogitCapSeconds > 0) || !(loadSeconds > 0)) throw new Error('--cap-seconds, --isogit-cap-seconds and --load-seconds take positive numbers');
  return {
    sizes,
    quick,
    // --quick leaves out the hashing micro benchmarks and the lint benchmark (each runs alone too).
    parts: new Set(PARTS.filter((part) => !argv.includes(`--no-${part}`) && !(quick && QUICK_LEAVES_OUT.includes(part)))),
    capSeconds,
    isogitCapSeconds,
    loadSeconds,
    keep: argv.includes('--keep'),
    out: value('out') ?? join(BENCH_DIR, 'RESULTS.md'),
    historyReps: Number(value('history-reps') ?? HISTORY_REPS),
  };
}

/** How many times to repeat the whole-process scenarios (the in-process small ones use tinybench). */
function reps(scenario: 'import-ours' | 'import-git' | 'commit' | 'list' | 'log', size: number, quick: boolean): number {
  const big = size >= 100_000;
  switch (scenario) {
    case 'import-ours':
      return quick ? (size >= 10_000 ? 1 : 2) : big ? 2 : size >= 10_000 ? 3 : 5;
    case 'import-git':
      return quick ? 1 : big ? 1 : size >= 10_000 ? 3 : 5;
    case 'commit':
      return quick ? 3 : 10;
    case 'list':
      return quick ? 5 : big ? 5 : 10;
    case 'log':
      return quick ? 10 : 20;
  }
}

const RUN_STARTED = process.hrtime.bigint();

function progress(text: string): void {
  process.stderr.write(`[bench +${(Number(process.hrtime.bigint() - RUN_STARTED) / 1e9).toFixed(0)} s] ${text}\n`);
}

function describe(m: Measurement): string {
  if (m.timing) return `${formatMs(m.timing.medianMs)} median of ${m.timing.n}${m.capReached ? ' (cap reached)' : ''}`;
  return m.capReached ? `cap of ${m.capReached.capSeconds} s reached` : `failed: ${m.failed}`;
}

/** Runs one of our scenarios in a child process (this script with --child) and reads its result. */
function runChild(workDir: string, scenario: ScenarioId, size: number, storePath: string, quick: boolean): Measurement {
  return runChildren(workDir, [scenario], size, storePath, quick)[0];
}

/** Runs scenarios one after the other in one child process (--quick saves the process starts). */
function runChildren(workDir: string, scenarios: ScenarioId[], size: number, storePath: string, quick: boolean): Measurement[] {
  const resultPath = join(workDir, `result-${size}-${scenarios.join('-')}-${Date.now()}.json`);
  const args = [...process.execArgv, SCRIPT, '--child', `--scenario=${scenarios.join(',')}`, `--size=${size}`, `--store=${storePath}`, `--result=${resultPath}`];
  if (quick) args.push('--quick');
  settleDisk();
  const child = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (child.status !== 0) throw new Error(`benchmark child ${scenarios.join(',')} (${size} files) failed with status ${child.status}`);
  const result = JSON.parse(readFileSync(resultPath, 'utf8')) as Measurement | Measurement[];
  rmSync(resultPath);
  return Array.isArray(result) ? result : [result];
}

/**
 * Runs another benchmark script of this directory as a child that writes its result as JSON to
 * --result; an Error (not a throw) when it fails, so one broken part does not lose a long run.
 */
function runScript<T>(workDir: string, script: string, args: string[]): T | Error {
  const resultPath = join(workDir, `result-${script.replace(/\W/g, '-')}-${Date.now()}.json`);
  settleDisk();
  const child = spawnSync(process.execPath, [...process.execArgv, join(BENCH_DIR, script), ...args, `--result=${resultPath}`], { stdio: 'inherit' });
  if (child.status !== 0 || !existsSync(resultPath)) return new Error(`${script} ${args.join(' ')} failed (${child.status ?? child.signal})`);
  const result = JSON.parse(readFileSync(resultPath, 'utf8')) as T;
  rmSync(resultPath);
  return result;
}

/** Folds single-run measurements (one per repetition) into one. */
function mergeRuns(runs: Measurement[]): Measurement {
  const phases: Record<string, Summary> = {};
  for (const name of Object.keys(runs[0].phases ?? {})) {
    phases[name] = summarise(runs.map((run) => run.phases![name].medianMs));
  }
  return {
    ...runs[0],
    timing: summarise(runs.map((run) => run.timing!.medianMs)),
    peakRssBytes: Math.max(...runs.map((run) => run.peakRssBytes ?? 0)),
    phases,
  };
}

function oursForSize(workDir: string, size: number, quick: boolean): Measurement[] {
  const out: Measurement[] = [];
  const importVariants: ScenarioId[] = size > DEFAULT_REPO_LIMITS.batchFilesMax ? ['import-batches', 'import'] : ['import'];
  const mainStore = join(workDir, `ours-${size}`);
  for (const variant of importVariants) {
    const runs: Measurement[] = [];
    const count = reps('import-ours', size, quick);
    for (let rep = 0; rep < count; rep++) {
      // The last repetition of the one-batch import leaves the store the other scenarios use.
      const keep = variant === 'import' && rep === count - 1;
      const storePath = keep ? mainStore : join(workDir, `ours-${size}-${variant}-${rep}`);
      const run = runChild(workDir, variant, size, storePath, quick);
      progress(`${size} ours ${variant} ${rep + 1}/${count}: ${formatMs(run.timing!.medianMs)}`);
      runs.push(run);
      if (!keep) rmSync(storePath, { recursive: true, force: true });
    }
    out.push(mergeRuns(runs));
  }
  const after: ScenarioId[] = ['commit-1', 'commit-100', 'list', 'log-200'];
  // --quick runs them in one child; a full run gives each its own process, start and peak RSS.
  const runs = quick ? runChildren(workDir, after, size, mainStore, quick) : after.map((scenario) => runChild(workDir, scenario, size, mainStore, quick));
  for (const run of runs) {
    progress(`${size} ours ${run.scenario}: ${describe(run)}`);
    out.push(run);
  }
  rmSync(mainStore, { recursive: true, force: true });
  return out;
}

/** The git CLI's scenarios; `copyFor` receives a copy of the repository after the commit scenarios (for isomorphic-git). */
function gitForSize(workDir: string, tree: SourceTree, quick: boolean, copyFor?: string): Measurement[] {
  const dir = join(workDir, `git-${tree.size}`);
  const size = tree.size;
  const out: Measurement[] = [];
  const note = (m: Measurement) => {
    progress(`${size} git ${m.scenario} (${m.method.split(' (')[0]}): ${describe(m)}`);
    out.push(m);
  };
  note(gitImport({ tree, dir, reps: reps('import-git', size, quick) }));
  note(gitCommit({ tree, dir, reps: reps('commit', size, quick) }, 1));
  note(gitCommit({ tree, dir, reps: reps('commit', size, quick) }, 100));
  if (copyFor) {
    const copied = spawnSync('cp', ['-a', dir, copyFor]);
    if (copied.status !== 0) throw new Error(`cp -a ${dir} ${copyFor} failed: ${copied.stderr}`);
  }
  const { listing, lsTree } = gitList({ tree, dir, reps: reps('list', size, quick) });
  note(listing);
  note(lsTree);
  // Last: fast-import moves HEAD away from the files on disk.
  note(gitLog({ tree, dir, reps: reps('log', size, quick) }));
  rmSync(dir, { recursive: true, force: true });
  return out;
}

async function isogitPart(workDir: string, size: number, options: Options): Promise<Measurement[]> {
  const big = size >= 100_000;
  const reps = options.quick ? { import: 1, commit: 2, list: 2, log: 2 } : { import: big ? 1 : size >= 10_000 ? 2 : 3, commit: big ? 3 : 5, list: 5, log: 5 };
  const repoDir = isogitRepoDir(workDir, size);
  try {
    return await isogitForSize({ size, importDir: join(workDir, `isogit-import-${size}`), repoDir, reps, capSeconds: options.isogitCapSeconds, progress });
  } finally {
    rmSync(repoDir, { recursive: true, force: true });
  }
}

function isogitRepoDir(workDir: string, size: number): string {
  return join(workDir, `isogit-${size}`);
}

interface SizeExtras {
  clone?: CloneDetails;
  mergeTreesEqual?: boolean;
}

function mergePart(workDir: string, size: number, options: Options, notes: string[]): { measurements: Measurement[]; treesEqual?: boolean } {
  const pairs = options.quick ? 2 : 7;
  const isogitPairs = options.quick ? 1 : 3;
  const isogitCap = options.parts.has('isogit') ? options.isogitCapSeconds : 0;
  const result = runScript<MergeBenchResult>(workDir, 'merge.ts', [`--size=${size}`, `--pairs=${pairs}`, '--conflicts=0', `--warmup=${options.quick ? 1 : 2}`, `--work=${workDir}`, `--isogit-cap-seconds=${isogitCap}`, `--isogit-pairs=${isogitPairs}`]);
  if (result instanceof Error) {
    notes.push(`merge at ${size.toLocaleString('en-US')} files: ${result.message}`);
    return { measurements: [] };
  }
  const measurements: Measurement[] = [
    {
      size,
      scenario: 'merge',
      side: 'ours',
      timing: result.ours,
      peakRssBytes: result.oursPeakRssBytes,
      method: `mergeBranches(source b, target a) including its durable merge commit, a fresh pair of branches per run (${pairs} pairs, 100 files changed on each side, no conflicts), after ${result.warmupPairs} untimed warm-up merge(s) of other pairs; the process's first merge took ${result.oursFirstMs === undefined ? '?' : `${result.oursFirstMs.toFixed(1)} ms`}; peak RSS reset after the setup (bench/merge.ts)`,
    },
    {
      size,
      scenario: 'merge',
      side: 'git',
      timing: result.git,
      peakRssBytes: result.gitPeakRssBytes,
      method: 'git merge-tree --write-tree --name-only a b on the same history exported from our store and packed (writes the merged trees; moves no ref, no index)',
    },
  ];
  if (result.isogit) measurements.push(result.isogit);
  for (const m of measurements) progress(`${size} merge ${m.side}: ${describe(m)}`);
  return { measurements, treesEqual: result.treesEqual };
}

function clonePart(workDir: string, size: number, options: Options, notes: string[]): { measurements: Measurement[]; details?: CloneDetails } {
  const reps = options.quick ? 1 : 3;
  const isogitCap = options.parts.has('isogit') ? options.isogitCapSeconds : 0;
  const result = runScript<CloneResult>(workDir, 'clone.ts', [`--size=${size}`, `--reps=${reps}`, `--work=${workDir}`, `--isogit-cap-seconds=${isogitCap}`, '--isogit-reps=1']);
  if (result instanceof Error) {
    notes.push(`clone at ${size.toLocaleString('en-US')} files: ${result.message}`);
    return { measurements: [] };
  }
  const measurements: Measurement[] = [
    {
      size,
      scenario: 'clone',
      side: 'ours-http',
      timing: result.ours,
      peakRssBytes: result.oursServerHwmBytes,
      peakRssAnonBytes: result.oursServerPeakAnonBytes,
      peakRssFileBytes: result.oursServerPeakFileBytes,
      method: 'git clone --bare from a fresh server process (the project imported in 10k-file batches, deflate cache caught up) (bench/clone.ts)',
    },
    {
      size,
      scenario: 'clone',
      side: 'git',
      timing: result.git,
      method: 'git clone --bare from git http-backend (CGI behind a small Node adapter, test/support/httpBackend.ts) on a repository packed with git repack -ad',
    },
  ];
  if (result.isogit) measurements.push(result.isogit);
  for (const m of measurements) progress(`${size} clone ${m.side}: ${describe(m)}`);
  return {
    measurements,
    details: {
      size,
      packBytesOurs: result.packBytesOurs,
      packBytesGit: result.packBytesGit,
      packIndexingMs: result.oursPackIndexing.medianMs,
      serverPeakAnonBytes: result.oursServerPeakAnonBytes,
      serverPeakFileBytes: result.oursServerPeakFileBytes,
      serverPeakBytes: result.oursServerHwmBytes,
      serverLifetimePeakBytes: result.oursServerLifetimeHwmBytes,
    },
  };
}

/** bench/lag.ts twice: the judged mix (one cloner, a pusher, API writers) and everything at once (seeds, two cloners). */
function lagPart(workDir: string, options: Options, notes: string[]): LagRun[] | undefined {
  const seconds = options.quick ? 15 : 30;
  const runs: LagRun[] = [];
  for (const mix of LAG_MIXES) {
    const result = runScript<LagResult>(workDir, 'lag.ts', [`--work=${join(workDir, 'lag')}`, `--duration-ms=${seconds * 1000}`, ...mix.args]);
    if (result instanceof Error) {
      notes.push(`event-loop lag (${mix.name}): ${result.message}`);
      continue;
    }
    for (const failure of result.failures) notes.push(`event-loop lag (${mix.name}): ${failure}`);
    progress(`lag (${mix.name}): server p99 ${result.server?.p99Ms ?? '?'} ms, max ${result.server?.maxMs ?? '?'} ms`);
    runs.push({ name: mix.name, judged: mix.judged, result });
  }
  return runs.length > 0 ? runs : undefined;
}

function historyPart(workDir: string, options: Options, notes: string[]): HistoryBenchResult | undefined {
  const result = runScript<HistoryBenchResult>(workDir, 'history.ts', [`--work=${join(workDir, 'history')}`, `--reps=${options.historyReps}`]);
  if (result instanceof Error) {
    notes.push(`histories: ${result.message}`);
    return undefined;
  }
  for (const failure of result.runs.flatMap((run) => run.failures)) notes.push(`histories: ${failure}`);
  progress(`histories: ${result.runs.map((run) => `${run.name} clone ${run.clone.ours ? formatMs(run.clone.ours.medianMs) : 'failed'} vs ${run.clone.git ? formatMs(run.clone.git.medianMs) : 'failed'}`).join('; ')}`);
  return result;
}

function lintModeName(workers: number): string {
  return workers === 0 ? 'Prettier in the main thread' : `Prettier on ${workers} worker thread${workers === 1 ? '' : 's'}`;
}

/** The cached re-run time of `mode` in bench/lint.ts's table, found by its header names. */
function parseLintRerun(section: string, mode: string): number | null {
  const rows = section.split('\n').filter((line) => line.startsWith('|'));
  const header = rows.find((line) => line.startsWith('| mode |'));
  const row = rows.find((line) => line.startsWith(`| ${mode} |`));
  if (!header || !row) return null;
  const column = header.split('|').map((cell) => cell.trim()).indexOf('cached re-run');
  const match = /^([\d.]+) (ms|s)\b/.exec(row.split('|').map((cell) => cell.trim())[column] ?? '');
  if (column < 0 || !match) return null;
  return Number(match[1]) * (match[2] === 's' ? 1000 : 1);
}

function lintPart(workDir: string, options: Options, notes: string[]): LintDetails | undefined {
  const out = join(workDir, 'lint-section.md');
  const mode = lintModeName(defaultPoolSize());
  const args = [join(BENCH_DIR, 'lint.ts'), `--files=${LINT_FILES}`, `--out=${out}`];
  settleDisk();
  const child = spawnSync(process.execPath, [...process.execArgv, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  const section = markedSection(existsSync(out) ? readFileSync(out, 'utf8') : '', LINT_SECTION_START, LINT_SECTION_END);
  if (child.status !== 0 || section === null) {
    notes.push(`lint benchmark failed (${child.status ?? child.signal}); rerun \`npm run bench:lint\``);
    return undefined;
  }
  const rerunMs = parseLintRerun(section, mode);
  progress(`lint: cached re-run ${rerunMs === null ? 'not found in the table' : formatMs(rerunMs)} (${mode})`);
  return { section, rerunMs, mode: `${mode}, the service's default` };
}

/** bench/workspace.ts at the largest size: its section (from a page of its own) and its data. */
function workspacePart(workDir: string, options: Options, notes: string[]): Report['workspace'] {
  const size = Math.max(...options.sizes);
  const out = join(workDir, 'workspace-section.md');
  // Its project takes minutes to build at 100,000 files: kept in bench/.work/ between runs.
  const result = runScript<WorkspaceBenchResult>(workDir, 'workspace.ts', [`--size=${size}`, `--work=${join(BENCH_DIR, '.work')}`, `--out=${out}`]);
  const section = markedSection(existsSync(out) ? readFileSync(out, 'utf8') : '', WORKSPACE_SECTION_START, WORKSPACE_SECTION_END);
  if (result instanceof Error || section === null) {
    notes.push(`workspace verbs: ${result instanceof Error ? result.message : 'no section written'}; rerun \`npm run bench:workspace\``);
    return undefined;
  }
  progress(`workspace: ${result.scenarios.map((s) => `${s.id} ${formatMs(s.http.medianMs)} vs git ${formatMs(s.git.medianMs)} (${s.verdict})`).join('; ')}`);
  return { section, result };
}

/** bench/nodes.ts: one node against two over one PostgreSQL (its section, from a page of its own). */
function nodesPart(workDir: string, notes: string[]): Report['nodes'] {
  const out = join(workDir, 'nodes-section.md');
  const result = runScript<NodesBenchResult>(workDir, 'nodes.ts', [`--work=${join(workDir, 'nodes')}`, `--out=${out}`]);
  const section = markedSection(existsSync(out) ? readFileSync(out, 'utf8') : '', NODES_SECTION_START, NODES_SECTION_END);
  if (result instanceof Error || section === null) {
    notes.push(`nodes: ${result instanceof Error ? result.message : 'no section written'}; rerun \`npm run bench:nodes\``);
    return undefined;
  }
  for (const fault of result.faults) notes.push(`nodes: ${fault}`);
  progress(`nodes: sustained two/one ${result.sustained.ratio.toFixed(2)}, window ${result.window.ratio.toFixed(2)}`);
  return { section, result };
}

/** The marked sections of `previous` (the page this run replaces) whose parts this run leaves out. */
function keptSections(previous: string, options: Options): string[] {
  const kept: string[] = [];
  for (const { part, start, end } of MARKED_SECTIONS) {
    if (options.parts.has(part)) continue;
    const section = markedSection(previous, start, end);
    if (section !== null) kept.push(section);
  }
  return kept;
}

function loadPart(workDir: string, options: Options, notes: string[]): LoadSummary | undefined {
  const seedFiles = options.quick ? 1_000 : 10_000;
  const result = runScript<LoadSummary>(workDir, 'http.ts', ['--load', `--duration-ms=${options.loadSeconds * 1000}`, `--clients=${LOAD_CLIENTS}`, `--seed-files=${seedFiles}`, `--work=${workDir}`]);
  if (result instanceof Error) {
    notes.push(`HTTP load: ${result.message}`);
    return undefined;
  }
  progress(`load: ${result.requestsPerSecond.toFixed(0)} requests/s, ${result.commitsPerSecond.toFixed(0)} commits/s, p50 ${formatMs(result.latencyMsP50)}, p99 ${formatMs(result.latencyMsP99)}`);
  return result;
}

function machineInfo(argv: string[], git: boolean): MachineInfo {
  const lmdbPackage = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/lmdb/package.json'), 'utf8')) as { version: string };
  return {
    date: new Date().toISOString(),
    command: `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`,
    cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
    nproc: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    os: `${osType()} ${release()}`,
    node: process.version,
    git: git ? gitVersion() : 'not run',
    lmdb: lmdbPackage.version,
    isogit: isogitVersion(),
    loadAverage: { start: loadavg()[0], max: loadavg()[0] },
  };
}

async function main(argv: string[]): Promise<void> {
  const options = parseOptions(argv);
  const has = (part: Part) => options.parts.has(part);
  setGitCapSeconds(options.capSeconds);
  const machine = machineInfo(argv, has('git'));
  const workDir = join(BENCH_DIR, '.work', `run-${machine.date.replace(/[:.]/g, '-')}`);
  mkdirSync(workDir, { recursive: true });
  const started = process.hrtime.bigint();
  const measurements: Measurement[] = [];
  const clone: CloneDetails[] = [];
  const mergeTreesEqual: Report['mergeTreesEqual'] = [];
  const notes: string[] = PARTS.filter((part) => !has(part)).map((part) =>
    options.quick && QUICK_LEAVES_OUT.includes(part) ? `${part}: not run with --quick (\`${RUN_ALONE[part]}\`)` : `left out with --no-${part}: ${part}`,
  );
  const noteLoad = () => (machine.loadAverage.max = Math.max(machine.loadAverage.max ?? 0, loadavg()[0]));
  try {
    for (const size of options.sizes) {
      measurements.push(...oursForSize(workDir, size, options.quick));
      noteLoad();
      if (has('http')) {
        const http = runScript<Measurement[]>(workDir, 'http.ts', [`--size=${size}`, `--work=${workDir}`, ...(options.quick ? ['--quick'] : [])]);
        if (http instanceof Error) notes.push(`HTTP scenarios at ${size.toLocaleString('en-US')} files: ${http.message}`);
        else measurements.push(...http);
        noteLoad();
      }
      if (has('git')) measurements.push(...gitForSize(workDir, new SourceTree({ files: size }), options.quick, has('isogit') ? isogitRepoDir(workDir, size) : undefined));
      noteLoad();
      if (has('isogit')) measurements.push(...(await isogitPart(workDir, size, options)));
      noteLoad();
      if (has('merge')) {
        const merge = mergePart(workDir, size, options, notes);
        measurements.push(...merge.measurements);
        if (merge.treesEqual !== undefined) mergeTreesEqual.push({ size, equal: merge.treesEqual });
        noteLoad();
      }
      if (has('clone')) {
        const cloned = clonePart(workDir, size, options, notes);
        measurements.push(...cloned.measurements);
        if (cloned.details) clone.push(cloned.details);
        noteLoad();
      }
      if (!options.keep) rmSync(workDir, { recursive: true, force: true });
      mkdirSync(workDir, { recursive: true });
    }
    const load = has('load') ? loadPart(workDir, options, notes) : undefined;
    noteLoad();
    const lag = has('lag') ? lagPart(workDir, options, notes) : undefined;
    noteLoad();
    const history = has('history') ? historyPart(workDir, options, notes) : undefined;
    noteLoad();
    const micro = has('micro') ? await runHashBench(options.quick) : undefined;
    const lint = has('lint') ? lintPart(workDir, options, notes) : undefined;
    noteLoad();
    const workspace = has('workspace') ? workspacePart(workDir, options, notes) : undefined;
    noteLoad();
    const nodes = has('nodes') ? nodesPart(workDir, notes) : undefined;
    machine.loadAverage.end = loadavg()[0];
    noteLoad();
    const report: Report = {
      machine,
      capSeconds: options.capSeconds,
      isogitCapSeconds: options.isogitCapSeconds,
      durationSeconds: Number(process.hrtime.bigint() - started) / 1e9,
      quick: options.quick,
      measurements,
      clone,
      mergeTreesEqual,
      load,
      lag,
      history,
      lint,
      workspace,
      nodes,
      keptSections: keptSections(existsSync(options.out) ? readFileSync(options.out, 'utf8') : '', options),
      micro,
      notes,
    };
    console.log(`\n${targetSummary(report)}\n\n${scenarioTable(measurements)}\n`);
    // The data behind the page, kept in the scratch directory so the page can be rendered again
    // after a change to report.ts without rerunning (--render=FILE).
    writeFileSync(join(BENCH_DIR, '.work', `report-${machine.date.replace(/[:.]/g, '-')}.json`), JSON.stringify(report));
    writeFileSync(options.out, renderResults(report));
    progress(`wrote ${relative(process.cwd(), options.out)} after ${report.durationSeconds.toFixed(0)} s`);
  } finally {
    if (!options.keep) rmSync(workDir, { recursive: true, force: true });
  }
}

async function child(argv: string[]): Promise<void> {
  const value = (name: string) => {
    const found = argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
    if (found === undefined) throw new Error(`--child needs --${name}=`);
    return found;
  };
  // Several scenarios (comma-separated) run one after the other in this one process (--quick).
  const scenarios = value('scenario').split(',') as ScenarioId[];
  const measurements: Measurement[] = [];
  for (const scenario of scenarios) {
    if (!SCENARIOS.includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
    const measurement = await runOursScenario({
      scenario,
      size: Number(value('size')),
      storePath: value('store'),
      quick: argv.includes('--quick'),
      roundOffset: Number(argv.find((arg) => arg.startsWith('--round-offset='))?.slice('--round-offset='.length) ?? 0),
    });
    if (measurements.length > 0) measurement.method += '; shared its child process with the scenarios before it (--quick), so its peak RSS is theirs too';
    measurements.push(measurement);
  }
  writeFileSync(value('result'), JSON.stringify(measurements.length === 1 ? measurements[0] : measurements));
}

/** --render=FILE: writes the results page again from the report data a run kept. */
function render(argv: string[]): void {
  const source = argv.find((arg) => arg.startsWith('--render='))!.slice('--render='.length);
  const out = argv.find((arg) => arg.startsWith('--out='))?.slice('--out='.length) ?? join(BENCH_DIR, 'RESULTS.md');
  writeFileSync(out, renderResults(JSON.parse(readFileSync(source, 'utf8')) as Report));
  progress(`rendered ${relative(process.cwd(), out)} from ${source}`);
}

const argv = process.argv.slice(2);
await (argv.includes('--child') ? child(argv) : argv.some((arg) => arg.startsWith('--render=')) ? render(argv) : main(argv));
