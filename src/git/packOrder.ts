/**
 * The order in which received objects are stored. The commit index gives each commit a generation
 * number computed from its parents' when it is stored (src/store/lmdb.ts), and git writes packs
 * newest commit first (Documentation/gitformat-pack.txt leaves the order to the writer), so commits
 * must be stored parents first or their generations come out too small and reachability walks,
 * which stop at the generation floor, miss ancestors.
 */
import { commitLinks } from './commit.js';
import type { PackObject } from './pack.js';

/** Every object of `objects`: non-commits in their order, then commits each after its parents in the list. */
export function parentsFirst(objects: readonly PackObject[]): PackObject[] {
  const out: PackObject[] = objects.filter((object) => object.type !== 'commit');
  const commits = new Map<string, PackObject>();
  for (const object of objects) if (object.type === 'commit') commits.set(object.oid.toString('hex'), object);
  const placed = new Set<string>();
  for (const start of commits.values()) {
    // Iterative depth-first post-order over parents inside the list; parents outside it are stored already.
    const stack: Array<{ key: string; parents: string[]; next: number }> = [];
    const open = (key: string) => {
      placed.add(key);
      const parents = commitLinks(commits.get(key)!.body).parents.map((parent) => parent.toString('hex'));
      stack.push({ key, parents, next: 0 });
    };
    const startKey = start.oid.toString('hex');
    if (placed.has(startKey)) continue;
    open(startKey);
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.next < top.parents.length) {
        const parent = top.parents[top.next++];
        if (commits.has(parent) && !placed.has(parent)) open(parent);
        continue;
      }
      stack.pop();
      out.push(commits.get(top.key)!);
    }
  }
  return out;
}
