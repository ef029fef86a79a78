/**
 * The mark of a garbage collection: every id reachable from the roots it is given, kept in one
 * OidTable (ids as bytes, no object per id: a project holds millions). The walk is iterative (a
 * tree may be 4,096 levels deep) and reads a batch of commits, trees or tags per store read, with a
 * turn of the event loop whenever a slice's time is up.
 *
 * What an id references: a commit its tree and parents (from the commit index, no parse), a tree
 * its entries (a submodule's gitlink is a commit of another repository: not an object here), a tag
 * its object. A blob is marked without being read. An id the store does not hold is marked and
 * left (a shallow boundary's parents, a root of a project being dropped).
 *
 * With `followForms`, a newly marked object whose pack-ready form is a delta marks its base too
 * (and what the base references): an object marked after the collector listed the store keeps its
 * form's chain; objects marked before are dealt with by rewriting forms (collect.ts).
 *
 * Options: `blobsInto` marks trees only (the hot trees of collect.ts, which keep their raw
 * copies) and gathers the blobs the walk meets in that table instead; `recordOrder` keeps the ids
 * in the order they were marked (OidStack `order`), which is about the order of history, a batch of
 * commits at a time: collect.ts shelves cold forms in it; `onForm` is told every form the walk
 * looks at (followForms), so a collection knows the forms writers made during it.
 */
import { decodeTag } from '../../git/tag.js';
import { ENTRY_FILE, ENTRY_TREE, TreeCursor } from '../../git/tree.js';
import { OidTable } from '../../git/oidTable.js';
import type { ObjectType, Oid } from '../../git/oid.js';
import type { CollectionReads, ProjectReads } from '../../store/asyncTypes.js';
import type { StoredEntry } from '../../store/types.js';
import { Slicer } from '../slices.js';

/** Ids per batched read: commits and ids of unknown type. */
const COMMITS_PER_READ = 512;
/** Trees and tags per batched read (their bodies are read). */
const TREES_PER_READ = 128;

export type MarkReads = Pick<ProjectReads, 'getCommitInfos' | 'getObjects'> & Pick<CollectionReads, 'describeStored'>;

/** A stack of ids in one growing buffer (no object per id). */
export class OidStack {
  private bytes = Buffer.alloc(64 * 20);
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(oid: Uint8Array, offset = 0): void {
    if ((this.count + 1) * 20 > this.bytes.length) {
      const grown = Buffer.alloc(this.bytes.length * 2);
      this.bytes.copy(grown);
      this.bytes = grown;
    }
    this.bytes.set(oid.subarray(offset, offset + 20), this.count * 20);
    this.count++;
  }

  /** The id at `index` from the bottom, as a view (valid until the next push). */
  at(index: number): Uint8Array {
    return this.bytes.subarray(index * 20, (index + 1) * 20);
  }

  /** Up to `max` ids from the top, as copies. */
  pop(max: number): Oid[] {
    const taken = Math.min(max, this.count);
    const out: Oid[] = [];
    for (let i = 0; i < taken; i++) {
      this.count--;
      out.push(Buffer.from(this.bytes.subarray(this.count * 20, (this.count + 1) * 20)));
    }
    return out;
  }
}

export class Marker {
  readonly marked = new OidTable();
  /** Follow pack-ready forms' bases (see the module's comment). */
  followForms = false;
  private readonly commits = new OidStack();
  private readonly trees = new OidStack();
  private readonly tags = new OidStack();
  /** Ids of unknown type (roots from the journal, tags' objects): their type is read first. */
  private readonly unknown = new OidStack();
  /** Newly marked ids whose forms are to be looked at (followForms). */
  private readonly formsToLook = new OidStack();
  /** Every id marked, in the order marked, when asked for (recordOrder). */
  readonly order: OidStack | null;
  private readonly blobsInto: OidTable | null;
  private readonly onForm: ((entry: StoredEntry) => void) | null;

  constructor(
    private readonly reads: MarkReads,
    private readonly slicer = new Slicer(),
    options: { blobsInto?: OidTable; recordOrder?: boolean; onForm?: (entry: StoredEntry) => void } = {},
  ) {
    this.blobsInto = options.blobsInto ?? null;
    this.order = options.recordOrder ? new OidStack() : null;
    this.onForm = options.onForm ?? null;
  }

  isMarked(oid: Uint8Array, offset = 0): boolean {
    return this.marked.has(oid, offset);
  }

  /** Marks `oid` (of `type`, when known) and, once `drain` runs, everything it references. */
  add(oid: Uint8Array, type: ObjectType | undefined, offset = 0): void {
    if (type === 'blob' && this.blobsInto) {
      this.blobsInto.add(oid, offset);
      return;
    }
    if (!this.marked.add(oid, offset)) return;
    this.order?.push(oid, offset);
    this.queue(oid, type, offset);
    if (this.followForms) this.formsToLook.push(oid, offset);
  }

  /** Looks at the form of `oid`, marked already, again (it was journalled: it may have a new form). */
  lookAgain(oid: Uint8Array): void {
    this.formsToLook.push(oid);
  }

  private queue(oid: Uint8Array, type: ObjectType | undefined, offset = 0): void {
    if (type === 'commit') this.commits.push(oid, offset);
    else if (type === 'tree') this.trees.push(oid, offset);
    else if (type === 'tag') this.tags.push(oid, offset);
    else if (type === undefined) this.unknown.push(oid, offset);
  }

  /**
   * Walks until everything marked has had its references marked; `reads` may be a write's. With
   * `readsMax`, stops after that many batched reads: false when work is left (a later drain goes on).
   */
  async drain(reads: MarkReads = this.reads, readsMax = Infinity): Promise<boolean> {
    for (let done = 0; ; done++) {
      if (done >= readsMax && this.pending) return false;
      if (this.unknown.length > 0) await this.typeUnknown(reads);
      else if (this.formsToLook.length > 0) await this.lookAtForms(reads);
      else if (this.commits.length > 0) await this.walkCommits(reads);
      else if (this.tags.length > 0) await this.walkTags(reads);
      else if (this.trees.length > 0) await this.walkTrees(reads);
      else return true;
      await this.slicer.pause();
    }
  }

  private get pending(): boolean {
    return this.unknown.length + this.formsToLook.length + this.commits.length + this.tags.length + this.trees.length > 0;
  }

  private async typeUnknown(reads: MarkReads): Promise<void> {
    const oids = this.unknown.pop(COMMITS_PER_READ);
    const entries = await reads.describeStored(oids);
    entries.forEach((entry, i) => {
      if (entry?.type && entry.type !== 'blob') this.queue(oids[i], entry.type);
    });
  }

  private async lookAtForms(reads: MarkReads): Promise<void> {
    const oids = this.formsToLook.pop(COMMITS_PER_READ);
    for (const entry of await reads.describeStored(oids)) {
      if (entry) this.onForm?.(entry);
      if (entry?.formBase) this.add(entry.formBase, undefined);
    }
  }

  private async walkCommits(reads: MarkReads): Promise<void> {
    const oids = this.commits.pop(COMMITS_PER_READ);
    const infos = await reads.getCommitInfos(oids);
    for (const info of infos) {
      if (!info) continue;
      this.add(info.tree, 'tree');
      for (const parent of info.parents) this.add(parent, 'commit');
    }
  }

  private async walkTrees(reads: MarkReads): Promise<void> {
    const oids = this.trees.pop(TREES_PER_READ);
    const objects = await reads.getObjects(oids);
    for (const object of objects) {
      if (object?.type !== 'tree') continue;
      const cursor = new TreeCursor(object.body);
      while (cursor.next()) {
        if (cursor.kind === ENTRY_TREE) this.add(object.body, 'tree', cursor.oidStart);
        else if (cursor.kind === ENTRY_FILE) this.add(object.body, 'blob', cursor.oidStart);
      }
    }
  }

  private async walkTags(reads: MarkReads): Promise<void> {
    const oids = this.tags.pop(TREES_PER_READ);
    for (const object of await reads.getObjects(oids)) {
      if (object?.type !== 'tag') continue;
      const tag = decodeTag(object.body);
      this.add(tag.object, tag.type);
    }
  }
}
