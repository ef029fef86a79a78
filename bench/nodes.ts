/**
 * Issue 15's scaling target: the 32-client load of bench/http.ts (clients writing a file and
 * committing, on one branch of a 10,000-file project) on one node and on two, over one embedded
 * PostgreSQL on this machine, in turns (one node then two, then two then one, ...), `--reps` pairs.
 *
 *   npm run bench:nodes [-- --reps=3 --duration-ms=30000 --clients=32 --seed-files=10000 --no-write]
 *
 * Two rates per run:
 * - **window**: requests answered over the load's window;
 * - **sustained**: the same requests over the window plus the time the nodes' deflate caches took
 *   after it to give every object the load stored its pack-ready form. A node under a load it
 *   cannot keep up with defers that work (README "Pack-ready forms"), so its window rate is one it
 *   cannot hold: one node fell 12 s behind in a 30 s window, where two, each with half the writes,
 *   kept up within 2 s. The sustained rate counts the work the load caused, wherever it was done.
 * The target (two nodes at least match one) is judged on the medians of the sustained rates; the
 * window rates are shown beside them. Every run must also answer without errors and find every
 * acknowledged write afterwards.
 *
 * The section it writes sits between NODES_SECTION_START and NODES_SECTION_END in
 * bench/RESULTS.md and replaces only that (bench/run.ts keeps it when it leaves the part out);
 * --no-write prints it only; --result writes the data as JSON.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { benchBackend, runHttpLoad, type LoadSummary } from './http.js';
import { withMarkedSection } from './measure.js';

export const NODES_SECTION_START = '<!-- bench/nodes.ts: start -->';
export const NODES_SECTION_END = '<!-- bench/nodes.ts: end -->';

/** Median, least and most of some rates. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return { median: sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2, min: sorted[0], max: sorted[sorted.length - 1] };
}

export interface NodesRun {
  nodes: number;
  windowRequestsPerSecond: number;
  sustainedRequestsPerSecond: number;
  load: LoadSummary;
}

export interface NodesBenchResult {
  date: string;
  reps: number;
  durationMs: number;
  clients: number;
  seedFiles: number;
  runs: NodesRun[];
  window: { one: Spread; two: Spread; ratio: number };
  sustained: { one: Spread; two: Spread; ratio: number };
  /** Errors answered, or acknowledged writes not found afterwards, in any run. */
  faults: string[];
}

function option(argv: readonly string[], name: string): string | undefined {
  return argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** Requests over the window and the deflate caches' catch-up after it. */
export function sustainedRate(load: Pick<LoadSummary, 'requests' | 'durationMs' | 'deflateCatchUpMs'>): number {
  return load.requests / ((load.durationMs + load.deflateCatchUpMs) / 1000);
}

export async function runNodesBench(argv: readonly string[]): Promise<NodesBenchResult> {
  const reps = Number(option(argv, 'reps') ?? 3);
  const durationMs = Number(option(argv, 'duration-ms') ?? 30_000);
  const clients = Number(option(argv, 'clients') ?? 32);
  const seedFiles = Number(option(argv, 'seed-files') ?? 10_000);
  if (![reps, durationMs, clients, seedFiles].every((n) => Number.isInteger(n) && n > 0)) throw new Error('--reps, --duration-ms, --clients and --seed-files take positive integers');
  const workDir = option(argv, 'work') ?? mkdtempSync(join(tmpdir(), 'treehouse-bench-nodes-'));
  mkdirSync(workDir, { recursive: true });
  const backend = await benchBackend('postgres');
  const runs: NodesRun[] = [];
  const faults: string[] = [];
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const nodes of rep % 2 === 0 ? [1, 2] : [2, 1]) {
        const load = await runHttpLoad({ workDir, durationMs, clients, seedFiles, backend, nodes });
        const run = { nodes, windowRequestsPerSecond: load.requestsPerSecond, sustainedRequestsPerSecond: sustainedRate(load), load };
        runs.push(run);
        if (load.errors > 0) faults.push(`${nodes} node(s), pair ${rep + 1}: ${load.errors} errors of ${load.requests} requests`);
        if (load.acknowledgedFound !== load.acknowledgedFiles) faults.push(`${nodes} node(s), pair ${rep + 1}: ${load.acknowledgedFound} of ${load.acknowledgedFiles} acknowledged writes found`);
        process.stderr.write(`nodes: ${nodes}, pair ${rep + 1}: window ${run.windowRequestsPerSecond.toFixed(0)} req/s, sustained ${run.sustainedRequestsPerSecond.toFixed(0)} req/s (forms caught up ${(load.deflateCatchUpMs / 1000).toFixed(1)} s after)\n`);
      }
    }
  } finally {
    await backend.close();
    if (option(argv, 'work') === undefined) rmSync(workDir, { recursive: true, force: true });
  }
  const of = (nodes: number, rate: (run: NodesRun) => number) => spread(runs.filter((run) => run.nodes === nodes).map(rate));
  const compare = (rate: (run: NodesRun) => number) => {
    const one = of(1, rate);
    const two = of(2, rate);
    return { one, two, ratio: two.median / one.median };
  };
  return {
    date: new Date().toISOString(),
    reps,
    durationMs,
    clients,
    seedFiles,
    runs,
    window: compare((run) => run.windowRequestsPerSecond),
    sustained: compare((run) => run.sustainedRequestsPerSecond),
    faults,
  };
}

const rate = (rates: Spread) => `${rates.median.toFixed(0)} (${rates.min.toFixed(0)}–${rates.max.toFixed(0)})`;

/** The section of bench/RESULTS.md, markers not included. */
export function renderNodesSection(result: NodesBenchResult, command: string): string {
  const met = result.sustained.ratio >= 1 && result.faults.length === 0;
  return [
    '## Nodes over one PostgreSQL (issue 15)',
    '',
    `\`${command}\`, ${result.date}: ${result.clients} clients writing a file and committing in a loop on one branch of a`,
    `${result.seedFiles.toLocaleString('en-US')}-file project for ${(result.durationMs / 1000).toFixed(0)} s, spread round-robin over the nodes; one node and two`,
    `in turns, ${result.reps} of each, each on a fresh database of one embedded PostgreSQL; the nodes, PostgreSQL and the clients`,
    'share the machine\'s cores. Requests per second, median (min–max). *Sustained* counts the window and the time the nodes\'',
    'deflate caches took after it to give every object the load stored its pack-ready form (a saturated node defers that',
    'work; bench/nodes.ts).',
    '',
    '| | one node | two nodes | two / one |',
    '|---|---:|---:|---:|',
    `| window | ${rate(result.window.one)} | ${rate(result.window.two)} | ${result.window.ratio.toFixed(2)} |`,
    `| sustained | ${rate(result.sustained.one)} | ${rate(result.sustained.two)} | ${result.sustained.ratio.toFixed(2)} |`,
    '',
    '| run | nodes | requests | errors | acknowledged writes found | window req/s | forms caught up after | sustained req/s | latency p50 / p99 |',
    '|---:|---:|---:|---:|---|---:|---:|---:|---|',
    ...result.runs.map(
      (run, index) =>
        `| ${index + 1} | ${run.nodes} | ${run.load.requests.toLocaleString('en-US')} | ${run.load.errors} | ${run.load.acknowledgedFound} of ${run.load.acknowledgedFiles} | ${run.windowRequestsPerSecond.toFixed(0)} | ${(run.load.deflateCatchUpMs / 1000).toFixed(1)} s | ${run.sustainedRequestsPerSecond.toFixed(0)} | ${run.load.latencyMsP50.toFixed(0)} / ${run.load.latencyMsP99.toFixed(0)} ms |`,
    ),
    '',
    `Target (issue 15): two nodes at least match one, sustained: **${met ? 'pass' : 'FAIL'}** (${result.sustained.ratio.toFixed(2)}x; window ${result.window.ratio.toFixed(2)}x)${result.faults.length > 0 ? `; ${result.faults.join('; ')}` : ''}.`,
  ].join('\n');
}

if (process.argv[1] === import.meta.filename) {
  const argv = process.argv.slice(2);
  const result = await runNodesBench(argv);
  const command = `npm run bench:nodes${argv.some((arg) => !/^--(work|out|result)=/.test(arg) && arg !== '--no-write') ? ` -- ${argv.filter((arg) => !/^--(work|out|result)=/.test(arg) && arg !== '--no-write').join(' ')}` : ''}`;
  const section = renderNodesSection(result, command);
  process.stdout.write(`${section}\n`);
  const resultPath = option(argv, 'result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
  if (!argv.includes('--no-write')) {
    const out = option(argv, 'out') ?? join(import.meta.dirname, 'RESULTS.md');
    writeFileSync(out, withMarkedSection(existsSync(out) ? readFileSync(out, 'utf8') : '', NODES_SECTION_START, NODES_SECTION_END, section));
    process.stderr.write(`wrote the nodes section of ${relative(process.cwd(), out)}\n`);
  }
}
