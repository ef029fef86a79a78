/**
 * Git deltas (Documentation/gitformat-pack.txt, "Deltified representation"): the base size and
 * the result size in the "size encoding" (7 bits a byte, least significant first, high bit set
 * while more bytes follow), then instructions. An instruction with its high bit set copies a
 * range of the base: its low seven bits say which of four little-endian offset bytes and three
 * size bytes follow, and a size of zero means 0x10000. An instruction 0x01..0x7f inserts that
 * many literal bytes that follow it. Instruction 0x00 is reserved and refused.
 *
 * applyDelta checks every bound before touching memory; createDelta is a simple block matcher
 * (16-byte windows of the base indexed by a rolling hash), aiming at correctness and speed
 * rather than the best ratio.
 */

/** High bit of an instruction: copy from the base. */
const COPY_INSTRUCTION = 0x80;
/** Copy instruction bits 0-3: which offset bytes follow (little-endian). */
const COPY_OFFSET_BYTE_FLAGS = [0x01, 0x02, 0x04, 0x08] as const;
/** Copy instruction bits 4-6: which size bytes follow (little-endian). */
const COPY_SIZE_BYTE_FLAGS = [0x10, 0x20, 0x40] as const;
/** A copy whose encoded size is zero copies this many bytes. */
export const DELTA_COPY_SIZE_ZERO_MEANS = 0x10000;
/** The largest copy one instruction can express (three size bytes). */
export const DELTA_COPY_BYTES_MAX = 0xffffff;
/** The largest base offset one instruction can express (four offset bytes). */
export const DELTA_COPY_OFFSET_MAX = 0xffffffff;
/** Insert instructions carry 1..127 literal bytes. */
export const DELTA_INSERT_BYTES_MAX = 0x7f;
/** Copy operands are little-endian bytes. */
const BITS_PER_BYTE = 8;
const BYTE_MASK = 0xff;
/** The reserved instruction. */
const RESERVED_INSTRUCTION = 0x00;
/** Bits of payload per byte of the size encoding, and its continuation bit. */
const VARINT_PAYLOAD_BITS = 7;
const VARINT_CONTINUE = 0x80;
const VARINT_PAYLOAD_MASK = 0x7f;
/** Sizes beyond 2^53 cannot be held exactly; ten 7-bit groups already pass that. */
const VARINT_BYTES_MAX = 8;

/** Default limit on the size of an object rebuilt from a delta. */
export const DELTA_RESULT_BYTES_MAX_DEFAULT = 512 * 1024 * 1024;

/** createDelta: bytes per indexed window of the base. */
const WINDOW_BYTES = 16;
/** createDelta: how many base positions with the same hash are tried per target position. */
const CANDIDATES_PER_HASH_MAX = 32;
/** createDelta: the largest copy it emits, as git's own encoder does (size bytes 0 0 1 = 0x10000). */
const CREATE_COPY_BYTES_MAX = DELTA_COPY_SIZE_ZERO_MEANS;
/** createDelta: multiplier of the polynomial rolling hash. */
const HASH_MULTIPLIER = 0x01000193;

export class DeltaError extends Error {
  override name = 'DeltaError';
}

/** Reads one size-encoded integer at `offset`. */
export function readDeltaSize(delta: Uint8Array, offset: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < VARINT_BYTES_MAX; i++) {
    if (offset + i >= delta.length) throw new DeltaError('delta truncated inside a size');
    const byte = delta[offset + i];
    value += (byte & VARINT_PAYLOAD_MASK) * scale;
    if ((byte & VARINT_CONTINUE) === 0) return { value, next: offset + i + 1 };
    scale *= 2 ** VARINT_PAYLOAD_BITS;
  }
  throw new DeltaError('delta size is too large');
}

export function encodeDeltaSize(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new DeltaError(`invalid delta size ${value}`);
  const bytes: number[] = [];
  let rest = value;
  do {
    let byte = rest % 2 ** VARINT_PAYLOAD_BITS;
    rest = Math.floor(rest / 2 ** VARINT_PAYLOAD_BITS);
    if (rest > 0) byte |= VARINT_CONTINUE;
    bytes.push(byte);
  } while (rest > 0);
  return Buffer.from(bytes);
}

/** The two sizes at the start of a delta, and where its instructions begin. */
export function readDeltaHeader(delta: Uint8Array): { baseBytes: number; resultBytes: number; instructionsOffset: number } {
  const base = readDeltaSize(delta, 0);
  const result = readDeltaSize(delta, base.next);
  return { baseBytes: base.value, resultBytes: result.value, instructionsOffset: result.next };
}

/**
 * Rebuilds the target from `base` and `delta`. Throws DeltaError when the base size differs from
 * the one the delta names, a copy reaches outside the base, an instruction would write past the
 * declared result size or stops short of it, the delta is truncated, or the reserved opcode appears.
 */
export function applyDelta(base: Uint8Array, delta: Uint8Array, resultBytesMax = DELTA_RESULT_BYTES_MAX_DEFAULT): Buffer {
  const { baseBytes, resultBytes, instructionsOffset } = readDeltaHeader(delta);
  if (baseBytes !== base.length) {
    throw new DeltaError(`delta expects a base of ${baseBytes} bytes, the base has ${base.length}`);
  }
  if (resultBytes > resultBytesMax) throw new DeltaError(`delta result of ${resultBytes} bytes is over ${resultBytesMax}`);
  const out = Buffer.allocUnsafe(resultBytes);
  let written = 0;
  let at = instructionsOffset;
  while (at < delta.length) {
    const instruction = delta[at++];
    if (instruction & COPY_INSTRUCTION) {
      let copyOffset = 0;
      let copyBytes = 0;
      for (let i = 0; i < COPY_OFFSET_BYTE_FLAGS.length; i++) {
        if (instruction & COPY_OFFSET_BYTE_FLAGS[i]) {
          if (at >= delta.length) throw new DeltaError('delta truncated inside a copy instruction');
          copyOffset += delta[at++] * 2 ** (BITS_PER_BYTE * i);
        }
      }
      for (let i = 0; i < COPY_SIZE_BYTE_FLAGS.length; i++) {
        if (instruction & COPY_SIZE_BYTE_FLAGS[i]) {
          if (at >= delta.length) throw new DeltaError('delta truncated inside a copy instruction');
          copyBytes += delta[at++] * 2 ** (BITS_PER_BYTE * i);
        }
      }
      if (copyBytes === 0) copyBytes = DELTA_COPY_SIZE_ZERO_MEANS;
      if (copyOffset + copyBytes > base.length) {
        throw new DeltaError(`delta copies ${copyBytes} bytes at ${copyOffset}, outside a base of ${base.length}`);
      }
      if (written + copyBytes > resultBytes) throw new DeltaError('delta writes past its declared result size');
      out.set(base.subarray(copyOffset, copyOffset + copyBytes), written);
      written += copyBytes;
    } else if (instruction !== RESERVED_INSTRUCTION) {
      const insertBytes = instruction;
      if (at + insertBytes > delta.length) throw new DeltaError('delta truncated inside inserted data');
      if (written + insertBytes > resultBytes) throw new DeltaError('delta writes past its declared result size');
      out.set(delta.subarray(at, at + insertBytes), written);
      written += insertBytes;
      at += insertBytes;
    } else {
      throw new DeltaError('delta uses the reserved instruction 0x00');
    }
  }
  if (written !== resultBytes) throw new DeltaError(`delta produced ${written} bytes, declared ${resultBytes}`);
  return out;
}

/** Accumulates delta bytes in growing blocks so large deltas do not copy quadratically. */
class ByteSink {
  private chunk = Buffer.allocUnsafe(4096);
  private used = 0;
  private readonly done: Buffer[] = [];
  private doneBytes = 0;

  get length(): number {
    return this.doneBytes + this.used;
  }

  byte(value: number): void {
    if (this.used === this.chunk.length) this.grow(1);
    this.chunk[this.used++] = value;
  }

  bytes(values: Uint8Array): void {
    if (this.used + values.length > this.chunk.length) this.grow(values.length);
    this.chunk.set(values, this.used);
    this.used += values.length;
  }

  private grow(atLeast: number): void {
    this.done.push(this.chunk.subarray(0, this.used));
    this.doneBytes += this.used;
    this.chunk = Buffer.allocUnsafe(Math.max(atLeast, this.chunk.length * 2));
    this.used = 0;
  }

  toBuffer(): Buffer {
    return Buffer.concat([...this.done, this.chunk.subarray(0, this.used)]);
  }
}

function emitInserts(sink: ByteSink, target: Uint8Array, start: number, end: number): void {
  for (let at = start; at < end; at += DELTA_INSERT_BYTES_MAX) {
    const stop = Math.min(end, at + DELTA_INSERT_BYTES_MAX);
    sink.byte(stop - at);
    sink.bytes(target.subarray(at, stop));
  }
}

function emitCopy(sink: ByteSink, offset: number, bytes: number): void {
  let instruction = COPY_INSTRUCTION;
  const operands: number[] = [];
  for (let i = 0; i < COPY_OFFSET_BYTE_FLAGS.length; i++) {
    const byte = Math.floor(offset / 2 ** (BITS_PER_BYTE * i)) & BYTE_MASK;
    if (byte !== 0) {
      instruction |= COPY_OFFSET_BYTE_FLAGS[i];
      operands.push(byte);
    }
  }
  const sizeField = bytes === DELTA_COPY_SIZE_ZERO_MEANS ? 0 : bytes;
  for (let i = 0; i < COPY_SIZE_BYTE_FLAGS.length; i++) {
    const byte = (sizeField >>> (BITS_PER_BYTE * i)) & BYTE_MASK;
    if (byte !== 0) {
      instruction |= COPY_SIZE_BYTE_FLAGS[i];
      operands.push(byte);
    }
  }
  sink.byte(instruction);
  for (const operand of operands) sink.byte(operand);
}

function windowHash(bytes: Uint8Array, start: number): number {
  let hash = 0;
  for (let i = 0; i < WINDOW_BYTES; i++) hash = (Math.imul(hash, HASH_MULTIPLIER) + bytes[start + i]) | 0;
  return hash;
}

/** HASH_MULTIPLIER ** (WINDOW_BYTES - 1) mod 2^32: the weight of the byte leaving the window. */
const OUTGOING_WEIGHT = (() => {
  let weight = 1;
  for (let i = 1; i < WINDOW_BYTES; i++) weight = Math.imul(weight, HASH_MULTIPLIER);
  return weight;
})();

/** The hash of the window one byte further on, from the hash of the window at `start`. */
function rollHash(hash: number, bytes: Uint8Array, start: number): number {
  const without = (hash - Math.imul(bytes[start], OUTGOING_WEIGHT)) | 0;
  return (Math.imul(without, HASH_MULTIPLIER) + bytes[start + WINDOW_BYTES]) | 0;
}

/** Hash table over base windows at every WINDOW_BYTES-th position; later positions first. */
interface BaseIndex {
  mask: number;
  heads: Int32Array;
  next: Int32Array;
}

function indexBase(base: Uint8Array): BaseIndex {
  const windows = Math.floor(base.length / WINDOW_BYTES);
  let size = 1;
  while (size < windows * 2) size *= 2;
  const heads = new Int32Array(size).fill(-1);
  const next = new Int32Array(Math.max(windows, 1));
  const mask = size - 1;
  for (let w = 0; w < windows; w++) {
    const slot = windowHash(base, w * WINDOW_BYTES) & mask;
    next[w] = heads[slot];
    heads[slot] = w;
  }
  return { mask, heads, next };
}

/**
 * Makes a delta that turns `base` into `target`. With `deltaBytesMax`, gives up and returns null
 * as soon as the delta would be larger (a caller then stores the object whole).
 */
export function createDelta(base: Uint8Array, target: Uint8Array): Buffer;
export function createDelta(base: Uint8Array, target: Uint8Array, deltaBytesMax: number): Buffer | null;
export function createDelta(base: Uint8Array, target: Uint8Array, deltaBytesMax = Infinity): Buffer | null {
  if (base.length > DELTA_COPY_OFFSET_MAX + 1) throw new DeltaError('delta base is too large to address');
  const sink = new ByteSink();
  sink.bytes(encodeDeltaSize(base.length));
  sink.bytes(encodeDeltaSize(target.length));
  const index = indexBase(base);
  let literalStart = 0;
  let at = 0;
  let hash = target.length >= WINDOW_BYTES ? windowHash(target, 0) : 0;
  while (at + WINDOW_BYTES <= target.length) {
    let bestBase = -1;
    let bestBytes = 0;
    let candidates = 0;
    for (let w = index.heads[hash & index.mask]; w >= 0 && candidates < CANDIDATES_PER_HASH_MAX; w = index.next[w]) {
      candidates++;
      const from = w * WINDOW_BYTES;
      let length = 0;
      const limit = Math.min(base.length - from, target.length - at);
      while (length < limit && base[from + length] === target[at + length]) length++;
      if (length >= WINDOW_BYTES && length > bestBytes) {
        bestBytes = length;
        bestBase = from;
      }
    }
    if (bestBase < 0) {
      if (at + WINDOW_BYTES < target.length) hash = rollHash(hash, target, at);
      at++;
      continue;
    }
    // Grow the match backwards over literal bytes not yet written.
    while (at > literalStart && bestBase > 0 && base[bestBase - 1] === target[at - 1]) {
      at--;
      bestBase--;
      bestBytes++;
    }
    emitInserts(sink, target, literalStart, at);
    for (let done = 0; done < bestBytes; done += CREATE_COPY_BYTES_MAX) {
      emitCopy(sink, bestBase + done, Math.min(CREATE_COPY_BYTES_MAX, bestBytes - done));
    }
    at += bestBytes;
    literalStart = at;
    if (sink.length > deltaBytesMax) return null;
    if (at + WINDOW_BYTES <= target.length) hash = windowHash(target, at);
  }
  emitInserts(sink, target, literalStart, target.length);
  if (sink.length > deltaBytesMax) return null;
  return sink.toBuffer();
}
