/** Deletes a branch and its working tree; main is protected. */
import { TreehouseError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import { branchHead, MAIN_BRANCH, type Repo } from './repo.js';

/** `oid`: the head the branch had. */
export async function deleteBranch(repo: Repo, input: { name: string }): Promise<{ deleted: string; oid: string }> {
  if (input.name === MAIN_BRANCH) throw new TreehouseError('protected_branch', 'The main branch cannot be deleted.');
  const head = await repo.store.write((store) => {
    const tx = store.project(repo.project);
    const head = branchHead(tx, input.name);
    tx.casRef(branchRef(input.name), head, null);
    tx.deleteWorkingTree(input.name);
    tx.bumpVersion();
    return head;
  });
  return { deleted: input.name, oid: oidToHex(head) };
}
