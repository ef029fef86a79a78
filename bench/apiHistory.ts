/**
 * A history written through the API (issue 13, item 2): what the deflate cache makes of objects no
 * pack brought, where every delta is one the server found itself. The realistic `project` history
 * of fixtures/history.ts is replayed into a fresh server process, commit by commit along main's
 * first-parent line: each commit's changes against its first parent (git diff-tree -M) become a
 * batch write (adds, edits, deletes) and API moves (renames), then an API commit with the commit's
 * message and author. Beside the fixture's own changes the replay makes, from a seeded stream, the
 * changes a person makes by hand that git's history shows only as new files: near-copies of a file
 * into a new directory (a line changed, a header added), moves of those copies between directories,
 * and edits of them.
 *
 * Then, once the deflate cache has caught up (every stored object has its form):
 * - clone: `git clone --bare` from the server; the pack as received beside the pack of
 *   `git repack -adf` of that same clone (pack.threads=1), the delta count and deepest chain of
 *   each (`git verify-pack -v`); our pack must pass `index-pack --strict` and the clone `fsck --strict`;
 * - store before the collection: data.mdb (disk blocks, LMDB's pages in use per database);
 * - reads before the collection, on a server started again (caches empty): a listing, log, an old
 *   commit, current files, search, blame, compare and archive, the first call and the median of three more;
 * - the collection: `treehouse gc --grace 0` in a process of its own (issue 13 item 7: cold objects
 *   kept as their forms alone, forms in shelves; README "Garbage collection");
 * - store after it beside git's pack and index (the repository after `git repack -adf`): LMDB's
 *   pages in use, the project's databases apart from `records` (the server's event log, keys and
 *   counters), and the data file, which LMDB never shrinks (its free pages are reused);
 * - the same reads after it, on a server started again; and a clone again, which must bring the
 *   same objects (`git rev-list --objects --all`) and pass `fsck --strict`.
 *
 *   npx tsx bench/apiHistory.ts [--commits=N] [--files=N] [--gc-every=N] [--work=DIR] [--result=FILE] [--keep]
 *
 * --gc-every=N runs the server's collection schedule during the replay (TREEHOUSE_GC_NEW_OBJECTS=N new versions,
 * a grace period of one second), as a server that runs for days collects, so the data file's size
 * shows what the store keeps between collections. The replay's API time is reported too (the
 * writes' latency, which the background search must not raise), and how long the deflate cache
 * took to catch up after the last write.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { HISTORY_DEFAULTS, writeHistoryRepo } from '../fixtures/history.js';
import { mixSeed, mulberry32, sentence, type Rng } from '../fixtures/sourceTree.js';
import { repoRoot, startServerProcess, type ServerProcess } from '../test/support/process.js';
import { api, deflateCatchUp, measureStore, packBytesIn, runGit } from './history.js';
import type { StoreBytes } from './historyReport.js';
import { summarise } from './measure.js';

const GIT_ENV = isolatedGitEnv({ noAutoGc: true });
/** Files per batch of the first commit's import (a request body of a few MB). */
const IMPORT_BATCH_FILES = 1_000;
/** Chances per replayed commit of the hand-made changes (see the header). */
const COPY_CHANCE = 0.04;
const COPY_MOVE_CHANCE = 0.02;
const COPY_EDIT_CHANCE = 0.05;
/** Copies are made of files at least this large (a near-copy of a 100-byte file says little). */
const COPY_SOURCE_BYTES_MIN = 1_000;
const REPLAY_SEED = 0x0a_b1_57;

interface Change {
  status: string;
  path: string;
  /** The new blob, hex (absent for a delete). */
  blob?: string;
  /** A rename's old path. */
  from?: string;
}

interface PackStats {
  bytes: number;
  objects: number;
  deltas: number;
  depthMax: number;
}

/** One read through the API, timed on a server just started: its first call, and the median of the next READ_REPEATS. */
export interface ReadTiming {
  firstMs: number;
  medianMs: number;
}

export interface ApiHistoryResult {
  commits: number;
  files: number;
  replay: { commits: number; requests: number; apiMs: number; wallMs: number; copies: number; copyMoves: number; copyEdits: number; gcEvery: number | null };
  deflateCatchUpMs: number;
  clone: { ours: PackStats; gitRepack: PackStats; ratio: number; fsckClean: boolean; indexPackClean: boolean; afterGc: { bytes: number; sameObjects: boolean; fsckClean: boolean } };
  /** `treehouse gc --grace 0` after the replay: its wall time and what it printed. */
  gc: { ms: number; output: string };
  storeBeforeGc: StoreBytes;
  /** After the collection; `projectBytes` is usedBytes without `records`. */
  store: StoreBytes & { gitStoreBytes: number; ratio: number; projectBytes: number; projectRatio: number };
  reads: Array<{ name: string; before: ReadTiming; after: ReadTiming }>;
}

/** Calls of each read after its first. */
const READ_REPEATS = 3;
/** Current files read one request each. */
const READ_FILES = 100;

function gitSync(args: string[], cwd: string, input?: string): Buffer {
  const result = spawnSync('git', args, { cwd, env: GIT_ENV, input, maxBuffer: 1 << 30 });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.stderr.toString().slice(-500)}`);
  return result.stdout;
}

/** `git diff-tree -r -z --raw` of a commit against its first parent (or of a root commit), with renames. */
function changesOf(repo: string, commit: string, parent: string | null): Change[] {
  const out = gitSync(parent ? ['diff-tree', '-r', '-M', '-z', '--raw', parent, commit] : ['diff-tree', '-r', '--root', '-z', '--raw', '--no-commit-id', commit], repo).toString('utf8');
  const tokens = out.split('\0');
  const changes: Change[] = [];
  for (let at = 0; at < tokens.length; at++) {
    if (!tokens[at].startsWith(':')) continue;
    const [, , , blob, status] = tokens[at].slice(1).split(' ');
    if (status.startsWith('R') || status.startsWith('C')) {
      changes.push({ status: status[0], from: tokens[at + 1], path: tokens[at + 2], blob });
      at += 2;
    } else {
      changes.push({ status, path: tokens[at + 1], ...(status === 'D' ? {} : { blob }) });
      at += 1;
    }
  }
  return changes;
}

/** Blob contents by id, in one `git cat-file --batch`. */
function blobContents(repo: string, blobs: string[]): Map<string, string> {
  const out = new Map<string, string>();
  if (blobs.length === 0) return out;
  const raw = gitSync(['cat-file', '--batch'], repo, blobs.map((blob) => `${blob}\n`).join(''));
  let at = 0;
  for (const blob of blobs) {
    const headerEnd = raw.indexOf(10, at);
    const size = Number(raw.toString('latin1', at, headerEnd).split(' ')[2]);
    out.set(blob, raw.toString('utf8', headerEnd + 1, headerEnd + 1 + size));
    at = headerEnd + 1 + size + 1;
  }
  return out;
}

/** `git verify-pack -v`: objects, deltas and the deepest chain of a pack. */
function packStats(packDir: string): PackStats {
  const packs = readdirSync(packDir).filter((name) => name.endsWith('.pack'));
  if (packs.length !== 1) throw new Error(`${packDir} holds ${packs.length} packs`);
  const lines = gitSync(['verify-pack', '-v', join(packDir, packs[0])], packDir).toString('utf8').split('\n');
  const entries = lines.map((line) => line.trim().split(/\s+/)).filter((fields) => /^[0-9a-f]{40}$/.test(fields[0]));
  const deltas = entries.filter((fields) => fields.length === 7);
  return {
    bytes: packBytesIn(join(packDir, '..', '..')),
    objects: entries.length,
    deltas: deltas.length,
    depthMax: Math.max(0, ...deltas.map((fields) => Number(fields[5]))),
  };
}

/** One line of `text` replaced and a header added: a file copied to start another from. */
function nearCopy(rng: Rng, text: string, label: string): string {
  const lines = text.split('\n');
  lines[Math.floor(rng() * lines.length)] = `// ${sentence(rng)}`;
  return `// ${label}: started from a copy\n${lines.join('\n')}`;
}

/** Runs `treehouse gc` on a data directory, in a process of its own; resolves with its output, rejects when it fails. */
function treehouseGc(dataDir: string): Promise<{ ms: number; output: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'src', 'cli.ts'), 'gc', '--grace', '0'], {
      cwd: repoRoot,
      env: { ...process.env, TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => (code === 0 ? resolve({ ms: performance.now() - started, output: output.trim() }) : reject(new Error(`treehouse gc exited ${code}: ${output}`))));
  });
}

interface ReadPlan {
  projectId: string;
  /** A commit about half way down main's history. */
  oldCommit: string;
  /** Paths of the working tree, for READ_FILES reads. */
  paths: string[];
  /** The path written most often, for blame. */
  busiestPath: string;
}

/** GETs `path` and reads the whole answer; rejects on an error status. */
async function timedGet(server: ServerProcess, key: string, path: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } });
  await response.arrayBuffer();
  if (response.status >= 400) throw new Error(`GET ${path}: ${response.status}`);
  return performance.now() - started;
}

/** The reads of the header, each timed on `server` (just started: its caches are empty for the first call). */
async function timeReads(server: ServerProcess, key: string, plan: ReadPlan): Promise<Array<{ name: string; timing: ReadTiming }>> {
  const base = `/projects/${plan.projectId}`;
  const reads: Array<{ name: string; run: () => Promise<number> }> = [
    { name: 'list the working tree (GET files)', run: () => timedGet(server, key, `${base}/files?branch=main`) },
    { name: 'log of 200', run: () => timedGet(server, key, `${base}/git/log?branch=main&limit=200`) },
    { name: 'an old commit, content=false (half way down main)', run: () => timedGet(server, key, `${base}/git/commits/${plan.oldCommit}?content=false`) },
    {
      name: `${READ_FILES} current files, a request each (total)`,
      run: async () => {
        let total = 0;
        for (const path of plan.paths) total += await timedGet(server, key, `${base}/files/${path.split('/').map(encodeURIComponent).join('/')}?branch=main`);
        return total;
      },
    },
    { name: 'search the working tree (a string no file holds: every file read)', run: () => timedGet(server, key, `${base}/search?q=${encodeURIComponent('no file holds this')}&limit=1000`) },
    { name: 'blame of the file written most often', run: () => timedGet(server, key, `${base}/git/blame/${plan.busiestPath.split('/').map(encodeURIComponent).join('/')}?ref=main`) },
    { name: 'compare the old commit with main, no patch', run: () => timedGet(server, key, `${base}/git/compare?base=${plan.oldCommit}&head=main&patch=false`) },
    { name: 'archive of main (tar.gz)', run: () => timedGet(server, key, `${base}/git/archive?ref=main&format=tar.gz`) },
  ];
  const out: Array<{ name: string; timing: ReadTiming }> = [];
  for (const read of reads) {
    const firstMs = await read.run();
    const rest: number[] = [];
    for (let i = 0; i < READ_REPEATS; i++) rest.push(await read.run());
    out.push({ name: read.name, timing: { firstMs, medianMs: summarise(rest).medianMs } });
  }
  return out;
}

async function startOn(dataDir: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  return startServerProcess({ TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_RATE_PER_SECOND: '0', TREEHOUSE_LOG_LEVEL: 'warn', ...env });
}

async function stop(server: ServerProcess): Promise<void> {
  if (server.child.exitCode !== null) return;
  server.child.kill('SIGTERM');
  await server.exited;
}

/** The ids `git rev-list --objects --all` lists in a repository, sorted. */
function reachableIds(repo: string): string[] {
  return gitSync(['rev-list', '--objects', '--all'], repo)
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(0, 40))
    .sort();
}

export async function runApiHistoryBench(options: { commits: number; files: number; work: string; gcEvery?: number; progress?: (text: string) => void }): Promise<ApiHistoryResult> {
  const progress = options.progress ?? ((text: string) => process.stderr.write(`[api-history] ${text}\n`));
  rmSync(options.work, { recursive: true, force: true });
  mkdirSync(options.work, { recursive: true });
  const repo = join(options.work, 'upstream.git');
  const fixture = await writeHistoryRepo(repo, { kind: 'project', commits: options.commits, files: options.files });
  progress(`fixture: ${fixture.commits} commits, ${fixture.files} files`);
  const log = gitSync(['log', '--first-parent', '--reverse', '--format=%H%x00%P%x00%an%x00%ae%x00%B%x01', 'main'], repo).toString('utf8');
  const commits = log
    .split('\x01')
    .map((record) => record.replace(/^\n/, ''))
    .filter((record) => record.length > 0)
    .map((record) => {
      const [oid, parents, name, email, message] = record.split('\0');
      return { oid, parent: parents.split(' ')[0] || null, name, email, message: message.trim() || 'replayed' };
    });

  const dataDir = join(options.work, 'data');
  const gcEvery = options.gcEvery && options.gcEvery > 0 ? options.gcEvery : null;
  let server: ServerProcess = await startOn(dataDir, gcEvery ? { TREEHOUSE_GC_NEW_OBJECTS: String(gcEvery), TREEHOUSE_GC_GRACE_SECONDS: '1' } : {});
  const key = /API key for team default: (\S+)/.exec(server.output())?.[1];
  if (!key) throw new Error('the server printed no API key');
  const rng = mulberry32(mixSeed(REPLAY_SEED, options.commits));
  const counts = { requests: 0, apiMs: 0, copies: 0, copyMoves: 0, copyEdits: 0 };
  const call = async (method: string, path: string, body?: unknown) => {
    const started = performance.now();
    const answer = await api(server, key, method, path, body);
    counts.apiMs += performance.now() - started;
    counts.requests++;
    return answer;
  };
  try {
    const created = await call('POST', '/projects', { title: 'API history' });
    const projectId = created.project.id as string;
    const files = `/projects/${projectId}/files`;
    // The fixture's paths and blobs as replayed so far, and the copies (path → content) made beside them.
    const blobAt = new Map<string, string>();
    const copies = new Map<string, string>();
    const writesOf = new Map<string, number>();
    const commitOids: string[] = [];
    let copyDirs = 0;
    const replayStarted = performance.now();
    for (const [index, commit] of commits.entries()) {
      const changes = changesOf(repo, commit.oid, commit.parent);
      const contents = blobContents(repo, [...new Set(changes.flatMap((change) => (change.blob && change.status !== 'D' ? [change.blob] : [])))]);
      const writes: Array<{ path: string; content: string }> = [];
      const deletes: string[] = [];
      for (const change of changes) {
        if (change.status === 'D') {
          deletes.push(change.path);
          blobAt.delete(change.path);
          continue;
        }
        if (change.status === 'R') {
          await call('POST', `${files}/move`, { from: change.from, to: change.path, branch: 'main' });
          const before = blobAt.get(change.from!);
          blobAt.delete(change.from!);
          blobAt.set(change.path, change.blob!);
          if (before !== change.blob) writes.push({ path: change.path, content: contents.get(change.blob!)! });
          continue;
        }
        blobAt.set(change.path, change.blob!);
        writes.push({ path: change.path, content: contents.get(change.blob!)! });
      }
      // The hand-made changes, on copies only (the fixture's later commits never meet them).
      if (index > 0 && rng() < COPY_CHANCE) {
        const candidates = [...blobAt.keys()].filter((path) => !writes.some((write) => write.path === path) && !deletes.includes(path));
        const source = candidates[Math.floor(rng() * candidates.length)];
        const text = source && blobContents(repo, [blobAt.get(source)!]).get(blobAt.get(source)!)!;
        if (text && text.length >= COPY_SOURCE_BYTES_MIN) {
          const path = `copies/c${copyDirs++}/${source.split('/').pop()}`;
          const content = nearCopy(rng, text, source);
          copies.set(path, content);
          writes.push({ path, content });
          counts.copies++;
        }
      }
      if (copies.size > 0 && rng() < COPY_MOVE_CHANCE) {
        const from = [...copies.keys()][Math.floor(rng() * copies.size)];
        if (!writes.some((write) => write.path === from)) {
          const to = `copies/moved${copyDirs++}/${from.split('/').pop()}`;
          await call('POST', `${files}/move`, { from, to, branch: 'main' });
          copies.set(to, copies.get(from)!);
          copies.delete(from);
          counts.copyMoves++;
        }
      }
      if (copies.size > 0 && rng() < COPY_EDIT_CHANCE) {
        const path = [...copies.keys()][Math.floor(rng() * copies.size)];
        if (!writes.some((write) => write.path === path)) {
          const lines = copies.get(path)!.split('\n');
          lines.splice(Math.floor(rng() * lines.length), 0, `// ${sentence(rng)}`);
          copies.set(path, lines.join('\n'));
          writes.push({ path, content: copies.get(path)! });
          counts.copyEdits++;
        }
      }
      for (let at = 0; at < Math.max(writes.length, deletes.length > 0 ? 1 : 0); at += IMPORT_BATCH_FILES) {
        await call('POST', `${files}/batch`, { branch: 'main', files: writes.slice(at, at + IMPORT_BATCH_FILES), ...(at === 0 && deletes.length > 0 ? { deletes } : {}) });
      }
      if (index > 0) for (const write of writes) writesOf.set(write.path, (writesOf.get(write.path) ?? 0) + 1);
      const made = await call('POST', `/projects/${projectId}/git/commit`, { branch: 'main', message: commit.message, author: { name: commit.name, email: commit.email } });
      commitOids.push(made.commit.oid as string);
      if ((index + 1) % 500 === 0) progress(`replayed ${index + 1}/${commits.length} commits`);
    }
    const wallMs = performance.now() - replayStarted;
    progress(`replayed ${commits.length} commits in ${(wallMs / 1000).toFixed(1)} s (${counts.requests} requests, ${(counts.apiMs / counts.requests).toFixed(2)} ms each)`);
    const deflateCatchUpMs = await deflateCatchUp(dataDir);
    progress(`deflate cache caught up ${(deflateCatchUpMs / 1000).toFixed(1)} s after the last write`);

    const clone = join(options.work, 'clone.git');
    const cloneUrl = (served: ServerProcess) => `${served.url.replace('http://', `http://git:${key}@`)}/git/${projectId}.git`;
    await runGit(['clone', '-q', '--bare', cloneUrl(server), clone]);
    const ours = packStats(join(clone, 'objects', 'pack'));
    const clonedIds = reachableIds(clone);
    let fsckClean = false;
    let indexPackClean = false;
    try {
      await runGit(['fsck', '--strict', '--no-dangling'], { cwd: clone });
      fsckClean = true;
      const pack = readdirSync(join(clone, 'objects', 'pack')).find((name) => name.endsWith('.pack'))!;
      await runGit(['index-pack', '--strict', '-o', join(options.work, 'check.idx'), join(clone, 'objects', 'pack', pack)], { cwd: clone });
      indexPackClean = true;
    } catch (error) {
      progress(`strict checks failed: ${(error as Error).message}`);
    }
    const repacked = join(options.work, 'repacked.git');
    cpSync(clone, repacked, { recursive: true });
    await runGit(['-c', 'pack.threads=1', 'repack', '-adfq'], { cwd: repacked });
    const gitRepack = packStats(join(repacked, 'objects', 'pack'));
    const gitStoreBytes = packBytesIn(repacked, ['.pack', '.idx']);
    progress(`clone pack ${(ours.bytes / 1024 ** 2).toFixed(2)} MB (${ours.deltas} deltas of ${ours.objects}), git repack -adf ${(gitRepack.bytes / 1024 ** 2).toFixed(2)} MB (${gitRepack.deltas} deltas): ${(ours.bytes / gitRepack.bytes).toFixed(3)}x`);

    await stop(server);
    const describe = (store: StoreBytes) =>
      `data.mdb ${megabytes(store.fileBytes)} on disk, ${megabytes(store.usedBytes)} in use (${Object.entries(store.usedBytesByDb).map(([name, bytes]) => `${name} ${megabytes(bytes)}`).join(', ')})`;
    const storeBeforeGc = measureStore(dataDir);
    progress(`store before the collection: ${describe(storeBeforeGc)}`);

    // Reads on a server just started, before and after the collection.
    const busiestPath = [...writesOf].filter(([path]) => blobAt.has(path)).sort((a, b) => b[1] - a[1])[0][0];
    const paths = [...blobAt.keys()].sort();
    const plan: ReadPlan = {
      projectId,
      oldCommit: commitOids[Math.floor(commitOids.length / 2)],
      paths: Array.from({ length: Math.min(READ_FILES, paths.length) }, (_, i) => paths[Math.floor((i * paths.length) / Math.min(READ_FILES, paths.length))]),
      busiestPath,
    };
    server = await startOn(dataDir);
    const readsBefore = await timeReads(server, key, plan);
    await stop(server);

    const gc = await treehouseGc(dataDir);
    progress(`treehouse gc --grace 0 in ${(gc.ms / 1000).toFixed(1)} s: ${gc.output.split('\n').slice(-2).join(' / ')}`);
    const stored = measureStore(dataDir);
    const projectBytes = stored.usedBytes - (stored.usedBytesByDb.records ?? 0);
    progress(`store after the collection: ${describe(stored)}; the project's ${megabytes(projectBytes)}, git ${megabytes(gitStoreBytes)}: ${(projectBytes / gitStoreBytes).toFixed(2)}x (${(stored.usedBytes / gitStoreBytes).toFixed(2)}x with records)`);

    server = await startOn(dataDir);
    const readsAfter = await timeReads(server, key, plan);
    const cloneAfter = join(options.work, 'clone-after-gc.git');
    await runGit(['clone', '-q', '--bare', cloneUrl(server), cloneAfter]);
    const afterGc = { bytes: packBytesIn(cloneAfter), sameObjects: false, fsckClean: false };
    afterGc.sameObjects = JSON.stringify(reachableIds(cloneAfter)) === JSON.stringify(clonedIds);
    try {
      await runGit(['fsck', '--strict', '--no-dangling'], { cwd: cloneAfter });
      afterGc.fsckClean = true;
    } catch (error) {
      progress(`fsck of the clone after the collection failed: ${(error as Error).message}`);
    }
    await stop(server);
    progress(`clone after the collection ${megabytes(afterGc.bytes)} (before ${megabytes(ours.bytes)}), same objects: ${afterGc.sameObjects}, fsck clean: ${afterGc.fsckClean}`);
    const reads = readsBefore.map(({ name, timing }, i) => ({ name, before: timing, after: readsAfter[i].timing }));
    for (const read of reads) progress(`${read.name}: before ${read.before.firstMs.toFixed(1)} ms first, ${read.before.medianMs.toFixed(1)} ms then; after ${read.after.firstMs.toFixed(1)} ms, ${read.after.medianMs.toFixed(1)} ms`);
    return {
      commits: commits.length,
      files: fixture.files,
      replay: { commits: commits.length, requests: counts.requests, apiMs: counts.apiMs, wallMs, copies: counts.copies, copyMoves: counts.copyMoves, copyEdits: counts.copyEdits, gcEvery },
      deflateCatchUpMs,
      clone: { ours, gitRepack, ratio: ours.bytes / gitRepack.bytes, fsckClean, indexPackClean, afterGc },
      gc,
      storeBeforeGc,
      store: { ...stored, gitStoreBytes, ratio: stored.usedBytes / gitStoreBytes, projectBytes, projectRatio: projectBytes / gitStoreBytes },
      reads,
    };
  } finally {
    await stop(server);
  }
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const value = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const work = value('work') ?? join(import.meta.dirname, '.work', 'api-history');
  const result = await runApiHistoryBench({
    commits: Number(value('commits') ?? HISTORY_DEFAULTS.project.commits),
    files: Number(value('files') ?? HISTORY_DEFAULTS.project.files),
    gcEvery: Number(value('gc-every') ?? 0),
    work,
  });
  const resultPath = value('result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result, null, 2));
  console.log(JSON.stringify(result, null, 2));
  if (!process.argv.includes('--keep') && !value('work')) rmSync(work, { recursive: true, force: true });
}
