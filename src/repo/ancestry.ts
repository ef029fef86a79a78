/** Reachability over the commit index, cut short by generation numbers. */
import { oidToHex, type Oid } from '../git/oid.js';
import type { ProjectReads } from '../store/asyncTypes.js';
import { commitInfo } from './repo.js';

/** True when `ancestor` is `descendant` or reachable from it through parents. */
export async function isAncestor(tx: ProjectReads, ancestor: Oid, descendant: Oid): Promise<boolean> {
  if (ancestor.equals(descendant)) return true;
  const floor = (await commitInfo(tx, ancestor))?.generation;
  if (floor === undefined) return false;
  const seen = new Set<string>();
  const stack = [descendant];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    if (oid.equals(ancestor)) return true;
    const key = oidToHex(oid);
    if (seen.has(key)) continue;
    seen.add(key);
    const info = await commitInfo(tx, oid);
    // A commit's ancestors all have smaller generations, so nothing at or below the floor can lead there.
    if (!info || info.generation <= floor) continue;
    stack.push(...info.parents);
  }
  return false;
}
