/** Deletes a branch and its working tree; main is protected. */
import { TreehouseError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import type { ProjectWriteTx } from '../store/types.js';
import { branchHead, inWriteTx, MAIN_BRANCH, type Repo } from './repo.js';

/** `oid`: the head the branch had. */
export async function deleteBranch(repo: Repo, input: { name: string }): Promise<{ deleted: string; oid: string }> {
  return inWriteTx(repo, (tx) => deleteBranchInTx(tx, input));
}

export function deleteBranchInTx(tx: ProjectWriteTx, input: { name: string }): { deleted: string; oid: string } {
  if (input.name === MAIN_BRANCH) throw new TreehouseError('protected_branch', 'The main branch cannot be deleted.');
  const head = branchHead(tx, input.name);
  tx.casRef(branchRef(input.name), head, null);
  tx.deleteWorkingTree(input.name);
  tx.bumpVersion();
  return { deleted: input.name, oid: oidToHex(head) };
}
