/**
 * The storage-engine benchmark of issue #2: Treehouse (in-process) against the git CLI doing the
 * same work on the same generated trees, for each tree size.
 *
 *   npm run bench                         # 1,000, 10,000 and 100,000 files
 *   npm run bench -- --quick              # 1,000 and 10,000 files, shorter runs (under 2 minutes)
 *   npm run bench -- --sizes=1000,10000   # chosen sizes
 *   options: --out=FILE (default bench/RESULTS.md), --no-git, --no-micro, --keep (keep bench/.work/<run>)
 *
 * Each of our scenarios runs in a child process of this script (`--child`), so each has its own
 * peak RSS and a cold start like a fresh server's; the store the import leaves is reused by the
 * commit, list and log scenarios that follow. Scratch data goes to bench/.work/ (gitignored).
 *
 * To profile one of our scenarios, run its child by hand on a kept store, for example:
 *   node --cpu-prof --import tsx bench/run.ts --child --scenario=commit-100 --size=100000 \
 *     --store=bench/.work/store --result=/tmp/result.json --round-offset=100000
 * (--round-offset makes the edit rounds new when the store has seen the default ones.)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem, type as osType } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SourceTree } from '../fixtures/sourceTree.js';
import { DEFAULT_REPO_LIMITS } from '../src/repo/repo.js';
import { gitCommit, gitImport, gitList, gitLog, gitVersion } from './gitCli.js';
import { runHashBench } from './hash.bench.js';
import { SCENARIOS, settleDisk, summarise, type Measurement, type ScenarioId, type Summary } from './measure.js';
import { runOursScenario } from './ours.js';
import { formatMs, renderResults, scenarioTable, targetSummary, type MachineInfo } from './report.js';

const SCRIPT = fileURLToPath(import.meta.url);
const BENCH_DIR = dirname(SCRIPT);
const REPO_ROOT = dirname(BENCH_DIR);
const DEFAULT_SIZES = [1_000, 10_000, 100_000];
const QUICK_SIZES = [1_000, 10_000];

interface Options {
  sizes: number[];
  quick: boolean;
  git: boolean;
  micro: boolean;
  keep: boolean;
  out: string;
}

function parseOptions(argv: string[]): Options {
  const value = (name: string) => argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const quick = argv.includes('--quick');
  const sizes = value('sizes')?.split(',').map((text) => Number(text.replace(/_/g, ''))) ?? (quick ? QUICK_SIZES : DEFAULT_SIZES);
  if (sizes.some((size) => !Number.isSafeInteger(size) || size < 100)) throw new Error('--sizes takes file counts of at least 100');
  return {
    sizes,
    quick,
    git: !argv.includes('--no-git'),
    micro: !argv.includes('--no-micro'),
    keep: argv.includes('--keep'),
    out: value('out') ?? join(BENCH_DIR, 'RESULTS.md'),
  };
}

/** How many times to repeat the whole-process scenarios (the in-process small ones use tinybench). */
function reps(scenario: 'import-ours' | 'import-git' | 'commit' | 'list' | 'log', size: number, quick: boolean): number {
  const big = size >= 100_000;
  switch (scenario) {
    case 'import-ours':
      return big ? 2 : size >= 10_000 ? 3 : 5;
    case 'import-git':
      return big ? 1 : size >= 10_000 ? 3 : 5;
    case 'commit':
      return quick ? 5 : 10;
    case 'list':
      return big ? 5 : 10;
    case 'log':
      return 20;
  }
}

function progress(text: string): void {
  process.stderr.write(`[bench] ${text}\n`);
}

/** Runs one of our scenarios in a child process (this script with --child) and reads its result. */
function runChild(workDir: string, scenario: ScenarioId, size: number, storePath: string, quick: boolean): Measurement {
  const resultPath = join(workDir, `result-${size}-${scenario}-${Date.now()}.json`);
  const args = [...process.execArgv, SCRIPT, '--child', `--scenario=${scenario}`, `--size=${size}`, `--store=${storePath}`, `--result=${resultPath}`];
  if (quick) args.push('--quick');
  settleDisk();
  const child = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (child.status !== 0) throw new Error(`benchmark child ${scenario} (${size} files) failed with status ${child.status}`);
  const measurement = JSON.parse(readFileSync(resultPath, 'utf8')) as Measurement;
  rmSync(resultPath);
  return measurement;
}

/** Folds single-run measurements (one per repetition) into one. */
function mergeRuns(runs: Measurement[]): Measurement {
  const phases: Record<string, Summary> = {};
  for (const name of Object.keys(runs[0].phases ?? {})) {
    phases[name] = summarise(runs.map((run) => run.phases![name].medianMs));
  }
  return {
    ...runs[0],
    timing: summarise(runs.map((run) => run.timing.medianMs)),
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
      progress(`${size} ours ${variant} ${rep + 1}/${count}: ${formatMs(run.timing.medianMs)}`);
      runs.push(run);
      if (!keep) rmSync(storePath, { recursive: true, force: true });
    }
    out.push(mergeRuns(runs));
  }
  for (const scenario of ['commit-1', 'commit-100', 'list', 'log-200'] as const) {
    const run = runChild(workDir, scenario, size, mainStore, quick);
    progress(`${size} ours ${scenario}: ${formatMs(run.timing.medianMs)} median of ${run.timing.n}`);
    out.push(run);
  }
  return out;
}

function gitForSize(workDir: string, tree: SourceTree, quick: boolean): Measurement[] {
  const dir = join(workDir, `git-${tree.size}`);
  const size = tree.size;
  const out: Measurement[] = [];
  const note = (m: Measurement) => {
    progress(`${size} git ${m.scenario} (${m.method.split(' (')[0]}): ${formatMs(m.timing.medianMs)} median of ${m.timing.n}`);
    out.push(m);
  };
  note(gitImport({ tree, dir, reps: reps('import-git', size, quick) }));
  note(gitCommit({ tree, dir, reps: reps('commit', size, quick) }, 1));
  note(gitCommit({ tree, dir, reps: reps('commit', size, quick) }, 100));
  const { listing, lsTree } = gitList({ tree, dir, reps: reps('list', size, quick) });
  note(listing);
  note(lsTree);
  // Last: fast-import moves HEAD away from the files on disk.
  note(gitLog({ tree, dir, reps: reps('log', size, quick) }));
  return out;
}

function machineInfo(argv: string[], git: boolean): MachineInfo {
  const lmdbPackage = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/lmdb/package.json'), 'utf8')) as { version: string };
  return {
    date: new Date().toISOString(),
    command: `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`,
    cpu: cpus()[0]?.model ?? 'unknown CPU',
    nproc: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    os: `${osType()} ${release()}`,
    node: process.version,
    git: git ? gitVersion() : 'not run',
    lmdb: lmdbPackage.version,
    loadAverage: { start: loadavg()[0] },
  };
}

async function main(argv: string[]): Promise<void> {
  const options = parseOptions(argv);
  const machine = machineInfo(argv, options.git);
  const workDir = join(BENCH_DIR, '.work', `run-${machine.date.replace(/[:.]/g, '-')}`);
  mkdirSync(workDir, { recursive: true });
  const started = process.hrtime.bigint();
  const measurements: Measurement[] = [];
  try {
    for (const size of options.sizes) {
      measurements.push(...oursForSize(workDir, size, options.quick));
      if (options.git) measurements.push(...gitForSize(workDir, new SourceTree({ files: size }), options.quick));
      if (!options.keep) rmSync(workDir, { recursive: true, force: true });
      mkdirSync(workDir, { recursive: true });
    }
    const micro = options.micro ? await runHashBench(options.quick) : undefined;
    machine.loadAverage.end = loadavg()[0];
    const report = { machine, measurements, micro };
    console.log(`\n${targetSummary(measurements)}\n\n${scenarioTable(measurements)}\n`);
    writeFileSync(options.out, renderResults(report));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    progress(`wrote ${relative(process.cwd(), options.out)} after ${seconds.toFixed(0)} s`);
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
  const scenario = value('scenario') as ScenarioId;
  if (!SCENARIOS.includes(scenario)) throw new Error(`unknown scenario ${scenario}`);
  const measurement = await runOursScenario({
    scenario,
    size: Number(value('size')),
    storePath: value('store'),
    quick: argv.includes('--quick'),
    roundOffset: Number(argv.find((arg) => arg.startsWith('--round-offset='))?.slice('--round-offset='.length) ?? 0),
  });
  writeFileSync(value('result'), JSON.stringify(measurement));
}

const argv = process.argv.slice(2);
await (argv.includes('--child') ? child(argv) : main(argv));
