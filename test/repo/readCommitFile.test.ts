import { afterAll, describe, expect, it } from 'vitest';
import { commit } from '../../src/repo/commit.js';
import { readBlobs } from '../../src/repo/readBlobs.js';
import { readCommitFile } from '../../src/repo/readCommitFile.js';
import { workingTreeFiles } from '../../src/repo/worktree/workingTreeFiles.js';
import { writeFiles } from '../../src/repo/writeFiles.js';
import { newTestRepo, openTestStore, testPeople, text } from '../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());

describe('readCommitFile', () => {
  it("reads paths of the branch's head commit, never its working tree", async () => {
    const repo = await newTestRepo(opened.store, [text('index.html', 'v1'), text('docs/guide.md', 'guide'), { path: 'run.sh', bytes: Buffer.from('#!/bin/sh\n'), mode: '100755' }]);
    const index = await readCommitFile(repo, { branch: 'main', path: 'index.html' });
    expect(index).toMatchObject({ kind: 'file', size: 2 });
    expect(index.kind === 'file' && index.body?.toString()).toBe('v1');
    expect((await readCommitFile(repo, { branch: 'main', path: 'run.sh' })).kind).toBe('file');
    expect(await readCommitFile(repo, { branch: 'main', path: '' })).toEqual({ kind: 'directory' });
    expect(await readCommitFile(repo, { branch: 'main', path: 'docs' })).toEqual({ kind: 'directory' });
    expect(await readCommitFile(repo, { branch: 'main', path: 'docs/missing' })).toEqual({ kind: 'missing' });
    expect(await readCommitFile(repo, { branch: 'main', path: 'index.html/x' })).toEqual({ kind: 'missing' });
    for (const unsafe of ['../index.html', 'docs/../index.html', '/index.html', 'a\\b', 'a\0b', '.git/config']) {
      expect(await readCommitFile(repo, { branch: 'main', path: unsafe }), unsafe).toEqual({ kind: 'missing' });
    }

    await writeFiles(repo, { branch: 'main', files: [{ path: 'index.html', content: 'v2' }] });
    const stillCommitted = await readCommitFile(repo, { branch: 'main', path: 'index.html' });
    expect(stillCommitted.kind === 'file' && stillCommitted.body?.toString()).toBe('v1');
    await commit(repo, { branch: 'main', people: testPeople });
    const committed = await readCommitFile(repo, { branch: 'main', path: 'index.html' });
    expect(committed.kind === 'file' && committed.body?.toString()).toBe('v2');
  });

  it('skips the content when the caller does not want it', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'hello')]);
    const seen: string[] = [];
    const found = await readCommitFile(repo, { branch: 'main', path: 'a.txt', wantContent: (oid) => (seen.push(oid), false) });
    expect(found).toEqual({ kind: 'file', oid: seen[0], size: 5 });
  });

  it('lists the working tree with modes and reads blobs by id', async () => {
    const repo = await newTestRepo(opened.store, [text('b.txt', 'b'), text('a/c.txt', 'c')]);
    await writeFiles(repo, { branch: 'main', files: [{ path: 'new.txt', content: 'uncommitted' }] });
    const files = await workingTreeFiles(repo, { branch: 'main' });
    expect(files.map(({ path, mode, size }) => ({ path, mode, size }))).toEqual([
      { path: 'a/c.txt', mode: '100644', size: 1 },
      { path: 'b.txt', mode: '100644', size: 1 },
      { path: 'new.txt', mode: '100644', size: 11 },
    ]);
    const blobs = await readBlobs(repo, files.map((file) => file.oid));
    expect(blobs.get(files[2].oid)?.toString()).toBe('uncommitted');
    await expect(readBlobs(repo, ['0'.repeat(40)])).rejects.toThrow('missing');
  });
});
