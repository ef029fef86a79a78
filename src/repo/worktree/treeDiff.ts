/**
 * Paths whose file differs between two trees (added, removed, or changed in id or mode), skipping
 * subtrees whose ids are equal, so the cost follows the size of the difference.
 */
import type { Oid } from '../../git/oid.js';
import { joinPath } from '../../git/path.js';
import { decodeTree, MODE_TREE, type TreeEntry } from '../../git/tree.js';
import type { ProjectReads } from '../../store/asyncTypes.js';
import { MissingObjectError } from '../../errors.js';

/** Reads trees that may not be stored yet (a merge's staged objects). */
export interface TreeSource {
  readTree(oid: Oid): Promise<TreeEntry[]>;
}

export async function changedPaths(tx: ProjectReads, before: Oid | null, after: Oid | null, trees?: TreeSource): Promise<string[]> {
  const out: string[] = [];
  const source: TreeSource = trees ?? { readTree: (oid) => storedTree(tx, oid) };
  // An explicit stack of directory pairs still to compare: trees may be thousands deep.
  const pending: Array<{ dir: string; before: Oid | null; after: Oid | null }> = [{ dir: '', before, after }];
  while (pending.length > 0) {
    const next = pending.pop()!;
    await diffTrees(source, next.dir, next.before, next.after, out, pending);
  }
  return out.sort();
}

async function storedTree(tx: ProjectReads, tree: Oid): Promise<TreeEntry[]> {
  const object = await tx.getObject(tree);
  if (!object) throw new MissingObjectError('tree', tree);
  return decodeTree(object.body);
}

async function entriesOf(trees: TreeSource, tree: Oid | null): Promise<Map<string, TreeEntry>> {
  if (!tree) return new Map();
  return new Map((await trees.readTree(tree)).map((entry) => [entry.name, entry]));
}

/** Compares one pair of directories: changed files go to `out`, subdirectory pairs to `pending`. */
async function diffTrees(
  trees: TreeSource,
  dir: string,
  before: Oid | null,
  after: Oid | null,
  out: string[],
  pending: Array<{ dir: string; before: Oid | null; after: Oid | null }>,
): Promise<void> {
  if (before && after && before.equals(after)) return;
  const [left, right] = await Promise.all([entriesOf(trees, before), entriesOf(trees, after)]);
  const names = new Set([...left.keys(), ...right.keys()]);
  for (const name of names) {
    const a = left.get(name);
    const b = right.get(name);
    const path = joinPath(dir, name);
    const aTree = a?.mode === MODE_TREE ? a.oid : null;
    const bTree = b?.mode === MODE_TREE ? b.oid : null;
    if (aTree || bTree) pending.push({ dir: path, before: aTree, after: bTree });
    const aFile = a && a.mode !== MODE_TREE ? a : null;
    const bFile = b && b.mode !== MODE_TREE ? b : null;
    if (aFile || bFile) {
      if (!aFile || !bFile || aFile.mode !== bFile.mode || !aFile.oid.equals(bFile.oid)) out.push(path);
    }
  }
}
