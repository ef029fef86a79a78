/**
 * Clone over HTTP: `git clone --bare` of an N-file project from Treehouse's smart-HTTP export,
 * against git's own `git http-backend` serving the same tree from a packed repository, in the same
 * run. Also the server's peak RSS (VmHWM of the server process) across the clones.
 *
 *   npx tsx bench/clone.ts [--size=100000] [--reps=3] [--isogit-cap-seconds=600] [--isogit-reps=1]
 *     [--work=DIR] [--result=FILE]
 *
 * The stores are kept under <work>/clone-<N>/ (default bench/.work/) and reused by later runs (they
 * take a while to build at 100,000 files); delete the directory to rebuild them. bench/run.ts runs
 * this file as a child (--result) with a work directory of its own run.
 *
 * isomorphic-git (unless --isogit-cap-seconds=0) clones from the same git http-backend with its
 * http/node client, in a capped child process (bench/isogit.ts), after the git clones.
 *
 * --backend=postgres: our server on a durable embedded PostgreSQL of the run's own (bench/http.ts
 * benchBackend), built afresh each run (under <work>/clone-<N>-postgres/), to set beside LMDB's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SourceTree } from '../fixtures/sourceTree.js';
import { loadConfig } from '../src/service/config.js';
import { openTreehouse } from '../src/service/treehouse.js';
import { openStore } from '../src/store/open.js';
import { startGitHttpBackend } from '../test/support/httpBackend.js';
import { freePort } from '../test/support/process.js';
import { benchBackend, type BenchBackend } from './http.js';
import { isogitClone } from './isogit.js';
import { sampleMemory, statusBytes, summarise, type Measurement, type Summary } from './measure.js';
import { timePackIndexing } from './packIndexing.js';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';

const BATCH_FILES = 10_000;
const GIT_ENV = isolatedGitEnv({ noAutoGc: true });

export interface CloneResult {
  files: number;
  ours: Summary;
  git: Summary;
  /** Peak anonymous resident memory of the server during our clones (heap and buffers). */
  oursServerPeakAnonBytes: number;
  /** Peak file-backed resident memory (LMDB's mapped data file, reclaimable page cache). */
  oursServerPeakFileBytes: number;
  /** VmHWM during our clones (reset when they start): the whole resident peak, both kinds. */
  oursServerHwmBytes: number;
  /** VmHWM of the server since it started (it also filled the deflate cache before the clones). */
  oursServerLifetimeHwmBytes: number;
  packBytesOurs: number;
  packBytesGit: number;
  /**
   * `git index-pack --stdin` of the pack our clone received, alone in a fresh repository, once per
   * rep: what the cloning client spends on our pack with no server at all, a floor for the clone.
   */
  oursPackIndexing: Summary;
  /** isomorphic-git cloning from git http-backend, when asked for. */
  isogit?: Measurement;
}

export interface CloneBenchOptions {
  /** Cap per isomorphic-git clone; 0 or absent: not run. */
  isogitCapSeconds?: number;
  isogitReps?: number;
  /** Where our server keeps its data (default LMDB in the work directory, reused across runs). */
  backend?: BenchBackend;
}

function argument(name: string, fallback: number): number {
  const found = process.argv.find((arg) => arg.startsWith(`--${name}=`));
  return found ? Number(found.split('=')[1]) : fallback;
}

async function buildOurs(dir: string, tree: SourceTree, env: Record<string, string>): Promise<{ key: string; projectId: string }> {
  const marker = join(dir, 'project.json');
  if (existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8'));
  rmSync(dir, { recursive: true, force: true });
  const config = loadConfig({ TREEHOUSE_DATA_DIR: join(dir, 'data'), ...env });
  const th = openTreehouse(config, await openStore(config));
  const key = (await th.accounts.bootstrap())!;
  const principal = (await th.accounts.authenticate(key))!;
  const record = await th.projects.create(principal, { title: 'Clone bench', files: [], people: { author: { name: 'b', email: 'b@x' }, committer: { name: 'b', email: 'b@x' } } });
  const paths = tree.paths;
  for (let start = 0; start < paths.length; start += BATCH_FILES) {
    const files = [];
    for (let i = start; i < Math.min(paths.length, start + BATCH_FILES); i++) files.push({ path: paths[i], content: tree.content(i).toString('utf8') });
    await th.workspace.writeFiles(principal, record.id, { branch: 'main', files });
  }
  await th.workspace.commit(principal, record.id, { branch: 'main', message: 'Import' });
  await th.close();
  const built = { key, projectId: record.id };
  // On PostgreSQL nothing made the directory.
  mkdirSync(dir, { recursive: true });
  writeFileSync(marker, JSON.stringify(built));
  return built;
}

/**
 * The upstream git serves: a bare repository with one commit of the whole tree, streamed to
 * `git fast-import` (no work tree or index to write, which took longer than the clones at 100,000
 * files), then packed with `git repack -ad` as a served repository would be.
 */
function buildGit(dir: string, tree: SourceTree): string {
  const repo = join(dir, 'upstream.git');
  if (existsSync(join(repo, 'packed'))) return repo;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const run = (args: string[], cwd: string, input?: Buffer) => {
    const result = spawnSync('git', args, { cwd, env: GIT_ENV, input, stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
    if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.stderr}`);
  };
  run(['init', '-q', '--bare', '--initial-branch=main', repo], dir);
  run(['fast-import', '--quiet'], repo, importStream(tree));
  run(['repack', '-adq'], repo);
  writeFileSync(join(repo, 'packed'), '');
  return repo;
}

/** One commit on main holding every file of `tree` (gitformat: git-fast-import(1) "commit", inline data). */
function importStream(tree: SourceTree): Buffer {
  const parts: Buffer[] = [Buffer.from('commit refs/heads/main\ncommitter b <b@x> 1700000000 +0000\ndata 7\nImport\n', 'utf8')];
  for (let i = 0; i < tree.size; i++) {
    const content = tree.content(i);
    parts.push(Buffer.from(`M 100644 inline ${tree.paths[i]}\ndata ${content.length}\n`, 'utf8'), content, Buffer.from('\n', 'utf8'));
  }
  return Buffer.concat(parts);
}

/** Async, because git's backend runs in this process and must keep serving while git clones. */
async function timeClone(url: string, target: string): Promise<{ ms: number; packBytes: number }> {
  rmSync(target, { recursive: true, force: true });
  const start = process.hrtime.bigint();
  const child = spawn('git', ['clone', '-q', '--bare', url, target], { env: GIT_ENV, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (status !== 0) throw new Error(`clone of ${url} failed: ${stderr}`);
  const packs = spawnSync('sh', ['-c', `du -cb ${target}/objects/pack/*.pack | tail -1 | cut -f1`], { encoding: 'utf8' });
  return { ms, packBytes: Number(packs.stdout.trim()) };
}

export async function runCloneBench(files: number, reps: number, workRoot = join(import.meta.dirname, '.work'), options: CloneBenchOptions = {}): Promise<CloneResult> {
  const tree = new SourceTree({ files });
  const base = join(workRoot, `clone-${files}`);
  const onPostgres = options.backend?.name === 'postgres';
  const env = (await options.backend?.runEnv()) ?? {};
  // A database lives as long as the run's cluster: built again each run.
  const oursDir = join(base, onPostgres ? 'ours-postgres' : 'ours');
  if (onPostgres) rmSync(oursDir, { recursive: true, force: true });
  const ours = await buildOurs(oursDir, tree, env);
  const gitRepo = buildGit(join(base, 'git'), tree);
  const port = await freePort();
  // CLONE_NODE_ARGS: node flags for the server (e.g. --cpu-prof --cpu-prof-dir=DIR).
  const nodeArgs = process.env.CLONE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const server = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', join(import.meta.dirname, '..', 'src', 'server.ts')], {
    env: { ...process.env, PORT: String(port), TREEHOUSE_DATA_DIR: join(oursDir, 'data'), TREEHOUSE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => server.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve()));
  // Let the deflate cache catch up with a store built before it existed (a live server keeps up as it goes).
  for (;;) {
    const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { deflate_backlog: number };
    if (health.deflate_backlog === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  const backend = await startGitHttpBackend(join(base, 'git'));
  try {
    const oursUrl = `http://x:${ours.key}@127.0.0.1:${port}/git/${ours.projectId}.git`;
    const gitUrl = `${backend.url}/upstream.git`;
    const oursTimes: number[] = [];
    const gitTimes: number[] = [];
    const indexingTimes: number[] = [];
    let packBytesOurs = 0;
    let packBytesGit = 0;
    let anon = 0;
    let file = 0;
    let hwm = 0;
    const lifetimeHwmBeforeClones = statusBytes(server.pid!, 'VmHWM');
    for (let i = 0; i < reps; i++) {
      // Alternate, so load from other work on the machine falls on both sides alike.
      // RssAnon is the server's own memory (heap, buffers); RssFile is LMDB's memory-mapped data
      // file, page cache the kernel can drop at any time.
      const sampler = sampleMemory(server.pid!);
      const a = await timeClone(oursUrl, join(base, 'clone-ours'));
      const peaks = sampler.stop();
      anon = Math.max(anon, peaks.anonBytes);
      file = Math.max(file, peaks.fileBytes);
      hwm = Math.max(hwm, peaks.hwmBytes);
      oursTimes.push(a.ms);
      packBytesOurs = a.packBytes;
      // Reading the pack from a file adds little: the clone's index-pack reads it from a pipe as it comes.
      indexingTimes.push(await timePackIndexing(join(base, 'clone-ours'), join(base, 'index-pack')));
      const b = await timeClone(gitUrl, join(base, 'clone-git'));
      gitTimes.push(b.ms);
      packBytesGit = b.packBytes;
    }
    const result: CloneResult = {
      files,
      ours: summarise(oursTimes),
      git: summarise(gitTimes),
      oursServerPeakAnonBytes: anon,
      oursServerPeakFileBytes: file,
      oursServerHwmBytes: hwm,
      oursServerLifetimeHwmBytes: Math.max(lifetimeHwmBeforeClones, hwm),
      packBytesOurs,
      packBytesGit,
      oursPackIndexing: summarise(indexingTimes),
    };
    if (options.isogitCapSeconds) {
      result.isogit = await isogitClone(files, gitUrl, join(base, 'clone-isogit'), options.isogitReps ?? 1, options.isogitCapSeconds);
    }
    return result;
  } finally {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
    await backend.close();
    rmSync(join(base, 'clone-ours'), { recursive: true, force: true });
    rmSync(join(base, 'clone-git'), { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const files = argument('size', 100_000);
  const reps = argument('reps', 3);
  const work = process.argv.find((arg) => arg.startsWith('--work='))?.slice('--work='.length);
  const resultPath = process.argv.find((arg) => arg.startsWith('--result='))?.slice('--result='.length);
  const backend = await benchBackend(process.argv.find((arg) => arg.startsWith('--backend='))?.slice('--backend='.length) ?? 'lmdb');
  try {
    const result = await runCloneBench(files, reps, work, { isogitCapSeconds: argument('isogit-cap-seconds', 600), isogitReps: argument('isogit-reps', 1), backend });
    if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
    else console.log(JSON.stringify(result, null, 2));
  } finally {
    await backend.close();
  }
}
