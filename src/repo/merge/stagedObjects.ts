/** The objects a merge writes, held in memory until it is known to be clean (merge-ort writes nothing either). */
import { EMPTY_BLOB_OID, EMPTY_TREE_OID, hashObject, oidToHex, type Oid } from '../../git/oid.js';
import { decodeTree, encodeTreeSorted, type TreeEntry } from '../../git/tree.js';
import type { MergeObjects } from './mergeTrees.js';

/**
 * Holds every blob and tree a merge writes (merged files, conflict-marked files, virtual merge
 * bases) in memory. flush() writes only what the final tree reaches, so a conflicted merge or a
 * virtual base leaves nothing in the store.
 *
 * It also keeps the trees the merge read from the store (objects are immutable): the merge reads a
 * directory's subtrees ahead, together, and then again one by one. Reads are passed on to the store
 * at once, so reads asked for together reach it together.
 */
export class StagedObjects implements MergeObjects {
  private readonly blobs = new Map<string, Buffer>();
  private readonly trees = new Map<string, { entries: TreeEntry[]; body: Buffer }>();
  private readonly storedTrees = new Map<string, Promise<TreeEntry[]>>();

  constructor(private readonly store: MergeObjects) {}

  readTree(oid: Oid): Promise<TreeEntry[]> {
    const hex = oidToHex(oid);
    const staged = this.trees.get(hex);
    if (staged) return Promise.resolve(staged.entries);
    if (oid.equals(EMPTY_TREE_OID)) return Promise.resolve([]);
    let stored = this.storedTrees.get(hex);
    if (!stored) {
      stored = this.store.readTree(oid);
      this.storedTrees.set(hex, stored);
    }
    return stored;
  }

  readBlob(oid: Oid): Promise<Buffer> {
    const staged = this.blobs.get(oidToHex(oid));
    if (staged) return Promise.resolve(staged);
    if (oid.equals(EMPTY_BLOB_OID)) return Promise.resolve(Buffer.alloc(0));
    return this.store.readBlob(oid);
  }

  writeBlob(body: Buffer): Oid {
    const oid = hashObject('blob', body);
    this.blobs.set(oidToHex(oid), body);
    return oid;
  }

  writeTree(entries: TreeEntry[]): Oid {
    const { body, sorted } = encodeTreeSorted(entries);
    const oid = hashObject('tree', body);
    // Kept in stored (git) order: readers walk trees in that order. The entries are the caller's
    // (copied, not decoded again from the body); their ids are never written to in a merge.
    this.trees.set(oidToHex(oid), { entries: sorted.map(({ name, mode, oid: id }) => ({ name, mode, oid: id })), body });
    return oid;
  }

  putEncodedTree(oid: Oid, body: Buffer): void {
    this.trees.set(oidToHex(oid), { entries: decodeTree(body, true), body });
  }

  /** Writes the staged objects reachable from `root` to the store, children first (an explicit stack: trees may be thousands deep). */
  flush(root: Oid): void {
    const written = new Set<string>([oidToHex(root)]);
    const rootStaged = this.trees.get(oidToHex(root));
    if (!rootStaged) return; // already in the store
    const stack: Array<{ oid: Oid; staged: { entries: TreeEntry[]; body: Buffer }; next: number }> = [{ oid: root, staged: rootStaged, next: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.next >= top.staged.entries.length) {
        stack.pop();
        this.store.putEncodedTree(top.oid, top.staged.body);
        continue;
      }
      const entry = top.staged.entries[top.next++];
      const hex = oidToHex(entry.oid);
      if (written.has(hex)) continue;
      written.add(hex);
      if (entry.mode === '40000') {
        const staged = this.trees.get(hex);
        if (staged) stack.push({ oid: entry.oid, staged, next: 0 });
      } else {
        const body = this.blobs.get(hex);
        if (body) assertSameId(this.store.writeBlob(body), entry.oid);
      }
    }
  }
}

function assertSameId(written: Oid, expected: Oid): void {
  if (!written.equals(expected)) {
    throw new Error(`object store returned ${oidToHex(written)} for object ${oidToHex(expected)}`);
  }
}
