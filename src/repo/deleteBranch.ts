/** Deletes a branch and its working tree; main is protected. */
import { TreehouseError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import { branchHead, inWriteTx, MAIN_BRANCH, type Repo, type WriteTx } from './repo.js';

/** `oid`: the head the branch had. */
export async function deleteBranch(repo: Repo, input: { name: string }): Promise<{ deleted: string; oid: string }> {
  return inWriteTx(repo, (tx) => deleteBranchInTx(tx, input));
}

export async function deleteBranchInTx(tx: WriteTx, input: { name: string }): Promise<{ deleted: string; oid: string }> {
  if (input.name === MAIN_BRANCH) throw new TreehouseError('protected_branch', 'The main branch cannot be deleted.');
  const head = await branchHead(tx, input.name);
  await tx.casRef(branchRef(input.name), head, null);
  tx.deleteWorkingTree(input.name);
  await tx.bumpVersion();
  return { deleted: input.name, oid: oidToHex(head) };
}
