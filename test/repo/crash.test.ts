/**
 * Durability: a child process (test/support/crashWriter.ts) writes batches and commits to an
 * LmdbStore and prints a line after each one is acknowledged; it is killed with SIGKILL at an
 * arbitrary moment. Reopened, the store must hold every acknowledged write and commit, show no
 * batch half-applied, and export to a repository `git fsck --strict` accepts. Three rounds run on
 * the same store, each child starting where the killed one left it.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportToBareRepo } from '../../src/repo/wire/exportToBareRepo.js';
import { listFiles } from '../../src/repo/listFiles.js';
import { log } from '../../src/repo/log.js';
import { DEFAULT_REPO_LIMITS, type Repo } from '../../src/repo/repo.js';
import { showCommit } from '../../src/repo/showCommit.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import {
  CRASH_PROJECT,
  SHARED_FILES,
  crashToken,
  ownFileContent,
  ownFileCount,
  parseCrashToken,
} from '../support/crashBatch.js';
import { git, initBareRepo, scratchDir } from '../support/git.js';

const repoRoot = join(import.meta.dirname, '..', '..');
const writerScript = join(repoRoot, 'test', 'support', 'crashWriter.ts');
const storeDir = scratchDir('treehouse-crash-');
afterAll(() => storeDir.remove());

/** How long each round's child writes before it is killed, counted from its "ready" line. */
const KILL_AFTER_MS = [1000, 1500, 2000];
const READY_TIMEOUT_MS = 20_000;

interface Acknowledged {
  writes: string[];
  commits: Array<{ token: string; oid: string }>;
}

/** Runs one child until it is killed, and returns what it acknowledged (complete lines only). */
async function runAndKill(round: number, killAfterMs: number): Promise<Acknowledged> {
  const child = spawn(process.execPath, ['--import', 'tsx', writerScript, storeDir.path, String(round)], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const acknowledgedWrites = () => stdout.split('\n').filter((line) => line.startsWith('write ')).length;
  const started = Date.now();
  let readyAt: number | null = null;
  while (readyAt === null || Date.now() - readyAt < killAfterMs || acknowledgedWrites() === 0) {
    if (child.exitCode !== null) throw new Error(`writer exited early (${child.exitCode}):\n${stderr}`);
    if (readyAt === null && stdout.startsWith('ready\n')) readyAt = Date.now();
    if (readyAt === null && Date.now() - started > READY_TIMEOUT_MS) throw new Error(`writer never became ready:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  child.kill('SIGKILL');
  expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
  // Only lines that were finished before the kill count as acknowledged.
  const lines = stdout.slice(0, stdout.lastIndexOf('\n') + 1).split('\n').filter(Boolean);
  const acknowledged: Acknowledged = { writes: [], commits: [] };
  for (const line of lines) {
    const [kind, token, oid] = line.split(' ');
    if (kind === 'write') acknowledged.writes.push(token);
    else if (kind === 'commit') acknowledged.commits.push({ token, oid });
  }
  return acknowledged;
}

async function contentsUnder(repo: Repo, prefix: string): Promise<Map<string, string>> {
  return new Map((await listFiles(repo, { branch: 'main', prefix, content: true })).map((file) => [file.path, file.content ?? '']));
}

/** Every batch under batches/ is whole: all its files, each with its own content. Returns the tokens seen. */
function expectWholeBatches(files: Map<string, string>): Set<string> {
  const byToken = new Map<string, string[]>();
  for (const path of files.keys()) {
    const token = path.split('/')[1];
    byToken.set(token, [...(byToken.get(token) ?? []), path]);
  }
  for (const [token, paths] of byToken) {
    const { index } = parseCrashToken(token);
    expect(paths.length, `files of batch ${token}`).toBe(ownFileCount(index));
    for (let file = 0; file < ownFileCount(index); file++) {
      expect(files.get(`batches/${token}/f${String(file).padStart(3, '0')}.txt`)).toBe(ownFileContent(token, file));
    }
  }
  return new Set(byToken.keys());
}

describe('durability across SIGKILL', () => {
  it('keeps every acknowledged write and commit, whole, and exports a repository git accepts', async () => {
    const acknowledgedWrites: string[] = [];
    const acknowledgedCommits: Array<{ token: string; oid: string; writesBefore: string[] }> = [];
    for (let round = 0; round < KILL_AFTER_MS.length; round++) {
      const acknowledged = await runAndKill(round, KILL_AFTER_MS[round]);
      expect(acknowledged.writes.length).toBeGreaterThan(0);
      acknowledgedWrites.push(...acknowledged.writes);
      for (const made of acknowledged.commits) {
        const upTo = acknowledgedWrites.indexOf(made.token);
        acknowledgedCommits.push({ ...made, writesBefore: acknowledgedWrites.slice(0, upTo + 1) });
      }

      const store = new LmdbStore({ path: storeDir.path });
      try {
        const repo: Repo = { store: store.async, project: CRASH_PROJECT, limits: { ...DEFAULT_REPO_LIMITS } };

        // Every acknowledged batch is there, and no batch is there in part.
        const batches = expectWholeBatches(await contentsUnder(repo, 'batches/'));
        for (const token of acknowledgedWrites) expect(batches.has(token), `batch ${token}`).toBe(true);
        // At most one batch past the last acknowledged one landed (the kill came before its line).
        const lastIndex = parseCrashToken(acknowledged.writes[acknowledged.writes.length - 1]).index;
        const landed = [...batches].filter((token) => parseCrashToken(token).round === round);
        expect(landed.length - acknowledged.writes.length).toBeLessThanOrEqual(1);

        // The shared files all hold one batch's token: the last acknowledged one or the one after it.
        const shared = await contentsUnder(repo, 'shared/');
        expect(shared.size).toBe(SHARED_FILES);
        const tokens = new Set(shared.values());
        expect(tokens.size, `shared files disagree: ${[...tokens].join(', ')}`).toBe(1);
        expect([crashToken(round, lastIndex), crashToken(round, lastIndex + 1)]).toContain([...tokens][0]);

        // Every acknowledged commit is on main's history, which is a line, and holds the batches before it.
        const history = (await log(repo, { branch: 'main', limit: 1000 })).commits;
        history.forEach((entry, index) => {
          expect(entry.parent_oids).toEqual(index === history.length - 1 ? [] : [history[index + 1].oid]);
        });
        const onHistory = new Set(history.map((entry) => entry.oid));
        for (const made of acknowledgedCommits) expect(onHistory.has(made.oid), `commit after ${made.token}`).toBe(true);
        // Batches are only ever added, so the newest acknowledged commit holding them all is enough to read.
        const newest = acknowledgedCommits[acknowledgedCommits.length - 1];
        if (newest) {
          const committed = new Set((await showCommit(repo, { oid: newest.oid, content: false })).files.map((file) => file.path));
          for (const token of newest.writesBefore) expect(committed.has(`batches/${token}/f000.txt`), `${token} in ${newest.oid}`).toBe(true);
        }

        // After the last kill, the real git finds nothing wrong with anything the store holds
        // (objects are never deleted, so this covers every round).
        if (round === KILL_AFTER_MS.length - 1) {
          const bare = scratchDir('treehouse-crash-export-');
          try {
            initBareRepo(bare.path);
            await exportToBareRepo(repo, bare.path);
            git(['fsck', '--strict', '--no-dangling', '--no-progress'], { cwd: bare.path });
            expect(git(['rev-parse', 'main'], { cwd: bare.path }).trim()).toBe(history[0].oid);
          } finally {
            bare.remove();
          }
        }
      } finally {
        await store.close();
      }
    }
  });
});
