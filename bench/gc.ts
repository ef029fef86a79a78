/**
 * Garbage collection of a large project (issue 18, item 1): how long a collection of a project with
 * a `size`-file tree (fixtures/sourceTree.ts, about 3.4 KB of TypeScript per file) and about
 * `garbage` unreachable objects takes, and how late the event loop ran meanwhile.
 *
 *   npx tsx bench/gc.ts [--size=100000] [--garbage=100000] [--work=DIR] [--result=FILE]
 *
 * Set up (untimed): the tree written through the API's batch write and committed; then writes of
 * one file at a time over random files of it (a hundred to a write transaction, as an agent's
 * stream of edits), none committed but the last state, until the store holds `garbage` objects
 * no ref reaches: each write leaves its blob and the trees of its path unreachable. Without the
 * deflate cache (it would take minutes to fill in forms for the tree): objects are kept raw.
 * Measured: the collection's wall time and its phases, the event loop's delay while it ran (Node's
 * histogram at 1 ms resolution: p50, p99, max), the resident memory it added, and LMDB's pages in use
 * before and after.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { mulberry32, SourceTree } from '../fixtures/sourceTree.js';
import { commit } from '../src/repo/commit.js';
import { collectGarbage, type CollectionPhase, type CollectionReport } from '../src/repo/gc/collect.js';
import { initProject } from '../src/repo/initProject.js';
import { DEFAULT_REPO_LIMITS, inWriteTx, type Repo } from '../src/repo/repo.js';
import { prepareBatch, writeFiles, writeFilesInTx } from '../src/repo/writeFiles.js';
import type { CommitAuthors } from '../src/repo/writeCommit.js';
import { LmdbStore } from '../src/store/lmdb.js';

const PEOPLE: CommitAuthors = {
  author: { name: 'Bench', email: 'bench@example.com' },
  committer: { name: 'Bench', email: 'bench@example.com' },
};
const WRITES_PER_TRANSACTION = 100;

function argument(name: string, fallback: number): number {
  const raw = process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  return raw === undefined ? fallback : Number(raw);
}

export interface GcBenchResult {
  files: number;
  garbageObjects: number;
  report: CollectionReport;
  phasesMs: Partial<Record<CollectionPhase, number>>;
  /** The event loop's longest delay in each phase. */
  phaseLagMaxMs: Partial<Record<CollectionPhase, number>>;
  lag: { p50Ms: number; p99Ms: number; maxMs: number };
  rssAddedBytes: number;
  pagesInUseBefore: number;
  pagesInUseAfter: number;
}

async function main(): Promise<void> {
  const files = argument('size', 100_000);
  const garbage = argument('garbage', 100_000);
  const workRoot = process.argv.find((arg) => arg.startsWith('--work='))?.slice('--work='.length) ?? join(import.meta.dirname, '.work');
  const resultFile = process.argv.find((arg) => arg.startsWith('--result='))?.slice('--result='.length);
  const dir = join(workRoot, `gc-${files}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const log = (message: string) => console.error(`[gc bench] ${message}`);
  const tree = new SourceTree({ files });
  const store = new LmdbStore({ path: join(dir, 'store'), mapSizeBytes: 16 * 1024 ** 3 });
  const repo: Repo = { store: store.async, project: 1, limits: { ...DEFAULT_REPO_LIMITS, batchFilesMax: files } };
  try {
    const setupStart = Date.now();
    await initProject(repo, { files: [], people: PEOPLE });
    await writeFiles(repo, { branch: 'main', files: tree.paths.map((path, index) => ({ path, content: tree.content(index).toString('utf8') })) });
    await commit(repo, { branch: 'main', message: 'Import', people: PEOPLE });
    const live = store.pagesInUseBytes();
    log(`${files} files imported and committed in ${((Date.now() - setupStart) / 1000).toFixed(1)} s`);

    // Overwrites until `garbage` objects are unreachable: each write adds a blob and the trees of
    // its path, and makes the ones it replaces unreachable.
    const rng = mulberry32(0x9c);
    let made = 0;
    store.onObjectsStored((_, stored) => (made += stored.length));
    for (let round = 0; made < garbage; round++) {
      await inWriteTx(repo, async (tx) => {
        for (let w = 0; w < WRITES_PER_TRANSACTION; w++) {
          const index = Math.floor(rng() * files);
          const content = `${tree.content(index).toString('utf8')}// edit ${round}.${w}\n`;
          await writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'main', files: [{ path: tree.paths[index], content }] }));
        }
      });
    }
    // The last state committed: what the working tree holds is history's, the rest unreachable.
    await commit(repo, { branch: 'main', message: 'Edits', people: PEOPLE });
    log(`${made} objects written over it in ${((Date.now() - setupStart) / 1000).toFixed(1)} s`);

    const pagesInUseBefore = store.pagesInUseBytes();
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    const rssBefore = process.memoryUsage.rss();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage.rss())), 10);
    const phasesMs: Partial<Record<CollectionPhase, number>> = {};
    const phaseLagMaxMs: Partial<Record<CollectionPhase, number>> = {};
    const phaseHistogram = monitorEventLoopDelay({ resolution: 1 });
    let phaseStart = performance.now();
    let current: CollectionPhase | null = null;
    const endPhase = () => {
      if (!current) return;
      phasesMs[current] = performance.now() - phaseStart;
      phaseLagMaxMs[current] = phaseHistogram.max / 1e6;
      phaseHistogram.reset();
    };
    histogram.enable();
    phaseHistogram.enable();
    const report = await collectGarbage(repo, {
      graceMs: 0,
      onPhase: (phase) => {
        endPhase();
        current = phase;
        phaseStart = performance.now();
      },
    });
    endPhase();
    phaseHistogram.disable();
    histogram.disable();
    clearInterval(sampler);
    const result: GcBenchResult = {
      files,
      garbageObjects: made,
      report,
      phasesMs,
      phaseLagMaxMs,
      lag: { p50Ms: histogram.percentile(50) / 1e6, p99Ms: histogram.percentile(99) / 1e6, maxMs: histogram.max / 1e6 },
      rssAddedBytes: Math.max(rssPeak, process.memoryUsage.rss()) - rssBefore,
      pagesInUseBefore,
      pagesInUseAfter: store.pagesInUseBytes(),
    };
    log(
      `collected in ${(report.durationMs / 1000).toFixed(2)} s: removed ${report.removedObjects} objects (${(report.removedBytes / 1e6).toFixed(1)} MB), ` +
        `kept ${report.keptObjects}; event loop p99 ${result.lag.p99Ms.toFixed(1)} ms, max ${result.lag.maxMs.toFixed(1)} ms; ` +
        `RSS +${(result.rssAddedBytes / 1e6).toFixed(0)} MB; pages in use ${(pagesInUseBefore / 1e6).toFixed(1)} MB before, ` +
        `${(result.pagesInUseAfter / 1e6).toFixed(1)} MB after (${(live / 1e6).toFixed(1)} MB after the import alone)`,
    );
    log(`phases (ms, and the event loop's longest delay in each): ${Object.entries(phasesMs).map(([phase, ms]) => `${phase} ${ms.toFixed(0)} (${(phaseLagMaxMs[phase as CollectionPhase] ?? 0).toFixed(0)})`).join(', ')}`);
    if (resultFile) writeFileSync(resultFile, JSON.stringify(result, null, 2));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
