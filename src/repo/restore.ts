/**
 * Restore: the branch's working tree becomes the tree of an earlier commit, recorded as a new commit
 * on top of the current head (message "Restore to <7-hex>"); history is never rewritten.
 */
import { oidToHex } from '../git/oid.js';
import { branchHead, commitTree, inWriteTx, resolveCommit, type Repo, type WriteTx } from './repo.js';
import { requireCleanWorkingTree, requireUnlockedChanges, resetWorkingTree } from './worktree/moveWorkingTree.js';
import { writeCommit, type CommitAuthors } from './writeCommit.js';

export interface RestoreResult {
  oid: string;
  branch: string;
  created: boolean;
}

export interface RestoreInput {
  branch: string;
  oid: string;
  force?: boolean;
  people: CommitAuthors;
}

export async function restore(repo: Repo, input: RestoreInput): Promise<RestoreResult> {
  return inWriteTx(repo, (tx) => restoreInTx(tx, input));
}

export async function restoreInTx(tx: WriteTx, input: RestoreInput): Promise<RestoreResult> {
  const head = await branchHead(tx, input.branch);
  const target = await resolveCommit(tx, input.oid);
  const targetTree = await commitTree(tx, target);
  const headTree = await commitTree(tx, head);
  if (!input.force) await requireCleanWorkingTree(tx, input.branch, headTree);
  await requireUnlockedChanges(tx, input.branch, targetTree);
  await resetWorkingTree(tx, input.branch, targetTree);
  if (targetTree.equals(headTree)) {
    await tx.bumpVersion();
    return { oid: oidToHex(head), branch: input.branch, created: false };
  }
  const oid = await writeCommit(tx, {
    branch: input.branch,
    tree: targetTree,
    parents: [head],
    message: `Restore to ${oidToHex(target).slice(0, 7)}`,
    people: input.people,
  });
  return { oid: oidToHex(oid), branch: input.branch, created: true };
}
