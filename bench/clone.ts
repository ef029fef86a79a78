/**
 * Clone over HTTP: `git clone --bare` of an N-file project from Treehouse's smart-HTTP export,
 * against git's own `git http-backend` serving the same tree from a packed repository, in the same
 * run. Also the server's peak RSS (VmHWM of the server process) across the clones.
 *
 *   npx tsx bench/clone.ts [--size=100000] [--reps=3]
 *
 * The stores are kept under bench/.work/clone-<N>/ and reused by later runs (they take a while to
 * build at 100,000 files); delete the directory to rebuild them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SourceTree, writeSourceTree } from '../fixtures/sourceTree.js';
import { loadConfig } from '../src/service/config.js';
import { openTreehouse } from '../src/service/treehouse.js';
import { startGitHttpBackend } from '../test/support/httpBackend.js';
import { freePort } from '../test/support/process.js';
import { summarise, type Summary } from './measure.js';

const BATCH_FILES = 10_000;
const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  // No detached auto-gc racing the clean-up of the work tree.
  GIT_CONFIG_COUNT: '1',
  GIT_CONFIG_KEY_0: 'gc.auto',
  GIT_CONFIG_VALUE_0: '0',
};

export interface CloneResult {
  files: number;
  ours: Summary;
  git: Summary;
  /** Peak anonymous resident memory of the server during our clones (heap and buffers). */
  oursServerPeakAnonBytes: number;
  /** Peak file-backed resident memory (LMDB's mapped data file, reclaimable page cache). */
  oursServerPeakFileBytes: number;
  /** VmHWM: the whole resident peak of the server process since it started. */
  oursServerHwmBytes: number;
  packBytesOurs: number;
  packBytesGit: number;
}

function argument(name: string, fallback: number): number {
  const found = process.argv.find((arg) => arg.startsWith(`--${name}=`));
  return found ? Number(found.split('=')[1]) : fallback;
}

async function buildOurs(dir: string, tree: SourceTree): Promise<{ key: string; projectId: string }> {
  const marker = join(dir, 'project.json');
  if (existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8'));
  rmSync(dir, { recursive: true, force: true });
  const th = openTreehouse(loadConfig({ TREEHOUSE_DATA_DIR: join(dir, 'data') }));
  const key = (await th.accounts.bootstrap())!;
  const principal = th.accounts.authenticate(key)!;
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
  writeFileSync(marker, JSON.stringify(built));
  return built;
}

function buildGit(dir: string, tree: SourceTree): string {
  const repo = join(dir, 'upstream.git');
  if (existsSync(join(repo, 'packed'))) return repo;
  rmSync(dir, { recursive: true, force: true });
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  writeSourceTree(tree, work);
  const run = (args: string[], cwd: string) => {
    const result = spawnSync('git', args, { cwd, env: { ...GIT_ENV, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@x' }, stdio: 'ignore' });
    if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed`);
  };
  run(['init', '-q', '-b', 'main'], work);
  run(['add', '-A'], work);
  run(['commit', '-q', '-m', 'Import'], work);
  run(['clone', '-q', '--bare', work, repo], dir);
  run(['repack', '-adq'], repo);
  writeFileSync(join(repo, 'packed'), '');
  rmSync(work, { recursive: true, force: true, maxRetries: 5 });
  return repo;
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

function statusBytes(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/**
 * Samples the server's resident memory while `work` runs. RssAnon is the process's own memory (heap,
 * buffers); RssFile is LMDB's memory-mapped data file, page cache the kernel can drop at any time.
 */
async function sampleMemory<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; anonBytes: number; fileBytes: number }> {
  let anonBytes = 0;
  let fileBytes = 0;
  const sample = () => {
    anonBytes = Math.max(anonBytes, statusBytes(pid, 'RssAnon'));
    fileBytes = Math.max(fileBytes, statusBytes(pid, 'RssFile'));
  };
  const timer = setInterval(sample, 25);
  try {
    const result = await work();
    sample();
    return { result, anonBytes, fileBytes };
  } finally {
    clearInterval(timer);
  }
}

export async function runCloneBench(files: number, reps: number, workRoot = join(import.meta.dirname, '.work')): Promise<CloneResult> {
  const tree = new SourceTree({ files });
  const base = join(workRoot, `clone-${files}`);
  const ours = await buildOurs(join(base, 'ours'), tree);
  const gitRepo = buildGit(join(base, 'git'), tree);
  const port = await freePort();
  const server = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '..', 'src', 'server.ts')], {
    env: { ...process.env, PORT: String(port), TREEHOUSE_DATA_DIR: join(base, 'ours', 'data'), TREEHOUSE_LOG_LEVEL: 'warn' },
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
    let packBytesOurs = 0;
    let packBytesGit = 0;
    let anon = 0;
    let file = 0;
    for (let i = 0; i < reps; i++) {
      // Alternate, so load from other work on the machine falls on both sides alike.
      const sampled = await sampleMemory(server.pid!, () => timeClone(oursUrl, join(base, 'clone-ours')));
      const a = sampled.result;
      anon = Math.max(anon, sampled.anonBytes);
      file = Math.max(file, sampled.fileBytes);
      oursTimes.push(a.ms);
      packBytesOurs = a.packBytes;
      const b = await timeClone(gitUrl, join(base, 'clone-git'));
      gitTimes.push(b.ms);
      packBytesGit = b.packBytes;
    }
    return {
      files,
      ours: summarise(oursTimes),
      git: summarise(gitTimes),
      oursServerPeakAnonBytes: anon,
      oursServerPeakFileBytes: file,
      oursServerHwmBytes: statusBytes(server.pid!, 'VmHWM'),
      packBytesOurs,
      packBytesGit,
    };
  } finally {
    server.kill('SIGTERM');
    await backend.close();
    rmSync(join(base, 'clone-ours'), { recursive: true, force: true });
    rmSync(join(base, 'clone-git'), { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const files = argument('size', 100_000);
  const reps = argument('reps', 3);
  const result = await runCloneBench(files, reps);
  console.log(JSON.stringify(result, null, 2));
}
