/**
 * One directory of a working tree (src/repo/worktree/workingTree.ts), as cheap to change as the change is small.
 *
 * A directory starts as the bytes of its stored tree and its size annex. While its names stay the
 * same (a file gets new content or a new mode of the same length, a subdirectory a new tree id) it
 * is patched in place, so a write of one file into a directory of twenty never decodes the other
 * nineteen entries, and hashing it needs no sort or re-encoding. Adding or removing an entry splices
 * the bytes at its place in git order (found by binary search: stored trees are in git order, our
 * encoder writes them so and received trees pass fsck's order check), so a write into a directory
 * of thousands of files builds no object per entry. Retyping an entry (a file becoming a directory,
 * a mode of another length) decodes it into a map once; from then on it is encoded like any tree.
 */
import type { Oid } from '../../git/oid.js';
import { OID_BYTES } from '../../git/oid.js';
import { decodePath, encodePath } from '../../git/pathBytes.js';
import { encodeTreeSorted, knownMode, MODE_GITLINK, MODE_TREE, TreeFormatError, type TreeEntry, type TreeMode } from '../../git/tree.js';

/**
 * One entry. For a file `oid` is its blob; for a directory it is the tree the subdirectory holds,
 * or null while a change below it is not hashed yet.
 */
export interface WorkingEntry {
  name: string;
  mode: TreeMode;
  oid: Oid | null;
  /** Bytes of the blob (SIZE_UNKNOWN: not known yet); 0 for directories and gitlinks. */
  size: number;
}

/**
 * Size of a blob whose tree carries no sizes (a tree that came from a push, a seed or a merge):
 * reading a blob's length means reading the blob, so it is left until a listing needs it.
 */
export const SIZE_UNKNOWN = -1;
/** The annex holds one u32 BE size per entry, in the tree's order; this value means unknown. */
const ANNEX_UNKNOWN = 0xffffffff;
const ANNEX_BYTES_PER_ENTRY = 4;
const SPACE = 0x20;
const NUL = 0;
const SLASH = 0x2f;
const DIGIT_ZERO = 0x30;

/** The tree bytes of a directory whose names are unchanged, with where each entry lies. */
interface RawForm {
  /** A copy of the tree's body, patched in place. */
  body: Buffer;
  /** Sizes (see ANNEX_UNKNOWN), patched in place; null when the tree was stored without them. */
  annex: Buffer | null;
  /** Per entry: offset of its mode, of the space after it and of the NUL after its name. */
  starts: number[];
  spaces: number[];
  nuls: number[];
  /** Entries whose id waits for their subdirectory to be hashed. */
  pending: Set<number>;
  /**
   * Where names looked up lie, while no entry is added or removed: a write looks up each
   * directory on its path again to set its file and to mark each parent changed, and every file of
   * a batch looks up the directories their paths share (in a commit of 100 files at 100,000 the
   * binary searches were a third of the working tree's time).
   */
  found: Map<string, number>;
}

export class WorkingDir {
  /** The directory's tree id, or null once something in it changed. */
  tree: Oid | null;
  /** The stored tree this directory was read from (null for a new one): its new tree's likely delta base. */
  readonly storedAs: Oid | null;
  private raw: RawForm | null;
  private map: Map<string, WorkingEntry> | null;

  private constructor(tree: Oid | null, raw: RawForm | null, map: Map<string, WorkingEntry> | null) {
    this.tree = tree;
    this.storedAs = tree;
    this.raw = raw;
    this.map = map;
  }

  /** A stored tree; `body` and `annex` become the directory's own (the caller must not reuse them). */
  static fromTree(tree: Oid, body: Buffer, annex: Buffer | null): WorkingDir {
    const { starts, spaces, nuls } = entryOffsets(body);
    const dir = new WorkingDir(tree, { body, annex: usableAnnex(annex, starts.length), starts, spaces, nuls, pending: new Set(), found: new Map() }, null);
    // A tree an old git wrote, with a mode spelled "040000", is held decoded: the raw form reads
    // a directory by its mode's length and patches modes in place, and what it writes anew is
    // spelled as git spells it ("40000").
    if (starts.some((start) => body[start] === DIGIT_ZERO)) dir.decode();
    return dir;
  }

  /** A directory that does not exist in any stored tree yet. */
  static empty(): WorkingDir {
    return new WorkingDir(null, null, new Map());
  }

  get size(): number {
    return this.raw ? this.raw.starts.length : this.map!.size;
  }

  get(name: string): WorkingEntry | undefined {
    if (this.map) return this.map.get(name);
    const index = this.indexOf(name);
    return index < 0 ? undefined : this.rawEntry(index, name);
  }

  /** Every entry, in the tree's order while unchanged, else in the order they were added. */
  *entries(): Generator<WorkingEntry> {
    if (this.map) {
      yield* this.map.values();
      return;
    }
    const raw = this.raw!;
    for (let index = 0; index < raw.starts.length; index++) {
      yield this.rawEntry(index, decodePath(raw.body, raw.spaces[index] + 1, raw.nuls[index]));
    }
  }

  /** Adds or replaces an entry; patches the tree bytes when the names and the entry's type stay. */
  set(entry: WorkingEntry): void {
    this.tree = null;
    const raw = this.raw;
    if (raw) {
      const index = this.indexOf(entry.name);
      if (index >= 0 && raw.spaces[index] - raw.starts[index] === entry.mode.length && (entry.mode === MODE_TREE) === this.isTreeAt(index)) {
        raw.body.write(entry.mode, raw.starts[index], 'latin1');
        if (entry.oid) {
          entry.oid.copy(raw.body, raw.nuls[index] + 1);
          raw.pending.delete(index);
        } else {
          raw.pending.add(index);
        }
        this.setSizeAt(index, entry.size);
        return;
      }
      if (index < 0) {
        this.insertRaw(entry);
        return;
      }
      this.decode();
    }
    this.map!.set(entry.name, { name: entry.name, mode: entry.mode, oid: entry.oid, size: entry.size });
  }

  delete(name: string): void {
    this.tree = null;
    if (this.raw) {
      const index = this.indexOf(name);
      if (index >= 0) this.removeRaw(index);
      return;
    }
    this.map!.delete(name);
  }

  /** Marks a subdirectory changed: its id is unknown until it is hashed again. */
  clearOid(name: string): void {
    this.tree = null;
    if (this.map) {
      const entry = this.map.get(name);
      if (entry) entry.oid = null;
      return;
    }
    const index = this.indexOf(name);
    if (index >= 0) this.raw!.pending.add(index);
  }

  /**
   * The tree body and size annex of the directory as it is now; `resolve` gives the id of each
   * subdirectory whose id was cleared.
   */
  encode(resolve: (name: string) => Oid): { body: Buffer; annex: Buffer } {
    const raw = this.raw;
    if (raw) {
      for (const index of raw.pending) {
        resolve(decodePath(raw.body, raw.spaces[index] + 1, raw.nuls[index])).copy(raw.body, raw.nuls[index] + 1);
      }
      raw.pending.clear();
      if (!raw.annex) raw.annex = Buffer.alloc(raw.starts.length * ANNEX_BYTES_PER_ENTRY, 0xff);
      return { body: raw.body, annex: raw.annex };
    }
    const entries: Array<WorkingEntry & TreeEntry> = [];
    for (const entry of this.map!.values()) {
      if (entry.oid === null) entry.oid = resolve(entry.name);
      entries.push(entry as WorkingEntry & TreeEntry);
    }
    const { body, sorted } = encodeTreeSorted(entries);
    const annex = Buffer.allocUnsafe(sorted.length * ANNEX_BYTES_PER_ENTRY);
    sorted.forEach((entry, index) => annex.writeUInt32BE(annexSize(entry.size), index * ANNEX_BYTES_PER_ENTRY));
    return { body, annex };
  }

  private indexOf(name: string): number {
    const raw = this.raw!;
    const known = raw.found.get(name);
    if (known !== undefined) return known;
    const wanted = encodePath(name);
    // A name is there once at most, as a file or as a directory: each sorts at its own place.
    let index = this.lowerBound(wanted, false);
    if (index >= raw.starts.length || this.compareAt(index, wanted, false) !== 0) {
      index = this.lowerBound(wanted, true);
      if (index >= raw.starts.length || this.compareAt(index, wanted, true) !== 0) return -1;
    }
    raw.found.set(name, index);
    return index;
  }

  /** The first entry that does not sort before `name` (a directory when `isTree`). */
  private lowerBound(name: Buffer, isTree: boolean): number {
    let low = 0;
    let high = this.raw!.starts.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.compareAt(middle, name, isTree) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** compareTreeNames of entry `index` against `name`, on the bytes in place. */
  private compareAt(index: number, name: Buffer, isTree: boolean): number {
    const raw = this.raw!;
    const start = raw.spaces[index] + 1;
    const length = raw.nuls[index] - start;
    const common = Math.min(length, name.length);
    // Byte by byte here: names are short, and Buffer.compare costs a call into C++ each time.
    const body = raw.body;
    for (let at = 0; at < common; at++) {
      const difference = body[start + at] - name[at];
      if (difference !== 0) return difference;
    }
    const ownNext = length > common ? raw.body[start + common] : this.isTreeAt(index) ? SLASH : 0;
    const otherNext = name.length > common ? name[common] : isTree ? SLASH : 0;
    return ownNext - otherNext;
  }

  /** Splices a new entry into the tree bytes at its place in git order. */
  private insertRaw(entry: WorkingEntry): void {
    const raw = this.raw!;
    const nameBytes = encodePath(entry.name);
    const isTree = entry.mode === MODE_TREE;
    const at = this.lowerBound(nameBytes, isTree);
    const offset = at < raw.starts.length ? raw.starts[at] : raw.body.length;
    const added = entry.mode.length + 1 + nameBytes.length + 1 + OID_BYTES;
    const body = Buffer.allocUnsafe(raw.body.length + added);
    raw.body.copy(body, 0, 0, offset);
    let cursor = offset + body.write(entry.mode, offset, 'latin1');
    body[cursor] = SPACE;
    const space = cursor++;
    cursor += nameBytes.copy(body, cursor);
    body[cursor] = NUL;
    const nul = cursor++;
    if (entry.oid) entry.oid.copy(body, cursor);
    else body.fill(0, cursor, cursor + OID_BYTES);
    raw.body.copy(body, offset + added, offset);
    raw.body = body;
    for (let index = at; index < raw.starts.length; index++) {
      raw.starts[index] += added;
      raw.spaces[index] += added;
      raw.nuls[index] += added;
    }
    raw.starts.splice(at, 0, offset);
    raw.spaces.splice(at, 0, space);
    raw.nuls.splice(at, 0, nul);
    raw.found.clear();
    raw.pending = new Set([...raw.pending].map((index) => (index >= at ? index + 1 : index)));
    if (!entry.oid) raw.pending.add(at);
    if (raw.annex) {
      const annex = Buffer.allocUnsafe(raw.annex.length + ANNEX_BYTES_PER_ENTRY);
      raw.annex.copy(annex, 0, 0, at * ANNEX_BYTES_PER_ENTRY);
      raw.annex.copy(annex, (at + 1) * ANNEX_BYTES_PER_ENTRY, at * ANNEX_BYTES_PER_ENTRY);
      raw.annex = annex;
      annex.writeUInt32BE(ANNEX_UNKNOWN, at * ANNEX_BYTES_PER_ENTRY);
    }
    this.setSizeAt(at, entry.size);
  }

  /** Cuts entry `index` out of the tree bytes. */
  private removeRaw(at: number): void {
    const raw = this.raw!;
    const offset = raw.starts[at];
    const end = raw.nuls[at] + 1 + OID_BYTES;
    const removed = end - offset;
    raw.body = Buffer.concat([raw.body.subarray(0, offset), raw.body.subarray(end)]);
    raw.starts.splice(at, 1);
    raw.spaces.splice(at, 1);
    raw.nuls.splice(at, 1);
    raw.found.clear();
    for (let index = at; index < raw.starts.length; index++) {
      raw.starts[index] -= removed;
      raw.spaces[index] -= removed;
      raw.nuls[index] -= removed;
    }
    raw.pending = new Set([...raw.pending].filter((index) => index !== at).map((index) => (index > at ? index - 1 : index)));
    if (raw.annex) {
      raw.annex = Buffer.concat([raw.annex.subarray(0, at * ANNEX_BYTES_PER_ENTRY), raw.annex.subarray((at + 1) * ANNEX_BYTES_PER_ENTRY)]);
    }
  }

  private isTreeAt(index: number): boolean {
    const raw = this.raw!;
    return raw.spaces[index] - raw.starts[index] === MODE_TREE.length;
  }

  private rawEntry(index: number, name: string): WorkingEntry {
    const raw = this.raw!;
    const mode = modeAt(raw.body, raw.starts[index], raw.spaces[index]);
    const oidStart = raw.nuls[index] + 1;
    // A copy: the bytes under it may be patched later.
    const oid = raw.pending.has(index) ? null : Buffer.from(raw.body.subarray(oidStart, oidStart + OID_BYTES));
    return { name, mode, oid, size: sizeAt(raw.annex, index, mode) };
  }

  private setSizeAt(index: number, size: number): void {
    const raw = this.raw!;
    if (!raw.annex) {
      if (size === SIZE_UNKNOWN) return;
      raw.annex = Buffer.alloc(raw.starts.length * ANNEX_BYTES_PER_ENTRY, 0xff);
    }
    raw.annex.writeUInt32BE(annexSize(size), index * ANNEX_BYTES_PER_ENTRY);
  }

  /** Switches to the map form (names are about to change). */
  private decode(): void {
    const map = new Map<string, WorkingEntry>();
    for (const entry of this.entries()) map.set(entry.name, entry);
    this.map = map;
    this.raw = null;
  }
}

/**
 * Calls `visit` with each entry of a stored tree: its name, mode, where its id lies in `body` and
 * its blob's size (from the annex when there is one). For listings: no object per entry, and the
 * caller takes only what it keeps (a hex id, a subtree id) out of `body`.
 */
export function scanStoredTree(body: Buffer, annex: Buffer | null, visit: (name: string, mode: TreeMode, oidAt: number, size: number) => void): void {
  const { starts, spaces, nuls } = entryOffsets(body);
  const sizes = usableAnnex(annex, starts.length);
  for (let index = 0; index < starts.length; index++) {
    const mode = modeAt(body, starts[index], spaces[index]);
    visit(decodePath(body, spaces[index] + 1, nuls[index]), mode, nuls[index] + 1, sizeAt(sizes, index, mode));
  }
}

/** Where each entry of a tree body lies: the offset of its mode, of the space after it and of the NUL after its name. */
function entryOffsets(body: Buffer): { starts: number[]; spaces: number[]; nuls: number[] } {
  const starts: number[] = [];
  const spaces: number[] = [];
  const nuls: number[] = [];
  for (let offset = 0; offset < body.length; offset = nuls[nuls.length - 1] + 1 + OID_BYTES) {
    const space = body.indexOf(SPACE, offset);
    const nul = space < 0 ? -1 : body.indexOf(NUL, space + 1);
    if (nul < 0 || nul + 1 + OID_BYTES > body.length) throw new TreeFormatError('truncated tree entry');
    starts.push(offset);
    spaces.push(space);
    nuls.push(nul);
  }
  return { starts, spaces, nuls };
}

/**
 * The size a stored tree's annex records for the blob of entry `index` (of `entries`), or
 * SIZE_UNKNOWN when it records none (no annex, one of another length, or not known then).
 */
export function annexedSize(annex: Buffer | null, entries: number, index: number): number {
  const sizes = usableAnnex(annex, entries);
  if (!sizes) return SIZE_UNKNOWN;
  const known = sizes.readUInt32BE(index * ANNEX_BYTES_PER_ENTRY);
  return known === ANNEX_UNKNOWN ? SIZE_UNKNOWN : known;
}

/** The annex when it has one size per entry; an annex of another length is ignored. */
function usableAnnex(annex: Buffer | null, entries: number): Buffer | null {
  return annex && annex.length === entries * ANNEX_BYTES_PER_ENTRY ? annex : null;
}

/** An entry's blob size from the annex: 0 for directories and gitlinks, SIZE_UNKNOWN when not recorded. */
function sizeAt(annex: Buffer | null, index: number, mode: TreeMode): number {
  if (mode === MODE_TREE || mode === MODE_GITLINK) return 0;
  if (!annex) return SIZE_UNKNOWN;
  const known = annex.readUInt32BE(index * ANNEX_BYTES_PER_ENTRY);
  return known === ANNEX_UNKNOWN ? SIZE_UNKNOWN : known;
}

/** The mode spelled in body[start, end), as one of the shared constant strings. */
function modeAt(body: Buffer, start: number, end: number): TreeMode {
  const mode = knownMode(body, start, end);
  if (mode === null) throw new TreeFormatError(`unknown tree entry mode ${JSON.stringify(body.toString('latin1', start, end))}`);
  return mode;
}

function annexSize(size: number): number {
  return size >= 0 && size < ANNEX_UNKNOWN ? size : ANNEX_UNKNOWN;
}
