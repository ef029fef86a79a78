/**
 * Long work in short slices, so one request never holds the event loop: clones and fetches (pack
 * planning and the pack stream), search, archive, compare of large trees, blame of long histories.
 * A slice lasts about SLICE_MS; the event loop gets a turn between slices.
 *
 * Two shapes of the same idea:
 * - a walk written as a generator yields at points where it may pause (after a tree, after a commit);
 *   `inSlices` runs it a slice at a time, `whole` without pausing (for synchronous callers);
 * - a loop that is not a generator calls `Slicer.pause()` between units of work, or `readInSlices`
 *   runs a step function over the store, one read per slice.
 *
 * Work that pauses does not hold one read transaction across its pauses; it reads through
 * `projectReads` (one read per call) or one read per slice. Objects
 * never change once stored, and refs and working trees are resolved once before the first slice,
 * so what one slice read stays true in the next.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { inReadTx, type ReadTx, type Repo } from './repo.js';

/** How long one slice may hold the event loop. */
export const SLICE_MS = 8;

/** A step of a sliced walk: it yields nothing but the chance to pause. */
export type Steps<T> = AsyncGenerator<void, T, void>;

/** Gives the event loop a turn once a slice's time is up; call it between units of work. */
export class Slicer {
  private sliceEnd = performance.now() + SLICE_MS;

  /** True when the current slice's time is up. */
  get due(): boolean {
    return performance.now() >= this.sliceEnd;
  }

  /** Yields to the event loop if the slice's time is up. */
  async pause(): Promise<void> {
    if (!this.due) return;
    await turn();
    this.sliceEnd = performance.now() + SLICE_MS;
  }
}

/** Runs a generator walk a slice at a time. */
export async function inSlices<T>(steps: Steps<T>, slicer = new Slicer()): Promise<T> {
  for (;;) {
    const step = await steps.next();
    if (step.done) return step.value;
    if (slicer.due) await slicer.pause();
  }
}

/** Runs a synchronous walk (src/git's, which cannot await) a slice at a time. */
export async function inSlicesOf<T>(steps: Generator<void, T, void>, slicer = new Slicer()): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (slicer.due) await slicer.pause();
  }
}

/** Runs a generator walk to its end without pausing. */
export async function whole<T>(steps: Steps<T>): Promise<T> {
  for (;;) {
    const step = await steps.next();
    if (step.done) return step.value;
  }
}

/**
 * Calls `step` until it returns false, in slices: a slice of steps runs in one store read, with a
 * turn of the event loop between slices.
 */
export async function readInSlices(repo: Repo, step: (tx: ReadTx) => Promise<boolean>, slicer = new Slicer()): Promise<void> {
  for (;;) {
    const more = await inReadTx(repo, async (tx) => {
      for (;;) {
        if (!(await step(tx))) return false;
        if (slicer.due) return true;
      }
    });
    if (!more) return;
    await slicer.pause();
  }
}

/** The project's reads, each in a read of its own, for walks that pause between them. */
export function projectReads(repo: Repo): ReadTx {
  const read = <T>(action: (tx: ReadTx) => Promise<T>): Promise<T> => inReadTx(repo, action);
  const reads: ReadTx = {
    project: repo.project,
    getObject: (oid) => read((tx) => tx.getObject(oid)),
    getObjects: (oids) => read((tx) => tx.getObjects(oids)),
    getObjectsWithAnnex: (oids) => read((tx) => tx.getObjectsWithAnnex(oids)),
    hasObjects: (oids) => read((tx) => tx.hasObjects(oids)),
    objectSizes: (oids) => read((tx) => tx.objectSizes(oids)),
    objectTypes: (oids) => read((tx) => tx.objectTypes(oids)),
    findObjectsByPrefix: (hexPrefix, limit) => read((tx) => tx.findObjectsByPrefix(hexPrefix, limit)),
    getCommitInfos: (oids) => read((tx) => tx.getCommitInfos(oids)),
    getCommitObjects: (commit) => read((tx) => tx.getCommitObjects(commit)),
    getRef: (name) => read((tx) => tx.getRef(name)),
    listRefs: (prefix) => read((tx) => tx.listRefs(prefix)),
    getWorkingTree: (branch) => read((tx) => tx.getWorkingTree(branch)),
    getVersion: () => read((tx) => tx.getVersion()),
  };
  if (repo.store.packForms) {
    reads.getDeflated = (oids) => read((tx) => tx.getDeflated!(oids));
    reads.getDeflatedWithin = (oids, bytesMax) => read((tx) => tx.getDeflatedWithin!(oids, bytesMax));
  }
  // A backend without views is read with copies (the same visits).
  reads.visitObjects = (oids, visit) =>
    read(async (tx) => {
      if (tx.visitObjects) return tx.visitObjects(oids, visit);
      const objects = await tx.getObjects(oids);
      for (let i = 0; i < objects.length; i++) if (!visit(objects[i], i)) return i + 1;
      return objects.length;
    });
  return reads;
}
