/**
 * Tree objects (Documentation/gitformat-loose.txt and git's tree.c): a sequence of
 * "<mode in octal ascii> <name>\0<20-byte id>", sorted by name bytes where a directory sorts
 * as if its name ended in '/'. Modes are written without leading zeros ("40000", not "040000").
 */
import { OID_BYTES, type Oid } from './oid.js';

export type FileMode = '100644' | '100755' | '120000';
export type TreeMode = FileMode | '40000' | '160000';

export const MODE_FILE: FileMode = '100644';
export const MODE_EXECUTABLE: FileMode = '100755';
export const MODE_SYMLINK: FileMode = '120000';
export const MODE_TREE = '40000' as const;
export const MODE_GITLINK = '160000' as const;

const KNOWN_MODES = new Set<string>([MODE_FILE, MODE_EXECUTABLE, MODE_SYMLINK, MODE_TREE, MODE_GITLINK]);
const SPACE = 0x20;
const NUL = 0;
const SLASH = 0x2f;

export interface TreeEntry {
  /** One path component, UTF-8. */
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

interface EncodedEntry {
  nameBytes: Buffer;
  isTree: boolean;
  entry: TreeEntry;
}

/** Encodes entries in git order; the input order does not matter. Duplicate names are refused. */
export function encodeTree(entries: readonly TreeEntry[]): Buffer {
  const encoded: EncodedEntry[] = entries.map((entry) => ({
    nameBytes: Buffer.from(entry.name, 'utf8'),
    isTree: entry.mode === MODE_TREE,
    entry,
  }));
  encoded.sort((a, b) => compareTreeNames(a.nameBytes, a.isTree, b.nameBytes, b.isTree));
  let totalBytes = 0;
  for (let i = 0; i < encoded.length; i++) {
    const item = encoded[i];
    if (i > 0 && encoded[i - 1].nameBytes.equals(item.nameBytes)) {
      throw new TreeFormatError(`duplicate tree entry ${JSON.stringify(item.entry.name)}`);
    }
    totalBytes += item.entry.mode.length + 1 + item.nameBytes.length + 1 + OID_BYTES;
  }
  const out = Buffer.allocUnsafe(totalBytes);
  let offset = 0;
  for (const { nameBytes, entry } of encoded) {
    offset += out.write(entry.mode, offset, 'latin1');
    out[offset++] = SPACE;
    offset += nameBytes.copy(out, offset);
    out[offset++] = NUL;
    offset += entry.oid.copy(out, offset);
  }
  return out;
}

/** Decodes a tree body. Throws TreeFormatError on truncation or an unknown mode. */
export function decodeTree(body: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(SPACE, offset);
    if (space < 0) throw new TreeFormatError('truncated tree entry mode');
    const mode = body.toString('latin1', offset, space);
    const nul = body.indexOf(NUL, space + 1);
    if (nul < 0) throw new TreeFormatError('truncated tree entry name');
    if (nul + 1 + OID_BYTES > body.length) throw new TreeFormatError('truncated tree entry id');
    if (!KNOWN_MODES.has(mode)) throw new TreeFormatError(`unknown tree entry mode ${JSON.stringify(mode)}`);
    entries.push({
      mode: mode as TreeMode,
      name: body.toString('utf8', space + 1, nul),
      oid: Buffer.from(body.subarray(nul + 1, nul + 1 + OID_BYTES)),
    });
    offset = nul + 1 + OID_BYTES;
  }
  return entries;
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
