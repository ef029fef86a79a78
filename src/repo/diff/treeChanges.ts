/**
 * The files that differ between two trees, as git's tree diff (tree-diff.c) finds them: subtrees
 * with equal ids are skipped, so the cost follows the size of the change; a file whose mode or blob
 * differs is one change (a type change included); a file replaced by a directory is a deletion and
 * additions. Changes come in git's order, which is the byte order of their paths.
 */
import type { Oid } from '../../git/oid.js';
import { MODE_TREE, type TreeEntry, type TreeMode } from '../../git/tree.js';
import type { ProjectReads } from '../../store/asyncTypes.js';
import type { PathFilter } from '../pathFilter.js';
import type { Repo } from '../repo.js';
import { readInSlices, type Slicer } from '../slices.js';
import { readTrees, requireTree, TREE_BATCH_MAX } from './batchedReads.js';

/** A file, symlink or submodule as a tree holds it. */
export interface FileVersion {
  mode: Exclude<TreeMode, typeof MODE_TREE>;
  oid: Oid;
}

export interface TreeChange {
  path: string;
  /** null: the file is not in the old tree (added). */
  old: FileVersion | null;
  /** null: the file is not in the new tree (deleted). */
  new: FileVersion | null;
}

/** A directory to compare; `trees`: its old and new entries once read (undefined: not stored). */
type DirectoryWork = { dir: string; old: Oid | null; new: Oid | null; trees?: [TreeEntry[] | undefined, TreeEntry[] | undefined] };
type Work = DirectoryWork | TreeChange;

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Compares entry keys (a directory's name as if followed by "/") by their UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  if (ASCII_ONLY.test(a) && ASCII_ONLY.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The changes from `oldTree` to `newTree` (null: the empty tree) under `filter`, in path order. */
export async function treeChanges(repo: Repo, oldTree: Oid | null, newTree: Oid | null, filter: PathFilter, slicer?: Slicer): Promise<TreeChange[]> {
  const out: TreeChange[] = [];
  const stack: Work[] = [{ dir: '', old: oldTree, new: newTree }];
  await readInSlices(
    repo,
    async (tx) => {
      // The changes on top of the stack, then one directory.
      let work = stack.pop();
      while (work && 'path' in work) {
        out.push(work);
        work = stack.pop();
      }
      if (!work) return false;
      if (!work.trees) await readAhead(tx, work, stack);
      expand(work, filter, stack);
      return stack.length > 0;
    },
    slicer,
  );
  return out;
}

/**
 * Reads the trees of `work` and of the directories next on the stack (the ones the walk expands
 * next, in order) in one read.
 */
async function readAhead(tx: ProjectReads, work: DirectoryWork, stack: Work[]): Promise<void> {
  const batch: DirectoryWork[] = [work];
  for (let i = stack.length - 1; i >= 0 && batch.length < TREE_BATCH_MAX; i--) {
    const next = stack[i];
    if (!('path' in next) && !next.trees) batch.push(next);
  }
  // Equal trees are skipped unread.
  const reading = batch.filter((item) => !(item.old && item.new && item.old.equals(item.new)));
  const trees = await readTrees(tx, reading.flatMap((item) => [item.old, item.new]));
  reading.forEach((item, i) => (item.trees = [trees[2 * i], trees[2 * i + 1]]));
}

/** Pushes a directory's differing entries onto the stack, last first, so they pop in order. */
function expand(work: DirectoryWork, filter: PathFilter, stack: Work[]): void {
  if (work.old && work.new && work.old.equals(work.new)) return;
  const [oldEntries, newEntries] = work.trees!;
  const items = new Map<string, { old?: TreeEntry; new?: TreeEntry }>();
  for (const entry of work.old ? requireTree(oldEntries, work.old) : []) items.set(entry.mode === MODE_TREE ? `${entry.name}/` : entry.name, { old: entry });
  for (const entry of work.new ? requireTree(newEntries, work.new) : []) {
    const key = entry.mode === MODE_TREE ? `${entry.name}/` : entry.name;
    const item = items.get(key);
    if (item) item.new = entry;
    else items.set(key, { new: entry });
  }
  const keys = [...items.keys()].sort(compareKeys);
  for (let i = keys.length - 1; i >= 0; i--) {
    const { old, new: next } = items.get(keys[i])!;
    const name = (old ?? next)!.name;
    const path = work.dir === '' ? name : `${work.dir}/${name}`;
    if ((old ?? next)!.mode === MODE_TREE) {
      if (old && next && old.oid.equals(next.oid)) continue;
      if (filter.reachesDirectory(path)) stack.push({ dir: path, old: old?.oid ?? null, new: next?.oid ?? null });
      continue;
    }
    if (old && next && old.mode === next.mode && old.oid.equals(next.oid)) continue;
    if (!filter.matchesFile(path)) continue;
    stack.push({
      path,
      old: old ? { mode: old.mode as FileVersion['mode'], oid: Buffer.from(old.oid) } : null,
      new: next ? { mode: next.mode as FileVersion['mode'], oid: Buffer.from(next.oid) } : null,
    });
  }
}
