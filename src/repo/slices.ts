/**
 * Long work in short slices, so one request never holds the event loop: a walk written as a
 * generator yields at points where it may pause (after a tree, after a commit), and `inSlices`
 * runs it for about SLICE_MS at a time, giving the event loop a turn in between. `whole` runs
 * the same generator without pausing, for callers that are synchronous.
 *
 * A walk that pauses cannot hold one read transaction across its pauses (the store's reads are
 * callbacks); it reads through `projectReads`, one read per call. Objects never change once
 * stored, and the walks start from ids fixed before the first pause, so what they see is consistent.
 */
import type { Oid } from '../git/oid.js';
import type { ProjectReadTx } from '../store/types.js';
import type { Repo } from './repo.js';

/** How long a slice runs before the event loop gets a turn. */
export const SLICE_MS = 8;

/** A step of a sliced walk: it yields nothing but the chance to pause. */
export type Steps<T> = Generator<void, T, void>;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function inSlices<T>(steps: Steps<T>, sliceMs = SLICE_MS): Promise<T> {
  let deadline = performance.now() + sliceMs;
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() >= deadline) {
      await nextTurn();
      deadline = performance.now() + sliceMs;
    }
  }
}

export function whole<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * Gives the event loop a turn when `sliceMs` have passed since the last one: for async loops that
 * are not generators (a pack stream), call it after each unit of work.
 */
export function sliceClock(sliceMs = SLICE_MS): () => Promise<void> | null {
  let deadline = performance.now() + sliceMs;
  return () => {
    if (performance.now() < deadline) return null;
    return nextTurn().then(() => {
      deadline = performance.now() + sliceMs;
    });
  };
}

/** The project's reads, each in a read of its own (see the module comment). */
export function projectReads(repo: Repo): ProjectReadTx {
  const read = <T>(action: (tx: ProjectReadTx) => T): T => repo.store.read((store) => action(store.project(repo.project)));
  return {
    project: repo.project,
    getObject: (oid: Oid) => read((tx) => tx.getObject(oid)),
    hasObject: (oid: Oid) => read((tx) => tx.hasObject(oid)),
    objectSize: (oid: Oid) => read((tx) => tx.objectSize(oid)),
    findObjectsByPrefix: (hexPrefix: string, limit: number) => read((tx) => tx.findObjectsByPrefix(hexPrefix, limit)),
    getCommitInfo: (oid: Oid) => read((tx) => tx.getCommitInfo(oid)),
    getRef: (name: string) => read((tx) => tx.getRef(name)),
    listRefs: (prefix: string) => read((tx) => tx.listRefs(prefix)),
    getObjectWithAnnex: (oid: Oid) => read((tx) => tx.getObjectWithAnnex(oid)),
    getWorkingTree: (branch: string) => read((tx) => tx.getWorkingTree(branch)),
    getVersion: () => read((tx) => tx.getVersion()),
    peekDeflated: (oid: Oid) => read((tx) => tx.peekDeflated(oid)),
  };
}
