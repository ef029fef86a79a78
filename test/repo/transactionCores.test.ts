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
import { prepareResolutions } from '../../src/repo/merge/resolveConflicts.js';
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
    const result = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      await writeFilesInTx(tx, batch);
      await moveFileInTx(tx, { branch: 'main', from: 'a.txt', to: 'c.txt' });
      const made = await commitInTx(tx, { branch: 'main', message: 'Two changes, one transaction', people: testPeople });
      const branch = await createBranchInTx(tx, { name: 'topic' });
      store.putRecord(`caller/${repo.project}`, { commit: made.oid });
      return { made, branch };
    });
    expect(result.branch.oid).toBe(result.made.oid);
    expect((await listFiles(repo, { branch: 'main' })).map((file) => file.path)).toEqual(['b.txt', 'c.txt']);
    expect((await log(repo, { branch: 'main', limit: 1 })).commits[0].message).toBe('Two changes, one transaction');
    expect(await repo.store.read((store) => store.getRecord(`caller/${repo.project}`))).toEqual({ commit: result.made.oid });
  });

  it('leave nothing behind when a later core in the same transaction refuses', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'a\n')]);
    const state = () =>
      repo.store.read(async (store) => ({ version: await store.project(repo.project).getVersion(), head: await store.project(repo.project).getRef('refs/heads/main') }));
    const before = await state();
    const batch = prepareBatch(repo.limits, { branch: 'main', files: [{ path: 'b.txt', content: 'b\n' }] });
    const refused = repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      await writeFilesInTx(tx, batch);
      await commitInTx(tx, { branch: 'main', people: testPeople });
      store.putRecord(`caller/${repo.project}`, { done: true });
      await deleteFileInTx(tx, { branch: 'main', path: 'nothing-here.txt' });
    });
    await expect(refused).rejects.toMatchObject({ code: 'not_found' });
    await expect(refused).rejects.toBeInstanceOf(TreehouseError);
    const after = await state();
    expect(after).toEqual(before);
    expect((await listFiles(repo, { branch: 'main' })).map((file) => file.path)).toEqual(['a.txt']);
    expect(await repo.store.read((store) => store.getRecord(`caller/${repo.project}`))).toBeUndefined();
  });

  it('merge and restore inside a caller transaction, and a refused merge rolls back the branch made before it', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'one\n')]);
    const first = (await log(repo, { branch: 'main', limit: 1 })).commits[0].oid;
    const merged = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      await createBranchInTx(tx, { name: 'side' });
      await writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'side', files: [{ path: 's.txt', content: 's\n' }] }));
      await commitInTx(tx, { branch: 'side', people: testPeople });
      return await mergeBranchesInTx(tx, { source: 'side', target: 'main', people: testPeople });
    });
    expect(merged.fastForward).toBe(true);
    const restored = await repo.store.write((store) => restoreInTx(store.project(repo.project), { branch: 'main', oid: first, people: testPeople }));
    expect(restored.created).toBe(true);
    expect((await listFiles(repo, { branch: 'main' })).map((file) => file.path)).toEqual(['a.txt']);

    const conflicting = repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      await createBranchInTx(tx, { name: 'doomed' });
      await writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'doomed', files: [{ path: 'a.txt', content: 'doomed\n' }] }));
      await commitInTx(tx, { branch: 'doomed', people: testPeople });
      await writeFilesInTx(tx, prepareBatch(repo.limits, { branch: 'main', files: [{ path: 'a.txt', content: 'main\n' }] }));
      await commitInTx(tx, { branch: 'main', people: testPeople });
      return await mergeBranchesInTx(tx, { source: 'doomed', target: 'main', people: testPeople });
    });
    await expect(conflicting).rejects.toMatchObject({ code: 'merge_conflict' });
    expect((await listBranches(repo)).map((branch) => branch.name)).not.toContain('doomed');
    expect((await log(repo, { branch: 'main', limit: 1 })).commits[0].oid).toBe(restored.oid);
  });

  it('snippet edits and a resolved merge inside a caller transaction, rolled back with it when a later core refuses', async () => {
    const repo = await newTestRepo(opened.store, [text('a.txt', 'one\ntwo\n')]);
    const head = async () => (await log(repo, { branch: 'main', limit: 1 })).commits[0].oid;
    const before = await head();
    const edit = (branch: string, old: string, replacement: string) => prepareBatch(repo.limits, { branch, files: [{ path: 'a.txt', edits: [{ old, new: replacement }] }] });
    const resolved = (tx: Parameters<typeof writeFilesInTx>[0]) =>
      mergeBranchesInTx(tx, { source: 'topic', target: 'main', people: testPeople, resolutions: prepareResolutions(repo.limits, [{ path: 'a.txt', content: 'resolved\n' }]) });
    const work = async (tx: Parameters<typeof writeFilesInTx>[0]) => {
      await createBranchInTx(tx, { name: 'topic' });
      await writeFilesInTx(tx, edit('topic', 'one', 'topic'));
      await commitInTx(tx, { branch: 'topic', people: testPeople });
      await writeFilesInTx(tx, edit('main', 'one', 'main'));
      await commitInTx(tx, { branch: 'main', people: testPeople });
      return resolved(tx);
    };
    const refused = repo.store.write(async (store) => {
      await work(store.project(repo.project));
      await deleteFileInTx(store.project(repo.project), { branch: 'main', path: 'nothing-here.txt' });
    });
    await expect(refused).rejects.toMatchObject({ code: 'not_found' });
    expect(await head()).toBe(before);
    expect((await listBranches(repo)).map((branch) => branch.name)).toEqual(['main']);

    const merged = await repo.store.write((store) => work(store.project(repo.project)));
    expect(merged.created).toBe(true);
    expect(await head()).toBe(merged.oid);
    expect((await listFiles(repo, { branch: 'main', content: true })).map((file) => [file.path, file.content])).toEqual([['a.txt', 'resolved\n']]);
  });
});
