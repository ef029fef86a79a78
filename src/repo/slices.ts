/**
 * Long reads (search, archive, compare of large trees, blame of long histories) run in slices: each
 * slice is one read of the store lasting a few milliseconds, and the event loop gets a turn between
 * slices, so other requests are not held up. Objects are immutable, so what one slice read stays
 * true in the next; refs and working trees are resolved once, before the first slice.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { oidToHex, type Oid } from '../git/oid.js';
import type { ProjectReadTx } from '../store/types.js';
import type { BlobAccess } from './diff/renames.js';
import type { Repo } from './repo.js';

/** How long one slice may hold the event loop. */
export const SLICE_MS = 8;

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

/** Runs `read` inside a read of the project's objects. */
export function readProject<T>(repo: Repo, read: (tx: ProjectReadTx) => T): T {
  return repo.store.read((store) => read(store.project(repo.project)));
}

/**
 * Calls `step` until it returns false, in slices: each slice one store read, with a turn of the
 * event loop between them.
 */
export async function inSlices(repo: Repo, step: (tx: ProjectReadTx) => boolean, slicer = new Slicer()): Promise<void> {
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
