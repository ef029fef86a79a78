/**
 * Each write verb is a transaction-level core (`<verb>InTx`) and a wrapper that opens the
 * transaction: a caller may run several cores and records of its own in one transaction, and they
 * land together or not at all.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TreehouseError } from '../../src/errors.js';
import { commitInTx } from '../../src/repo/commit.js';
import { createBranchInTx } from '../../src/repo/createBranch.js';
import { deleteFileInTx } from '../../src/repo/deleteFile.js';
import { listBranches } from '../../src/repo/listBranches.js';
import { listFiles } from '../../src/repo/listFiles.js';
import { log } from '../../src/repo/log.js';
import { mergeBranchesInTx } from '../../src/repo/merge/mergeBranches.js';
import { moveFileInTx } from '../../src/repo/moveFile.js';
import { restoreInTx } from '../../src/repo/restore.js';
import { prepareBatch, writeFilesInTx } from '../../src/repo/writeFiles.js';
import { newTestRepo, openTestStore, testPeople, text } from '../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());

describe('transaction-level verb cores', () => {
  it('commit together with a record of the caller in one transaction', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'a\n')]);
    const batch = prepareBatch(repo.limits, { branch: 'main', files: [{ path: 'b.txt', content: 'b\n' }] });
    const result = await opened.store.write((store) => {
      const tx = store.project(repo.project);
      writeFilesInTx(tx, batch);
      moveFileInTx(tx, { branch: 'main', from: 'a.txt', to: 'c.txt' });
      const made = commitInTx(tx, { branch: 'main', message: 'Two changes, one transaction', people: testPeople });
      const branch = createBranchInTx(tx, { name: 'topic' });
      store.putRecord(`caller/${repo.project}`, { commit: made.oid });
      return { made, branch };
    });
    expect(result.branch.oid).toBe(result.made.oid);
    expect(listFiles(repo, { branch: 'main' }).map((file) => file.path)).toEqual(['b.txt', 'c.txt']);
    expect(log(repo, { branch: 'main', limit: 1 }).commits[0].message).toBe('Two changes, one transaction');
    expect(opened.store.read((store) => store.getRecord(`caller/${repo.project}`))).toEqual({ commit: result.made.oid });
  });

  it('leave nothing behind when a later core in the same transaction refuses', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'a\n')]);
    const before = opened.store.read((store) => ({ version: store.project(repo.project).getVersion(), head: store.project(repo.project).getRef('refs/heads/main') }));
    const batch = prepareBatch(repo.limits, { branch: 'main', files: [{ path: 'b.txt', content: 'b\n' }] });
    const refused = opened.store.write((store) => {
      const tx = store.project(repo.project);
      writeFilesInTx(tx, batch);
      commitInTx(tx, { branch: 'main', people: testPeople });
      store.putRecord(`caller/${repo.project}`, { done: true });
      deleteFileInTx(tx, { branch: 'main', path: 'nothing-here.txt' });
    });
    await expect(refused).rejects.toMatchObject({ code: 'not_found' });
    await expect(refused).rejects.toBeInstanceOf(TreehouseError);
    const after = opened.store.read((store) => ({ version: store.project(repo.project).getVersion(), head: store.project(repo.project).getRef('refs/heads/main') }));
    expect(after).toEqual(before);
    expect(listFiles(repo, { branch: 'main' }).map((file) => file.path)).toEqual(['a.txt']);
    expect(opened.store.read((store) => store.getRecord(`caller/${repo.project}`))).toBeUndefined();
  });

  it('merge and restore inside a caller transaction, and a refused merge rolls back the branch made before it', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'one\n')]);
    const first = log(repo, { branch: 'main', limit: 1 }).commits[0].oid;
    const merged = await opened.store.write((store) => {
      const tx = store.project(repo.project);
      createBranchInTx(tx, { name: 'side' });
      writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'side', files: [{ path: 's.txt', content: 's\n' }] }));
      commitInTx(tx, { branch: 'side', people: testPeople });
      return mergeBranchesInTx(tx, { source: 'side', target: 'main', people: testPeople });
    });
    expect(merged.fastForward).toBe(true);
    const restored = await opened.store.write((store) => restoreInTx(store.project(repo.project), { branch: 'main', oid: first, people: testPeople }));
    expect(restored.created).toBe(true);
    expect(listFiles(repo, { branch: 'main' }).map((file) => file.path)).toEqual(['a.txt']);

    const conflicting = opened.store.write((store) => {
      const tx = store.project(repo.project);
      createBranchInTx(tx, { name: 'doomed' });
      writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'doomed', files: [{ path: 'a.txt', content: 'doomed\n' }] }));
      commitInTx(tx, { branch: 'doomed', people: testPeople });
      writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'main', files: [{ path: 'a.txt', content: 'main\n' }] }));
      commitInTx(tx, { branch: 'main', people: testPeople });
      return mergeBranchesInTx(tx, { source: 'doomed', target: 'main', people: testPeople });
    });
    await expect(conflicting).rejects.toMatchObject({ code: 'merge_conflict' });
    expect(listBranches(repo).map((branch) => branch.name)).not.toContain('doomed');
    expect(log(repo, { branch: 'main', limit: 1 }).commits[0].oid).toBe(restored.oid);
  });
});
