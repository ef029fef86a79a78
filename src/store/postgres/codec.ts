/**
 * How the PostgreSQL backend's values are written to its columns (schema: migrations.ts) and read
 * back: object types as codes, names as their bytes, parents as concatenated ids, records as msgpack.
 */
import { Packr } from 'msgpackr';
import { OID_BYTES, type ObjectType, type Oid } from '../../git/oid.js';
import { decodePath, encodePath, isEncodablePath } from '../../git/pathBytes.js';

/** The same codes as the LMDB backend's (src/store/lmdb.ts). */
export const TYPE_CODES: Readonly<Record<ObjectType, number>> = { commit: 1, tree: 2, blob: 3, tag: 4 };
const TYPE_NAMES: ReadonlyArray<ObjectType | undefined> = [undefined, 'commit', 'tree', 'blob', 'tag'];

export function typeFromCode(code: number): ObjectType {
  const type = TYPE_NAMES[code];
  if (!type) throw new Error(`object type code ${code} is not one this build knows (corrupt database)`);
  return type;
}

/**
 * A ref name, branch or locked path as bytes: the escapes of src/git/pathBytes.ts stand for the
 * bytes they name, so a name that is not UTF-8 comes back as it went in. A string with a lone
 * surrogate that is no escape names no bytes; it is kept as UTF-8 (U+FFFD), as LMDB keeps it.
 */
export function nameBytes(name: string): Buffer {
  return isEncodablePath(name) ? encodePath(name) : Buffer.from(name, 'utf8');
}

export function nameFromBytes(bytes: Buffer): string {
  return decodePath(bytes);
}

/** The first byte string after every one that starts with `prefix`; null when there is none (all 0xff, or empty). */
export function prefixEnd(prefix: Buffer): Buffer | null {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] !== 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return null;
}

/** Ids are lowercase hex: a prefix with anything else (or longer than an id) names no object, as in LMDB. */
export function isIdPrefix(hexPrefix: string): boolean {
  return /^[0-9a-f]{0,40}$/.test(hexPrefix);
}

/**
 * The range of ids that start with the hex digits `hexPrefix` (odd lengths too): from the prefix
 * padded with 0, to the first id past it padded with f (null: no end).
 */
export function oidPrefixRange(hexPrefix: string): { start: Buffer; end: Buffer | null } {
  const even = hexPrefix.length % 2 === 0;
  const start = Buffer.from(even ? hexPrefix : `${hexPrefix}0`, 'hex');
  const end = prefixEnd(even ? start : Buffer.from(`${hexPrefix}f`, 'hex'));
  return { start, end };
}

/** A working tree's locked paths: each path's bytes and a NUL (git paths hold no NUL). */
export function encodeLocks(paths: readonly string[]): Buffer {
  const parts: Buffer[] = [];
  for (const path of paths) {
    const bytes = nameBytes(path);
    if (bytes.includes(0)) throw new Error(`a locked path holds a NUL byte: ${JSON.stringify(path)}`);
    parts.push(bytes, NUL);
  }
  return Buffer.concat(parts);
}

export function decodeLocks(bytes: Buffer): string[] {
  const paths: string[] = [];
  for (let start = 0; start < bytes.length; ) {
    const end = bytes.indexOf(0, start);
    if (end < 0) throw new Error('a working tree\'s locked paths do not end with a NUL (corrupt database)');
    paths.push(nameFromBytes(bytes.subarray(start, end)));
    start = end + 1;
  }
  return paths;
}

const NUL = Buffer.of(0);

export function encodeParents(parents: readonly Oid[]): Buffer {
  return Buffer.concat(parents as Oid[], parents.length * OID_BYTES);
}

export function decodeParents(bytes: Buffer): Oid[] {
  if (bytes.length % OID_BYTES !== 0) throw new Error(`a commit's parents take ${bytes.length} bytes, not whole ids (corrupt database)`);
  const parents: Oid[] = [];
  for (let at = 0; at < bytes.length; at += OID_BYTES) parents.push(bytes.subarray(at, at + OID_BYTES));
  return parents;
}

/**
 * Records as msgpack, as LMDB keeps them (both through msgpackr), without msgpackr's record
 * extension: its shared structures would have to live in the database beside the records.
 */
const records = new Packr({ useRecords: false });

export function encodeRecord(value: unknown): Buffer {
  return records.pack(value);
}

/** A fresh value on every call: callers may change what they read. */
export function decodeRecord<T>(bytes: Buffer): T {
  return records.unpack(bytes) as T;
}

/**
 * The upper bound of the records whose key starts with `prefix`, in the C collation's byte order:
 * the prefix followed by U+10FFFF, whose UTF-8 (F4 8F BF BF) sorts after every character a key can
 * continue with. Only a key that continues with U+10FFFF itself is missed, as LMDB's range (the
 * prefix followed by U+FFFF) misses more.
 */
export function recordPrefixEnd(prefix: string): string {
  return `${prefix}\u{10ffff}`;
}

/*
 * Array parameters, as PostgreSQL's array literals (text, cast by the statement to the array type).
 * postgres.js can send arrays itself, but picks their types from a map it fetches on each new
 * connection, and a statement sent before that map has arrived sends an array of bytea as bytea.
 */

/** `{"\\x00ff",NULL}`: each element a bytea in hex form, quoted (its backslash escaped), or NULL. */
export function byteaArray(values: ReadonlyArray<Buffer | null>): string {
  return `{${values.map((value) => (value === null ? 'NULL' : `"\\\\x${value.toString('hex')}"`)).join(',')}}`;
}

/** `{1,-2,3.5}`: finite numbers (integers for int columns), written as JavaScript writes them. */
export function numberArray(values: readonly number[]): string {
  for (const value of values) if (!Number.isFinite(value)) throw new RangeError(`${value} is not a number an array parameter can hold`);
  return `{${values.join(',')}}`;
}

/** `{"a","b\\"c"}`: each element quoted, its backslashes and double quotes escaped. */
export function textArray(values: readonly string[]): string {
  return `{${values.map((value) => `"${value.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`;
}
