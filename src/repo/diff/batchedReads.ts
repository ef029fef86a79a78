/**
 * Batched reads for the walks of compare, blame, search and archive: a store may pay a round trip
 * per call, so trees are read a batch of siblings at a time and blobs a batch at a time, bounded
 * in count and in bytes (sizes are read first, so a batch never holds more than about
 * BLOB_BATCH_BYTES, however large the files). What a walk reads ahead changes when it reads, not
 * what it answers: search and archive report a missing tree or blob where they reach it, after
 * everything before it, as when they read one object at a time.
 */
import type { Oid } from '../../git/oid.js';
import { decodeTree, MODE_TREE, type TreeEntry } from '../../git/tree.js';
import type { ProjectReads } from '../../store/asyncTypes.js';
import { bodyOf, inReadTx, type Repo } from '../repo.js';
import { annexedSize, SIZE_UNKNOWN } from '../worktree/workingDir.js';
import type { BlobAccess } from './renames.js';
import { MissingObjectError } from '../../errors.js';

/** Blobs in one read at most. */
export const BLOB_BATCH_MAX = 256;
/** Bytes of blobs in one read at most (a larger blob is read alone). */
export const BLOB_BATCH_BYTES = 4 * 1024 * 1024;
/** Trees in one read at most. */
export const TREE_BATCH_MAX = 128;

/** Decoded trees in the order asked (null: no tree); undefined where the store has no such tree. */
export async function readTrees(tx: ProjectReads, oids: ReadonlyArray<Oid | null>): Promise<Array<TreeEntry[] | undefined>> {
  const wanted = oids.filter((oid): oid is Oid => oid !== null);
  const objects = wanted.length > 0 ? await tx.getObjects(wanted) : [];
  let next = 0;
  return oids.map((oid) => {
    if (!oid) return [];
    const object = objects[next++];
    return object && object.type === 'tree' ? decodeTree(object.body, true) : undefined;
  });
}

/** A tree readTrees found, or the error a walk reports for a tree the store lacks. */
export function requireTree(entries: TreeEntry[] | undefined, oid: Oid): TreeEntry[] {
  if (!entries) throw new MissingObjectError('tree', oid);
  return entries;
}

/**
 * Ends of consecutive groups of `sizes` (undefined counts as 0) for one read each: at most
 * BLOB_BATCH_MAX items and BLOB_BATCH_BYTES bytes, at least one item.
 */
export function batchEnds(sizes: ReadonlyArray<number | undefined>): number[] {
  const ends: number[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < sizes.length; i++) {
    const size = sizes[i] ?? 0;
    if (i > start && (i - start >= BLOB_BATCH_MAX || bytes + size > BLOB_BATCH_BYTES)) {
      ends.push(i);
      start = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (sizes.length > start) ends.push(sizes.length);
  return ends;
}


/** Blob reads with their batched forms, each call a read of its own (walks pause between them). */
export function blobReads(repo: Repo): Required<BlobAccess> {
  const blobSizes = (oids: readonly Oid[]) => inReadTx(repo, async (tx) => (await tx.objectSizes(oids)).map((size) => size ?? 0));
  const readBlobs = async (oids: readonly Oid[]): Promise<Buffer[]> => {
    if (oids.length === 0) return [];
    const objects = await inReadTx(repo, (tx) => tx.getObjects(oids));
    return objects.map((object, i) => bodyOf(object, 'blob', oids[i]));
  };
  return {
    readBlob: async (oid) => (await readBlobs([oid]))[0],
    blobSize: async (oid) => (await blobSizes([oid]))[0],
    blobSizes,
    readBlobs,
  };
}

/** Sizes of many blobs through a BlobAccess, in one read when it offers its batched form. */
export function sizesOf(blobs: BlobAccess, oids: readonly Oid[]): Promise<number[]> {
  if (oids.length === 0) return Promise.resolve([]);
  return blobs.blobSizes ? blobs.blobSizes(oids) : Promise.all(oids.map((oid) => blobs.blobSize(oid)));
}

/**
 * Blobs through a BlobAccess, a read per group of batchEnds(`sizes`) (`sizes` by index, as known):
 * yields each group's bodies with the index of its first, so a caller holds one group at a time.
 */
export async function* blobBatches(
  blobs: BlobAccess,
  oids: readonly Oid[],
  sizes: ReadonlyArray<number | undefined>,
): AsyncGenerator<{ start: number; bodies: Buffer[] }, void, void> {
  let start = 0;
  for (const end of batchEnds(sizes)) {
    const group = oids.slice(start, end);
    const bodies = blobs.readBlobs ? await blobs.readBlobs(group) : await Promise.all(group.map((oid) => blobs.readBlob(oid)));
    yield { start, bodies };
    start = end;
  }
}

/**
 * Hands each blob of `oids` to `visit` in turn, read in one read, with a body `visit` may look at
 * only during its call (where the store offers ProjectReads.visitObjects, a view of its memory;
 * else a copy), until `visit` returns false; resolves with how many it visited. A blob the store
 * lacks is an error where the walk reaches it.
 */
export async function visitBlobs(reads: ProjectReads, oids: readonly Oid[], visit: (body: Buffer, index: number) => boolean): Promise<number> {
  if (oids.length === 0) return 0;
  const each = (object: { type: string; body: Buffer } | undefined, index: number) => visit(bodyOf(object, 'blob', oids[index]), index);
  if (reads.visitObjects) return reads.visitObjects(oids, each);
  const objects = await reads.getObjects(oids);
  for (let i = 0; i < objects.length; i++) if (!each(objects[i], i)) return i + 1;
  return objects.length;
}

export interface WalkedEntry {
  /** Path from the root, "/"-separated. */
  path: string;
  entry: TreeEntry;
  /** Directories above the entry (0 at the root). */
  depth: number;
  /** A file's size when its tree records it (trees written through the API do), else undefined. */
  size: number | undefined;
}

/** A tree as walkTree holds it: its entries and the sizes its annex records. */
interface WalkedTree {
  entries: TreeEntry[];
  annex: Buffer | null;
}

/** Trees with their annexes, in the order asked; undefined where the store has no such tree. */
async function readWalkedTrees(reads: ProjectReads, oids: readonly Oid[]): Promise<Array<WalkedTree | undefined>> {
  const objects = oids.length > 0 ? await reads.getObjectsWithAnnex(oids) : [];
  return objects.map((object) => (object && object.type === 'tree' ? { entries: decodeTree(object.body, true), annex: object.annex } : undefined));
}

/**
 * Every entry below `root`, depth first in stored (git) order, each directory just before what it
 * holds; directories `descend` refuses are not entered. The subtrees of a directory are read a
 * batch of siblings at a time, so the walk holds at most TREE_BATCH_MAX trees per level beyond the
 * path it is on, never the tree whole.
 */
/**
 * The walk's next entry, or its end; a walk that failed (a tree the store lacks) ends with its
 * error, which the caller reports once it has handled the entries before it.
 */
export async function nextWalked<T = WalkedEntry>(walk: AsyncGenerator<T, void, void>): Promise<{ entry: T } | { end: true; error?: { cause: unknown } }> {
  try {
    const step = await walk.next();
    return step.done ? { end: true } : { entry: step.value };
  } catch (cause) {
    return { end: true, error: { cause } };
  }
}

export async function* walkTree(reads: ProjectReads, root: Oid, descend: (path: string) => boolean): AsyncGenerator<WalkedEntry, void, void> {
  for await (const chunk of walkTreeChunks(reads, root, descend)) yield* chunk;
}

/** Entries walkTreeChunks gives at most at once. */
const WALK_CHUNK_ENTRIES = 1024;

/**
 * walkTree's entries, a chunk at a time: all those it reaches before it must read more trees (at
 * most WALK_CHUNK_ENTRIES), so a caller that takes many entries pays a turn of the generator per
 * chunk, not per entry. A walk that fails gives the entries before the failure first.
 */
export async function* walkTreeChunks(reads: ProjectReads, root: Oid, descend: (path: string) => boolean): AsyncGenerator<WalkedEntry[], void, void> {
  type Frame = { dir: string; tree: WalkedTree; next: number; subtrees: Map<number, WalkedTree | undefined> };
  const pathOf = (frame: Frame, entry: TreeEntry) => (frame.dir === '' ? entry.name : `${frame.dir}/${entry.name}`);
  const [rootTree] = await readWalkedTrees(reads, [root]);
  if (!rootTree) throw new MissingObjectError('tree', root);
  const frames: Frame[] = [{ dir: '', tree: rootTree, next: 0, subtrees: new Map() }];
  let chunk: WalkedEntry[] = [];
  while (frames.length > 0) {
    const frame = frames[frames.length - 1];
    const { entries, annex } = frame.tree;
    if (frame.next >= entries.length) {
      frames.pop();
      continue;
    }
    const index = frame.next++;
    const entry = entries[index];
    const path = pathOf(frame, entry);
    const known = entry.mode === MODE_TREE || annex === null ? SIZE_UNKNOWN : annexedSize(annex, entries.length, index);
    chunk.push({ path, entry, depth: frames.length - 1, size: known === SIZE_UNKNOWN ? undefined : known });
    if (chunk.length >= WALK_CHUNK_ENTRIES) {
      yield chunk;
      chunk = [];
    }
    if (entry.mode !== MODE_TREE || !descend(path)) continue;
    if (!frame.subtrees.has(index)) {
      // The entries so far go first: the read may fail, and they are the caller's before it.
      if (chunk.length > 0) {
        yield chunk;
        chunk = [];
      }
      // This subtree and the next siblings the walk will enter, in one read.
      const batch: number[] = [];
      for (let i = index; i < entries.length && batch.length < TREE_BATCH_MAX; i++) {
        const sibling = entries[i];
        if (sibling.mode === MODE_TREE && (i === index || descend(pathOf(frame, sibling)))) batch.push(i);
      }
      const trees = await readWalkedTrees(reads, batch.map((i) => entries[i].oid));
      batch.forEach((i, k) => frame.subtrees.set(i, trees[k]));
    }
    const tree = frame.subtrees.get(index);
    if (!tree) {
      if (chunk.length > 0) yield chunk;
      throw new MissingObjectError('tree', entry.oid);
    }
    frame.subtrees.delete(index);
    frames.push({ dir: path, tree, next: 0, subtrees: new Map() });
  }
  if (chunk.length > 0) yield chunk;
}
