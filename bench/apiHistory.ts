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
 * - store: data.mdb (disk blocks, LMDB's pages in use per database) beside git's pack and index.
 *
 *   npx tsx bench/apiHistory.ts [--commits=N] [--files=N] [--work=DIR] [--result=FILE] [--keep]
 *
 * The replay's API time is reported too (the writes' latency, which the background search must not
 * raise), and how long the deflate cache took to catch up after the last write.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { HISTORY_DEFAULTS, writeHistoryRepo } from '../fixtures/history.js';
import { mixSeed, mulberry32, sentence, type Rng } from '../fixtures/sourceTree.js';
import { startServerProcess, type ServerProcess } from '../test/support/process.js';
import { api, deflateCatchUp, measureStore, packBytesIn, runGit } from './history.js';
import type { StoreBytes } from './historyReport.js';

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

export interface ApiHistoryResult {
  commits: number;
  files: number;
  replay: { commits: number; requests: number; apiMs: number; wallMs: number; copies: number; copyMoves: number; copyEdits: number };
  deflateCatchUpMs: number;
  clone: { ours: PackStats; gitRepack: PackStats; ratio: number; fsckClean: boolean; indexPackClean: boolean };
  store: StoreBytes & { gitStoreBytes: number; ratio: number };
}

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

export async function runApiHistoryBench(options: { commits: number; files: number; work: string; progress?: (text: string) => void }): Promise<ApiHistoryResult> {
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
  const server: ServerProcess = await startServerProcess({ TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_RATE_PER_SECOND: '0', TREEHOUSE_LOG_LEVEL: 'warn' });
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
      await call('POST', `/projects/${projectId}/git/commit`, { branch: 'main', message: commit.message, author: { name: commit.name, email: commit.email } });
      if ((index + 1) % 500 === 0) progress(`replayed ${index + 1}/${commits.length} commits`);
    }
    const wallMs = performance.now() - replayStarted;
    progress(`replayed ${commits.length} commits in ${(wallMs / 1000).toFixed(1)} s (${counts.requests} requests, ${(counts.apiMs / counts.requests).toFixed(2)} ms each)`);
    const deflateCatchUpMs = await deflateCatchUp(dataDir);
    progress(`deflate cache caught up ${(deflateCatchUpMs / 1000).toFixed(1)} s after the last write`);

    const clone = join(options.work, 'clone.git');
    const url = `${server.url.replace('http://', `http://git:${key}@`)}/git/${projectId}.git`;
    await runGit(['clone', '-q', '--bare', url, clone]);
    const ours = packStats(join(clone, 'objects', 'pack'));
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

    server.child.kill('SIGTERM');
    await server.exited;
    const store = measureStore(dataDir);
    progress(`store: data.mdb ${(store.usedBytes / 1024 ** 2).toFixed(1)} MB in use (${Object.entries(store.usedBytesByDb).map(([name, bytes]) => `${name} ${(bytes / 1024 ** 2).toFixed(1)}`).join(', ')}), git ${(gitStoreBytes / 1024 ** 2).toFixed(1)} MB: ${(store.usedBytes / gitStoreBytes).toFixed(2)}x`);
    return {
      commits: commits.length,
      files: fixture.files,
      replay: { commits: commits.length, requests: counts.requests, apiMs: counts.apiMs, wallMs, copies: counts.copies, copyMoves: counts.copyMoves, copyEdits: counts.copyEdits },
      deflateCatchUpMs,
      clone: { ours, gitRepack, ratio: ours.bytes / gitRepack.bytes, fsckClean, indexPackClean },
      store: { ...store, gitStoreBytes, ratio: store.usedBytes / gitStoreBytes },
    };
  } finally {
    if (server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  }
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const value = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const work = value('work') ?? join(import.meta.dirname, '.work', 'api-history');
  const result = await runApiHistoryBench({
    commits: Number(value('commits') ?? HISTORY_DEFAULTS.project.commits),
    files: Number(value('files') ?? HISTORY_DEFAULTS.project.files),
    work,
  });
  const resultPath = value('result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result, null, 2));
  console.log(JSON.stringify(result, null, 2));
  if (!process.argv.includes('--keep') && !value('work')) rmSync(work, { recursive: true, force: true });
}
