/**
 * Histories over the wire and at rest (issue 13): for each realistic history of fixtures/history.ts,
 * a fresh Treehouse server process beside `git http-backend` serving the same repository (packed
 * with `git repack -adf`, as a server's would be), in the same run:
 *
 * - seed: POST /api/v1/projects with source {kind: git} from the http-backend, into a fresh server
 *   (each repetition its own data directory), beside `git clone --bare` of it from the http-backend;
 *   then (reported beside, not judged) the second seed of a fresh server, whose code the first
 *   seed compiled and warmed as a running server's is;
 * - clone: `git clone --bare` from each (ours: a server restarted on the seeded store once its
 *   deflate cache caught up, as bench/clone.ts does), time and pack bytes received; our first
 *   clone is then checked with `git fsck --strict` (untimed). Our first clone is planned; the
 *   repetitions after it get the pack it made (src/repo/wire/clonePacks.ts), as git's pack reuse
 *   serves the repacked pack: the first is reported on its own too (oursFirstMs), and counts in the median;
 *   then (reported beside, not judged) ours each after a commit through the API on a branch of its
 *   own, which moves the tips: the kept pack grows by the commit's objects; and after each clone
 *   (both sides) `git index-pack --stdin` of the pack it received, alone in a fresh repository with
 *   no server: the client's own share, which no server's answer can go below;
 * - fetch: the last 10 commits of main's first-parent line (merged topic commits with them) into a
 *   bare clone that lacks them, time and pack bytes received;
 * - partial clone: `git clone --bare --filter=blob:none` from each (git's side with
 *   uploadpack.allowFilter), time and pack bytes received; our first is planned, the next ones get
 *   the pack it made;
 * - push: `git push` of main's whole history from the packed repository, to ours as a new branch
 *   `imported` of a project created empty (main already holds the server's first commit, so the
 *   history cannot land on main as a fast-forward), and to an empty bare repository behind the
 *   http-backend; then (reported beside, not judged) a fresh server's second push of it, into
 *   another project;
 * - store: the seeded store's data.mdb (disk blocks, and LMDB's pages in use per database) beside
 *   the repository after `git repack -adf` (pack.threads=1, so git's pack is the same every run).
 * Bytes received are the pack as it crossed the wire (GIT_TRACE_PACKFILE), not as stored: a thin
 * pack is completed with bases on disk. Times are medians over --reps; our side and git's alternate
 * within each repetition so load from elsewhere falls on both.
 *
 *   npx tsx bench/history.ts [--histories=project,big-file] [--reps=3] [--commits=N] [--big-commits=N]
 *     [--work=DIR] [--result=FILE] [--profile=DIR] [--no-api] [--keep] [--repo=DIR ...]
 *
 * --repo=DIR (repeatable) measures a repository on disk too (alone, without --histories): its HEAD
 * branch's history, without tags, as main. For public repositories fetched to measure locally;
 * tests and CI use only the generated histories.
 *
 * Then (unless --no-api) the realistic history written through the API instead (bench/apiHistory.ts):
 * its clone, and its store after a collection (`treehouse gc`) beside git's, with reads before and
 * after the collection (issue 13 item 7).
 *
 * --profile=DIR runs the server of the last seed, the serving server (clones and fetches) and the
 * server of the last push with --cpu-prof into DIR/seed-<history>, serve-<history> and
 * push-<history>, one file per thread (the main thread's is the one with the server's work);
 * summarise them with bench/cpuProfileSummary.ts. bench/run.ts runs
 * this file as its part `history` and renders its section with bench/historyReport.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { open } from 'lmdb';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { HISTORY_DEFAULTS, writeHistoryRepo, type HistoryKind, type HistoryRepo } from '../fixtures/history.js';
import { startGitHttpBackend, type GitHttpBackend } from '../test/support/httpBackend.js';
import { startServerProcess, type ServerProcess } from '../test/support/process.js';
import { runApiHistoryBench } from './apiHistory.js';
import { FETCH_COMMITS, historyTables, type HistoryBenchResult, type HistoryRun, type StoreBytes } from './historyReport.js';
import { probeHealthz, sampleMemory, summarise, type Summary } from './measure.js';
import { timePackIndexing } from './packIndexing.js';

/** The partial clone measured: the filter GitHub recommends for most partial clones. */
const PARTIAL_FILTER = 'blob:none';

const GIT_ENV = isolatedGitEnv({ noAutoGc: true });
/** Any one git command or API call of the benchmark; past it the scenario is reported as failed. */
const OPERATION_MS_MAX = 20 * 60_000;
const DEFAULT_REPS = 3;
/** The branch the clones after a commit commit on. */
const AFTER_COMMIT_BRANCH = 'bench-after-commit';

interface Context {
  work: string;
  reps: number;
  backend: GitHttpBackend;
  upstreamRoot: string;
  profileDir: string | null;
  profiles: string[];
  progress: (text: string) => void;
}

/** Runs git asynchronously (the http-backend lives in this process) and times it. */
export function runGit(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn('git', args, { cwd: options.cwd, env: { ...GIT_ENV, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), OPERATION_MS_MAX);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (status === 0) resolve({ ms, stdout });
      else reject(new Error(`git ${args.filter((arg) => !arg.includes('@')).join(' ')} failed (${status ?? signal}): ${stderr.slice(-500)}`));
    });
  });
}

export function packBytesIn(repo: string, suffixes = ['.pack']): number {
  const dir = join(repo, 'objects', 'pack');
  if (!existsSync(dir)) return 0;
  return readdirSync(dir)
    .filter((name) => suffixes.some((suffix) => name.endsWith(suffix)))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

export function duBytes(path: string): number {
  const result = spawnSync('du', ['-sB1', path], { encoding: 'utf8' });
  return Number(result.stdout.split(/\s/)[0]);
}

export async function api(server: ServerProcess, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(OPERATION_MS_MAX),
  });
  const text = await response.text();
  if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

interface Ours {
  server: ServerProcess;
  key: string;
}

async function startOurs(ctx: Context, dataDir: string, profileName: string | null, key?: string): Promise<Ours> {
  // One directory per server: node writes a profile per thread (main, tsx's loader, the deflate
  // worker) under its default names, which a fixed --cpu-prof-name would make overwrite each other.
  const profileDir = ctx.profileDir && profileName ? join(ctx.profileDir, profileName) : null;
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  if (profileDir) ctx.profiles.push(profileDir);
  const server = await startServerProcess(
    { TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_RATE_PER_SECOND: '0', TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1', TREEHOUSE_LOG_LEVEL: 'warn' },
    nodeArgs,
  );
  const printed = /API key for team default: (\S+)/.exec(server.output())?.[1];
  const found = key ?? printed;
  if (!found) throw new Error('the server printed no API key (the data directory is not fresh)');
  return { server, key: found };
}

async function stopOurs(ours: Ours): Promise<void> {
  if (ours.server.child.exitCode !== null) return;
  ours.server.child.kill('SIGTERM');
  await ours.server.exited;
}

/**
 * Waits until the deflate cache holds every stored object; its time in ms. It reads the store itself
 * (LMDB allows readers in other processes): every key of `objects` has one in `packed` (before
 * /healthz's deflate_backlog counted the batch in progress, it reached 0 while that was still being made).
 */
export async function deflateCatchUp(dataDir: string): Promise<number> {
  const started = performance.now();
  const env = open({ path: dataDir, noSubdir: false, readOnly: true, maxDbs: 16 } as Parameters<typeof open>[0]);
  try {
    const objects = env.openDB({ name: 'objects', keyEncoding: 'binary', encoding: 'binary' });
    const packed = env.openDB({ name: 'packed', keyEncoding: 'binary', encoding: 'binary' });
    for (;;) {
      const missing = objects.getKeysCount() - packed.getKeysCount();
      if (missing <= 0) return performance.now() - started;
      if (performance.now() - started > OPERATION_MS_MAX) throw new Error(`${missing} objects still not deflated after ${OPERATION_MS_MAX} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      env.resetReadTxn();
    }
  } finally {
    await env.close();
  }
}

function ourRemote(ours: Ours, projectId: string): string {
  return `${ours.server.url.replace('http://', `http://git:${ours.key}@`)}/git/${projectId}.git`;
}

/** data.mdb's size on disk and LMDB's own count of pages in use, per database (read-only, server stopped). */
export function measureStore(dataDir: string): StoreBytes {
  const file = join(dataDir, 'data.mdb');
  const env = open({ path: dataDir, noSubdir: false, readOnly: true, maxDbs: 16 } as Parameters<typeof open>[0]);
  try {
    const pages = (stats: any) => (stats.treeBranchPageCount ?? 0) + (stats.treeLeafPageCount ?? 0) + (stats.overflowPages ?? 0);
    const root = env.getStats() as any;
    const pageSize = root.pageSize as number;
    const usedBytesByDb: Record<string, number> = {};
    for (const name of ['objects', 'packed', 'shelves', 'commits', 'introduced', 'refs', 'worktrees', 'records']) {
      const db = env.openDB({ name, keyEncoding: 'binary', encoding: 'binary' });
      usedBytesByDb[name] = pages(db.getStats()) * pageSize;
    }
    const usedBytes = Object.values(usedBytesByDb).reduce((sum, bytes) => sum + bytes, 0);
    return { fileBytes: duBytes(file), apparentBytes: statSync(file).size, usedBytesByDb, usedBytes };
  } finally {
    void env.close();
  }
}

const orNull = (samples: number[]): Summary | null => (samples.length > 0 ? summarise(samples) : null);

/** A history to measure: its name, and how its bare repository (branch main) is written at `repo`. */
interface HistorySource {
  name: HistoryRun['name'];
  write: (repo: string) => Promise<HistoryRepo>;
}

const generatedHistory = (kind: HistoryKind, commits: number): HistorySource => ({ name: kind, write: (repo) => writeHistoryRepo(repo, { kind, commits }) });

/**
 * A repository given with --repo (a public one fetched to measure locally; tests and CI use the
 * generated ones): its HEAD branch alone, without tags, renamed main, as the one ref a seed imports.
 */
function givenHistory(path: string): HistorySource {
  // A mirror's git directory is …/<owner>+<name>/repo: named by its parent.
  const trimmed = path.replace(/\/+$/, '');
  const own = basename(trimmed).replace(/\.git$/, '');
  return {
    name: `repo:${own === 'repo' || own === '' ? basename(dirname(trimmed)) : own}`,
    async write(repo) {
      const started = performance.now();
      const head = (await runGit(['symbolic-ref', '--short', 'HEAD'], { cwd: path })).stdout.trim();
      // --no-local: a local clone hard-links the source's packs whole, and what only other refs reach would count as git's store.
      await runGit(['clone', '-q', '--bare', '--no-local', '--single-branch', '--no-tags', '--branch', head, path, repo]);
      if (head !== 'main') await runGit(['branch', '-m', head, 'main'], { cwd: repo });
      await runGit(['symbolic-ref', 'HEAD', 'refs/heads/main'], { cwd: repo });
      const count = async (...args: string[]) => Number((await runGit(['rev-list', '--count', ...args, 'main'], { cwd: repo })).stdout.trim());
      const files = (await runGit(['ls-tree', '-r', '--name-only', 'main'], { cwd: repo })).stdout.split('\n').filter(Boolean).length;
      return {
        head: (await runGit(['rev-parse', 'main'], { cwd: repo })).stdout.trim(),
        commits: await count(),
        merges: await count('--merges'),
        filesAdded: 0,
        filesDeleted: 0,
        renames: 0,
        files,
        contentBytes: 0,
        generationMs: performance.now() - started,
      };
    },
  };
}

/**
 * The memory sampler and /healthz probe of one timed operation on our server, stopped once, also
 * when the operation fails (a sampler left running kept the benchmark from exiting).
 */
function watchServer(ours: Ours): { stop(): Promise<{ anonBytes: number; worstMs: number }> } {
  const sampler = sampleMemory(ours.server.child.pid!);
  const probe = probeHealthz(ours.server.url);
  let stopped: Promise<{ anonBytes: number; worstMs: number }> | null = null;
  return { stop: () => (stopped ??= probe.stop().then(({ worstMs }) => ({ anonBytes: sampler.stop().anonBytes, worstMs }))) };
}

async function runHistory(ctx: Context, source: HistorySource): Promise<HistoryRun> {
  const { name } = source;
  const { work, reps, backend, progress } = ctx;
  const failures: string[] = [];
  const note = (what: string, error: unknown) => {
    const message = `${name} ${what}: ${(error as Error).message}`;
    failures.push(message);
    progress(message);
  };

  /**
   * `operation` run twice in each of `reps` fresh servers, each with a data directory of its own:
   * the second run's times, its code compiled and warm as a running server's is.
   */
  async function secondRuns(kind: string, operation: (ours: Ours, run: 'first' | 'again') => Promise<number>): Promise<number[]> {
    const times: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      const dataDir = join(work, `${name}-${kind}-running-${rep}`);
      rmSync(dataDir, { recursive: true, force: true });
      const ours = await startOurs(ctx, dataDir, null);
      try {
        await operation(ours, 'first');
        times.push(await operation(ours, 'again'));
        progress(`${name} ${kind} ${rep + 1}/${reps} into a running server: ${(times[times.length - 1] / 1000).toFixed(1)} s`);
      } catch (error) {
        note(`${kind} into a running server ${rep + 1}`, error);
      } finally {
        await stopOurs(ours);
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
    return times;
  }

  const repo = join(ctx.upstreamRoot, `${name}.git`);
  rmSync(repo, { recursive: true, force: true });
  progress(`${name}: writing the repository`);
  const fixture = await source.write(repo);
  progress(`${name}: ${fixture.commits} commits (${fixture.merges} merges), ${fixture.files} files, written in ${(fixture.generationMs / 1000).toFixed(1)} s`);
  // One thread: with two, git splits the delta search between them and the pack differs from run to
  // run (the big-file pack was 1.5 MB in one run and 2.2 MB in the next, and cloning it 7.5 s vs 2.6 s).
  const repack = await runGit(['-c', 'pack.threads=1', 'repack', '-adfq'], { cwd: repo });
  const gitPackBytes = packBytesIn(repo);
  progress(`${name}: git repack -adf ${(repack.ms / 1000).toFixed(1)} s, pack ${(gitPackBytes / 1024 ** 2).toFixed(1)} MB`);
  const upstreamUrl = `${backend.url}/${name}.git`;

  // Seeds, each into a fresh server, beside git clone --bare from the http-backend.
  const seed = { ours: [] as number[], git: [] as number[], peakAnon: 0, catchUp: null as number | null, worstGap: 0 };
  let store: StoreBytes | null = null;
  let served: { dataDir: string; key: string; projectId: string } | null = null;
  for (let rep = 0; rep < reps; rep++) {
    const dataDir = join(work, `${name}-seed-${rep}`);
    rmSync(dataDir, { recursive: true, force: true });
    const last = rep === reps - 1;
    const ours = await startOurs(ctx, dataDir, last ? `seed-${name}` : null);
    let projectId: string | null = null;
    const watch = watchServer(ours);
    try {
      const started = performance.now();
      const created = await api(ours.server, ours.key, 'POST', '/projects', { title: `Seed ${name}`, source: { kind: 'git', url: upstreamUrl } });
      const ms = performance.now() - started;
      const watched = await watch.stop();
      seed.peakAnon = Math.max(seed.peakAnon, watched.anonBytes);
      seed.worstGap = Math.max(seed.worstGap, watched.worstMs);
      seed.ours.push(ms);
      projectId = created.project.id;
      const catchUp = await deflateCatchUp(dataDir);
      seed.catchUp = Math.max(seed.catchUp ?? 0, catchUp);
      progress(`${name} seed ${rep + 1}/${reps}: ours ${(ms / 1000).toFixed(1)} s (deflate cache caught up ${(catchUp / 1000).toFixed(1)} s later)`);
    } catch (error) {
      note(`seed ${rep + 1}`, error);
    } finally {
      await watch.stop();
      await stopOurs(ours);
    }
    if (projectId && store === null) {
      try {
        store = measureStore(dataDir);
      } catch (error) {
        note('store measurement', error);
      }
    }
    if (last && projectId) served = { dataDir, key: ours.key, projectId };
    else rmSync(dataDir, { recursive: true, force: true });
    try {
      const target = join(work, 'git-seed.git');
      rmSync(target, { recursive: true, force: true });
      const cloned = await runGit(['clone', '-q', '--bare', upstreamUrl, target]);
      seed.git.push(cloned.ms);
      rmSync(target, { recursive: true, force: true });
      progress(`${name} seed ${rep + 1}/${reps}: git clone --bare ${(cloned.ms / 1000).toFixed(1)} s`);
    } catch (error) {
      note(`git clone ${rep + 1}`, error);
    }
  }

  // Seeds into a server that has seeded once already (its code compiled and warm, as a server's is
  // after its first seed), each into a fresh server and data directory again.
  const running = await secondRuns('seed', async (ours, run) => {
    const started = performance.now();
    await api(ours.server, ours.key, 'POST', '/projects', { title: `Seed ${name} ${run}`, source: { kind: 'git', url: upstreamUrl } });
    return performance.now() - started;
  });

  // Clones and fetches from a server restarted on the last seeded store.
  const clone = { ours: [] as number[], git: [] as number[], oursBytes: null as number | null, gitBytes: null as number | null, peakAnon: 0, oursFsckClean: false, oursFirstMs: undefined as number | undefined, oursAfterCommit: [] as number[], oursIndexing: [] as number[], gitIndexing: [] as number[] };
  const fetched = { ours: [] as number[], git: [] as number[], oursBytes: null as number | null, gitBytes: null as number | null, commits: 0, objects: 0 };
  const partial = { ours: [] as number[], git: [] as number[], oursBytes: null as number | null, gitBytes: null as number | null, oursFirstMs: undefined as number | undefined };
  if (served) {
    const ours = await startOurs(ctx, served.dataDir, `serve-${name}`, served.key);
    try {
      await deflateCatchUp(served.dataDir);
      const oursUrl = ourRemote(ours, served.projectId);
      const traced = async (args: string[], cwd?: string) => {
        const trace = join(work, 'trace.pack');
        rmSync(trace, { force: true });
        const { ms } = await runGit(args, { cwd, env: { GIT_TRACE_PACKFILE: trace } });
        const bytes = existsSync(trace) ? statSync(trace).size : 0;
        rmSync(trace, { force: true });
        return { ms, bytes };
      };
      for (let rep = 0; rep < reps; rep++) {
        const target = join(work, 'clone.git');
        for (const side of ['ours', 'git'] as const) {
          rmSync(target, { recursive: true, force: true });
          try {
            const sampler = side === 'ours' ? sampleMemory(ours.server.child.pid!) : null;
            // Stopped also when the clone fails: a sampler left running keeps the benchmark from exiting.
            const { ms, bytes } = await traced(['clone', '-q', '--bare', side === 'ours' ? oursUrl : upstreamUrl, target]).finally(() => {
              if (sampler) clone.peakAnon = Math.max(clone.peakAnon, sampler.stop().anonBytes);
            });
            clone[side].push(ms);
            // The first clone is planned; the server answers the next ones with the pack it made (clonePacks.ts).
            if (side === 'ours' && rep === 0) clone.oursFirstMs = ms;
            if (side === 'ours') clone.oursBytes = bytes;
            else clone.gitBytes = bytes;
            progress(`${name} clone ${rep + 1}/${reps} ${side}: ${(ms / 1000).toFixed(1)} s, ${(bytes / 1024 ** 2).toFixed(1)} MB`);
            // The client's floor under this clone (untimed by the clone itself).
            const indexing = await timePackIndexing(target, join(work, 'index-pack.git'));
            (side === 'ours' ? clone.oursIndexing : clone.gitIndexing).push(indexing);
            if (side === 'ours' && rep === 0) {
              // Item 6: what we send must satisfy git's strictest checks (untimed, once), or fail
              // them exactly as the upstream does (a real history may hold what old gits wrote).
              const strict = (cwd: string) =>
                runGit(['fsck', '--strict', '--no-dangling'], { cwd }).then(
                  () => '',
                  (error: Error) => error.message.replace(/^git .*? failed \(\d+\): /, ''),
                );
              const [ourProblems, upstreamProblems] = await Promise.all([strict(target), strict(repo)]);
              clone.oursFsckClean = ourProblems === upstreamProblems;
              if (ourProblems !== '') progress(`${name} clone ours: git fsck --strict reports what it reports upstream: ${clone.oursFsckClean ? 'yes' : `no: ${ourProblems.slice(0, 300)}`}`);
            }
          } catch (error) {
            note(`clone ${side} ${rep + 1}`, error);
          }
        }
        rmSync(target, { recursive: true, force: true });
      }

      // A clone after a commit (untimed, through the API, its forms made): the tips moved, so no
      // kept pack answers it; the one kept for the tips before grows (clonePacks.ts). On a branch
      // of its own, so main stays what the fetch below expects.
      for (let rep = 0; rep < reps; rep++) {
        const target = join(work, 'clone.git');
        rmSync(target, { recursive: true, force: true });
        try {
          const projectPath = `/projects/${served.projectId}`;
          if (rep === 0) await api(ours.server, served.key, 'POST', `${projectPath}/git/branches`, { name: AFTER_COMMIT_BRANCH, from: 'main' });
          await api(ours.server, served.key, 'POST', `${projectPath}/files/batch`, { branch: AFTER_COMMIT_BRANCH, files: [{ path: `after-commit-${rep}.txt`, content: `commit ${rep}\n` }] });
          await api(ours.server, served.key, 'POST', `${projectPath}/git/commit`, { branch: AFTER_COMMIT_BRANCH, message: `After commit ${rep}` });
          await deflateCatchUp(served.dataDir);
          const { ms } = await runGit(['clone', '-q', '--bare', oursUrl, target]);
          clone.oursAfterCommit.push(ms);
          progress(`${name} clone after a commit ${rep + 1}/${reps} ours: ${(ms / 1000).toFixed(2)} s`);
        } catch (error) {
          note(`clone after a commit ${rep + 1}`, error);
        }
        rmSync(target, { recursive: true, force: true });
      }

      // A bare clone of main~10 (first parents), made locally and untimed: it lacks the last commits.
      const behind = join(work, 'behind.git');
      const client = join(work, 'fetch-client.git');
      rmSync(behind, { recursive: true, force: true });
      rmSync(client, { recursive: true, force: true });
      const firstParents = Number((await runGit(['rev-list', '--first-parent', '--count', 'main'], { cwd: repo })).stdout.trim());
      if (firstParents <= FETCH_COMMITS) throw new Error(`main has ${firstParents} commits, too few for a fetch of the last ${FETCH_COMMITS}`);
      const oldTip = (await runGit(['rev-parse', `main~${FETCH_COMMITS}`], { cwd: repo })).stdout.trim();
      fetched.commits = Number((await runGit(['rev-list', '--count', 'main', `^${oldTip}`], { cwd: repo })).stdout.trim());
      fetched.objects = (await runGit(['rev-list', '--objects', 'main', `^${oldTip}`], { cwd: repo })).stdout.trim().split('\n').length;
      await runGit(['clone', '-q', '--bare', '--no-local', repo, behind]);
      await runGit(['update-ref', 'refs/heads/main', oldTip], { cwd: behind });
      await runGit(['clone', '-q', '--bare', '--no-local', behind, client]);
      rmSync(behind, { recursive: true, force: true });
      for (let rep = 0; rep < reps; rep++) {
        for (const side of ['ours', 'git'] as const) {
          const copy = join(work, 'fetch.git');
          rmSync(copy, { recursive: true, force: true });
          spawnSync('cp', ['-a', client, copy]);
          try {
            const url = side === 'ours' ? oursUrl : upstreamUrl;
            const { ms, bytes } = await traced(['-c', 'fetch.unpackLimit=1', 'fetch', '-q', '--update-head-ok', url, '+refs/heads/main:refs/heads/main'], copy);
            fetched[side].push(ms);
            if (side === 'ours') fetched.oursBytes = bytes;
            else fetched.gitBytes = bytes;
            progress(`${name} fetch ${rep + 1}/${reps} ${side}: ${ms.toFixed(0)} ms, ${(bytes / 1024).toFixed(0)} KB`);
          } catch (error) {
            note(`fetch ${side} ${rep + 1}`, error);
          }
          rmSync(copy, { recursive: true, force: true });
        }
      }
      rmSync(client, { recursive: true, force: true });

      // Partial clones: git's side needs uploadpack.allowFilter (GitHub's serves them).
      await runGit(['config', 'uploadpack.allowFilter', 'true'], { cwd: repo });
      for (let rep = 0; rep < reps; rep++) {
        const target = join(work, 'partial.git');
        for (const side of ['ours', 'git'] as const) {
          rmSync(target, { recursive: true, force: true });
          try {
            const { ms, bytes } = await traced(['clone', '-q', '--bare', `--filter=${PARTIAL_FILTER}`, side === 'ours' ? oursUrl : upstreamUrl, target]);
            partial[side].push(ms);
            if (side === 'ours' && rep === 0) partial.oursFirstMs = ms;
            if (side === 'ours') partial.oursBytes = bytes;
            else partial.gitBytes = bytes;
            progress(`${name} partial clone ${rep + 1}/${reps} ${side}: ${(ms / 1000).toFixed(2)} s, ${(bytes / 1024).toFixed(0)} KB`);
          } catch (error) {
            note(`partial clone ${side} ${rep + 1}`, error);
          }
        }
        rmSync(target, { recursive: true, force: true });
      }
    } catch (error) {
      note('clone and fetch', error);
    } finally {
      await stopOurs(ours);
    }
    rmSync(served.dataDir, { recursive: true, force: true });
  }

  // Pushes of the whole history, each into a fresh server's empty project, beside an empty bare repository.
  const push = { ours: [] as number[], git: [] as number[], peakAnon: 0, worstGap: 0 };
  for (let rep = 0; rep < reps; rep++) {
    const dataDir = join(work, `${name}-push-${rep}`);
    rmSync(dataDir, { recursive: true, force: true });
    const ours = await startOurs(ctx, dataDir, rep === reps - 1 ? `push-${name}` : null);
    let watch: ReturnType<typeof watchServer> | null = null;
    try {
      const created = await api(ours.server, ours.key, 'POST', '/projects', { title: `Push ${name}` });
      watch = watchServer(ours);
      const { ms } = await runGit(['push', '-q', ourRemote(ours, created.project.id), 'main:refs/heads/imported'], { cwd: repo });
      const watched = await watch.stop();
      push.peakAnon = Math.max(push.peakAnon, watched.anonBytes);
      push.worstGap = Math.max(push.worstGap, watched.worstMs);
      push.ours.push(ms);
      progress(`${name} push ${rep + 1}/${reps} ours: ${(ms / 1000).toFixed(1)} s`);
    } catch (error) {
      note(`push ours ${rep + 1}`, error);
    } finally {
      await watch?.stop();
      await stopOurs(ours);
      rmSync(dataDir, { recursive: true, force: true });
    }
    const target = join(ctx.upstreamRoot, `push-${name}.git`);
    rmSync(target, { recursive: true, force: true });
    try {
      await runGit(['init', '-q', '--bare', '--initial-branch=main', target]);
      const { ms } = await runGit(['push', '-q', `${backend.url}/push-${name}.git`, 'main:refs/heads/main'], { cwd: repo });
      push.git.push(ms);
      progress(`${name} push ${rep + 1}/${reps} git: ${(ms / 1000).toFixed(1)} s`);
    } catch (error) {
      note(`push git ${rep + 1}`, error);
    }
    rmSync(target, { recursive: true, force: true });
  }

  // Pushes into a server that has taken the same push once already, into another project (its code
  // compiled and warm, as a running server's is), each into a fresh server and data directory again.
  const pushRunning = await secondRuns('push', async (ours, run) => {
    const created = await api(ours.server, ours.key, 'POST', '/projects', { title: `Push ${name} ${run}` });
    return (await runGit(['push', '-q', ourRemote(ours, created.project.id), 'main:refs/heads/imported'], { cwd: repo })).ms;
  });

  return {
    name,
    fixture,
    gitRepackMs: repack.ms,
    gitPackBytes,
    gitStoreBytes: packBytesIn(repo, ['.pack', '.idx']),
    gitRepoBytes: duBytes(repo),
    seed: { ours: orNull(seed.ours), git: orNull(seed.git), oursPeakAnonBytes: seed.peakAnon, deflateCatchUpMs: seed.catchUp, worstHealthzMs: seed.worstGap, oursRunning: orNull(running) },
    clone: { ours: orNull(clone.ours), git: orNull(clone.git), oursPackBytes: clone.oursBytes, gitPackBytes: clone.gitBytes, oursPeakAnonBytes: clone.peakAnon, oursFsckClean: clone.oursFsckClean, oursFirstMs: clone.oursFirstMs, oursAfterCommit: orNull(clone.oursAfterCommit), oursIndexing: orNull(clone.oursIndexing), gitIndexing: orNull(clone.gitIndexing) },
    fetch: { ours: orNull(fetched.ours), git: orNull(fetched.git), oursPackBytes: fetched.oursBytes, gitPackBytes: fetched.gitBytes, commits: fetched.commits, objects: fetched.objects },
    partialClone: { filter: PARTIAL_FILTER, ours: orNull(partial.ours), git: orNull(partial.git), oursPackBytes: partial.oursBytes, gitPackBytes: partial.gitBytes, oursFirstMs: partial.oursFirstMs },
    push: { ours: orNull(push.ours), git: orNull(push.git), oursPeakAnonBytes: push.peakAnon, worstHealthzMs: push.worstGap, oursRunning: orNull(pushRunning) },
    store,
    failures,
  };
}

export async function runHistoryBench(options: {
  histories: HistoryKind[];
  /** Repositories on disk measured after the generated histories (--repo, repeatable). */
  repos?: string[];
  reps: number;
  commits?: number;
  bigCommits?: number;
  work: string;
  profileDir?: string;
  /** Also the realistic history written through the API (bench/apiHistory.ts), its store after a collection beside git's. */
  api?: boolean;
  progress?: (text: string) => void;
}): Promise<HistoryBenchResult> {
  const started = performance.now();
  const upstreamRoot = join(options.work, 'upstream');
  mkdirSync(upstreamRoot, { recursive: true });
  if (options.profileDir) mkdirSync(options.profileDir, { recursive: true });
  const backend = await startGitHttpBackend(upstreamRoot);
  const ctx: Context = {
    work: options.work,
    reps: options.reps,
    backend,
    upstreamRoot,
    profileDir: options.profileDir ?? null,
    profiles: [],
    progress: options.progress ?? ((text) => process.stderr.write(`[history] ${text}\n`)),
  };
  const runs: HistoryRun[] = [];
  try {
    for (const name of options.histories) {
      const commits = name === 'big-file' ? (options.bigCommits ?? HISTORY_DEFAULTS['big-file'].commits) : (options.commits ?? HISTORY_DEFAULTS.project.commits);
      runs.push(await runHistory(ctx, generatedHistory(name, commits)));
    }
    for (const path of options.repos ?? []) runs.push(await runHistory(ctx, givenHistory(path)));
  } finally {
    await backend.close();
  }
  let api: HistoryBenchResult['api'];
  if (options.api) {
    try {
      const defaults = HISTORY_DEFAULTS.project;
      api = await runApiHistoryBench({ commits: options.commits ?? defaults.commits, files: defaults.files, work: join(options.work, 'api-history'), progress: (text) => ctx.progress(`api: ${text}`) });
    } catch (error) {
      api = { failed: (error as Error).message };
      ctx.progress(`api history failed: ${(error as Error).message}`);
    }
  }
  return { reps: options.reps, durationSeconds: (performance.now() - started) / 1000, runs, profiles: ctx.profiles, ...(api ? { api } : {}) };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const value = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const number = (name: string) => (value(name) === undefined ? undefined : Number(value(name)));
  const work = value('work') ?? join(import.meta.dirname, '.work', 'history');
  const repos = process.argv.filter((arg) => arg.startsWith('--repo=')).map((arg) => arg.slice('--repo='.length));
  // --repo alone measures the given repositories only.
  const histories = (value('histories')?.split(',').filter(Boolean) ?? (repos.length > 0 ? [] : ['project', 'big-file'])) as HistoryKind[];
  const result = await runHistoryBench({
    histories,
    repos,
    reps: number('reps') ?? DEFAULT_REPS,
    commits: number('commits'),
    bigCommits: number('big-commits'),
    work,
    profileDir: value('profile'),
    api: !process.argv.includes('--no-api'),
  });
  const resultPath = value('result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
  console.log(historyTables(result));
  if (!process.argv.includes('--keep') && !value('work')) rmSync(work, { recursive: true, force: true });
}
