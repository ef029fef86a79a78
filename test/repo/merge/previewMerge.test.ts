import { afterAll, describe, expect, it } from 'vitest';
import { commit } from '../../../src/repo/commit.js';
import { createBranch } from '../../../src/repo/createBranch.js';
import { mergeBranches } from '../../../src/repo/merge/mergeBranches.js';
import { previewMerge } from '../../../src/repo/merge/previewMerge.js';
import type { Repo } from '../../../src/repo/repo.js';
import { writeFiles } from '../../../src/repo/writeFiles.js';
import { newTestRepo, openTestStore, testPeople, text } from '../../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());

const lines = (count: number, edits: Record<number, string> = {}) => Array.from({ length: count }, (_, i) => `${edits[i] ?? `line ${i}`}\n`).join('');

async function change(repo: Repo, branch: string, files: Record<string, string>): Promise<void> {
  await writeFiles(repo, { branch, files: Object.entries(files).map(([path, content]) => ({ path, content })) });
  await commit(repo, { branch, message: `change ${branch}`, people: testPeople });
}

async function versionOf(repo: Repo): Promise<number> {
  return repo.store.read((store) => store.project(repo.project).getVersion());
}

describe('previewMerge', () => {
  it('lists the files a clean merge changes, and the merge then changes them, nothing before', async () => {
    const repo = await newTestRepo(opened.store, [text('doc.txt', lines(30)), text('dir/keep.txt', 'k\n'), text('dir/gone.txt', 'g\n')]);
    await createBranch(repo, { name: 'topic' });
    await change(repo, 'main', { 'doc.txt': lines(30, { 2: 'main edit' }) });
    await change(repo, 'topic', { 'doc.txt': lines(30, { 25: 'topic edit' }), 'dir/new/added.txt': 'a\n' });
    const before = await versionOf(repo);
    const preview = await previewMerge(repo, { source: 'topic', target: 'main' });
    expect(await versionOf(repo)).toBe(before);
    expect(preview).toMatchObject({ clean: true, files: [{ path: 'dir/new/added.txt', status: 'added' }, { path: 'doc.txt', status: 'modified' }] });
    expect(preview.merge_base).toMatch(/^[0-9a-f]{40}$/);
    expect((await mergeBranches(repo, { source: 'topic', target: 'main', people: testPeople })).created).toBe(true);
  });

  it('describes a conflict with the three sides and the merged content, labelled with the branches', async () => {
    const repo = await newTestRepo(opened.store, [text('f.txt', 'base\n'), text('other.txt', 'o\n')]);
    await createBranch(repo, { name: 'topic' });
    await change(repo, 'main', { 'f.txt': 'ours\n' });
    await change(repo, 'topic', { 'f.txt': 'theirs\n', 'other.txt': 'changed\n' });
    const preview = await previewMerge(repo, { source: 'topic', target: 'main' });
    expect(preview.clean).toBe(false);
    expect(preview.files).toEqual([
      { path: 'f.txt', status: 'conflicted', conflict: { kind: 'content', base: 'base\n', ours: 'ours\n', theirs: 'theirs\n', merged: '<<<<<<< main\nours\n=======\ntheirs\n>>>>>>> topic\n' } },
      { path: 'other.txt', status: 'modified' },
    ]);
  });

  it('lists a fast-forward changes and nothing when up to date', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'a\n'), text('d/b.txt', 'b\n')]);
    await createBranch(repo, { name: 'topic' });
    await change(repo, 'topic', { 'd/b.txt': 'B\n', 'd/e/c.txt': 'c\n' });
    expect((await previewMerge(repo, { source: 'topic', target: 'main' })).files).toEqual([
      { path: 'd/b.txt', status: 'modified' },
      { path: 'd/e/c.txt', status: 'added' },
    ]);
    expect((await previewMerge(repo, { source: 'main', target: 'topic' })).files).toEqual([]);
  });
});
