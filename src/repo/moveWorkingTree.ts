/**
 * Moves a branch's working tree to another tree, as restore, merge and push do after their ref moves.
 * Refused when the working tree has uncommitted changes (unless forced) or when a locked file would
 * change or go away; locks on files that stay as they are survive the move.
 */
import { TreehouseError } from '../errors.js';
import type { Oid } from '../git/oid.js';
import type { ProjectWriteTx } from '../store/types.js';
import { changedPaths } from './treeDiff.js';
import { WorkingTree } from './workingTree.js';

/** Paths where the working tree differs from `headTree`; empty when it is clean. */
export function uncommittedPaths(tx: ProjectWriteTx, branch: string, headTree: Oid): string[] {
  const tree = new WorkingTree(tx, branch);
  const current = tree.writeTree();
  tree.save();
  return current.equals(headTree) ? [] : changedPaths(tx, headTree, current);
}

export function requireCleanWorkingTree(tx: ProjectWriteTx, branch: string, headTree: Oid): void {
  const paths = uncommittedPaths(tx, branch, headTree);
  if (paths.length > 0) {
    throw new TreehouseError('uncommitted_changes', `Branch ${branch} has uncommitted changes.`, { paths });
  }
}

/** Locked files that would differ if the working tree became `target`. */
export function lockedChanges(tx: ProjectWriteTx, branch: string, target: Oid): string[] {
  const tree = new WorkingTree(tx, branch);
  const locked = tree.lockedPaths();
  if (locked.length === 0) return [];
  const current = tree.writeTree();
  tree.save();
  const changing = new Set(changedPaths(tx, current, target));
  return locked.filter((path) => changing.has(path));
}

export function requireUnlockedChanges(tx: ProjectWriteTx, branch: string, target: Oid): void {
  const paths = lockedChanges(tx, branch, target);
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
