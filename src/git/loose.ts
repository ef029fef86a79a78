/**
 * Loose object files (Documentation/gitformat-loose.txt): zlib-deflated "<type> <size>\0<body>"
 * stored at objects/<2 hex>/<38 hex>. Used to export a project to a bare repository for checks.
 */
import { deflateSync, inflateSync } from 'node:zlib';
import { objectHeader, oidToHex, type ObjectType, type Oid } from './oid.js';

export function encodeLooseObject(type: ObjectType, body: Uint8Array): Buffer {
  return deflateSync(Buffer.concat([objectHeader(type, body.length), body]));
}

export function looseObjectPath(oid: Oid): string {
  const hex = oidToHex(oid);
  return `objects/${hex.slice(0, 2)}/${hex.slice(2)}`;
}

export function decodeLooseObject(bytes: Uint8Array): { type: ObjectType; body: Buffer } {
  const raw = inflateSync(bytes);
  const nul = raw.indexOf(0);
  const [type, size] = raw.toString('latin1', 0, nul).split(' ');
  const body = raw.subarray(nul + 1);
  if (Number(size) !== body.length) throw new Error('loose object size mismatch');
  return { type: type as ObjectType, body };
}
