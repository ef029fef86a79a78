/**
 * The files that differ between two trees, as git's tree diff (tree-diff.c) finds them: subtrees
 * with equal ids are skipped, so the cost follows the size of the change; a file whose mode or blob
 * differs is one change (a type change included); a file replaced by a directory is a deletion and
 * additions. Changes come in git's order, which is the byte order of their paths.
 */
import type { Oid } from '../../git/oid.js';
import { decodeTree, MODE_TREE, type TreeEntry, type TreeMode } from '../../git/tree.js';
import type { ProjectReadTx } from '../../store/types.js';
import type { PathFilter } from '../pathFilter.js';
import type { Repo } from '../repo.js';
import { readInSlices, type Slicer } from '../slices.js';

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

type Work = { dir: string; old: Oid | null; new: Oid | null } | TreeChange;

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Reads a tree's entries; a missing tree is a broken store, not a client error. */
export function readTreeEntries(tx: ProjectReadTx, tree: Oid | null): TreeEntry[] {
  if (!tree) return [];
  const object = tx.getObject(tree);
  if (!object || object.type !== 'tree') throw new Error(`tree ${tree.toString('hex')} is missing`);
  return decodeTree(object.body, true);
}

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
    (tx) => {
      const work = stack.pop();
      if (!work) return false;
      if ('path' in work) out.push(work);
      else expand(tx, work, filter, stack);
      return stack.length > 0;
    },
    slicer,
  );
  return out;
}

/** Pushes a directory's differing entries onto the stack, last first, so they pop in order. */
function expand(tx: ProjectReadTx, work: { dir: string; old: Oid | null; new: Oid | null }, filter: PathFilter, stack: Work[]): void {
  if (work.old && work.new && work.old.equals(work.new)) return;
  const items = new Map<string, { old?: TreeEntry; new?: TreeEntry }>();
  for (const entry of readTreeEntries(tx, work.old)) items.set(entry.mode === MODE_TREE ? `${entry.name}/` : entry.name, { old: entry });
  for (const entry of readTreeEntries(tx, work.new)) {
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
