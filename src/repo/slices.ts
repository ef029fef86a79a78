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
 * Work that pauses cannot hold one read transaction across its pauses (the store's reads are
 * callbacks); it reads through `projectReads` (one read per call) or one read per slice. Objects
 * never change once stored, and refs and working trees are resolved once before the first slice,
 * so what one slice read stays true in the next.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { oidToHex, type Oid } from '../git/oid.js';
import type { ProjectReadTx } from '../store/types.js';
import type { BlobAccess } from './diff/renames.js';
import type { Repo } from './repo.js';

/** How long one slice may hold the event loop. */
export const SLICE_MS = 8;

/** A step of a sliced walk: it yields nothing but the chance to pause. */
export type Steps<T> = Generator<void, T, void>;

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
    const step = steps.next();
    if (step.done) return step.value;
    if (slicer.due) await slicer.pause();
  }
}

/** Runs a generator walk to its end without pausing. */
export function whole<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Runs `read` inside a read of the project's objects. */
export function readProject<T>(repo: Repo, read: (tx: ProjectReadTx) => T): T {
  return repo.store.read((store) => read(store.project(repo.project)));
}

/**
 * Calls `step` until it returns false, in slices: each slice one store read, with a turn of the
 * event loop between them.
 */
export async function readInSlices(repo: Repo, step: (tx: ProjectReadTx) => boolean, slicer = new Slicer()): Promise<void> {
  for (;;) {
    const more = readProject(repo, (tx) => {
      for (;;) {
        if (!step(tx)) return false;
        if (slicer.due) return true;
      }
    });
    if (!more) return;
    await slicer.pause();
  }
}

/** The project's reads, each in a read of its own, for walks that pause between them. */
export function projectReads(repo: Repo): ProjectReadTx {
  const read = <T>(action: (tx: ProjectReadTx) => T): T => readProject(repo, action);
  return {
    project: repo.project,
    getObject: (oid: Oid) => read((tx) => tx.getObject(oid)),
    peekObject: (oid: Oid) => read((tx) => tx.peekObject(oid)),
    hasObject: (oid: Oid) => read((tx) => tx.hasObject(oid)),
    objectSize: (oid: Oid) => read((tx) => tx.objectSize(oid)),
    findObjectsByPrefix: (hexPrefix: string, limit: number) => read((tx) => tx.findObjectsByPrefix(hexPrefix, limit)),
    getCommitInfo: (oid: Oid) => read((tx) => tx.getCommitInfo(oid)),
    getCommitObjects: (commit: Oid) => read((tx) => tx.getCommitObjects(commit)),
    getRef: (name: string) => read((tx) => tx.getRef(name)),
    listRefs: (prefix: string) => read((tx) => tx.listRefs(prefix)),
    getObjectWithAnnex: (oid: Oid) => read((tx) => tx.getObjectWithAnnex(oid)),
    getWorkingTree: (branch: string) => read((tx) => tx.getWorkingTree(branch)),
    getVersion: () => read((tx) => tx.getVersion()),
    peekDeflated: (oid: Oid) => read((tx) => tx.peekDeflated(oid)),
  };
}

/** Blob reads for rename detection and patches, each in a read of its own. */
export function blobAccess(repo: Repo): BlobAccess {
  const read = (oid: Oid) =>
    readProject(repo, (tx) => {
      const object = tx.getObject(oid);
      if (!object || object.type !== 'blob') throw new Error(`blob ${oidToHex(oid)} is missing`);
      return object.body;
    });
  return {
    readBlob: read,
    blobSize: (oid) => readProject(repo, (tx) => tx.objectSize(oid)) ?? 0,
  };
}
