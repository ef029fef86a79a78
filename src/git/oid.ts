/**
 * Object ids: SHA-1 over "<type> <size>\0<body>" (Documentation/gitformat-loose.txt, "Object format").
 * Inside Treehouse an id is a 20-byte Buffer; hex appears only at the edges.
 * node:crypto is used instead of @noble/hashes: bench/hash.bench.ts measures it 5 to 7 times faster
 * per 3.4 KB object (bench/RESULTS.md, "Hashing and compression").
 */
import { createHash, hash } from 'node:crypto';

export type Oid = Buffer;
export type ObjectType = 'blob' | 'tree' | 'commit' | 'tag';

export const OID_BYTES = 20;
export const OID_HEX_LENGTH = 40;
const HEX_PATTERN = /^[0-9a-f]{40}$/;
const HEX_PREFIX_PATTERN = /^[0-9a-f]{4,40}$/;

export function objectHeader(type: ObjectType, bodyBytes: number): Buffer {
  return Buffer.from(`${type} ${bodyBytes}\0`, 'latin1');
}

export function hashObject(type: ObjectType, body: Uint8Array): Oid {
  const hash = createHash('sha1');
  hash.update(objectHeader(type, body.length));
  hash.update(body);
  return hash.digest();
}

/** The length of "<type> <size>\0" for a body of `bodyBytes`. */
export function objectHeaderLength(type: ObjectType, bodyBytes: number): number {
  return type.length + 2 + decimalDigits(bodyBytes);
}

/** Writes "<type> <size>\0" at `at` in `out` (objectHeaderLength bytes). */
export function writeObjectHeader(out: Buffer, at: number, type: ObjectType, bodyBytes: number): void {
  out.write(`${type} ${bodyBytes}\0`, at, 'latin1');
}

/**
 * The id of `body`, which its buffer holds right after its header (writeObjectHeader): one call
 * of node's one-shot hash over both, where hashObject makes a hash object and feeds it twice (a
 * received history hashes 40,000 objects).
 */
export function hashFramedObject(body: Uint8Array, headerBytes: number): Oid {
  return hash('sha1', new Uint8Array(body.buffer, body.byteOffset - headerBytes, headerBytes + body.length), 'buffer');
}

function decimalDigits(value: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  return digits;
}

export function oidToHex(oid: Oid): string {
  return oid.toString('hex');
}

export function isOidHex(value: string): boolean {
  return HEX_PATTERN.test(value);
}

export function isOidHexPrefix(value: string): boolean {
  return HEX_PREFIX_PATTERN.test(value);
}

export function oidFromHex(hex: string): Oid {
  if (!isOidHex(hex)) throw new TypeError(`not a 40-hex object id: ${JSON.stringify(hex)}`);
  return Buffer.from(hex, 'hex');
}

export function oidEquals(a: Oid | null | undefined, b: Oid | null | undefined): boolean {
  if (!a || !b) return a === b;
  return a.equals(b);
}

/** The ids every git repository knows without storing them. */
export const EMPTY_TREE_OID = oidFromHex('4b825dc642cb6eb9a060e54bf8d69288fbee4904');
export const EMPTY_BLOB_OID = oidFromHex('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');

/**
 * Sorts `items` in place by their ids' bytes (each id read at `offset` of what `idOf` gives),
 * comparing the first 8 bytes as two numbers and the whole id only on a tie: Buffer.compare is a
 * call into C++ per comparison, and sorting 43,000 ids through it held the event loop 90-150 ms.
 */
export function sortByOid<T>(items: T[], idOf: (item: T) => Buffer, offset = 0): T[] {
  const keyed = items.map((item) => {
    const id = idOf(item);
    return { item, id, high: id.readUInt32BE(offset), low: id.readUInt32BE(offset + 4) };
  });
  keyed.sort((a, b) => a.high - b.high || a.low - b.low || Buffer.compare(a.id.subarray(offset, offset + OID_BYTES), b.id.subarray(offset, offset + OID_BYTES)));
  keyed.forEach(({ item }, index) => (items[index] = item));
  return items;
}
