/**
 * search() over the asynchronous store: files read a batch at a time (sizes first, files over
 * 1 MiB never read), the answer still git grep's order and columns (checked against git by the
 * search interop test; here against a plain scan of the same files), the limit, the path filter,
 * and a missing blob reported only when the walk gets to it. Each test runs twice: on the request
 * thread, and with the batches searched on worker threads (src/service/searchThreads.ts, as the
 * server runs searches), which must answer the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCommit } from '../../../src/git/commit.js';
import { hashObject, oidToHex, type Oid } from '../../../src/git/oid.js';
import { branchRef } from '../../../src/git/refname.js';
import { encodeTree, MODE_TREE, type TreeEntry, type TreeMode } from '../../../src/git/tree.js';
import { DEFAULT_REPO_LIMITS, type Repo, type WriteTx } from '../../../src/repo/repo.js';
import { search, SEARCH_FILE_BYTES_MAX, type SearchMatch } from '../../../src/repo/search.js';
import type { AsyncStore } from '../../../src/store/asyncTypes.js';
import { SearchThreadPool } from '../../../src/service/searchThreads.js';
import { openTestStore } from '../../support/store.js';

const opened = openTestStore();
const pool = new SearchThreadPool();
afterAll(async () => {
  await pool.close();
  await opened.close();
});
let nextProject = 1;
/** Whether the repos repoWith() makes search on the pool's threads. */
let onThreads = false;

interface File {
  path: string;
  body: Buffer;
  mode?: TreeMode;
  /** Not stored: the tree names a blob the store lacks. */
  missing?: boolean;
}

/** Stores the files as one commit on main; returns the repo, its store counting reads. */
async function repoWith(files: File[]): Promise<{ repo: Repo; reads: () => number }> {
  let reads = 0;
  const base = opened.store.async;
  const counting: AsyncStore = Object.create(base);
  counting.read = (action) => {
    reads++;
    return base.read(action);
  };
  const repo: Repo = { store: counting, project: nextProject++, limits: { ...DEFAULT_REPO_LIMITS }, ...(onThreads ? { searchThreads: pool } : {}) };
  await base.write(async (store) => {
    const tx = store.project(repo.project);
    const person = { name: 'T', email: 't@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
    const commit = tx.putObject('commit', encodeCommit({ tree: putFiles(tx, files, ''), parents: [], author: person, committer: person, extraHeaders: [], message: 'files\n' }));
    await tx.casRef(branchRef('main'), null, commit);
  });
  return { repo, reads: () => reads };
}

function putFiles(tx: WriteTx, files: File[], dir: string): Oid {
  const entries: TreeEntry[] = [];
  const subdirs = new Map<string, File[]>();
  for (const file of files) {
    const rest = dir === '' ? file.path : file.path.slice(dir.length + 1);
    const slash = rest.indexOf('/');
    if (slash >= 0) {
      const name = rest.slice(0, slash);
      subdirs.set(name, [...(subdirs.get(name) ?? []), file]);
    } else {
      entries.push({ name: rest, mode: file.mode ?? '100644', oid: file.missing ? hashObject('blob', file.body) : tx.putObject('blob', file.body) });
    }
  }
  for (const [name, below] of subdirs) entries.push({ name, mode: MODE_TREE, oid: putFiles(tx, below, dir === '' ? name : `${dir}/${name}`) });
  return tx.putObject('tree', encodeTree(entries));
}

/** What search should answer: regular files in path order, none binary or over 1 MiB, every line with the needle. */
function plainScan(files: File[], needle: string, fold = false): SearchMatch[] {
  const out: SearchMatch[] = [];
  const sorted = [...files].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  for (const file of sorted) {
    const mode = file.mode ?? '100644';
    if (mode !== '100644' && mode !== '100755') continue;
    if (file.body.length > SEARCH_FILE_BYTES_MAX || file.body.subarray(0, 8000).includes(0)) continue;
    const lines = file.body.toString('utf8').split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    lines.forEach((text, i) => {
      const at = (fold ? text.toLowerCase() : text).indexOf(fold ? needle.toLowerCase() : needle);
      if (at >= 0) out.push({ path: file.path, line: i + 1, column: at + 1, text });
    });
  }
  return out;
}

function manyFiles(): File[] {
  const files: File[] = [];
  for (let d = 0; d < 24; d++) {
    for (let f = 0; f < 30; f++) {
      const lines = Array.from({ length: 5 + ((d + f) % 7) }, (_, i) => (i === (d * f) % 9 && (d + f) % 4 === 0 ? `${'  '.repeat(i)}let needle${i} = ${d};` : `line ${i} of ${d}/${f}`));
      files.push({ path: `src/d${String(d).padStart(2, '0')}/f${f}.ts`, body: Buffer.from(lines.join('\n') + '\n'), mode: f === 3 ? '100755' : '100644' });
    }
  }
  // Large files, so that a batch of blobs is cut by bytes, not count; one over the limit.
  for (let i = 0; i < 12; i++) files.push({ path: `big/b${i}.txt`, body: Buffer.concat([Buffer.alloc(900 * 1024, 'filler line\n'), Buffer.from(`the needle ${i}\n`)]) });
  files.push({ path: 'big/over.txt', body: Buffer.concat([Buffer.from('needle first\n'), Buffer.alloc(SEARCH_FILE_BYTES_MAX, 'x')]) });
  files.push({ path: 'bin/data.bin', body: Buffer.from('needle\0binary\n') });
  files.push({ path: 'link', body: Buffer.from('needle'), mode: '120000' });
  files.push({ path: 'docs/é-accent.md', body: Buffer.from('héllo wörld needle\r\nno\nlast needle without newline') });
  return files;
}

for (const threads of [false, true]) {
  describe(`search over batched reads${threads ? ', on worker threads' : ''}`, () => {
    beforeAll(async () => {
      onThreads = threads;
      // The pool's threads start on the first search that asks; until they are ready searches run here.
      while (threads && !pool.available()) await new Promise((resolve) => setTimeout(resolve, 20));
    });

    it("lists git grep's lines in path order, reading files a batch at a time", async () => {
      const files = manyFiles();
      const { repo, reads } = await repoWith(files);
      const expected = plainScan(files, 'needle');
      expect(expected.length).toBeGreaterThan(100);
      const result = await search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 1000 });
      expect(result).toEqual({ matches: expected, truncated: false });
      // 750 files in 29 directories; reads by the batch, not by the file or the directory.
      expect(reads()).toBeLessThan(40);
      const folded = await search(repo, { q: 'NEEDLE', regex: false, case: false, ref: 'main', limit: 1000 });
      expect(folded).toEqual({ matches: plainScan(files, 'NEEDLE', true), truncated: false });
    });

    it('stops at the limit and says so', async () => {
      const files = manyFiles();
      const { repo } = await repoWith(files);
      const expected = plainScan(files, 'needle');
      for (const limit of [1, 7, expected.length - 1]) {
        expect(await search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit })).toEqual({ matches: expected.slice(0, limit), truncated: true });
      }
      expect(await search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit: expected.length })).toEqual({ matches: expected, truncated: false });
    });

    it('searches only the paths asked for', async () => {
      const files = manyFiles();
      const { repo } = await repoWith(files);
      const paths = ['src/d03', 'src/d1', 'big/b4.txt', 'docs/'];
      const kept = files.filter((file) => ['src/d03/', 'big/b4.txt', 'docs/'].some((prefix) => file.path === prefix || file.path.startsWith(prefix)));
      const result = await search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 1000, paths });
      expect(result).toEqual({ matches: plainScan(kept, 'needle'), truncated: false });
      expect(result.matches.length).toBeGreaterThan(2);
    });

    it('keeps path order and the limit over thousands of files, and reports a blob the store lacks far into them', async () => {
      const files: File[] = Array.from({ length: 3500 }, (_, i) => ({
        path: `many/${String(i).padStart(5, '0')}.txt`,
        body: Buffer.from(i % 50 === 7 ? `x\nthe needle ${i}\n` : `nothing ${i}\n`),
      }));
      const { repo } = await repoWith(files);
      const expected = plainScan(files, 'needle');
      expect(expected.length).toBe(70);
      expect(await search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 1000 })).toEqual({ matches: expected, truncated: false });
      expect(await search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 50 })).toEqual({ matches: expected.slice(0, 50), truncated: true });
      const holed = files.map((file, i) => (i === 3001 ? { ...file, missing: true } : file));
      const { repo: holedRepo } = await repoWith(holed);
      // The 60 matches before it are answered when they are enough; one more reaches the hole.
      expect(await search(holedRepo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 59 })).toEqual({ matches: expected.slice(0, 59), truncated: true });
      await expect(search(holedRepo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 61 })).rejects.toThrow(`blob ${oidToHex(hashObject('blob', holed[3001].body))} is missing`);
    });

    it('reports a blob the store lacks only when the walk gets to it', async () => {
      const missing: File = { path: 'm/missing.txt', body: Buffer.from('not stored needle\n'), missing: true };
      const files: File[] = [
        { path: 'a.txt', body: Buffer.from('needle one\n') },
        { path: 'b.txt', body: Buffer.from('needle two\n') },
        missing,
        { path: 'z.txt', body: Buffer.from('needle three\n') },
      ];
      const { repo } = await repoWith(files);
      const found = plainScan(files.filter((file) => file !== missing), 'needle');
      expect(await search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 1 })).toEqual({ matches: found.slice(0, 1), truncated: true });
      await expect(search(repo, { q: 'needle', regex: false, case: true, ref: 'main', limit: 2 })).rejects.toThrow(`blob ${oidToHex(hashObject('blob', missing.body))} is missing`);
    });
  });
}
