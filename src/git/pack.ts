/**
 * Pack files, version 2 (Documentation/gitformat-pack.txt, "pack-*.pack files have the following
 * format"): a 12-byte header ("PACK", version, object count, all big-endian), then one entry per
 * object, then the SHA-1 of everything before it.
 *
 * An entry starts with its type (3 bits) and its inflated size in the pack "size encoding"
 * (4 bits in the first byte, then 7 bits a byte, least significant first, high bit = more).
 * OFS_DELTA entries then give their base as a negative distance back in the "offset encoding"
 * (7 bits a byte, most significant first, with 2^7 + 2^14 + ... added for each extra byte);
 * REF_DELTA entries give the base's 20-byte id. Then comes a zlib stream of the body (or of the
 * delta). The pack does not record where that stream ends: the parser learns it from zlib itself
 * (src/git/inflater.ts reports how many input bytes the stream used).
 *
 * PackWriter produces a pack entry by entry so memory stays bounded by one object; parsePack
 * checks a whole received pack and resolves its deltas, with limits on every dimension.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { applyDelta, DeltaError, readDeltaHeader } from './delta.js';
import { InflateError, Inflater } from './inflater.js';
import { OidTable } from './oidTable.js';
import { SlabAllocator } from './slab.js';
import { hashFramedObject, hashObject, objectHeaderLength, OID_BYTES, oidToHex, writeObjectHeader, type ObjectType, type Oid } from './oid.js';

/** "PACK" */
export const PACK_SIGNATURE = Buffer.from('PACK', 'latin1');
/** The version we write; version 3 is read too, as git does (the layout is the same). */
export const PACK_VERSION = 2;
const PACK_VERSIONS_READ = new Set([2, 3]);
export const PACK_HEADER_BYTES = 12;
/** Header fields: the signature at 0, then 32-bit big-endian version and object count. */
const PACK_VERSION_OFFSET = 4;
const PACK_COUNT_OFFSET = 8;
/** The trailing SHA-1 of all preceding bytes. */
export const PACK_TRAILER_BYTES = 20;
/** The object count is a 32-bit field. */
export const PACK_OBJECT_COUNT_MAX = 0xffffffff;

/** Entry type codes (gitformat-pack "Object types"); 0 is invalid and 5 is reserved. */
export const OBJ_COMMIT = 1;
export const OBJ_TREE = 2;
export const OBJ_BLOB = 3;
export const OBJ_TAG = 4;
export const OBJ_OFS_DELTA = 6;
export const OBJ_REF_DELTA = 7;

const TYPE_CODES: Record<ObjectType, number> = { commit: OBJ_COMMIT, tree: OBJ_TREE, blob: OBJ_BLOB, tag: OBJ_TAG };
const TYPES_BY_CODE = new Map<number, ObjectType>([
  [OBJ_COMMIT, 'commit'],
  [OBJ_TREE, 'tree'],
  [OBJ_BLOB, 'blob'],
  [OBJ_TAG, 'tag'],
]);

/** Entry header: the type sits in bits 4-6 of the first byte, the size's low 4 bits in bits 0-3. */
const ENTRY_TYPE_SHIFT = 4;
const ENTRY_TYPE_MASK = 0x07;
const ENTRY_FIRST_SIZE_BITS = 4;
const ENTRY_FIRST_SIZE_MASK = 0x0f;
/** Every variable-length byte: 7 bits of value and a continuation bit. */
const VARINT_CONTINUE = 0x80;
const VARINT_PAYLOAD_MASK = 0x7f;
const VARINT_PAYLOAD_BITS = 7;
/** Enough bytes for any size or offset below 2^53; longer encodings are refused. */
const VARINT_BYTES_MAX = 8;
/** The smallest complete zlib stream (an empty body) is 8 bytes, so an entry takes at least 9. */
const ZLIB_STREAM_BYTES_MIN = 8;
const PACK_ENTRY_BYTES_MIN = 1 + ZLIB_STREAM_BYTES_MIN;
/** zlib stream header (RFC 1950): method 8 (deflate) in the low nibble, and a multiple of 31. */
const ZLIB_METHOD_DEFLATE = 8;
const ZLIB_METHOD_MASK = 0x0f;
const ZLIB_HEADER_CHECK_DIVISOR = 31;

/** Default limits of parsePack; a caller passes its own from configuration. */
export const PACK_OBJECTS_MAX_DEFAULT = 1_000_000;
export const PACK_OBJECT_BYTES_MAX_DEFAULT = 100 * 1024 * 1024;
export const PACK_TOTAL_BYTES_MAX_DEFAULT = 8 * 1024 * 1024 * 1024;
/** git's pack.depth cannot go above 4095; chains deeper than that are refused. */
export const PACK_DELTA_DEPTH_MAX_DEFAULT = 4095;

export class PackFormatError extends Error {
  override name = 'PackFormatError';
}

// ---------------------------------------------------------------------------------------------
// Encoding helpers

/** Type and size header of an entry. */
export function encodeEntryHeader(typeCode: number, size: number): Buffer {
  const header = Buffer.allocUnsafe(ENTRY_HEADER_BYTES_MAX);
  return header.subarray(0, writeEntryHeader(header, 0, typeCode, size));
}

/** The longest entry header: a type and a size below 2^53 (4 + 7 * 7 bits). */
const ENTRY_HEADER_BYTES_MAX = 8;

/** Writes an entry header at `offset` in `out`; returns its length. */
function writeEntryHeader(out: Buffer, offset: number, typeCode: number, size: number): number {
  if (!TYPES_BY_CODE.has(typeCode) && typeCode !== OBJ_OFS_DELTA && typeCode !== OBJ_REF_DELTA) {
    throw new PackFormatError(`invalid pack entry type ${typeCode}`);
  }
  if (!Number.isSafeInteger(size) || size < 0) throw new PackFormatError(`invalid pack entry size ${size}`);
  let at = offset;
  let rest = Math.floor(size / 2 ** ENTRY_FIRST_SIZE_BITS);
  let byte = (typeCode << ENTRY_TYPE_SHIFT) | (size & ENTRY_FIRST_SIZE_MASK);
  while (rest > 0) {
    out[at++] = byte | VARINT_CONTINUE;
    byte = rest % 2 ** VARINT_PAYLOAD_BITS;
    rest = Math.floor(rest / 2 ** VARINT_PAYLOAD_BITS);
  }
  out[at++] = byte;
  return at - offset;
}

/** The "offset encoding" of an OFS_DELTA's distance back to its base. */
export function encodeOfsDistance(distance: number): Buffer {
  if (!Number.isSafeInteger(distance) || distance <= 0) throw new PackFormatError(`invalid OFS_DELTA distance ${distance}`);
  const bytes = [distance % 2 ** VARINT_PAYLOAD_BITS];
  let rest = Math.floor(distance / 2 ** VARINT_PAYLOAD_BITS);
  while (rest > 0) {
    rest -= 1;
    bytes.unshift(VARINT_CONTINUE | rest % 2 ** VARINT_PAYLOAD_BITS);
    rest = Math.floor(rest / 2 ** VARINT_PAYLOAD_BITS);
  }
  return Buffer.from(bytes);
}

function typeCodeOf(type: ObjectType): number {
  const code = TYPE_CODES[type];
  if (code === undefined) throw new PackFormatError(`unknown object type ${JSON.stringify(type)}`);
  return code;
}

function looksLikeZlibStream(bytes: Uint8Array): boolean {
  if (bytes.length < ZLIB_STREAM_BYTES_MIN) return false;
  if ((bytes[0] & ZLIB_METHOD_MASK) !== ZLIB_METHOD_DEFLATE) return false;
  return (bytes[0] * 256 + bytes[1]) % ZLIB_HEADER_CHECK_DIVISOR === 0;
}

// ---------------------------------------------------------------------------------------------
// Writer

export interface PackChunk {
  /** Byte position of this entry in the pack; an OFS_DELTA names its base by it. */
  offset: number;
  bytes: Buffer;
}

export interface PackWriterOptions {
  /** zlib level 0-9; git's default (core.compression -1) is zlib's default, 6. */
  compressionLevel?: number;
}

/**
 * Writes a pack of a known number of objects, one chunk at a time: start() gives the header,
 * each add*() one entry, finish() the trailing checksum. The caller sends each chunk on and keeps
 * nothing, so memory holds one object at a time.
 */
export class PackWriter {
  private readonly hash = createHash('sha1');
  private readonly compressionLevel: number;
  private position = 0;
  private written = 0;
  /** Start of every entry so far, ascending, so an OFS_DELTA base can be checked (8 bytes each). */
  private readonly entryOffsets: number[] = [];
  private state: 'new' | 'writing' | 'finished' = 'new';

  constructor(
    readonly objectCount: number,
    options: PackWriterOptions = {},
  ) {
    if (!Number.isInteger(objectCount) || objectCount < 0 || objectCount > PACK_OBJECT_COUNT_MAX) {
      throw new PackFormatError(`invalid pack object count ${objectCount}`);
    }
    this.compressionLevel = options.compressionLevel ?? -1;
  }

  /** Bytes emitted so far. */
  get bytesWritten(): number {
    return this.position;
  }

  start(): Buffer {
    if (this.state !== 'new') throw new PackFormatError('pack header already written');
    const header = Buffer.alloc(PACK_HEADER_BYTES);
    PACK_SIGNATURE.copy(header, 0);
    header.writeUInt32BE(PACK_VERSION, PACK_VERSION_OFFSET);
    header.writeUInt32BE(this.objectCount, PACK_COUNT_OFFSET);
    this.state = 'writing';
    return this.emit(header);
  }

  /** A whole object, deflated here. */
  addObject(type: ObjectType, body: Uint8Array): PackChunk {
    return this.addEntry(typeCodeOf(type), body.length, null, this.deflate(body));
  }

  /**
   * An object whose body is already a zlib stream (as stored), copied without recompressing.
   * `inflatedBytes` is the body's size; the caller vouches that the stream inflates to it.
   */
  addDeflatedObject(type: ObjectType, inflatedBytes: number, deflated: Uint8Array): PackChunk {
    if (!looksLikeZlibStream(deflated)) throw new PackFormatError('pre-deflated body is not a zlib stream');
    return this.addEntry(typeCodeOf(type), inflatedBytes, null, deflated);
  }

  /** A delta against the entry written at `baseOffset` earlier in this pack. */
  addOfsDelta(baseOffset: number, delta: Uint8Array): PackChunk {
    if (!this.isEntryOffset(baseOffset)) {
      throw new PackFormatError(`OFS_DELTA base offset ${baseOffset} is not an earlier entry`);
    }
    readDeltaHeaderChecked(delta);
    return this.addEntry(OBJ_OFS_DELTA, delta.length, encodeOfsDistance(this.position - baseOffset), this.deflate(delta));
  }

  /** A delta against the object `baseOid`, in this pack or (for a thin pack) known to the receiver. */
  addRefDelta(baseOid: Oid, delta: Uint8Array): PackChunk {
    if (baseOid.length !== OID_BYTES) throw new PackFormatError('REF_DELTA base id must be 20 bytes');
    readDeltaHeaderChecked(delta);
    return this.addEntry(OBJ_REF_DELTA, delta.length, Buffer.from(baseOid), this.deflate(delta));
  }

  /**
   * A delta whose instructions are already a zlib stream (as stored), against the entry written at
   * `baseOffset`; `deltaBytes` is what the stream inflates to, which the caller vouches for.
   */
  addDeflatedOfsDelta(baseOffset: number, deltaBytes: number, deflated: Uint8Array): PackChunk {
    if (!this.isEntryOffset(baseOffset)) throw new PackFormatError(`OFS_DELTA base offset ${baseOffset} is not an earlier entry`);
    if (!looksLikeZlibStream(deflated)) throw new PackFormatError('pre-deflated delta is not a zlib stream');
    return this.addEntry(OBJ_OFS_DELTA, deltaBytes, encodeOfsDistance(this.position - baseOffset), deflated);
  }

  /** addDeflatedOfsDelta against an object named by id (in this pack or, thin, held by the receiver). */
  addDeflatedRefDelta(baseOid: Oid, deltaBytes: number, deflated: Uint8Array): PackChunk {
    if (baseOid.length !== OID_BYTES) throw new PackFormatError('REF_DELTA base id must be 20 bytes');
    if (!looksLikeZlibStream(deflated)) throw new PackFormatError('pre-deflated delta is not a zlib stream');
    return this.addEntry(OBJ_REF_DELTA, deltaBytes, Buffer.from(baseOid), deflated);
  }

  /**
   * Entries copied as they are from another pack: `bytes` holds `entries` whole entries, or, for a
   * run of entries split across several calls, part of them (0 for the parts after the first). A
   * pack that grows another starts so: its entries keep their offsets (both headers are 12 bytes),
   * so the OFS_DELTAs among them still point right. No OFS_DELTA written later may name them (their
   * offsets are not known here); a REF_DELTA may.
   */
  addEntriesVerbatim(bytes: Uint8Array, entries: number): Buffer {
    if (this.state !== 'writing') throw new PackFormatError('pack entry written before start() or after finish()');
    if (!Number.isInteger(entries) || entries < 0 || this.written + entries > this.objectCount) throw new PackFormatError(`pack announced only ${this.objectCount} objects`);
    this.written += entries;
    return this.emit(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  }

  /** The trailing checksum; the pack is complete after it. */
  finish(): Buffer {
    if (this.state !== 'writing') throw new PackFormatError('pack finished before start() or twice');
    if (this.written !== this.objectCount) {
      throw new PackFormatError(`pack announced ${this.objectCount} objects but ${this.written} were written`);
    }
    this.state = 'finished';
    const trailer = this.hash.digest();
    this.position += trailer.length;
    return trailer;
  }

  private isEntryOffset(offset: number): boolean {
    let low = 0;
    let high = this.entryOffsets.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const found = this.entryOffsets[middle];
      if (found === offset) return true;
      if (found < offset) low = middle + 1;
      else high = middle - 1;
    }
    return false;
  }

  private deflate(body: Uint8Array): Buffer {
    return deflateSync(body, { level: this.compressionLevel });
  }

  private addEntry(typeCode: number, size: number, baseReference: Buffer | null, deflated: Uint8Array): PackChunk {
    if (this.state !== 'writing') throw new PackFormatError('pack entry written before start() or after finish()');
    if (this.written >= this.objectCount) throw new PackFormatError(`pack announced only ${this.objectCount} objects`);
    const offset = this.position;
    // One allocation per entry: header, base reference and stream copied into place.
    const referenceBytes = baseReference ? baseReference.length : 0;
    const entry = Buffer.allocUnsafe(ENTRY_HEADER_BYTES_MAX + referenceBytes + deflated.length);
    let at = writeEntryHeader(entry, 0, typeCode, size);
    if (baseReference) at += baseReference.copy(entry, at);
    entry.set(deflated, at);
    at += deflated.length;
    this.written++;
    this.entryOffsets.push(offset);
    return { offset, bytes: this.emit(entry.subarray(0, at)) };
  }

  private emit(bytes: Buffer): Buffer {
    this.hash.update(bytes);
    this.position += bytes.length;
    return bytes;
  }
}

/**
 * git refuses to apply a delta shorter than this (patch-delta.c), whatever its sizes say; a pack
 * holding one fails index-pack.
 */
export const PACK_DELTA_BYTES_MIN = 4;

/**
 * Checks a delta before it is written: its header must read, it must be long enough for git, and
 * it must not make an empty object (git 2.39's index-pack accepts such an entry, but verify-pack
 * calls the pack bad and cat-file cannot read the object; an empty body is smaller whole anyway).
 */
function readDeltaHeaderChecked(delta: Uint8Array): void {
  let resultBytes: number;
  try {
    resultBytes = readDeltaHeader(delta).resultBytes;
  } catch (error) {
    throw new PackFormatError(`invalid delta: ${(error as Error).message}`);
  }
  if (delta.length < PACK_DELTA_BYTES_MIN) throw new PackFormatError(`a delta of ${delta.length} bytes is shorter than git accepts (${PACK_DELTA_BYTES_MIN})`);
  if (resultBytes === 0) throw new PackFormatError('a delta that makes an empty object cannot be read back by git; write it whole');
}

// ---------------------------------------------------------------------------------------------
// Parser

export interface ExternalObject {
  type: ObjectType;
  body: Buffer;
}

export interface ParsePackOptions {
  /** Bases of REF_DELTA entries that are not in the pack (a thin pack), looked up by id. */
  resolveExternal?: (oid: Oid) => ExternalObject | undefined;
  objectsMax?: number;
  /** Limit on the inflated size of any one object or delta. */
  objectBytesMax?: number;
  /** Limit on all inflated bytes together (objects and deltas). */
  totalBytesMax?: number;
  deltaDepthMax?: number;
  /**
   * Blob bodies are not kept once hashed and used as bases: each such blob gets `bodyBytes` and a
   * body rebuilt from its entry when first read (rebuildBodiesOnRead). A check that reads trees,
   * commits and a few special blobs then holds the pack's trees and commits, not every version of
   * every file (a 3,000-commit history rebuilds 140 MB of blobs from a pack of 8 MB).
   */
  dropBlobBodies?: boolean;
  /**
   * Told of each object as soon as it is resolved, every delta after its base (whole entries first,
   * in pack order, then each delta after the object it applies to): `index` is its place in the
   * pack. `object.body` is valid only during the call (a dropped blob's memory is reused).
   */
  onResolved?: (index: number, object: PackObject) => void;
}

export interface PackObject {
  type: ObjectType;
  body: Buffer;
  oid: Oid;
  /** Where the entry starts in the pack. */
  offset: number;
  /** Deltas applied to rebuild it; 0 for an entry stored whole. */
  deltaDepth: number;
  /** The entry as the pack holds it, so a receiver can keep its zlib stream (and its delta) as is. */
  packed?: PackedEntry;
  /** The body's length, set where `body` is rebuilt only when first read (src/service/packChecker.ts). */
  bodyBytes?: number;
}

/** An entry's zlib stream as its pack holds it, what it inflates to, and the delta's base. */
export interface PackedEntry {
  /** The zlib stream: a view into the pack. */
  deflated: Buffer;
  /** Bytes the stream inflates to: the object's body, or for a delta the delta's instructions. */
  dataBytes: number;
  /** The base's id for a delta entry (OFS_DELTA or REF_DELTA), null for an entry stored whole. */
  base: Oid | null;
}

export interface ParsedPack {
  version: number;
  /** In pack order. */
  objects: PackObject[];
  /** The trailing SHA-1 (the pack's name in git). */
  checksum: Buffer;
  /** Ids of the bases that came from resolveExternal (a thin pack's missing objects). */
  externalBases: Oid[];
}

interface Limits {
  objectsMax: number;
  objectBytesMax: number;
  totalBytesMax: number;
  deltaDepthMax: number;
}

/** One entry as read, before deltas are resolved. */
interface RawEntry {
  offset: number;
  typeCode: number;
  /** The body, or the delta for OFS_DELTA / REF_DELTA; dropped once resolved. */
  data: Buffer | null;
  /** A whole object's body comes right after its header in its buffer (hashFramedObject): the header's length. */
  headerBytes: number;
  /** For OFS_DELTA: index of the base entry. */
  baseIndex: number;
  /** For REF_DELTA: the base id as a map key. */
  baseKey: string;
  /** The zlib stream's span in the pack and its inflated size (see PackedEntry). */
  dataStart: number;
  dataEnd: number;
  dataBytes: number;
}

interface Resolved {
  type: ObjectType;
  body: Buffer;
  oid: Oid;
  depth: number;
  /** The body's length once the body was dropped (a blob no delta needs any more); -1 while kept. */
  bodyBytes: number;
}

const DROPPED_BODY = Buffer.alloc(0);
/** No entry, in resolveEntries' lists of children. */
const NO_ENTRY = -1;

const oidKey = (oid: Buffer): string => oid.toString('latin1');

/** Reads a whole pack, checks it and rebuilds every object. Throws PackFormatError. */
export function parsePack(pack: Buffer, options: ParsePackOptions = {}): ParsedPack {
  const limits: Limits = {
    objectsMax: options.objectsMax ?? PACK_OBJECTS_MAX_DEFAULT,
    objectBytesMax: options.objectBytesMax ?? PACK_OBJECT_BYTES_MAX_DEFAULT,
    totalBytesMax: options.totalBytesMax ?? PACK_TOTAL_BYTES_MAX_DEFAULT,
    deltaDepthMax: options.deltaDepthMax ?? PACK_DELTA_DEPTH_MAX_DEFAULT,
  };
  const { version, count } = readPackHeader(pack, limits);
  const bodyEnd = pack.length - PACK_TRAILER_BYTES;
  const checksum = pack.subarray(bodyEnd);
  const actual = createHash('sha1').update(pack.subarray(0, bodyEnd)).digest();
  if (!actual.equals(checksum)) throw new PackFormatError('pack checksum mismatch (corrupt or truncated pack)');
  const budget = { inflatedBytes: 0 };
  const entries = readEntries(pack, count, bodyEnd, limits, budget);
  const dropBlobBodies = options.dropBlobBodies ?? false;
  const packObject = (index: number, object: Resolved): PackObject => {
    const entry = entries[index];
    const base = entry.typeCode === OBJ_OFS_DELTA ? resolved[entry.baseIndex]!.oid : entry.typeCode === OBJ_REF_DELTA ? Buffer.from(entry.baseKey, 'latin1') : null;
    const packed: PackedEntry = { deflated: pack.subarray(entry.dataStart, entry.dataEnd), dataBytes: entry.dataBytes, base };
    const parsed: PackObject = { type: object.type, body: object.body, oid: object.oid, offset: entry.offset, deltaDepth: object.depth, packed };
    if (object.bodyBytes >= 0) parsed.bodyBytes = object.bodyBytes;
    return parsed;
  };
  const onResolved = options.onResolved;
  const told = onResolved ? (index: number, object: Resolved) => onResolved(index, packObject(index, object)) : undefined;
  const resolved: Array<Resolved | undefined> = new Array(entries.length);
  const { externalBases } = resolveEntries(entries, resolved, limits, budget, options.resolveExternal, dropBlobBodies, told);
  const objects = entries.map((_, index): PackObject => {
    const object = resolved[index];
    if (!object) throw new PackFormatError('internal: unresolved entry survived resolution');
    return packObject(index, object);
  });
  if (dropBlobBodies) {
    rebuildBodiesOnRead(objects, (index) => resolved[index]!.bodyBytes >= 0, (oid) => options.resolveExternal?.(oid)?.body);
  }
  return { version, objects, checksum: Buffer.from(checksum), externalBases };
}

export function readPackHeader(pack: Buffer, limits: { objectsMax: number }): { version: number; count: number } {
  if (pack.length < PACK_HEADER_BYTES + PACK_TRAILER_BYTES) {
    throw new PackFormatError(`pack of ${pack.length} bytes is too short for a header and a trailer`);
  }
  if (!pack.subarray(0, PACK_SIGNATURE.length).equals(PACK_SIGNATURE)) throw new PackFormatError('not a pack: bad signature');
  const version = pack.readUInt32BE(PACK_VERSION_OFFSET);
  if (!PACK_VERSIONS_READ.has(version)) throw new PackFormatError(`unsupported pack version ${version}`);
  const count = pack.readUInt32BE(PACK_COUNT_OFFSET);
  if (count > limits.objectsMax) throw new PackFormatError(`pack of ${count} objects is over the limit of ${limits.objectsMax}`);
  const entryBytes = pack.length - PACK_HEADER_BYTES - PACK_TRAILER_BYTES;
  if (count * PACK_ENTRY_BYTES_MIN > entryBytes) {
    throw new PackFormatError(`pack announces ${count} objects but has only ${entryBytes} bytes of entries`);
  }
  return { version, count };
}

function readEntries(pack: Buffer, count: number, bodyEnd: number, limits: Limits, budget: { inflatedBytes: number }): RawEntry[] {
  const inflater = new Inflater();
  try {
    return readEntriesWith(inflater, pack, count, bodyEnd, limits, budget);
  } finally {
    inflater.close();
  }
}

function readEntriesWith(inflater: Inflater, pack: Buffer, count: number, bodyEnd: number, limits: Limits, budget: { inflatedBytes: number }): RawEntry[] {
  const entries: RawEntry[] = [];
  const slabs = new SlabAllocator();
  const indexByOffset = new Map<number, number>();
  let at = PACK_HEADER_BYTES;
  for (let index = 0; index < count; index++) {
    const offset = at;
    if (at >= bodyEnd) throw new PackFormatError(`pack ends after ${index} of ${count} objects`);
    const header = readEntryHeader(pack, at, bodyEnd);
    at = header.next;
    if (header.size > limits.objectBytesMax) {
      throw new PackFormatError(`object at ${offset} declares ${header.size} bytes, over the limit of ${limits.objectBytesMax}`);
    }
    const entry: RawEntry = { offset, typeCode: header.typeCode, data: null, headerBytes: 0, baseIndex: -1, baseKey: '', dataStart: 0, dataEnd: 0, dataBytes: header.size };
    if (header.typeCode === OBJ_OFS_DELTA) {
      const distance = readOfsDistance(pack, at, bodyEnd);
      at = distance.next;
      const baseOffset = offset - distance.value;
      const baseIndex = indexByOffset.get(baseOffset);
      if (baseIndex === undefined) {
        throw new PackFormatError(`OFS_DELTA at ${offset} points to ${baseOffset}, which is not the start of an earlier object`);
      }
      entry.baseIndex = baseIndex;
    } else if (header.typeCode === OBJ_REF_DELTA) {
      if (at + OID_BYTES > bodyEnd) throw new PackFormatError(`REF_DELTA at ${offset} is truncated`);
      entry.baseKey = oidKey(pack.subarray(at, at + OID_BYTES));
      at += OID_BYTES;
    } else if (!TYPES_BY_CODE.has(header.typeCode)) {
      throw new PackFormatError(`object at ${offset} has invalid type ${header.typeCode}`);
    }
    budget.inflatedBytes += header.size;
    if (budget.inflatedBytes > limits.totalBytesMax) {
      throw new PackFormatError(`pack inflates to more than the limit of ${limits.totalBytesMax} bytes`);
    }
    const kept = header.typeCode === OBJ_COMMIT || header.typeCode === OBJ_TREE || header.typeCode === OBJ_TAG;
    const inflated = inflateEntry(inflater, slabs, kept, TYPES_BY_CODE.get(header.typeCode) ?? null, pack, at, bodyEnd, header.size, offset);
    entry.data = inflated.data;
    entry.headerBytes = inflated.headerBytes;
    entry.dataStart = at;
    entry.dataEnd = inflated.next;
    at = inflated.next;
    indexByOffset.set(offset, index);
    entries.push(entry);
  }
  if (at !== bodyEnd) throw new PackFormatError(`pack has ${bodyEnd - at} unexpected bytes after its last object`);
  return entries;
}

function readEntryHeader(pack: Buffer, start: number, end: number): { typeCode: number; size: number; next: number } {
  let byte = pack[start];
  const typeCode = (byte >> ENTRY_TYPE_SHIFT) & ENTRY_TYPE_MASK;
  let size = byte & ENTRY_FIRST_SIZE_MASK;
  let scale = 2 ** ENTRY_FIRST_SIZE_BITS;
  let at = start + 1;
  for (let used = 1; byte & VARINT_CONTINUE; used++) {
    if (used >= VARINT_BYTES_MAX) throw new PackFormatError(`object at ${start} has an oversized size field`);
    if (at >= end) throw new PackFormatError(`object at ${start} is truncated in its header`);
    byte = pack[at++];
    size += (byte & VARINT_PAYLOAD_MASK) * scale;
    scale *= 2 ** VARINT_PAYLOAD_BITS;
  }
  return { typeCode, size, next: at };
}

function readOfsDistance(pack: Buffer, start: number, end: number): { value: number; next: number } {
  let at = start;
  if (at >= end) throw new PackFormatError(`OFS_DELTA at ${start} is truncated`);
  let byte = pack[at++];
  let value = byte & VARINT_PAYLOAD_MASK;
  for (let used = 1; byte & VARINT_CONTINUE; used++) {
    if (used >= VARINT_BYTES_MAX) throw new PackFormatError(`OFS_DELTA at ${start} has an oversized offset`);
    if (at >= end) throw new PackFormatError(`OFS_DELTA at ${start} is truncated`);
    byte = pack[at++];
    value = (value + 1) * 2 ** VARINT_PAYLOAD_BITS + (byte & VARINT_PAYLOAD_MASK);
  }
  return { value, next: at };
}

/**
 * Inflates the zlib stream at `start`, which must produce exactly `size` bytes; finds its end. The
 * output has a byte to spare, so a stream that makes more than it declared shows. `kept`: the
 * body lives as long as the parse's result (a tree, commit or tag), so it goes in a slab; a delta
 * or a blob is dropped once resolved and gets an allocation of its own, which a slab of kept
 * bodies would otherwise hold on to.
 */
function inflateEntry(
  inflater: Inflater,
  slabs: SlabAllocator,
  kept: boolean,
  whole: ObjectType | null,
  pack: Buffer,
  start: number,
  end: number,
  size: number,
  offset: number,
): { data: Buffer; next: number; headerBytes: number } {
  // A whole object's header goes in front of its body, so the two are hashed in one call.
  const headerBytes = whole ? objectHeaderLength(whole, size) : 0;
  const framed = kept ? slabs.allocate(headerBytes + size + 1) : Buffer.allocUnsafe(headerBytes + size + 1);
  if (whole) writeObjectHeader(framed, 0, whole, size);
  const output = framed.subarray(headerBytes);
  let made: { bytes: number; consumed: number };
  try {
    made = inflater.inflateInto(pack, start, end, output);
  } catch (error) {
    if (error instanceof InflateError) throw new PackFormatError(`object at ${offset}: bad zlib stream (${error.message})`);
    throw error;
  }
  if (made.bytes > size) throw new PackFormatError(`object at ${offset}: bad zlib stream (inflates past its declared size)`);
  if (made.bytes !== size) throw new PackFormatError(`object at ${offset} inflates to ${made.bytes} bytes, declared ${size}`);
  if (!(made.consumed > 0) || start + made.consumed > end) throw new PackFormatError(`object at ${offset}: zlib stream overruns the pack`);
  return { data: output.subarray(0, size), next: start + made.consumed, headerBytes };
}

/**
 * Rebuilds delta entries. Entries stored whole are roots; resolving an object then resolves the
 * deltas waiting on its position (OFS_DELTA) or its id (REF_DELTA), depth first with an explicit
 * stack. REF_DELTA bases still missing are asked of `resolveExternal`. Whatever stays unresolved
 * has a missing base or is part of a cycle of deltas, and the pack is refused.
 */
function resolveEntries(
  entries: RawEntry[],
  resolved: Array<Resolved | undefined>,
  limits: Limits,
  budget: { inflatedBytes: number },
  resolveExternal: ParsePackOptions['resolveExternal'],
  dropBlobBodies: boolean,
  told: ((index: number, object: Resolved) => void) | undefined,
): { externalBases: Oid[] } {
  const slabs = new RecyclingAllocator(new SlabAllocator());
  // The OFS_DELTAs on each entry, in pack order: a list threaded through three arrays by entry
  // index (a Map of arrays cost 3 µs a delta in a worker's first parse, 0.14 s for a history).
  const firstChild = new Int32Array(entries.length).fill(NO_ENTRY);
  const lastChild = new Int32Array(entries.length).fill(NO_ENTRY);
  const nextChild = new Int32Array(entries.length).fill(NO_ENTRY);
  const childrenByKey = new Map<string, number[]>();
  let unresolved = 0;
  entries.forEach((entry, index) => {
    if (entry.typeCode === OBJ_OFS_DELTA) {
      const base = entry.baseIndex;
      if (lastChild[base] === NO_ENTRY) firstChild[base] = index;
      else nextChild[lastChild[base]] = index;
      lastChild[base] = index;
    } else if (entry.typeCode === OBJ_REF_DELTA) {
      const list = childrenByKey.get(entry.baseKey);
      if (list) list.push(index);
      else childrenByKey.set(entry.baseKey, [index]);
    } else {
      const type = TYPES_BY_CODE.get(entry.typeCode) as ObjectType;
      const body = entry.data as Buffer;
      const object: Resolved = { type, body, oid: hashFramedObject(body, entry.headerBytes), depth: 0, bodyBytes: -1 };
      resolved[index] = object;
      entry.data = null;
      told?.(index, object);
      return;
    }
    unresolved++;
  });

  // Depth first over the deltas hanging off a resolved object (index -1: an external base).
  // Each waiting list is taken once, so every delta is applied at most once.
  const visit = (rootIndex: number, root: Resolved) => {
    const stack: Array<{ index: number; object: Resolved }> = [{ index: rootIndex, object: root }];
    const resolveOnto = (child: number, base: Resolved) => {
      if (resolved[child]) return;
      const object = applyEntryDelta(entries[child], base, limits, budget, slabs);
      resolved[child] = object;
      unresolved--;
      told?.(child, object);
      stack.push({ index: child, object });
    };
    for (let item = stack.pop(); item; item = stack.pop()) {
      if (item.index >= 0) {
        const first = firstChild[item.index];
        firstChild[item.index] = NO_ENTRY;
        for (let child = first; child !== NO_ENTRY; child = nextChild[child]) resolveOnto(child, item.object);
      }
      // A pack of OFS_DELTAs alone (what git sends when ofs-delta is offered) waits on no id.
      if (childrenByKey.size > 0) {
        const key = oidKey(item.object.oid);
        const byKey = childrenByKey.get(key);
        childrenByKey.delete(key);
        if (byKey) for (const child of byKey) resolveOnto(child, item.object);
      }
      // Every delta on this object has been applied: a blob's body is needed no more, and its
      // memory (its header in front of it) takes a later delta's result.
      if (dropBlobBodies && item.index >= 0 && item.object.type === 'blob') {
        const body = item.object.body;
        item.object.bodyBytes = body.length;
        item.object.body = DROPPED_BODY;
        const headerBytes = objectHeaderLength('blob', body.length);
        slabs.recycle(Buffer.from(body.buffer, body.byteOffset - headerBytes, headerBytes + body.length));
      }
    }
  };
  resolved.forEach((object, index) => {
    if (object && object.depth === 0) visit(index, object);
  });

  const externalBases: Oid[] = [];
  if (unresolved > 0 && resolveExternal) {
    for (const key of [...childrenByKey.keys()]) {
      if (!childrenByKey.has(key)) continue;
      const oid = Buffer.from(key, 'latin1');
      const external = resolveExternal(oid);
      if (!external) continue;
      if (!TYPE_CODES[external.type] || !hashObject(external.type, external.body).equals(oid)) {
        throw new PackFormatError(`external base ${oidToHex(oid)} does not hash to its id`);
      }
      externalBases.push(oid);
      visit(-1, { type: external.type, body: external.body, oid, depth: 0, bodyBytes: -1 });
    }
  }
  if (unresolved > 0) {
    const missing = [...childrenByKey.keys()].slice(0, 3).map((key) => oidToHex(Buffer.from(key, 'latin1')));
    throw new PackFormatError(
      `${unresolved} delta(s) could not be resolved: base missing or delta cycle` +
        (missing.length > 0 ? ` (missing ${missing.join(', ')})` : ''),
    );
  }
  return { externalBases };
}

/**
 * Allocations that first take memory given back: the bodies of blobs a parse has dropped (every
 * delta on them applied), so the next versions of a file are rebuilt where older ones were instead
 * of in fresh slabs. A 3,000-commit history inflates some 140 MB of blobs, all dropped by the end;
 * as new external memory each took V8 to six scavenges per parse for "external memory pressure".
 * A few regions are kept, newest first: consecutive versions of one file are near in size.
 */
class RecyclingAllocator {
  private readonly free: Buffer[] = [];

  constructor(private readonly slabs: SlabAllocator) {}

  recycle(region: Buffer): void {
    if (this.free.length === RECYCLED_REGIONS_MAX) this.free.shift();
    this.free.push(region);
  }

  readonly allocate = (bytes: number): Buffer => {
    for (let i = this.free.length - 1; i >= 0; i--) {
      const region = this.free[i];
      if (region.length < bytes) continue;
      this.free.splice(i, 1);
      return region.subarray(0, bytes);
    }
    return this.slabs.allocate(bytes);
  };
}

/** Dropped bodies kept for reuse at once. */
const RECYCLED_REGIONS_MAX = 8;

function applyEntryDelta(entry: RawEntry, base: Resolved, limits: Limits, budget: { inflatedBytes: number }, slabs: { allocate(bytes: number): Buffer }): Resolved {
  const depth = base.depth + 1;
  if (depth > limits.deltaDepthMax) {
    throw new PackFormatError(`delta chain at ${entry.offset} is deeper than the limit of ${limits.deltaDepthMax}`);
  }
  const delta = entry.data as Buffer;
  let body: Buffer;
  let headerBytes = 0;
  try {
    const { resultBytes } = readDeltaHeader(delta);
    if (resultBytes > limits.objectBytesMax) {
      throw new PackFormatError(`delta at ${entry.offset} makes ${resultBytes} bytes, over the limit of ${limits.objectBytesMax}`);
    }
    budget.inflatedBytes += resultBytes;
    if (budget.inflatedBytes > limits.totalBytesMax) {
      throw new PackFormatError(`pack inflates to more than the limit of ${limits.totalBytesMax} bytes`);
    }
    // The header in front of the body, so the two are hashed in one call.
    body = applyDelta(base.body, delta, limits.objectBytesMax, (bytes) => {
      headerBytes = objectHeaderLength(base.type, bytes);
      const framed = slabs.allocate(headerBytes + bytes);
      writeObjectHeader(framed, 0, base.type, bytes);
      return framed.subarray(headerBytes);
    });
  } catch (error) {
    if (error instanceof DeltaError) throw new PackFormatError(`delta at ${entry.offset}: ${error.message}`);
    throw error;
  }
  entry.data = null;
  return { type: base.type, body, oid: hashFramedObject(body, headerBytes), depth, bodyBytes: -1 };
}

/**
 * Replaces each object whose body was left out (`omitted(index)`; its `bodyBytes` set) with one
 * whose body is rebuilt from its pack entry when first read (BodyOnRead): the base's body (another of `objects`, or `external`'s, for
 * a thin pack), then the chain's deltas. Every body rebuilt on the way is kept, so a walk over
 * many versions pays one delta each. Iterative: a chain in a received pack may be thousands deep.
 */
export function rebuildBodiesOnRead(objects: PackObject[], omitted: (index: number) => boolean, external: (oid: Oid) => Buffer | undefined): void {
  const rebuilt = new Map<number, Buffer>();
  let indexOf: OidTable | null = null;
  // One zlib stream for every entry rebuilt (a receiver that keeps no forms rebuilds every blob).
  let inflater: Inflater | null = null;
  const rebuild = (index: number): Buffer => {
    if (!indexOf) {
      indexOf = new OidTable(objects.length);
      objects.forEach((object, at) => indexOf!.add(object.oid, 0, at));
    }
    const chain: number[] = [];
    let base: Buffer | undefined;
    for (let at = index; ; ) {
      base = omitted(at) ? rebuilt.get(at) : objects[at].body;
      if (base) break;
      chain.push(at);
      const baseId = objects[at].packed?.base;
      if (!objects[at].packed) throw new Error(`internal: object ${oidToHex(objects[at].oid)} has neither a body nor a pack entry`);
      if (!baseId) break;
      const baseIndex = indexOf.get(baseId);
      if (baseIndex < 0) {
        base = external(baseId);
        if (!base) throw new Error(`the base ${oidToHex(baseId)} of a received delta is gone`);
        break;
      }
      at = baseIndex;
    }
    for (let k = chain.length - 1; k >= 0; k--) {
      const packed = objects[chain[k]].packed!;
      const data = Buffer.allocUnsafe(packed.dataBytes + 1);
      const { bytes } = (inflater ??= new Inflater()).inflateInto(packed.deflated, 0, packed.deflated.length, data);
      if (bytes !== packed.dataBytes) throw new Error(`internal: the entry of ${oidToHex(objects[chain[k]].oid)} inflates to ${bytes} bytes, not ${packed.dataBytes}`);
      base = packed.base ? applyDelta(base!, data.subarray(0, bytes)) : data.subarray(0, bytes);
      rebuilt.set(chain[k], base);
    }
    return base!;
  };
  for (let index = 0; index < objects.length; index++) if (omitted(index)) objects[index] = new BodyOnRead(objects[index], index, rebuild);
}

/**
 * A received object whose body is rebuilt when first read: a class with the getter on its
 * prototype, where a getter defined on each of 40,000 objects took milliseconds and left them
 * slow to read.
 */
class BodyOnRead implements PackObject {
  readonly type: ObjectType;
  readonly oid: Oid;
  readonly offset: number;
  readonly deltaDepth: number;
  readonly packed?: PackedEntry;
  bodyBytes?: number;

  constructor(
    object: PackObject,
    private readonly index: number,
    private readonly rebuild: (index: number) => Buffer,
  ) {
    this.type = object.type;
    this.oid = object.oid;
    this.offset = object.offset;
    this.deltaDepth = object.deltaDepth;
    if (object.packed) this.packed = object.packed;
    if (object.bodyBytes !== undefined) this.bodyBytes = object.bodyBytes;
  }

  get body(): Buffer {
    return this.rebuild(this.index);
  }
}
