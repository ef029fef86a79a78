/**
 * The merge engine reads through asynchronous interfaces (MergeObjects, CommitGraph); the tests
 * keep their objects in a MemoryObjects and read them through this view, which also counts the
 * reads that reach the objects.
 */
import type { Oid } from '../../../src/git/oid.js';
import type { TreeEntry } from '../../../src/git/tree.js';
import type { CommitGraph } from '../../../src/repo/merge/mergeBase.js';
import type { MergeObjects } from '../../../src/repo/merge/mergeTrees.js';
import type { MemoryObjects } from '../../support/memoryObjects.js';

export class AsyncObjects implements MergeObjects, CommitGraph {
  treeReads = 0;
  blobReads = 0;
  writes = 0;

  constructor(readonly memory: MemoryObjects) {}

  async readTree(oid: Oid): Promise<TreeEntry[]> {
    this.treeReads++;
    return this.memory.readTree(oid);
  }

  async readBlob(oid: Oid): Promise<Buffer> {
    this.blobReads++;
    return this.memory.readBlob(oid);
  }

  writeBlob(body: Buffer): Oid {
    this.writes++;
    return this.memory.writeBlob(body);
  }

  writeTree(entries: TreeEntry[]): Oid {
    this.writes++;
    return this.memory.writeTree(entries);
  }

  putEncodedTree(oid: Oid, body: Buffer): void {
    this.writes++;
    this.memory.putEncodedTree(oid, body);
  }

  async parents(oid: Oid): Promise<Oid[]> {
    return this.memory.parents(oid);
  }

  async generation(oid: Oid): Promise<number> {
    return this.memory.generation(oid);
  }

  async commitTime(oid: Oid): Promise<number> {
    return this.memory.commitTime(oid);
  }

  async tree(oid: Oid): Promise<Oid> {
    return this.memory.tree(oid);
  }
}
