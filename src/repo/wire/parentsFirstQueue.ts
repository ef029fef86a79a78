/**
 * Commits of a pack as it is parsed, released each after its parents (Kahn's order across the
 * runs the pack checker streams, src/service/packChecker.ts): the commit index computes a commit's
 * generation number from its parents', so a store takes a commit only once they are taken. Git
 * writes a pack's commits newest first, so most wait for a later run. A commit whose parent never
 * comes (stored already, or missing) waits for good: its caller stores it after the check instead.
 */
import { commitLinks } from '../../git/commit.js';
import { oidToHex, type Oid } from '../../git/oid.js';
import { OidTable } from '../../git/oidTable.js';
import type { PackObject } from '../../git/pack.js';
import { Slicer } from '../slices.js';

export class ParentsFirstQueue {
  /** Commits released, and those waiting for a parent: by hex id, each with how many of its parents it waits for. */
  private readonly taken = new OidTable();
  private readonly waiting = new Map<string, { commit: PackObject; parentsAwaited: number }>();
  private readonly waitingOn = new Map<string, string[]>();

  /**
   * Of `commits` and those waiting, the ones whose parents are all released, each after its
   * parents, in slices: one run may hold 2,048 commits, whose ordering held the event loop some
   * 50 ms in one piece.
   */
  async release(commits: readonly PackObject[]): Promise<PackObject[]> {
    const ready: PackObject[] = [];
    const slicer = new Slicer();
    const releaseFrom = async (first: PackObject) => {
      const stack = [first];
      while (stack.length > 0) {
        await slicer.pause();
        const commit = stack.pop()!;
        ready.push(commit);
        this.taken.add(commit.oid);
        const hex = oidToHex(commit.oid);
        for (const child of this.waitingOn.get(hex) ?? []) {
          const entry = this.waiting.get(child)!;
          if (--entry.parentsAwaited > 0) continue;
          this.waiting.delete(child);
          stack.push(entry.commit);
        }
        this.waitingOn.delete(hex);
      }
    };
    for (const commit of commits) {
      await slicer.pause();
      const hex = oidToHex(commit.oid);
      if (this.taken.has(commit.oid) || this.waiting.has(hex)) continue;
      let parents: Oid[];
      try {
        parents = commitLinks(commit.body).parents;
      } catch {
        // Not checked yet: a malformed commit is left to the check, which refuses it.
        continue;
      }
      const awaited = parents.filter((parent) => !this.taken.has(parent));
      if (awaited.length === 0) {
        await releaseFrom(commit);
        continue;
      }
      this.waiting.set(hex, { commit, parentsAwaited: awaited.length });
      for (const parent of awaited) {
        const key = oidToHex(parent);
        const children = this.waitingOn.get(key);
        if (children) children.push(hex);
        else this.waitingOn.set(key, [hex]);
      }
    }
    return ready;
  }
}
