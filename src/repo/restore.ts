/**
 * Restore: the branch's working tree becomes the tree of an earlier commit, recorded as a new commit
 * on top of the current head (message "Restore to <7-hex>"); history is never rewritten.
 */
import { oidToHex } from '../git/oid.js';
import type { ProjectWriteTx } from '../store/types.js';
import { branchHead, commitTree, inWriteTx, resolveCommit, type Repo } from './repo.js';
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

export function restoreInTx(tx: ProjectWriteTx, input: RestoreInput): RestoreResult {
  const head = branchHead(tx, input.branch);
  const target = resolveCommit(tx, input.oid);
  const targetTree = commitTree(tx, target);
  const headTree = commitTree(tx, head);
  if (!input.force) requireCleanWorkingTree(tx, input.branch, headTree);
  requireUnlockedChanges(tx, input.branch, targetTree);
  resetWorkingTree(tx, input.branch, targetTree);
  if (targetTree.equals(headTree)) {
    tx.bumpVersion();
    return { oid: oidToHex(head), branch: input.branch, created: false };
  }
  const oid = writeCommit(tx, {
    branch: input.branch,
    tree: targetTree,
    parents: [head],
    message: `Restore to ${oidToHex(target).slice(0, 7)}`,
    people: input.people,
  });
  return { oid: oidToHex(oid), branch: input.branch, created: true };
}
