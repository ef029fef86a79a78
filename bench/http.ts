/**
 * Treehouse through HTTP: the same work as ours.ts, sent with fetch to a real server process
 * (src/server.ts, as `npm start` runs it) on 127.0.0.1, and an HTTP load scenario.
 *
 *   npx tsx bench/http.ts [--size=1000] [--quick]                  # the scenarios of one size
 *   npx tsx bench/http.ts --load [--duration-ms=20000] [--clients=32] [--seed-files=10000] [--nodes=1]
 *   options: --work=DIR (scratch, default bench/.work/http-<pid>), --result=FILE (JSON instead of stdout),
 *     --import-only (the import scenario alone), --import-reps=N (imports timed); BENCH_PROF_DIR=DIR in
 *     the environment: the server process writes a CPU profile there (node --cpu-prof),
 *     --backend=lmdb|postgres (postgres: an embedded PostgreSQL of the run's own, durable as LMDB is:
 *     fsync and full page writes on, each server process a node of a fresh database)
 *
 * --nodes=N (load, PostgreSQL): N server processes over the one database, the clients spread over
 * them round-robin.
 *
 * Scenarios (bench/run.ts runs this file as a child per size): import = create a project, batches of
 * at most 10,000 files (the server's TREEHOUSE_BATCH_FILES_MAX), commit; commit-N = one batch of N
 * changed files + commit; log = GET git/log?limit=200; list = GET files (no content); merge = POST
 * git/merge of two branches that each committed 100 changed files (set up over HTTP, untimed).
 * Request bodies are serialised before the clock starts (ours.ts hands the verbs strings too); what
 * is timed is the requests, answered after the server's durable commit. The rate limit is off for
 * these (one client sending as fast as it can would hit 50/s), and the server's deflate worker is
 * let finish between scenarios (/healthz deflate_backlog 0), and so is the background drop of the
 * project a repeated import deleted (drop_backlog 0), so one scenario's background work
 * does not land on the next. Peak RSS is the server's, per scenario (VmHWM reset at its start),
 * with the anonymous and file-backed (LMDB's mapped data file) peaks beside it.
 *
 * Load: 32 concurrent clients (test/support/load.ts), one API key each in one team, on one project
 * seeded with `seed-files` files; each client writes a file of its own in a batch and commits, in a
 * loop, until the time is up. The rate limit is left at its defaults (50/s, burst 200 per key).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SourceTree, type SourceFile } from '../fixtures/sourceTree.js';
import { loadConfig } from '../src/service/config.js';
import { openTreehouse } from '../src/service/treehouse.js';
import { openStore } from '../src/store/open.js';
import { percentile, runWriteCommitLoad } from '../test/support/load.js';
import { freshDatabase, launchPostgres, type PostgresCluster } from '../test/support/postgres.js';
import { startServerProcess, type ServerProcess } from '../test/support/process.js';
import { elapsedMs, sampleMemory, summarise, type MemoryPeaks, type Measurement, type ScenarioId } from './measure.js';
import { pairChanges } from './merge.js';
import { LOG_LIMIT, ROUND_BASE } from './ours.js';

const BATCH_FILES_MAX = 10_000;
const HEALTH_POLL_MS = 100;
const LOAD_CLIENTS = 32;

interface Api {
  base: string;
  key: string;
}

interface Answer {
  status: number;
  body: any;
}

async function call(api: Api, method: string, path: string, body?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${api.key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${api.base}/api/v1${path}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, body: text.length > 0 ? JSON.parse(text) : null };
}

async function expect(api: Api, method: string, path: string, body: string | undefined, status: number): Promise<any> {
  const answer = await call(api, method, path, body);
  if (answer.status !== status) throw new Error(`${method} ${path} answered ${answer.status}, expected ${status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
  return answer.body;
}

const LMDB: BenchBackend = { name: 'lmdb', runEnv: async () => ({}), close: async () => {} };

/** Where the servers keep their data: the data directory (LMDB), or a database of the run's cluster. */
export interface BenchBackend {
  name: 'lmdb' | 'postgres';
  /** The environment of the servers of one run: on PostgreSQL, a fresh database. */
  runEnv(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

export async function benchBackend(name: string): Promise<BenchBackend> {
  if (name === 'lmdb') return LMDB;
  if (name !== 'postgres') throw new Error(`--backend is lmdb or postgres, not ${name}`);
  const cluster: PostgresCluster = await launchPostgres({ durable: true });
  return {
    name,
    runEnv: async () => ({ TREEHOUSE_DATABASE_URL: (await freshDatabase('bench', cluster)).url, TREEHOUSE_SECRET: 'bench-secret' }),
    close: () => cluster.stop(),
  };
}


/** A data directory (or database) with team default and `count` keys, made before the server opens it. */
async function prepareDataDir(dataDir: string, count: number, env: Record<string, string> = {}): Promise<string[]> {
  const config = loadConfig({ TREEHOUSE_DATA_DIR: dataDir, ...env });
  const th = openTreehouse(config, await openStore(config));
  try {
    const keys = [(await th.accounts.bootstrap())!];
    for (let i = 1; i < count; i++) keys.push((await th.accounts.createKey('default', `bench-${i}`)).key);
    return keys;
  } finally {
    await th.close();
  }
}

async function startServer(dataDir: string, env: Record<string, string>): Promise<ServerProcess> {
  return startServerProcess({ TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_LOG_LEVEL: 'warn', ...env }, process.env.BENCH_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_DIR}`] : []);
}

async function stopServer(server: ServerProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
}

/** Waits until the server's deflate worker and its drops of deleted projects have caught up (untimed, between scenarios). */
async function settle(api: Api): Promise<void> {
  for (;;) {
    const health = (await (await fetch(`${api.base}/healthz`)).json()) as { deflate_backlog: number; drop_backlog: number };
    if (health.deflate_backlog === 0 && health.drop_backlog === 0) return;
    await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
  }
}

function batchBody(files: readonly SourceFile[], branch?: string): string {
  return JSON.stringify({ files: files.map((file) => ({ path: file.path, content: file.content.toString('utf8') })), ...(branch ? { branch } : {}) });
}

/**
 * Repeats `iteration` (which times itself and returns milliseconds) after `warmup` untimed runs,
 * until `budgetMs` has passed and at least `minRuns` were timed (at most `maxRuns`).
 */
async function repeat(options: { warmup: number; budgetMs: number; minRuns: number; maxRuns: number }, iteration: () => Promise<number>): Promise<number[]> {
  for (let i = 0; i < options.warmup; i++) await iteration();
  const samples: number[] = [];
  const start = process.hrtime.bigint();
  while (samples.length < options.maxRuns && (samples.length < options.minRuns || elapsedMs(start) < options.budgetMs)) {
    samples.push(await iteration());
  }
  return samples;
}

function measurement(size: number, scenario: ScenarioId, samples: number[], peaks: MemoryPeaks, method: string): Measurement {
  return {
    size,
    scenario,
    side: 'ours-http',
    timing: summarise(samples),
    peakRssBytes: peaks.hwmBytes || undefined,
    peakRssAnonBytes: peaks.anonBytes || undefined,
    peakRssFileBytes: peaks.fileBytes || undefined,
    method,
  };
}

export interface HttpOptions {
  size: number;
  workDir: string;
  quick: boolean;
  progress: (text: string) => void;
  backend?: BenchBackend;
  /** The import scenario alone (--import-only). */
  importOnly?: boolean;
  /** Imports (fresh projects) timed; default by size (importReps). */
  importReps?: number;
}

function importReps(size: number, quick: boolean): number {
  if (size >= 100_000) return quick ? 1 : 2;
  if (size >= 10_000) return quick ? 1 : 3;
  return quick ? 2 : 5;
}

/** Every HTTP scenario of one size, on one server process with a fresh data directory. */
export async function runHttpScenarios(options: HttpOptions): Promise<Measurement[]> {
  const { size, quick, progress } = options;
  const tree = new SourceTree({ files: size });
  const dataDir = join(options.workDir, `http-${size}`);
  rmSync(dataDir, { recursive: true, force: true });
  const env = await (options.backend ?? LMDB).runEnv();
  const [key] = await prepareDataDir(dataDir, 1, env);
  const server = await startServer(dataDir, { ...env, TREEHOUSE_RATE_PER_SECOND: '0' });
  const api: Api = { base: server.url, key };
  const pid = server.child.pid!;
  const out: Measurement[] = [];
  const budget = { warmup: 2, budgetMs: quick ? 300 : 2_000, minRuns: quick ? 5 : 10, maxRuns: 500 };
  const note = (m: Measurement) => {
    progress(`${size} ours-http ${m.scenario}: ${m.timing!.medianMs.toFixed(2)} ms median of ${m.timing!.n}`);
    out.push(m);
  };
  try {
    // Import: a new project per repetition; the last one stays for the scenarios after it.
    const batches = Math.ceil(size / BATCH_FILES_MAX);
    const bodies: string[] = [];
    for (let b = 0; b < batches; b++) {
      const files: SourceFile[] = [];
      for (let i = b * BATCH_FILES_MAX; i < Math.min(size, (b + 1) * BATCH_FILES_MAX); i++) files.push({ path: tree.paths[i], content: tree.content(i) });
      bodies.push(batchBody(files));
    }
    const importSamples: number[] = [];
    const importPeaks: MemoryPeaks = { hwmBytes: 0, anonBytes: 0, fileBytes: 0 };
    let project = '';
    const reps = options.importReps ?? importReps(size, quick);
    for (let rep = 0; rep < reps; rep++) {
      if (project !== '') {
        await expect(api, 'DELETE', `/projects/${project}`, undefined, 200);
        await settle(api);
      }
      const sampler = sampleMemory(pid);
      const start = process.hrtime.bigint();
      project = (await expect(api, 'POST', '/projects', JSON.stringify({ title: `Bench import ${rep}` }), 201)).project.id;
      for (const body of bodies) await expect(api, 'POST', `/projects/${project}/files/batch`, body, 200);
      await expect(api, 'POST', `/projects/${project}/git/commit`, JSON.stringify({ message: 'Import' }), 201);
      importSamples.push(elapsedMs(start));
      const peaks = sampler.stop();
      importPeaks.hwmBytes = Math.max(importPeaks.hwmBytes, peaks.hwmBytes);
      importPeaks.anonBytes = Math.max(importPeaks.anonBytes, peaks.anonBytes);
      importPeaks.fileBytes = Math.max(importPeaks.fileBytes, peaks.fileBytes);
      progress(`${size} ours-http import ${rep + 1}/${reps}: ${importSamples[rep].toFixed(0)} ms`);
    }
    bodies.length = 0;
    note(measurement(size, 'import', importSamples, importPeaks, `POST projects (empty), ${batches} POST files/batch of at most ${BATCH_FILES_MAX} files, POST git/commit`));
    if (options.importOnly) return out;
    const projectPath = `/projects/${project}`;

    for (const count of [1, 100] as const) {
      await settle(api);
      const scenario = count === 1 ? 'commit-1' : 'commit-100';
      let round = ROUND_BASE[scenario];
      const sampler = sampleMemory(pid);
      const samples = await repeat(budget, async () => {
        const body = batchBody(tree.changeFiles(count, ++round));
        const start = process.hrtime.bigint();
        await expect(api, 'POST', `${projectPath}/files/batch`, body, 200);
        await expect(api, 'POST', `${projectPath}/git/commit`, JSON.stringify({ message: `Edit round ${round}` }), 201);
        return elapsedMs(start);
      });
      note(measurement(size, scenario, samples, sampler.stop(), `POST files/batch (${count} file${count === 1 ? '' : 's'}) + POST git/commit`));
    }

    // History: topped up to more than LOG_LIMIT commits with one-file commits (untimed).
    let round = ROUND_BASE.history;
    let added = 0;
    while ((await expect(api, 'GET', `${projectPath}/git/log?limit=${LOG_LIMIT}`, undefined, 200)).next_cursor === null) {
      await expect(api, 'POST', `${projectPath}/files/batch`, batchBody(tree.changeFiles(1, ++round)), 200);
      await expect(api, 'POST', `${projectPath}/git/commit`, JSON.stringify({ message: `History ${round}` }), 201);
      added++;
    }
    await settle(api);
    {
      const sampler = sampleMemory(pid);
      const samples = await repeat({ ...budget, minRuns: 20 }, async () => {
        const start = process.hrtime.bigint();
        const page = await expect(api, 'GET', `${projectPath}/git/log?limit=${LOG_LIMIT}`, undefined, 200);
        const ms = elapsedMs(start);
        if (page.commits.length !== LOG_LIMIT) throw new Error(`git/log returned ${page.commits.length} commits`);
        return ms;
      });
      note(measurement(size, 'log-200', samples, sampler.stop(), `GET git/log?limit=${LOG_LIMIT} (history topped up with ${added} one-file commits)`));
    }

    {
      const sampler = sampleMemory(pid);
      const samples = await repeat({ ...budget, minRuns: size >= 100_000 ? 5 : budget.minRuns }, async () => {
        const start = process.hrtime.bigint();
        const listing = await expect(api, 'GET', `${projectPath}/files`, undefined, 200);
        const ms = elapsedMs(start);
        if (listing.files.length !== size) throw new Error(`GET files returned ${listing.files.length} files`);
        return ms;
      });
      note(measurement(size, 'list', samples, sampler.stop(), 'GET files (path, size, locked of every file; no content), response parsed'));
    }

    // Merge: fresh pairs of branches off main, each side committing 100 changed files (untimed).
    const pairs = quick ? 2 : 7;
    const branchPairs: Array<[string, string]> = [];
    for (let pair = 0; pair < pairs; pair++) {
      const { left, right } = pairChanges(tree, pair, 0);
      const [a, b] = [`pair-${pair}-a`, `pair-${pair}-b`];
      for (const [branch, changes] of [[a, left], [b, right]] as const) {
        await expect(api, 'POST', `${projectPath}/git/branches`, JSON.stringify({ name: branch, from: 'main' }), 201);
        await expect(api, 'POST', `${projectPath}/files/batch`, batchBody(changes, branch), 200);
        await expect(api, 'POST', `${projectPath}/git/commit`, JSON.stringify({ branch, message: `${branch} changes` }), 201);
      }
      branchPairs.push([a, b]);
    }
    await settle(api);
    {
      const sampler = sampleMemory(pid);
      const samples: number[] = [];
      for (const [a, b] of branchPairs) {
        const start = process.hrtime.bigint();
        const answer = await expect(api, 'POST', `${projectPath}/git/merge`, JSON.stringify({ source: b, target: a }), 201);
        samples.push(elapsedMs(start));
        if (answer.merge.fastForward) throw new Error('the merge was a fast-forward');
      }
      note(measurement(size, 'merge', samples, sampler.stop(), `POST git/merge {source: b, target: a}, a fresh pair of branches per run (${pairs} pairs, 100 files changed on each side)`));
    }
    return out;
  } finally {
    await stopServer(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export interface LoadSummary {
  backend: string;
  nodes: number;
  clients: number;
  keys: number;
  seedFiles: number;
  durationMs: number;
  requests: number;
  errors: number;
  commits: number;
  requestsPerSecond: number;
  commitsPerSecond: number;
  latencyMsP50: number;
  latencyMsP99: number;
  latencyMsMax: number;
  acknowledgedFiles: number;
  /** How many acknowledged files a listing after the load found (all of them, or a write was lost). */
  acknowledgedFound: number;
  serverPeakRssBytes: number;
  serverPeakRssAnonBytes: number;
  serverPeakRssFileBytes: number;
  /** The most objects waiting for a pack-ready form, summed over the nodes (/healthz deflate_backlog, read every second during the load). */
  deflateBacklogMax: number;
  /** The backlog at the load's end, and how long after it the nodes' deflate caches caught up (at most DEFLATE_CATCH_UP_WAIT_MS). */
  deflateBacklogAtEnd: number;
  deflateCatchUpMs: number;
}

/** How long the load waits at most, after its clients stop, for the deflate caches to catch up. */
const DEFLATE_CATCH_UP_WAIT_MS = 600_000;

/** The nodes' /healthz deflate_backlog, summed. */
async function deflateBacklog(servers: ReadonlyArray<{ url: string }>): Promise<number> {
  const backlogs = await Promise.all(servers.map(async (node) => ((await (await fetch(`${node.url}/healthz`)).json()) as { deflate_backlog: number }).deflate_backlog));
  return backlogs.reduce((sum, backlog) => sum + backlog, 0);
}

/** 32 clients writing + committing on one project for `durationMs`, default rate limits; on `nodes` server processes (PostgreSQL). */
export async function runHttpLoad(options: { workDir: string; durationMs: number; clients: number; seedFiles: number; backend?: BenchBackend; nodes?: number }): Promise<LoadSummary> {
  const backend = options.backend ?? LMDB;
  const nodeCount = options.nodes ?? 1;
  if (nodeCount > 1 && backend.name !== 'postgres') throw new Error('several nodes share a PostgreSQL database: --backend=postgres');
  const dataDir = join(options.workDir, 'http-load');
  rmSync(dataDir, { recursive: true, force: true });
  const env = await backend.runEnv();
  // One key more than clients: the checks before and after the load have a rate limit of their own
  // (sharing a client's, the final listing could find its bucket empty and be answered 429).
  const [checkKey, ...keys] = await prepareDataDir(dataDir, options.clients + 1, env);
  const servers = await Promise.all(Array.from({ length: nodeCount }, () => startServer(dataDir, env)));
  const server = servers[0];
  const api: Api = { base: server.url, key: checkKey };
  try {
    const project = (await expect(api, 'POST', '/projects', JSON.stringify({ title: 'Bench load' }), 201)).project.id;
    const seed = [...new SourceTree({ files: options.seedFiles }).files()];
    for (let i = 0; i < seed.length; i += BATCH_FILES_MAX) {
      await expect(api, 'POST', `/projects/${project}/files/batch`, batchBody(seed.slice(i, i + BATCH_FILES_MAX)), 200);
    }
    await expect(api, 'POST', `/projects/${project}/git/commit`, JSON.stringify({ message: 'Seed' }), 201);
    await settle(api);
    const sampler = sampleMemory(server.child.pid!);
    // Whether the pack-ready forms keep up with the writes (README "Pack-ready forms"): a backlog that only grows is memory that only grows.
    let deflateBacklogMax = 0;
    const backlogSampler = setInterval(() => {
      deflateBacklog(servers).then((backlog) => (deflateBacklogMax = Math.max(deflateBacklogMax, backlog)), () => {});
    }, 1_000);
    let result: Awaited<ReturnType<typeof runWriteCommitLoad>>;
    try {
      result = await runWriteCommitLoad({ baseUrl: server.url, otherBaseUrls: servers.slice(1).map((node) => node.url), projectId: project, keys, clients: options.clients, durationMs: options.durationMs });
    } finally {
      clearInterval(backlogSampler);
    }
    const peaks = sampler.stop();
    const deflateBacklogAtEnd = await deflateBacklog(servers);
    const catchUpStart = performance.now();
    // Bounded: a cache that never catches up ends the wait (and shows as the wait's length).
    while (performance.now() - catchUpStart < DEFLATE_CATCH_UP_WAIT_MS && (await deflateBacklog(servers)) > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    const deflateCatchUpMs = performance.now() - catchUpStart;
    const listing = await expect(api, 'GET', `/projects/${project}/files?prefix=load/`, undefined, 200);
    const present = new Set<string>(listing.files.map((file: { path: string }) => file.path));
    const seconds = result.durationMs / 1000;
    return {
      backend: backend.name,
      nodes: nodeCount,
      clients: options.clients,
      keys: keys.length,
      seedFiles: options.seedFiles,
      durationMs: result.durationMs,
      requests: result.requests,
      errors: result.errors,
      commits: result.commits,
      requestsPerSecond: result.requests / seconds,
      commitsPerSecond: result.commits / seconds,
      latencyMsP50: percentile(result.latenciesMs, 0.5),
      latencyMsP99: percentile(result.latenciesMs, 0.99),
      latencyMsMax: Math.max(...result.latenciesMs),
      acknowledgedFiles: result.acknowledgedFiles.length,
      acknowledgedFound: result.acknowledgedFiles.filter((path) => present.has(path)).length,
      serverPeakRssBytes: peaks.hwmBytes,
      serverPeakRssAnonBytes: peaks.anonBytes,
      serverPeakRssFileBytes: peaks.fileBytes,
      deflateBacklogMax: Math.max(deflateBacklogMax, deflateBacklogAtEnd),
      deflateBacklogAtEnd,
      deflateCatchUpMs,
    };
  } finally {
    await Promise.all(servers.map((node) => stopServer(node)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function option(argv: string[], name: string): string | undefined {
  return argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

async function main(argv: string[]): Promise<void> {
  const workDir = option(argv, 'work') ?? join(import.meta.dirname, '.work', `http-${process.pid}`);
  const progress = (text: string) => process.stderr.write(`[bench] ${text}\n`);
  const backend = await benchBackend(option(argv, 'backend') ?? 'lmdb');
  let result: unknown;
  try {
    result = argv.includes('--load')
      ? await runHttpLoad({
          workDir,
          durationMs: Number(option(argv, 'duration-ms') ?? 20_000),
          clients: Number(option(argv, 'clients') ?? LOAD_CLIENTS),
          seedFiles: Number(option(argv, 'seed-files') ?? 10_000),
          backend,
          nodes: Number(option(argv, 'nodes') ?? 1),
        })
      : await runHttpScenarios({
          size: Number(option(argv, 'size') ?? 1000),
          workDir,
          quick: argv.includes('--quick'),
          progress,
          backend,
          importOnly: argv.includes('--import-only'),
          importReps: option(argv, 'import-reps') === undefined ? undefined : Number(option(argv, 'import-reps')),
        });
  } finally {
    await backend.close();
  }
  const resultPath = option(argv, 'result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
  else console.log(JSON.stringify(result, null, 2));
  if (option(argv, 'work') === undefined) rmSync(workDir, { recursive: true, force: true });
}

if (process.argv[1] === import.meta.filename) await main(process.argv);
