/**
 * Tree objects (Documentation/gitformat-loose.txt and git's tree.c): a sequence of
 * "<mode in octal ascii> <name>\0<20-byte id>", sorted by name bytes where a directory sorts
 * as if its name ended in '/'. Modes are written without leading zeros ("40000", not "040000").
 */
import { OID_BYTES, type Oid } from './oid.js';
import { decodePath, encodePath } from './pathBytes.js';

export type FileMode = '100644' | '100755' | '120000';
export type TreeMode = FileMode | '40000' | '160000';

export const MODE_FILE: FileMode = '100644';
export const MODE_EXECUTABLE: FileMode = '100755';
export const MODE_SYMLINK: FileMode = '120000';
export const MODE_TREE = '40000' as const;
export const MODE_GITLINK = '160000' as const;

const SPACE = 0x20;
const NUL = 0;
const SLASH = 0x2f;
const DIGIT_ZERO = 0x30;

export interface TreeEntry {
  /** One path component: its bytes as src/git/pathBytes.ts decodes them (UTF-8, other bytes escaped). */
  name: string;
  mode: TreeMode;
  oid: Oid;
}

export class TreeFormatError extends Error {
  override name = 'TreeFormatError';
}

/** git's base_name_compare: byte order, with a directory name followed by an implicit '/'. */
export function compareTreeNames(aName: Buffer, aIsTree: boolean, bName: Buffer, bIsTree: boolean): number {
  const common = Math.min(aName.length, bName.length);
  const prefixOrder = aName.subarray(0, common).compare(bName.subarray(0, common));
  if (prefixOrder !== 0) return prefixOrder;
  const aNext = aName.length > common ? aName[common] : aIsTree ? SLASH : 0;
  const bNext = bName.length > common ? bName[common] : bIsTree ? SLASH : 0;
  return aNext - bNext;
}

/** Encodes entries in git order; the input order does not matter. Duplicate names are refused. */
export function encodeTree(entries: readonly TreeEntry[]): Buffer {
  return encodeTreeSorted(entries).body;
}

/** encodeTree, also giving the entries in the order the body holds them. */
export function encodeTreeSorted<T extends TreeEntry>(entries: readonly T[]): { body: Buffer; sorted: T[] } {
  // Most trees are built in git order already (a walk of a stored tree, a merge's records) and
  // have ASCII names: then they need no sort and no name bytes, only the duplicate check.
  if (asciiInGitOrder(entries)) {
    refuseFileAndTreeOfOneName(entries);
    return { body: writeEntries(entries, null), sorted: entries.slice() };
  }
  const keyed = sortTreeEntries(entries);
  const names = new Set<string>();
  for (const { entry } of keyed) {
    // A file and a directory of one name need not be neighbours in git order ("a", "a-b", "a/").
    // Decoded names are equal exactly when their bytes are (pathBytes.ts), so strings compare here.
    if (names.has(entry.name)) throw duplicateEntry(entry.name);
    names.add(entry.name);
  }
  const sorted = keyed.map((item) => item.entry);
  return { body: writeEntries(sorted, keyed.map((item) => item.nameBytes)), sorted };
}

/** The body of entries already in git order; `nameBytes[i]` is null for an ASCII name (its characters are its bytes). */
function writeEntries(sorted: readonly TreeEntry[], nameBytes: ReadonlyArray<Buffer | null> | null): Buffer {
  let totalBytes = 0;
  for (let i = 0; i < sorted.length; i++) {
    const entry = sorted[i];
    const bytes = nameBytes?.[i];
    totalBytes += entry.mode.length + 1 + (bytes ? bytes.length : entry.name.length) + 1 + OID_BYTES;
  }
  const out = Buffer.allocUnsafe(totalBytes);
  let offset = 0;
  for (let i = 0; i < sorted.length; i++) {
    const entry = sorted[i];
    const bytes = nameBytes?.[i];
    offset += out.write(entry.mode, offset, 'latin1');
    out[offset++] = SPACE;
    offset += bytes ? bytes.copy(out, offset) : out.write(entry.name, offset, 'latin1');
    out[offset++] = NUL;
    offset += entry.oid.copy(out, offset);
  }
  return out;
}

function duplicateEntry(name: string): TreeFormatError {
  return new TreeFormatError(`duplicate tree entry ${JSON.stringify(name)}`);
}

/**
 * Whether every name is ASCII and each entry sorts strictly after the one before it. Strict order
 * leaves out two entries of one name and kind; a file and a directory of one name sort apart.
 */
function asciiInGitOrder(entries: readonly TreeEntry[]): boolean {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    if (!ASCII_ONLY.test(entry.name)) return false;
    if (i > 0) {
      const previous = entries[i - 1];
      if (compareAsciiTreeNames(previous.name, previous.mode === MODE_TREE, entry.name, entry.mode === MODE_TREE) >= 0) return false;
    }
  }
  return true;
}

/** compareTreeNames for ASCII names, whose characters are their bytes, without encoding them. */
function compareAsciiTreeNames(a: string, aIsTree: boolean, b: string, bIsTree: boolean): number {
  const common = Math.min(a.length, b.length);
  for (let i = 0; i < common; i++) {
    const order = a.charCodeAt(i) - b.charCodeAt(i);
    if (order !== 0) return order;
  }
  const aNext = a.length > common ? a.charCodeAt(common) : aIsTree ? SLASH : 0;
  const bNext = b.length > common ? b.charCodeAt(common) : bIsTree ? SLASH : 0;
  return aNext - bNext;
}

/** Refuses a file (or submodule) and a directory of one name, in entries of distinct keys. */
function refuseFileAndTreeOfOneName(entries: readonly TreeEntry[]): void {
  let trees: Set<string> | null = null;
  for (const entry of entries) if (entry.mode === MODE_TREE) (trees ??= new Set()).add(entry.name);
  if (!trees || trees.size === entries.length) return;
  for (const entry of entries) if (entry.mode !== MODE_TREE && trees.has(entry.name)) throw duplicateEntry(entry.name);
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/**
 * Entries in git order (compareTreeNames), as a new array, each with its name's bytes (null for
 * an ASCII name, whose characters are its bytes).
 */
function sortTreeEntries<T extends TreeEntry>(entries: readonly T[]): Array<{ entry: T; nameBytes: Buffer | null }> {
  if (entries.every((entry) => ASCII_ONLY.test(entry.name))) {
    // For ASCII, string order is byte order, and a directory sorts as its name followed by '/'.
    const keyed = entries.map((entry) => ({ key: entry.mode === MODE_TREE ? `${entry.name}/` : entry.name, entry, nameBytes: null }));
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return keyed;
  }
  // UTF-16 order is not byte order beyond ASCII (surrogates, escapes): compare the bytes.
  const keyed = entries.map((entry) => ({ nameBytes: encodePath(entry.name), isTree: entry.mode === MODE_TREE, entry }));
  keyed.sort((a, b) => compareTreeNames(a.nameBytes, a.isTree, b.nameBytes, b.isTree));
  return keyed;
}

/**
 * Decodes a tree body. Throws TreeFormatError on truncation or an unknown mode. Entry ids are
 * copies unless `shareBody` says the caller owns `body` for as long as it keeps the entries (then
 * they are views into it: one allocation per tree instead of one per entry).
 */
export function decodeTree(body: Buffer, shareBody = false): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(SPACE, offset);
    if (space < 0) throw new TreeFormatError('truncated tree entry mode');
    const mode = knownMode(body, offset, space);
    const nul = body.indexOf(NUL, space + 1);
    if (nul < 0) throw new TreeFormatError('truncated tree entry name');
    if (nul + 1 + OID_BYTES > body.length) throw new TreeFormatError('truncated tree entry id');
    if (mode === null) throw new TreeFormatError(`unknown tree entry mode ${JSON.stringify(body.toString('latin1', offset, space))}`);
    entries.push({
      mode,
      name: decodePath(body, space + 1, nul),
      oid: shareBody ? body.subarray(nul + 1, nul + 1 + OID_BYTES) : Buffer.from(body.subarray(nul + 1, nul + 1 + OID_BYTES)),
    });
    offset = nul + 1 + OID_BYTES;
  }
  return entries;
}

/** What a tree entry names, by its mode: a file (regular, executable or symlink), a tree, a submodule commit. */
export const ENTRY_FILE = 0;
export const ENTRY_TREE = 1;
export const ENTRY_GITLINK = 2;

/**
 * Which of MODE_KINDS the mode written at body[start, end) is, or -1 for a mode git does not know.
 * Leading zeros are read past, as git reads the octal number: old gits wrote directories as
 * "040000", and real histories keep such trees (git fsck's zeroPaddedFilemode). Which histories
 * may bring them is the checks' decision (src/git/fsck.ts), not the decoder's.
 */
function modeIndex(body: Buffer, begin: number, end: number): number {
  let start = begin;
  while (end - start > 1 && body[start] === DIGIT_ZERO) start++;
  // Compared as bytes: a string per entry was most of what a walk over large trees allocated.
  for (let kind = 0; kind < MODE_KINDS.length; kind++) {
    const mode = MODE_KINDS[kind][0];
    if (mode.length !== end - start) continue;
    let same = true;
    for (let i = 0; i < mode.length && same; i++) same = body[start + i] === mode[i];
    if (same) return kind;
  }
  return -1;
}

/** The mode written at body[start, end) as one shared string (leading zeros read past), or null for a mode git does not know. */
export function knownMode(body: Buffer, start: number, end: number): TreeMode | null {
  const index = modeIndex(body, start, end);
  return index < 0 ? null : MODE_TEXTS[index];
}

/** Every mode a tree entry may have, as bytes, with its kind: files first, the most common. */
const MODE_KINDS: ReadonlyArray<readonly [Buffer, number]> = [
  [Buffer.from(MODE_FILE, 'latin1'), ENTRY_FILE],
  [Buffer.from(MODE_TREE, 'latin1'), ENTRY_TREE],
  [Buffer.from(MODE_EXECUTABLE, 'latin1'), ENTRY_FILE],
  [Buffer.from(MODE_SYMLINK, 'latin1'), ENTRY_FILE],
  [Buffer.from(MODE_GITLINK, 'latin1'), ENTRY_GITLINK],
];
const MODE_TEXTS: readonly TreeMode[] = MODE_KINDS.map(([bytes]) => bytes.toString('latin1') as TreeMode);

/**
 * The entries of a tree body one at a time, as offsets into it: walks over very large trees
 * (pack planning) read ids in place instead of building an entry object, a name and an id per
 * entry. Throws TreeFormatError where decodeTree would.
 */
export class TreeCursor {
  kind = ENTRY_FILE;
  /** Where the entry (its mode, leading zeros and all) starts in `body`. */
  modeStart = 0;
  /** The current entry's mode, as its index in MODE_KINDS. */
  private modeKind = 0;
  nameStart = 0;
  nameEnd = 0;
  /** Where the entry's 20-byte id starts in `body`. */
  oidStart = 0;
  private offset = 0;

  constructor(public body: Buffer) {}

  /** Points the cursor at the start of another tree, so a walk reuses one cursor per level. */
  reset(body: Buffer): this {
    this.body = body;
    this.offset = 0;
    return this;
  }

  /** Moves to the next entry; false after the last. */
  next(): boolean {
    const body = this.body;
    if (this.offset >= body.length) return false;
    const space = body.indexOf(SPACE, this.offset);
    if (space < 0) throw new TreeFormatError('truncated tree entry mode');
    const nul = body.indexOf(NUL, space + 1);
    if (nul < 0) throw new TreeFormatError('truncated tree entry name');
    if (nul + 1 + OID_BYTES > body.length) throw new TreeFormatError('truncated tree entry id');
    const index = modeIndex(body, this.offset, space);
    if (index < 0) throw new TreeFormatError(`unknown tree entry mode ${JSON.stringify(body.toString('latin1', this.offset, space))}`);
    this.kind = MODE_KINDS[index][1];
    this.modeKind = index;
    this.modeStart = this.offset;
    this.nameStart = space + 1;
    this.nameEnd = nul;
    this.oidStart = nul + 1;
    this.offset = nul + 1 + OID_BYTES;
    return true;
  }

  /** The current entry's name, decoded as decodeTree does. */
  name(): string {
    return decodePath(this.body, this.nameStart, this.nameEnd);
  }

  /** The current entry's id, as a copy. */
  oid(): Oid {
    return Buffer.from(this.body.subarray(this.oidStart, this.oidStart + OID_BYTES));
  }

  /** The current entry's mode, as git writes it (without leading zeros). */
  mode(): TreeMode {
    return MODE_TEXTS[this.modeKind];
  }
}

/** Raw entries with the name bytes untouched, for fsck-like checks of received trees. */
export interface RawTreeEntry {
  modeText: string;
  nameBytes: Buffer;
  oid: Oid;
}

export function decodeTreeRaw(body: Buffer): RawTreeEntry[] {
  const entries: RawTreeEntry[] = [];
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(SPACE, offset);
    if (space < 0) throw new TreeFormatError('truncated tree entry mode');
    const nul = body.indexOf(NUL, space + 1);
    if (nul < 0 || nul + 1 + OID_BYTES > body.length) throw new TreeFormatError('truncated tree entry');
    entries.push({
      modeText: body.toString('latin1', offset, space),
      nameBytes: body.subarray(space + 1, nul),
      oid: body.subarray(nul + 1, nul + 1 + OID_BYTES),
    });
    offset = nul + 1 + OID_BYTES;
  }
  return entries;
}
