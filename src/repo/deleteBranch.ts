/** Deletes a branch and its working tree; main is protected. */
import { TreehouseError } from '../errors.js';
import { branchRef } from '../git/refname.js';
import { branchHead, MAIN_BRANCH, type Repo } from './repo.js';

export async function deleteBranch(repo: Repo, input: { name: string }): Promise<{ deleted: string }> {
  if (input.name === MAIN_BRANCH) throw new TreehouseError('protected_branch', 'The main branch cannot be deleted.');
  await repo.store.write((store) => {
    const tx = store.project(repo.project);
    const head = branchHead(tx, input.name);
    tx.casRef(branchRef(input.name), head, null);
    tx.deleteWorkingTree(input.name);
    tx.bumpVersion();
  });
  return { deleted: input.name };
}
