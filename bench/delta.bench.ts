/**
 * Our createDelta beside git's own deltas (issue 13): a realistic history (fixtures/history.ts) is
 * packed with `git repack -adf --window=10 --depth=50`; for every entry git stored as a delta,
 * `git verify-pack -v` gives its base and the delta's size, and we make a delta for the same
 * base and target. The table compares the sums (raw, and deflated as they would sit in a pack) by
 * object type, and counts the pairs where ours is more than 10% larger. Then tinybench times
 * createDelta (index build included) on typical pairs: a source file, a hot file, the 2.8 MB file;
 * and the deflate cache's windowed search (src/git/deltaWindow.ts) on one batch of 512 files of the
 * history's tree in git's order, deflating included, as its worker meets an import.
 * Speed is reported, never asserted.
 *
 *   npx tsx bench/delta.bench.ts [--commits=1000] [--big-commits=30] [--work=DIR] [--result=FILE] [--quick]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deflateSync } from 'node:zlib';
import { Bench } from 'tinybench';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { writeHistoryRepo, type HistoryOptions } from '../fixtures/history.js';
import { createDelta, DeltaIndex } from '../src/git/delta.js';
import { compareForWindow, DeltaWindow, type WindowObject } from '../src/git/deltaWindow.js';
import { packNameHash } from '../src/git/nameHash.js';
import { hashObject } from '../src/git/oid.js';
import { encodeEntryHeader, encodeOfsDistance, OBJ_OFS_DELTA } from '../src/git/pack.js';
import { summariseTask } from './measure.js';

const GIT_ENV = isolatedGitEnv({ noAutoGc: true });
/** A pair counts as "worse" when our delta is more than this much larger than git's. */
const WORSE_RATIO = 1.1;
/** Objects per batch of the deflate cache (src/service/deflateCache.ts BATCH_OBJECTS). */
const WINDOW_BATCH_OBJECTS = 512;

export interface DeltaSizeRow {
  history: string;
  type: string;
  pairs: number;
  gitBytes: number;
  oursBytes: number;
  /** As stored: git's size in pack (entry header, OFS distance, deflated delta) vs ours written the same way. */
  gitPackedBytes: number;
  oursPackedBytes: number;
  /** Pairs where ours is over WORSE_RATIO times git's. */
  worse: number;
  /** Time spent in createDelta for these pairs. */
  createMs: number;
  targetBytes: number;
}

export interface DeltaTiming {
  name: string;
  baseBytes: number;
  targetBytes: number;
  deltaBytes: number;
  medianMs: number;
  samples: number;
}

export interface DeltaBenchResult {
  rows: DeltaSizeRow[];
  timings: DeltaTiming[];
}

function git(args: string[], cwd: string, input?: string): Buffer {
  const result = spawnSync('git', args, { cwd, env: GIT_ENV, input, maxBuffer: 4 * 1024 ** 3 });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

interface Entry {
  type: string;
  size: number;
  packed: number;
  offset: number;
  base: string | null;
}

/** git verify-pack -v: "<oid> <type> <size> <size in pack> <offset> [<depth> <base>]"; size is the delta's own for a delta. */
function verifyPack(repo: string): Map<string, Entry> {
  const packDir = join(repo, 'objects/pack');
  const idx = readdirSync(packDir).find((name) => name.endsWith('.idx'))!;
  const out = new Map<string, Entry>();
  for (const line of git(['verify-pack', '-v', join(packDir, idx)], repo).toString('utf8').split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 5 || !/^[0-9a-f]{40}$/.test(fields[0])) continue;
    out.set(fields[0], { type: fields[1], size: Number(fields[2]), packed: Number(fields[3]), offset: Number(fields[4]), base: fields[6] ?? null });
  }
  return out;
}

/** Bodies of `oids` through one `git cat-file --batch`. */
function readBodies(repo: string, oids: string[]): Map<string, Buffer> {
  const output = git(['cat-file', '--batch'], repo, oids.map((oid) => `${oid}\n`).join(''));
  const bodies = new Map<string, Buffer>();
  let at = 0;
  while (at < output.length) {
    const newline = output.indexOf(0x0a, at);
    const [oid, , size] = output.subarray(at, newline).toString('latin1').split(' ');
    const start = newline + 1;
    bodies.set(oid, output.subarray(start, start + Number(size)));
    at = start + Number(size) + 1;
  }
  return bodies;
}

async function historyRepo(work: string, name: string, options: HistoryOptions): Promise<string> {
  const repo = join(work, `${name}.git`);
  rmSync(repo, { recursive: true, force: true });
  const made = await writeHistoryRepo(repo, options);
  process.stderr.write(`[delta] ${name}: ${made.commits} commits written in ${(made.generationMs / 1000).toFixed(1)} s\n`);
  const started = performance.now();
  // One thread, so git's delta search (and the pairs compared) is the same every run.
  git(['-c', 'pack.threads=1', 'repack', '-adfq', '--window=10', '--depth=50'], repo);
  process.stderr.write(`[delta] ${name}: git repack -adf --window=10 in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return repo;
}

function compareSizes(history: string, repo: string): DeltaSizeRow[] {
  const entries = verifyPack(repo);
  const pairs = [...entries].filter(([, entry]) => entry.base !== null);
  const needed = new Set<string>();
  for (const [oid, entry] of pairs) needed.add(oid).add(entry.base!);
  const bodies = readBodies(repo, [...needed]);
  const rows = new Map<string, DeltaSizeRow>();
  for (const [oid, entry] of pairs) {
    const row = rows.get(entry.type) ?? { history, type: entry.type, pairs: 0, gitBytes: 0, oursBytes: 0, gitPackedBytes: 0, oursPackedBytes: 0, worse: 0, createMs: 0, targetBytes: 0 };
    rows.set(entry.type, row);
    const base = bodies.get(entry.base!)!;
    const target = bodies.get(oid)!;
    const started = performance.now();
    const ours = createDelta(base, target);
    row.createMs += performance.now() - started;
    row.pairs++;
    row.gitBytes += entry.size;
    row.oursBytes += ours.length;
    row.gitPackedBytes += entry.packed;
    // Our entry as PackWriter.addOfsDelta would write it at git's position: header, the same OFS distance, deflated delta.
    const distance = encodeOfsDistance(entry.offset - entries.get(entry.base!)!.offset).length;
    row.oursPackedBytes += encodeEntryHeader(OBJ_OFS_DELTA, ours.length).length + distance + deflateSync(ours).length;
    row.targetBytes += target.length;
    if (ours.length > entry.size * WORSE_RATIO) row.worse++;
  }
  return [...rows.values()].sort((a, b) => a.type.localeCompare(b.type));
}

async function timeTypical(repo: string, bigRepo: string, quick: boolean): Promise<DeltaTiming[]> {
  const pairsFor = (cwd: string, path: string, revisions: [string, string]) => {
    const [base, target] = revisions.map((rev) => git(['cat-file', 'blob', `${rev}:${path}`], cwd));
    return { base, target };
  };
  // The most edited files of the history: the first is a hot file, a typical source file further down.
  const touched = git(['log', '--format=', '--name-only', '--no-merges', '-n', '400', 'main'], repo).toString('utf8').split('\n').filter(Boolean);
  const counts = new Map<string, number>();
  for (const path of touched) counts.set(path, (counts.get(path) ?? 0) + 1);
  const ranked = [...counts].sort((a, b) => b[1] - a[1]).map(([path]) => path);
  const revisionsOf = (cwd: string, path: string): [string, string] => {
    const commits = git(['log', '--format=%H', '-n', '2', 'main', '--', path], cwd).toString('utf8').trim().split('\n');
    return [commits[1], commits[0]];
  };
  const source = ranked.find((path) => path.endsWith('.ts') && !path.includes('CHANGELOG') && counts.get(path)! <= 3) ?? ranked.at(-1)!;
  const cases = [
    { name: 'source file, one edit', ...pairsFor(repo, source, revisionsOf(repo, source)) },
    { name: 'hot file, one edit', ...pairsFor(repo, ranked[0], revisionsOf(repo, ranked[0])) },
    { name: '2.8 MB file, one commit of edits', ...pairsFor(bigRepo, 'data/catalogue.ts', ['main~1', 'main']) },
  ];
  const bench = new Bench({ time: quick ? 300 : 1_000, warmupTime: 100 });
  for (const { name, base, target } of cases) bench.add(name, () => void createDelta(base, target));
  const big = cases[2];
  bench.add('2.8 MB file, index only', () => void new DeltaIndex(big.base));
  const batch = treeBatch(repo);
  const windowCase = `window search, ${batch.length} files of the tree (fresh window, deflating included)`;
  const batchBytes = batch.reduce((sum, object) => sum + object.body.length, 0);
  let formBytes = 0;
  bench.add(windowCase, () => {
    formBytes = new DeltaWindow({ depthMax: 50, level: 6 }).formsOf(batch).reduce((sum, form) => sum + form.deflated.length, 0);
  });
  await bench.run();
  return bench.tasks.map((task) => {
    if (task.name === windowCase) {
      const summary = summariseTask(task);
      return { name: task.name, baseBytes: 0, targetBytes: batchBytes, deltaBytes: formBytes, medianMs: summary.medianMs, samples: summary.n };
    }
    const found = cases.find((c) => c.name === task.name) ?? { base: big.base, target: Buffer.alloc(0) };
    const summary = summariseTask(task);
    return {
      name: task.name,
      baseBytes: found.base.length,
      targetBytes: found.target.length,
      deltaBytes: found.target.length > 0 ? createDelta(found.base, found.target).length : 0,
      medianMs: summary.medianMs,
      samples: summary.n,
    };
  });
}

/** The first WINDOW_BATCH_OBJECTS files of main's tree, as the deflate cache hands them to its window (sorted git's way). */
function treeBatch(repo: string): WindowObject[] {
  const listed = git(['ls-tree', '-r', 'main'], repo).toString('utf8').trim().split('\n').slice(0, WINDOW_BATCH_OBJECTS);
  const files = listed.map((line) => ({ oid: line.split(/\s+/)[2], path: line.slice(line.indexOf('\t') + 1) }));
  const raw = git(['cat-file', '--batch'], repo, files.map((file) => `${file.oid}\n`).join(''));
  let at = 0;
  const objects = files.map(({ path }) => {
    const headerEnd = raw.indexOf(10, at);
    const size = Number(raw.toString('latin1', at, headerEnd).split(' ')[2]);
    const body = raw.subarray(headerEnd + 1, headerEnd + 1 + size);
    at = headerEnd + 1 + size + 1;
    return { project: 1, oid: hashObject('blob', body), type: 'blob' as const, nameHash: packNameHash(path), body, named: null, whole: false };
  });
  return objects.sort(compareForWindow);
}

export async function runDeltaBench(options: { commits: number; bigCommits: number; work: string; quick: boolean }): Promise<DeltaBenchResult> {
  mkdirSync(options.work, { recursive: true });
  const project = await historyRepo(options.work, 'project', { commits: options.commits });
  const big = await historyRepo(options.work, 'big-file', { kind: 'big-file', commits: options.bigCommits });
  const rows = [...compareSizes(`project, ${options.commits} commits`, project), ...compareSizes(`big file, ${options.bigCommits} commits`, big)];
  const timings = await timeTypical(project, big, options.quick);
  return { rows, timings };
}

const kb = (bytes: number) => (bytes / 1024).toFixed(1);

export function deltaTables(result: DeltaBenchResult): string {
  const lines = [
    '| history | type | pairs (git chose them) | git deltas KiB | ours KiB | ours/git | as stored: git KiB | ours KiB | ours/git | pairs where ours > 1.1x git | createDelta total | MB/s of target |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of result.rows) {
    lines.push(
      `| ${row.history} | ${row.type} | ${row.pairs} | ${kb(row.gitBytes)} | ${kb(row.oursBytes)} | ${(row.oursBytes / row.gitBytes).toFixed(3)} | ${kb(row.gitPackedBytes)} | ${kb(row.oursPackedBytes)} | ${(row.oursPackedBytes / row.gitPackedBytes).toFixed(3)} | ${row.worse} | ${row.createMs.toFixed(0)} ms | ${(row.targetBytes / 1024 ** 2 / (row.createMs / 1000)).toFixed(0)} |`,
    );
  }
  lines.push('', '| createDelta (tinybench, index included) | base bytes | target bytes | delta bytes | median |', '|---|---:|---:|---:|---:|');
  for (const t of result.timings) lines.push(`| ${t.name} | ${t.baseBytes} | ${t.targetBytes} | ${t.deltaBytes || '—'} | ${t.medianMs.toFixed(3)} ms (n=${t.samples}) |`);
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const value = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const work = value('work') ?? join(import.meta.dirname, '.work', 'delta-bench');
  const result = await runDeltaBench({ commits: Number(value('commits') ?? 1000), bigCommits: Number(value('big-commits') ?? 30), work, quick: process.argv.includes('--quick') });
  const resultPath = value('result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
  console.log(deltaTables(result));
  if (!value('work')) rmSync(work, { recursive: true, force: true });
}
