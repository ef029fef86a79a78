/**
 * The trees and blobs a commit brings that its first parent's tree does not hold at the same path:
 * what a clone must send for this commit once the parent's objects are sent. Over a whole history
 * the lists together name every tree and blob of every commit (an object at the same path in the
 * parent is in the parent's tree, and so in an older commit's list; a root commit lists its whole
 * tree), so a full clone is planned from the lists alone, with no tree read: what git's
 * reachability bitmaps give its pack-objects. A list may name an object an older commit holds
 * elsewhere (a moved file, a revert, a merge's other side); a planner drops repeats.
 *
 * A list is a run of records of OBJECT_RECORD_BYTES: a type code (2 tree, 3 blob, as in packs) and
 * the id, each id once. Each tree comes before its entries, entries in tree order, depth first: the order git's
 * rev-list --objects gives, so a pack planned from the lists keeps each commit's objects together.
 */
import { OID_BYTES, type Oid } from './oid.js';
import { OidTable } from './oidTable.js';
import { OBJ_BLOB, OBJ_TREE } from './pack.js';
import { ENTRY_GITLINK, ENTRY_TREE, TreeCursor } from './tree.js';
import { MissingObjectError } from '../errors.js';

export const OBJECT_RECORD_BYTES = 1 + OID_BYTES;

/**
 * `readTree` gives a tree's body (it must exist: the history is complete). Iterative: trees may be
 * thousands deep. Reads only the trees that differ from the parent's at the same path.
 */
export function introducedObjects(tree: Oid, parentTree: Oid | null, readTree: (oid: Oid) => Buffer | undefined): Buffer {
  if (parentTree && tree.equals(parentTree)) return EMPTY;
  const out = new RecordSink();
  // A tree listed already (the same directory at two new paths) is not read again.
  const open = (oid: Oid, old: Oid | null): Frame | null => {
    if (!out.push(OBJ_TREE, oid, 0)) return null;
    const oldCursor = old ? new TreeCursor(need(readTree, old)) : null;
    return { cursor: new TreeCursor(need(readTree, oid)), old: oldCursor, oldValid: oldCursor?.next() ?? false };
  };
  const stack: Frame[] = [open(tree, parentTree)!];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    const cursor = frame.cursor;
    if (!cursor.next()) {
      stack.pop();
      continue;
    }
    if (cursor.kind === ENTRY_GITLINK) continue;
    const body = cursor.body;
    const isTree = cursor.kind === ENTRY_TREE;
    // Both trees are in git's order, so the parent's entry of the same name and kind is found by
    // walking its cursor forward alongside (an entry whose kind changed sorts elsewhere: it is new).
    let order = 1;
    const old = frame.old;
    while (frame.oldValid && (order = compareEntries(old!, cursor)) < 0) frame.oldValid = old!.next();
    const same = frame.oldValid && order === 0;
    if (same && body.compare(old!.body, old!.oidStart, old!.oidStart + OID_BYTES, cursor.oidStart, cursor.oidStart + OID_BYTES) === 0) continue;
    const oid = body.subarray(cursor.oidStart, cursor.oidStart + OID_BYTES);
    if (isTree) {
      const child = open(oid, same ? old!.body.subarray(old!.oidStart, old!.oidStart + OID_BYTES) : null);
      if (child) stack.push(child);
    } else {
      out.push(OBJ_BLOB, body, cursor.oidStart);
    }
  }
  return out.done();
}

interface Frame {
  cursor: TreeCursor;
  /** The parent's tree at the same path, read alongside `cursor`; `oldValid` while it has an entry. */
  old: TreeCursor | null;
  oldValid: boolean;
}

const EMPTY = Buffer.alloc(0);
const SLASH = 0x2f;

function need(readTree: (oid: Oid) => Buffer | undefined, oid: Oid): Buffer {
  const body = readTree(oid);
  if (!body) throw new MissingObjectError('tree', oid);
  return body;
}

/** Two entries in git's tree order: names as bytes, a tree's name as if it ended in '/'; 0 for the same name and kind. */
function compareEntries(a: TreeCursor, b: TreeCursor): number {
  const aLength = a.nameEnd - a.nameStart;
  const bLength = b.nameEnd - b.nameStart;
  const common = Math.min(aLength, bLength);
  for (let i = 0; i < common; i++) {
    const difference = a.body[a.nameStart + i] - b.body[b.nameStart + i];
    if (difference !== 0) return difference;
  }
  const aNext = aLength > common ? a.body[a.nameStart + common] : a.kind === ENTRY_TREE ? SLASH : 0;
  const bNext = bLength > common ? b.body[b.nameStart + common] : b.kind === ENTRY_TREE ? SLASH : 0;
  if (aNext !== bNext) return aNext - bNext;
  // The same name: the same kind counts as the same entry (a gitlink never matches a tree).
  return aLength === bLength && (a.kind === ENTRY_TREE) === (b.kind === ENTRY_TREE) ? 0 : aLength - bLength || 1;
}

/** Records in a buffer that doubles as it fills, each id once (the same content at two new paths is listed once). */
class RecordSink {
  private bytes = Buffer.allocUnsafe(OBJECT_RECORD_BYTES * 16);
  private used = 0;
  private readonly listed = new OidTable();

  /** False when the id is listed already. */
  push(typeCode: number, source: Uint8Array, offset: number): boolean {
    if (!this.listed.add(source, offset)) return false;
    if (this.used + OBJECT_RECORD_BYTES > this.bytes.length) {
      const grown = Buffer.allocUnsafe(this.bytes.length * 2);
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    this.bytes[this.used] = typeCode;
    this.bytes.set(source.subarray(offset, offset + OID_BYTES), this.used + 1);
    this.used += OBJECT_RECORD_BYTES;
    return true;
  }

  done(): Buffer {
    return Buffer.from(this.bytes.subarray(0, this.used));
  }
}
