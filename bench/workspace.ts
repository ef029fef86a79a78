/**
 * The workspace API's read verbs on a large tree over HTTP, each beside the git command that answers
 * the same question, in the same run (issue 16):
 *   - GET git/compare of two commits 100 files apart   vs  git diff --histogram -M
 *   - GET git/blame/{path}, 2,000 lines, 500 commits   vs  git blame --porcelain
 *   - GET search for a literal over the whole tree     vs  git grep -n --column -F
 *   - GET git/archive (tar.gz and zip)                 vs  git archive
 *
 *   npx tsx bench/workspace.ts [--size=100000] [--runs=7] [--archive-runs=3] [--only=compare,blame,search,archive]
 *     [--no-library] [--library-archive] [--work=DIR] [--out=FILE | --no-write] [--result=FILE]
 *   WORKSPACE_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" adds node flags to the server (profiles).
 *
 * The project (fixtures/sourceTree.ts, about 3.4 KB of TypeScript per file) is written through the
 * service into a data directory, then a 100-file change, then 500 commits that each edit a few lines
 * of one 2,000-line file. It is kept under <work>/workspace-<size>/ (default bench/.work/) and reused
 * by later runs (it takes minutes at 100,000 files); delete the directory to rebuild it. git gets the
 * same objects, exported from the store and packed (`git repack -adq`).
 *
 * A server process (src/server.ts, as `npm start` runs it; rate limit off) answers the requests,
 * sent with fetch from this process; a request is timed until its whole body has arrived. git runs
 * as a process on the same commits, its output read as a caller would. Each scenario but the
 * archives starts with WARMUP_RUNS untimed runs of every side. Each run takes the sides in
 * turn, starting with a different one each run, so load from other work falls on all alike; a
 * ratio's range is over the runs' paired ratios (this run's ours / this run's git). The library
 * side (the src/repo verb called in this process on the same store, the event-loop stall seen while
 * it ran) shows how much of a request is the verb itself; --no-library leaves it out, and archive's
 * library side runs only with --library-archive (a 100,000-file archive takes tens of seconds).
 * After the timed runs, one more HTTP request per scenario runs with a probe asking /healthz every
 * PROBE_INTERVAL_MS: its longest round trip is what another client of the server waited meanwhile.
 * During the archive requests the server's anonymous RSS (heap and buffers) is sampled; issue 16
 * bounds it at 300 MB.
 *
 * Checks (on the first run's answers): compare lists the files git diff lists; blame names git
 * blame's commit for every line; search finds git grep's lines; our tar.gz's tar equals `git archive
 * --format=tar`'s byte for byte (SHA-1 of both, from the probe run).
 *
 * The section it writes sits between WORKSPACE_SECTION_START and WORKSPACE_SECTION_END in
 * bench/RESULTS.md and replaces only that (bench/run.ts runs this file as its `workspace` part and
 * keeps the section); --no-write prints it only. --result writes the data as JSON.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { mulberry32, SourceTree } from '../fixtures/sourceTree.js';
import { openArchive, type ArchiveFormat } from '../src/repo/archive.js';
import { blame } from '../src/repo/blame.js';
import { compare } from '../src/repo/compare.js';
import { DEFAULT_REPO_LIMITS, type Repo } from '../src/repo/repo.js';
import { search } from '../src/repo/search.js';
import { exportToBareRepo } from '../src/repo/wire/exportToBareRepo.js';
import { loadConfig } from '../src/service/config.js';
import { openTreehouse } from '../src/service/treehouse.js';
import { LmdbStore } from '../src/store/lmdb.js';
import { openStore } from '../src/store/open.js';
import { startServerProcess, type ServerProcess } from '../test/support/process.js';
import { sampleMemory, summarise, withMarkedSection, type Summary } from './measure.js';

export const WORKSPACE_SECTION_START = '<!-- bench/workspace.ts: start -->';
export const WORKSPACE_SECTION_END = '<!-- bench/workspace.ts: end -->';

const GIT_ENV = { ...isolatedGitEnv({ noAutoGc: true }), TZ: 'UTC' };
const BATCH_FILES = 10_000;
const BLAME_PATH = 'bench/blame/target.ts';
const BLAME_LINES = 2_000;
const BLAME_COMMITS = 500;
const CHANGED_FILES = 100;
/** Appears only in the lines the 100-file change inserted ("// Revision 1: …"): search must read every file. */
const NEEDLE = 'Revision 1:';
const SEARCH_LIMIT = 1000;
const PROBE_INTERVAL_MS = 10;
/** Untimed runs of each side before a scenario's timed ones (archives have none: a run is long). */
const WARMUP_RUNS = 2;
const HEALTH_POLL_MS = 200;
/** Issue 16's targets. */
const COMPARE_TARGET_MS = 30;
const SEARCH_TARGET_RATIO = 0.5;
const ARCHIVE_ANON_RSS_MAX_BYTES = 300 * 1024 * 1024;
/** Bumped when the project's content changes, so a kept directory of an older layout is rebuilt. */
const BUILD_VERSION = 1;

const SCENARIO_IDS = ['compare', 'blame', 'search', 'archive-tar.gz', 'archive-zip'] as const;
type ScenarioId = (typeof SCENARIO_IDS)[number];

interface Built {
  version: number;
  key: string;
  projectId: string;
  /** The project's number in the store (Repo.project). */
  seq: number;
  base: string;
  head: string;
  blameHead: string;
}

/** One scenario's figures. Times in milliseconds, sizes in bytes. */
export interface WorkspaceScenarioResult {
  id: ScenarioId;
  title: string;
  http: Summary;
  git: Summary;
  /** Paired ratios (HTTP / git of the same run). */
  httpToGit: Summary;
  library?: Summary;
  libraryToGit?: Summary;
  /** Longest event-loop delay in this process while the library verb ran. */
  libraryStallMs?: number;
  /** Longest /healthz round trip during the probed HTTP request. */
  probeMaxMs: number;
  /** The server's anonymous RSS, largest sample during the HTTP requests (archive only). */
  serverAnonPeakBytes?: number;
  serverFilePeakBytes?: number;
  target: string;
  verdict: 'pass' | 'FAIL' | '—';
  check: string;
  checkPassed: boolean;
}

export interface WorkspaceBenchResult {
  date: string;
  files: number;
  runs: number;
  archiveRuns: number;
  loadAverage: { start: number; end: number };
  machine: string;
  git: string;
  node: string;
  scenarios: WorkspaceScenarioResult[];
}

function option(argv: string[], name: string): string | undefined {
  return argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function log(message: string): void {
  process.stderr.write(`[workspace bench] ${message}\n`);
}

function gitSync(args: string[], cwd: string): string {
  const result = spawnSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/**
 * The project in a data directory, written through the service; kept (marker built.json) and
 * reused, with the bare repository git reads beside it.
 */
async function build(dir: string, files: number): Promise<Built> {
  const marker = join(dir, 'built.json');
  if (existsSync(marker)) {
    const built = JSON.parse(readFileSync(marker, 'utf8')) as Built;
    if (built.version === BUILD_VERSION) return built;
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const tree = new SourceTree({ files });
  const config = loadConfig({ TREEHOUSE_DATA_DIR: join(dir, 'data'), TREEHOUSE_BATCH_FILES_MAX: String(BATCH_FILES) });
  const th = openTreehouse(config, await openStore(config));
  try {
    const key = (await th.accounts.bootstrap())!;
    const principal = (await th.accounts.authenticate(key))!;
    const people = { author: { name: 'Bench', email: 'bench@treehouse.invalid' }, committer: { name: 'Bench', email: 'bench@treehouse.invalid' } };
    const record = await th.projects.create(principal, { title: 'Workspace bench', files: [], people });
    for (let start = 0; start < files; start += BATCH_FILES) {
      const batch = [];
      for (let i = start; i < Math.min(files, start + BATCH_FILES); i++) batch.push({ path: tree.paths[i], content: tree.content(i).toString('utf8') });
      await th.workspace.writeFiles(principal, record.id, { branch: 'main', files: batch });
    }
    const base = (await th.workspace.commit(principal, record.id, { branch: 'main', message: 'Import' })).oid;
    const changed = tree.changeFiles(CHANGED_FILES, 1).map((file) => ({ path: file.path, content: file.content.toString('utf8') }));
    await th.workspace.writeFiles(principal, record.id, { branch: 'main', files: changed });
    const head = (await th.workspace.commit(principal, record.id, { branch: 'main', message: `${CHANGED_FILES} files` })).oid;
    log(`imported ${files} files in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // A 2,000-line file and 500 commits that each edit a few of its lines (some inserted or removed).
    const rng = mulberry32(0xb1a3e);
    const lines = Array.from({ length: BLAME_LINES }, (_, i) => `export const value${i} = ${Math.floor(rng() * 1e6)}; // line ${i}`);
    let blameHead = head;
    for (let c = 0; c < BLAME_COMMITS; c++) {
      for (let e = 0; e < 3; e++) {
        const at = Math.floor(rng() * lines.length);
        const roll = rng();
        if (roll < 0.15) lines.splice(at, 0, `// inserted in commit ${c}`);
        else if (roll < 0.25 && lines.length > BLAME_LINES - 50) lines.splice(at, 1);
        else lines[at] = `${lines[at].split(' //')[0]} // edited in commit ${c}`;
      }
      await th.workspace.writeFiles(principal, record.id, { branch: 'main', files: [{ path: BLAME_PATH, content: `${lines.join('\n')}\n` }] });
      blameHead = (await th.workspace.commit(principal, record.id, { branch: 'main', message: `blame edit ${c}` })).oid;
    }
    log(`${BLAME_COMMITS} blame commits done after ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const bare = join(dir, 'git.git');
    gitSync(['init', '-q', '--bare', bare], dir);
    await exportToBareRepo(th.projects.repo(record), bare);
    gitSync(['repack', '-adq'], bare);
    gitSync(['prune-packed'], bare);
    log(`git repository ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const built: Built = { version: BUILD_VERSION, key, projectId: record.id, seq: record.seq, base, head, blameHead };
    writeFileSync(marker, JSON.stringify(built));
    return built;
  } finally {
    await th.close();
  }
}

/** A git command timed as a process, its output read as a caller would. */
async function timeGit(args: string[], cwd: string, keep: boolean): Promise<{ ms: number; bytes: number; out: Buffer | null }> {
  const start = process.hrtime.bigint();
  const child = spawn('git', args, { cwd, env: GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  let bytes = 0;
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (keep) chunks.push(chunk);
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const status = await new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (status !== 0) throw new Error(`git ${args.join(' ')} exited ${status}: ${stderr}`);
  return { ms, bytes, out: keep ? Buffer.concat(chunks) : null };
}

/** The SHA-1 of a command's standard output, streamed. */
async function gitOutputSha1(args: string[], cwd: string): Promise<string> {
  const child = spawn('git', args, { cwd, env: GIT_ENV, stdio: ['ignore', 'pipe', 'inherit'] });
  const hash = createHash('sha1');
  child.stdout.on('data', (chunk: Buffer) => hash.update(chunk));
  const status = await new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  if (status !== 0) throw new Error(`git ${args.join(' ')} exited ${status}`);
  return hash.digest('hex');
}

interface HttpAnswer {
  ms: number;
  bytes: number;
  /** The body when asked for (JSON answers). */
  body: Buffer | null;
  /** SHA-1 of the gunzipped body, when asked for (tar.gz). */
  gunzippedSha1?: string;
}

/** A GET timed until its whole body has arrived. */
async function timeHttp(url: string, key: string, how: { keep: boolean; gunzipSha1?: boolean }): Promise<HttpAnswer> {
  const start = process.hrtime.bigint();
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  const chunks: Buffer[] = [];
  let bytes = 0;
  const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
  let gunzip: ReturnType<typeof createGunzip> | undefined;
  let gunzipped: Promise<string> | undefined;
  if (how.gunzipSha1) {
    const hash = createHash('sha1');
    gunzip = createGunzip();
    gunzip.on('data', (chunk: Buffer) => hash.update(chunk));
    const stream = gunzip;
    gunzipped = new Promise((resolve, reject) => {
      stream.on('end', () => resolve(hash.digest('hex')));
      stream.on('error', reject);
    });
  }
  for await (const chunk of body) {
    bytes += (chunk as Buffer).length;
    if (how.keep) chunks.push(chunk as Buffer);
    if (gunzip && !gunzip.write(chunk)) await new Promise((resolve) => gunzip.once('drain', resolve));
  }
  gunzip?.end();
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  return { ms, bytes, body: how.keep ? Buffer.concat(chunks) : null, ...(gunzipped ? { gunzippedSha1: await gunzipped } : {}) };
}

/** Asks /healthz every PROBE_INTERVAL_MS until stopped; the longest round trip is what another client waited. */
function startProbe(base: string): { stop(): Promise<number> } {
  let running = true;
  let maxMs = 0;
  const loop = (async () => {
    while (running) {
      const start = process.hrtime.bigint();
      await (await fetch(`${base}/healthz`)).arrayBuffer();
      maxMs = Math.max(maxMs, Number(process.hrtime.bigint() - start) / 1e6);
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return maxMs;
    },
  };
}

/** Runs one of our verbs in this process, timing it and watching this process's event loop. */
async function timeLibrary(work: () => Promise<unknown>): Promise<{ ms: number; stallMs: number; value: unknown }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const start = process.hrtime.bigint();
  const value = await work();
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  histogram.disable();
  return { ms, stallMs: histogram.max / 1e6, value };
}

async function drainArchive(repo: Repo, ref: string, format: ArchiveFormat): Promise<number> {
  let bytes = 0;
  for await (const chunk of (await openArchive(repo, { ref, format })).stream) bytes += (chunk as Buffer).length;
  return bytes;
}

/** Waits until the server's deflate worker has caught up with the store (a fresh store has a backlog). */
async function settle(base: string): Promise<void> {
  for (;;) {
    const health = (await (await fetch(`${base}/healthz`)).json()) as { deflate_backlog: number };
    if (health.deflate_backlog === 0) return;
    await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
  }
}

/** git blame --porcelain's commit per final line (1-based index). */
function gitBlameOids(porcelain: string): string[] {
  const oids: string[] = [];
  for (const line of porcelain.split('\n')) {
    const match = /^([0-9a-f]{40}) \d+ (\d+)/.exec(line);
    if (match) oids[Number(match[2]) - 1] = match[1];
  }
  return oids;
}

interface Scenario {
  id: ScenarioId;
  title: string;
  runs: number;
  url: string;
  git: string[];
  library: (() => Promise<unknown>) | null;
  /** What the first run's answers say about agreement with git. */
  check: (git: Buffer, http: Buffer) => { text: string; passed: boolean };
  archive?: { format: 'tar.gz' | 'zip' };
  judge: (http: Summary, git: Summary) => { target: string; verdict: 'pass' | 'FAIL' };
}

export async function runWorkspaceBench(argv: string[]): Promise<WorkspaceBenchResult> {
  const files = Number(option(argv, 'size') ?? 100_000);
  const runs = Number(option(argv, 'runs') ?? 7);
  const archiveRuns = Number(option(argv, 'archive-runs') ?? 3);
  const only = option(argv, 'only')?.split(',');
  const withLibrary = !argv.includes('--no-library');
  const libraryArchive = argv.includes('--library-archive');
  const workRoot = option(argv, 'work') ?? join(import.meta.dirname, '.work');
  const dir = join(workRoot, `workspace-${files}`);
  const loadStart = loadavg()[0];
  const built = await build(dir, files);
  const bare = join(dir, 'git.git');
  const dataDir = join(dir, 'data');

  const nodeArgs = process.env.WORKSPACE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const server: ServerProcess = await startServerProcess({ TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_RATE_PER_SECOND: '0' }, nodeArgs);
  const api = `${server.url}/api/v1/projects/${built.projectId}`;
  // The library side reads the same LMDB environment (LMDB allows several processes).
  const store = withLibrary ? new LmdbStore({ path: dataDir }) : null;
  const repo: Repo | null = store && { store: store.async, project: built.seq, limits: DEFAULT_REPO_LIMITS };
  const results: WorkspaceScenarioResult[] = [];
  try {
    await settle(server.url);
    const query = (params: Record<string, string>) => new URLSearchParams(params).toString();
    const scenarios: Scenario[] = [
      {
        id: 'compare',
        title: `compare, ${CHANGED_FILES} files apart`,
        runs,
        url: `${api}/git/compare?${query({ base: built.base, head: built.head })}`,
        git: ['diff', '--histogram', '-M', built.base, built.head],
        library: repo && (() => compare(repo, { base: built.base, head: built.head, context: 3, patch: true })),
        check: (git, http) => {
          const gitPaths = [...git.toString('utf8').matchAll(/^diff --git a\/(\S+) b\//gm)].map((match) => match[1]);
          const ours = JSON.parse(http.toString('utf8')) as { files: Array<{ path: string; additions: number }> };
          const same = ours.files.length === gitPaths.length && ours.files.every((file, i) => file.path === gitPaths[i]);
          return { text: `${ours.files.length} files${same ? ', as git' : `; git ${gitPaths.length}: DIFFERS`}`, passed: same };
        },
        judge: (http) => ({ target: `≤ ${COMPARE_TARGET_MS} ms`, verdict: http.medianMs <= COMPARE_TARGET_MS ? 'pass' : 'FAIL' }),
      },
      {
        id: 'blame',
        title: `blame, ${BLAME_LINES.toLocaleString('en-US')} lines, ${BLAME_COMMITS} commits`,
        runs,
        url: `${api}/git/blame/${BLAME_PATH}?${query({ ref: built.blameHead })}`,
        git: ['blame', '--porcelain', built.blameHead, '--', BLAME_PATH],
        library: repo && (() => blame(repo, { path: BLAME_PATH, ref: built.blameHead })),
        check: (git, http) => {
          const gitOids = gitBlameOids(git.toString('utf8'));
          const ours = JSON.parse(http.toString('utf8')) as { lines: Array<{ oid: string }>; commits: Record<string, unknown> };
          const same = ours.lines.length === gitOids.length && ours.lines.every((line, i) => line.oid === gitOids[i]);
          return { text: `${ours.lines.length} lines, ${Object.keys(ours.commits).length} commits${same ? ', as git' : ': DIFFERS from git'}`, passed: same };
        },
        judge: (http, git) => ({ target: '≤ git blame', verdict: http.medianMs <= git.medianMs ? 'pass' : 'FAIL' }),
      },
      {
        id: 'search',
        title: 'literal search, whole tree',
        runs,
        url: `${api}/search?${query({ q: NEEDLE, ref: built.blameHead, limit: String(SEARCH_LIMIT) })}`,
        git: ['grep', '-n', '--column', '-F', NEEDLE, built.blameHead],
        library: repo && (() => search(repo, { q: NEEDLE, regex: false, case: true, ref: built.blameHead, limit: SEARCH_LIMIT })),
        check: (git, http) => {
          const prefix = `${built.blameHead}:`;
          const gitLines = git
            .toString('utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => {
              const [path, number, column] = line.slice(prefix.length).split(':');
              return `${path}:${number}:${column}`;
            });
          const ours = JSON.parse(http.toString('utf8')) as { matches: Array<{ path: string; line: number; column: number }> };
          const same = ours.matches.length === gitLines.length && ours.matches.every((m, i) => `${m.path}:${m.line}:${m.column}` === gitLines[i]);
          return { text: `${ours.matches.length} matches${same ? ', as git' : `; git ${gitLines.length}: DIFFERS`}`, passed: same };
        },
        judge: (http, git) => ({ target: `≤ ${SEARCH_TARGET_RATIO}x git grep`, verdict: http.medianMs <= SEARCH_TARGET_RATIO * git.medianMs ? 'pass' : 'FAIL' }),
      },
      ...(['tar.gz', 'zip'] as const).map(
        (format): Scenario => ({
          id: `archive-${format}`,
          title: `archive, ${format}`,
          runs: archiveRuns,
          url: `${api}/git/archive?${query({ ref: built.blameHead, format })}`,
          git: ['archive', `--format=${format}`, built.blameHead],
          library: repo && libraryArchive ? () => drainArchive(repo, built.blameHead, format) : null,
          check: () => ({ text: '', passed: true }),
          archive: { format },
          judge: (http, git) => ({ target: '≤ git archive', verdict: http.medianMs <= git.medianMs ? 'pass' : 'FAIL' }),
        }),
      ),
    ];

    for (const scenario of scenarios) {
      if (only && !only.some((name) => scenario.id.startsWith(name))) continue;
      const isArchive = scenario.archive !== undefined;
      const times: Record<'http' | 'git' | 'library', number[]> = { http: [], git: [], library: [] };
      let stallMs = 0;
      let firstGit: Buffer | null = null;
      let firstHttp: Buffer | null = null;
      let gitBytes = 0;
      let httpBytes = 0;
      const memory = { anon: 0, file: 0 };
      const sides = ['git', 'http', ...(scenario.library ? ['library'] : [])] as Array<'http' | 'git' | 'library'>;
      // Untimed first: code compiled, caches and page cache warm on every side, and the server's
      // search threads started (its first search runs on the request thread while they start).
      for (let warm = 0; warm < (isArchive ? 0 : WARMUP_RUNS); warm++) {
        await timeGit(scenario.git, bare, false);
        await timeHttp(scenario.url, built.key, { keep: false });
        if (scenario.library) await scenario.library();
      }
      for (let run = 0; run < scenario.runs; run++) {
        // Each run starts with another side.
        for (let k = 0; k < sides.length; k++) {
          const side = sides[(run + k) % sides.length];
          if (side === 'git') {
            const answer = await timeGit(scenario.git, bare, run === 0 && !isArchive);
            times.git.push(answer.ms);
            gitBytes = answer.bytes;
            if (answer.out) firstGit = answer.out;
          } else if (side === 'http') {
            const sampler = isArchive ? sampleMemory(server.child.pid!) : null;
            const answer = await timeHttp(scenario.url, built.key, { keep: run === 0 && !isArchive });
            if (sampler) {
              const peaks = sampler.stop();
              memory.anon = Math.max(memory.anon, peaks.anonBytes);
              memory.file = Math.max(memory.file, peaks.fileBytes);
            }
            times.http.push(answer.ms);
            httpBytes = answer.bytes;
            if (answer.body) firstHttp = answer.body;
          } else {
            const answer = await timeLibrary(scenario.library!);
            times.library.push(answer.ms);
            stallMs = Math.max(stallMs, answer.stallMs);
          }
        }
        log(`${scenario.id} run ${run + 1}/${scenario.runs}: HTTP ${times.http[run].toFixed(1)} ms, git ${times.git[run].toFixed(1)} ms${scenario.library ? `, library ${times.library[run].toFixed(1)} ms` : ''}`);
      }
      // One more request, untimed, with the /healthz probe; for tar.gz it also checks the tar against git's.
      const probe = startProbe(server.url);
      const probed = await timeHttp(scenario.url, built.key, { keep: false, gunzipSha1: scenario.archive?.format === 'tar.gz' });
      const probeMaxMs = await probe.stop();
      let check: { text: string; passed: boolean };
      if (scenario.archive?.format === 'tar.gz') {
        const gitTar = await gitOutputSha1(['archive', '--format=tar', built.blameHead], bare);
        const same = gitTar === probed.gunzippedSha1;
        check = { text: `${(httpBytes / 1e6).toFixed(1)} MB (git ${(gitBytes / 1e6).toFixed(1)} MB); tar ${same ? 'equals' : 'DIFFERS from'} git archive --format=tar`, passed: same };
      } else if (scenario.archive) {
        check = { text: `${(httpBytes / 1e6).toFixed(1)} MB (git ${(gitBytes / 1e6).toFixed(1)} MB)`, passed: true };
      } else {
        check = scenario.check(firstGit!, firstHttp!);
      }
      const http = summarise(times.http);
      const git = summarise(times.git);
      const judged = scenario.judge(http, git);
      const result: WorkspaceScenarioResult = {
        id: scenario.id,
        title: scenario.title,
        http,
        git,
        httpToGit: summarise(times.http.map((ms, i) => ms / times.git[i])),
        probeMaxMs,
        target: judged.target,
        verdict: judged.verdict,
        check: check.text,
        checkPassed: check.passed,
      };
      if (scenario.library) {
        result.library = summarise(times.library);
        result.libraryToGit = summarise(times.library.map((ms, i) => ms / times.git[i]));
        result.libraryStallMs = stallMs;
      }
      if (isArchive) {
        result.serverAnonPeakBytes = memory.anon;
        result.serverFilePeakBytes = memory.file;
      }
      results.push(result);
      log(`${scenario.id}: HTTP ${http.medianMs.toFixed(1)} ms, git ${git.medianMs.toFixed(1)} ms, ${judged.verdict} (${check.text})`);
    }
  } finally {
    await store?.close();
    server.child.kill('SIGTERM');
    await server.exited;
  }
  const gitVersion = spawnSync('git', ['--version'], { encoding: 'utf8' }).stdout.trim().replace(/^git version /, '');
  return {
    date: new Date().toISOString(),
    files,
    runs,
    archiveRuns,
    loadAverage: { start: loadStart, end: loadavg()[0] },
    machine: `${cpus()[0]?.model.trim() ?? 'unknown CPU'}, nproc ${availableParallelism()}, ${Math.round(totalmem() / 1024 ** 3)} GiB RAM`,
    git: gitVersion,
    node: process.version,
    scenarios: results,
  };
}

const ms = (value: number) => (value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(1)} ms`);
const timing = (summary: Summary) => `${ms(summary.medianMs)} (${ms(summary.minMs)}–${ms(summary.maxMs)})`;
const ratio = (summary: Summary) => `${summary.medianMs.toFixed(2)} (${summary.minMs.toFixed(2)}–${summary.maxMs.toFixed(2)})`;
const mb = (bytes: number) => `${Math.round(bytes / 1024 ** 2)} MB`;

/** The section of bench/RESULTS.md, markers not included. */
export function renderWorkspaceSection(result: WorkspaceBenchResult, command: string): string {
  const rows = result.scenarios.map((s) =>
    [
      `| ${s.title}`,
      timing(s.http),
      timing(s.git),
      ratio(s.httpToGit),
      s.target,
      s.verdict === 'FAIL' ? '**FAIL**' : s.verdict,
      s.library ? timing(s.library) : '—',
      s.libraryToGit ? ratio(s.libraryToGit) : '—',
      s.libraryStallMs !== undefined ? ms(s.libraryStallMs) : '—',
      ms(s.probeMaxMs),
      `${s.check}${s.checkPassed ? '' : ' **(check failed)**'} |`,
    ].join(' | '),
  );
  const archives = result.scenarios.filter((s) => s.serverAnonPeakBytes !== undefined);
  const anonPeak = archives.length > 0 ? Math.max(...archives.map((s) => s.serverAnonPeakBytes!)) : undefined;
  const filePeak = archives.length > 0 ? Math.max(...archives.map((s) => s.serverFilePeakBytes!)) : undefined;
  return [
    '# Workspace verbs over HTTP (issue 16)',
    '',
    `Generated by \`bench/workspace.ts\` (\`${command}\`); this section is its own and is replaced whole on every run.`,
    '',
    `- Date: ${result.date}; ${result.machine}; Node ${result.node}, git ${result.git}`,
    `- 1-minute load average: ${result.loadAverage.start.toFixed(2)} at the start, ${result.loadAverage.end.toFixed(2)} at the end (2 cores shared with other work)`,
    `- Project: fixtures/sourceTree.ts, ${result.files.toLocaleString('en-US')} files, then ${CHANGED_FILES} files changed, then ${BLAME_COMMITS} commits editing`,
    `  a ${BLAME_LINES.toLocaleString('en-US')}-line file; git reads the same objects exported and packed (\`git repack -adq\`).`,
    '- HTTP: a server process (src/server.ts, rate limit off), the request sent with fetch from the benchmark process and',
    '  timed until its whole body arrived. git: the command as a process, its output read. Library: the src/repo verb in the',
    `  benchmark process on the same store. Medians (min–max) of ${result.runs} runs (archive: ${result.archiveRuns}), after ${WARMUP_RUNS} untimed runs of each side (not for archives); each run takes the sides in turn,`,
    "  starting with a different one; a ratio is the median (min–max) of the runs' paired ratios.",
    '- Stall: the longest event-loop delay in the benchmark process while the library verb ran. /healthz wait: the longest',
    `  round trip of a probe asking the server's /healthz every ${PROBE_INTERVAL_MS} ms during one more (untimed) request.`,
    '',
    '| scenario | Treehouse HTTP | git | HTTP/git | target | verdict | library | library/git | stall (library) | /healthz wait (HTTP) | check |',
    '|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|',
    ...rows,
    '',
    ...(anonPeak !== undefined
      ? [
          `Server memory during the archive requests: anonymous RSS (heap, buffers) at most ${mb(anonPeak)} — target under ${mb(ARCHIVE_ANON_RSS_MAX_BYTES)}: ${anonPeak < ARCHIVE_ANON_RSS_MAX_BYTES ? 'pass' : '**FAIL**'};`,
          `file-backed RSS (LMDB's mapped data file, page cache) at most ${mb(filePeak!)}.`,
          '',
        ]
      : []),
  ].join('\n');
}

if (process.argv[1] === import.meta.filename) {
  const argv = process.argv.slice(2);
  const result = await runWorkspaceBench(argv);
  const command = `npx tsx bench/workspace.ts${argv.length > 0 ? ` ${argv.filter((arg) => !/^--(work|out|result)=/.test(arg)).join(' ')}` : ''}`.trim();
  const section = renderWorkspaceSection(result, command);
  process.stdout.write(`${section}\n`);
  const resultPath = option(argv, 'result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
  if (!argv.includes('--no-write')) {
    const out = option(argv, 'out') ?? join(import.meta.dirname, 'RESULTS.md');
    writeFileSync(out, withMarkedSection(existsSync(out) ? readFileSync(out, 'utf8') : '', WORKSPACE_SECTION_START, WORKSPACE_SECTION_END, section));
    log(`wrote the workspace section of ${relative(process.cwd(), out)}`);
  }
}
