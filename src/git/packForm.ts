/**
 * An object's pack-ready form: its body deflated whole, or a delta against a similar object (the
 * version it replaced at the same path) deflated, when the delta is worth it. git's pack-objects
 * keeps a delta only when it is under half the target's size (try_delta: max_size = trg_size/2 -
 * the id's size); the same rule here, so the forms we keep are the ones git would.
 */
import { deflateSync } from 'node:zlib';
import { createDelta } from './delta.js';
import { OID_BYTES } from './oid.js';

/** Objects smaller than this are never deltified (a delta's headers would eat the saving). */
export const DELTA_TARGET_BYTES_MIN = 64;

export interface PackForm {
  deflated: Buffer;
  /** The delta's size before deflating, when `deflated` is a delta; null when it is the whole body. */
  deltaBytes: number | null;
}

/** The largest delta worth keeping for a target of this size (git's try_delta: under half of it, less an id). */
export function deltaBytesMaxOf(targetBytes: number): number {
  return Math.floor(targetBytes / 2) - OID_BYTES;
}

export function packForm(body: Uint8Array, base: Uint8Array | null, level: number): PackForm {
  if (base && body.length >= DELTA_TARGET_BYTES_MIN && base.length > 0) {
    const delta = createDelta(base, body, deltaBytesMaxOf(body.length));
    if (delta) return { deflated: deflateSync(delta, { level }), deltaBytes: delta.length };
  }
  return { deflated: deflateSync(body, { level }), deltaBytes: null };
}
