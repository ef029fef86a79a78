/**
 * Moves a branch's working tree to another tree, as restore, merge and push do after their ref moves.
 * Refused when the working tree has uncommitted changes (unless forced) or when a locked file would
 * change or go away; locks on files that stay as they are survive the move.
 */
import { TreehouseError } from '../../errors.js';
import type { Oid } from '../../git/oid.js';
import type { ProjectReadTx, ProjectWriteTx } from '../../store/types.js';
import { changedPaths, type TreeSource } from './treeDiff.js';
import { WorkingTree } from './workingTree.js';

// The checks only read: a working tree nobody changed in this object has its stored tree id, so
// writeTree() writes nothing here and a read transaction is enough (merge preview runs them so).

/** Paths where the working tree differs from `headTree`; empty when it is clean. */
export function uncommittedPaths(tx: ProjectReadTx, branch: string, headTree: Oid): string[] {
  const current = new WorkingTree(tx, branch).writeTree();
  return current.equals(headTree) ? [] : changedPaths(tx, headTree, current);
}

export function requireCleanWorkingTree(tx: ProjectReadTx, branch: string, headTree: Oid): void {
  const paths = uncommittedPaths(tx, branch, headTree);
  if (paths.length > 0) {
    throw new TreehouseError('uncommitted_changes', `Branch ${branch} has uncommitted changes.`, { paths });
  }
}

/**
 * Locked files that would differ if the working tree became `target`; `trees` reads a target that
 * is not stored yet (a merge's staged result).
 */
export function lockedChanges(tx: ProjectReadTx, branch: string, target: Oid, trees?: TreeSource): string[] {
  const tree = new WorkingTree(tx, branch);
  const locked = tree.lockedPaths();
  if (locked.length === 0) return [];
  const current = tree.writeTree();
  const changing = new Set(changedPaths(tx, current, target, trees));
  return locked.filter((path) => changing.has(path));
}

export function requireUnlockedChanges(tx: ProjectReadTx, branch: string, target: Oid, trees?: TreeSource): void {
  const paths = lockedChanges(tx, branch, target, trees);
  if (paths.length > 0) throw new TreehouseError('file_locked', `Locked files would change: ${paths.join(', ')}.`, { paths });
}

/** Replaces the working tree by `target`, keeping the locks of files that exist there unchanged. */
export function resetWorkingTree(tx: ProjectWriteTx, branch: string, target: Oid): void {
  const tree = new WorkingTree(tx, branch);
  const locked = tree.lockedPaths();
  tree.resetTo(target);
  for (const path of locked) tree.setLocked(path, true);
  tree.save();
}
