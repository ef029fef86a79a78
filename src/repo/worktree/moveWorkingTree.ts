/**
 * Moves a branch's working tree to another tree, as restore, merge and push do after their ref moves.
 * Refused when the working tree has uncommitted changes (unless forced) or when a locked file would
 * change or go away; locks on files that stay as they are survive the move.
 */
import { TreehouseError } from '../../errors.js';
import type { Oid } from '../../git/oid.js';
import type { ProjectReads, ProjectWrites } from '../../store/asyncTypes.js';
import { changedPaths, type TreeSource } from './treeDiff.js';
import { WorkingTree } from './workingTree.js';

// The checks only read: a working tree nobody changed in this object has its stored tree id, so
// writeTree() writes nothing here and a read transaction is enough (merge preview runs them so).

/** Paths where the working tree differs from `headTree`; empty when it is clean. */
export async function uncommittedPaths(tx: ProjectReads, branch: string, headTree: Oid): Promise<string[]> {
  const current = (await WorkingTree.open(tx, branch)).writeTree();
  return current.equals(headTree) ? [] : changedPaths(tx, headTree, current);
}

export async function requireCleanWorkingTree(tx: ProjectReads, branch: string, headTree: Oid): Promise<void> {
  const paths = await uncommittedPaths(tx, branch, headTree);
  if (paths.length > 0) {
    throw new TreehouseError('uncommitted_changes', `Branch ${branch} has uncommitted changes.`, { paths });
  }
}

/**
 * Locked files that would differ if the working tree became `target`; `trees` reads a target that
 * is not stored yet (a merge's staged result).
 */
export async function lockedChanges(tx: ProjectReads, branch: string, target: Oid, trees?: TreeSource): Promise<string[]> {
  const tree = await WorkingTree.open(tx, branch);
  const locked = tree.lockedPaths();
  if (locked.length === 0) return [];
  const current = tree.writeTree();
  const changing = new Set(await changedPaths(tx, current, target, trees));
  return locked.filter((path) => changing.has(path));
}

export async function requireUnlockedChanges(tx: ProjectReads, branch: string, target: Oid, trees?: TreeSource): Promise<void> {
  const paths = await lockedChanges(tx, branch, target, trees);
  if (paths.length > 0) throw new TreehouseError('file_locked', `Locked files would change: ${paths.join(', ')}.`, { paths });
}

/** Replaces the working tree by `target`, keeping the locks of files that exist there unchanged. */
export async function resetWorkingTree(tx: ProjectWrites, branch: string, target: Oid): Promise<void> {
  const tree = await WorkingTree.open(tx, branch);
  const locked = tree.lockedPaths();
  await tree.resetTo(target);
  await tree.load(locked);
  for (const path of locked) tree.setLocked(path, true);
  tree.save();
}
