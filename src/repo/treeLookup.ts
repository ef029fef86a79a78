/**
 * Looks paths up in many trees of one history (log by path, blame), decoding each tree once: the
 * commits of a history share most of their directories.
 */
import { oidToHex, type Oid } from '../git/oid.js';
import { decodeTree, MODE_TREE, type TreeEntry } from '../git/tree.js';
import type { ProjectReads } from '../store/asyncTypes.js';
import { bodyOf } from './repo.js';

/** Decoded trees kept at most; the cache starts over past this (one request's walk). */
const CACHED_TREES_MAX = 20_000;

export class TreeLookup {
  private readonly trees = new Map<string, Map<string, TreeEntry>>();

  /** The entry at `path` (components) below `root`, or null; a file in the way is null too. */
  async entryAt(tx: ProjectReads, root: Oid, components: readonly string[]): Promise<TreeEntry | null> {
    let tree = root;
    for (let i = 0; i < components.length; i++) {
      const entry = (await this.entries(tx, tree)).get(components[i]);
      if (!entry) return null;
      if (i === components.length - 1) return entry;
      if (entry.mode !== MODE_TREE) return null;
      tree = entry.oid;
    }
    return null;
  }

  private async entries(tx: ProjectReads, tree: Oid): Promise<Map<string, TreeEntry>> {
    const key = oidToHex(tree);
    let entries = this.trees.get(key);
    if (!entries) {
      entries = new Map(decodeTree(bodyOf(await tx.getObject(tree), 'tree', key), true).map((entry) => [entry.name, entry]));
      if (this.trees.size >= CACHED_TREES_MAX) this.trees.clear();
      this.trees.set(key, entries);
    }
    return entries;
  }
}

export function sameEntry(a: TreeEntry | null, b: TreeEntry | null): boolean {
  if (!a || !b) return a === b;
  return a.mode === b.mode && a.oid.equals(b.oid);
}
