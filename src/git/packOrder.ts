/**
 * The order in which received objects are stored. The commit index gives each commit a generation
 * number computed from its parents' when it is stored (src/store/lmdb.ts), and git writes packs
 * newest commit first (Documentation/gitformat-pack.txt leaves the order to the writer), so commits
 * must be stored parents first or their generations come out too small and reachability walks,
 * which stop at the generation floor, miss ancestors.
 */
import { commitLinks } from './commit.js';
import type { Oid } from './oid.js';
import { OidTable } from './oidTable.js';
import type { PackObject } from './pack.js';

/** Commits placed between two chances to pause (parentsFirstSteps). */
const COMMITS_PER_STEP = 512;

/** Every object of `objects`: non-commits in their order, then commits each after its parents in the list. */
export function parentsFirst(objects: readonly PackObject[]): PackObject[] {
  const steps = parentsFirstSteps(objects);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * parentsFirst as a walk that yields after every COMMITS_PER_STEP commits placed, so a caller can
 * give the event loop a turn (src/repo/slices.ts): a history of 100,000 commits is a long walk.
 * Commits are found by id in an OidTable (no hex string per commit or parent).
 */
export function* parentsFirstSteps(objects: readonly PackObject[]): Generator<void, PackObject[], void> {
  const out: PackObject[] = [];
  const commits: PackObject[] = [];
  for (const object of objects) (object.type === 'commit' ? commits : out).push(object);
  const index = new OidTable(commits.length);
  commits.forEach((commit, at) => index.add(commit.oid, 0, at));
  const placed = new Uint8Array(commits.length);
  let sincePause = 0;
  for (let start = 0; start < commits.length; start++) {
    // A commit listed twice is placed once, where it first appears.
    if (placed[start] || index.get(commits[start].oid) !== start) continue;
    // Iterative depth-first post-order over parents inside the list; parents outside it are stored already.
    placed[start] = 1;
    const frames: Array<{ at: number; parents: Oid[]; next: number }> = [{ at: start, parents: commitLinks(commits[start].body).parents, next: 0 }];
    while (frames.length > 0) {
      const top = frames[frames.length - 1];
      if (top.next < top.parents.length) {
        const parent = index.get(top.parents[top.next++]);
        if (parent >= 0 && !placed[parent]) {
          placed[parent] = 1;
          frames.push({ at: parent, parents: commitLinks(commits[parent].body).parents, next: 0 });
        }
        continue;
      }
      frames.pop();
      out.push(commits[top.at]);
      if (++sincePause === COMMITS_PER_STEP) {
        sincePause = 0;
        yield;
      }
    }
  }
  return out;
}
