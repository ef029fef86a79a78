/**
 * Git deltas (Documentation/gitformat-pack.txt, "Deltified representation"): the base size and
 * the result size in the "size encoding" (7 bits a byte, least significant first, high bit set
 * while more bytes follow), then instructions. An instruction with its high bit set copies a
 * range of the base: its low seven bits say which of four little-endian offset bytes and three
 * size bytes follow, and a size of zero means 0x10000. An instruction 0x01..0x7f inserts that
 * many literal bytes that follow it. Instruction 0x00 is reserved and refused.
 *
 * applyDelta checks every bound before touching memory. createDelta (below, "Creating deltas")
 * indexes the base's blocks and extends matches greedily, as git's diff-delta.c does, so its
 * deltas are about the size of git's for the same pair.
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

/** Runs shorter than this are copied in a loop rather than through a typed-array view. */
const SHORT_COPY_BYTES = 64;

/** Default limit on the size of an object rebuilt from a delta. */
export const DELTA_RESULT_BYTES_MAX_DEFAULT = 512 * 1024 * 1024;

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
/**
 * Rebuilds the object `delta` makes of `base`. `allocate` gives the result's buffer (a parser that
 * rebuilds thousands of objects carves them from large slabs: one external allocation per object
 * made V8 collect garbage far more often).
 */
export function applyDelta(
  base: Uint8Array,
  delta: Uint8Array,
  resultBytesMax = DELTA_RESULT_BYTES_MAX_DEFAULT,
  allocate: (bytes: number) => Buffer = Buffer.allocUnsafe,
): Buffer {
  const { baseBytes, resultBytes, instructionsOffset } = readDeltaHeader(delta);
  if (baseBytes !== base.length) {
    throw new DeltaError(`delta expects a base of ${baseBytes} bytes, the base has ${base.length}`);
  }
  if (resultBytes > resultBytesMax) throw new DeltaError(`delta result of ${resultBytes} bytes is over ${resultBytesMax}`);
  const out = allocate(resultBytes);
  const end = delta.length;
  const baseBytesTotal = base.length;
  let written = 0;
  let at = instructionsOffset;
  while (at < end) {
    const instruction = delta[at++];
    let from: Uint8Array;
    let start: number;
    let bytes: number;
    if (instruction & COPY_INSTRUCTION) {
      // Operand bytes in the order of their flag bits: offset bytes 0-3, then size bytes 0-2.
      let operands = 0;
      for (let flag = 1; flag < COPY_INSTRUCTION; flag <<= 1) if (instruction & flag) operands++;
      if (at + operands > end) throw new DeltaError('delta truncated inside a copy instruction');
      let copyOffset = 0;
      if (instruction & COPY_OFFSET_BYTE_FLAGS[0]) copyOffset = delta[at++];
      if (instruction & COPY_OFFSET_BYTE_FLAGS[1]) copyOffset |= delta[at++] << BITS_PER_BYTE;
      if (instruction & COPY_OFFSET_BYTE_FLAGS[2]) copyOffset |= delta[at++] << (2 * BITS_PER_BYTE);
      if (instruction & COPY_OFFSET_BYTE_FLAGS[3]) copyOffset = (copyOffset | (delta[at++] << (3 * BITS_PER_BYTE))) >>> 0;
      let copyBytes = 0;
      if (instruction & COPY_SIZE_BYTE_FLAGS[0]) copyBytes = delta[at++];
      if (instruction & COPY_SIZE_BYTE_FLAGS[1]) copyBytes |= delta[at++] << BITS_PER_BYTE;
      if (instruction & COPY_SIZE_BYTE_FLAGS[2]) copyBytes |= delta[at++] << (2 * BITS_PER_BYTE);
      if (copyBytes === 0) copyBytes = DELTA_COPY_SIZE_ZERO_MEANS;
      if (copyOffset + copyBytes > baseBytesTotal) {
        throw new DeltaError(`delta copies ${copyBytes} bytes at ${copyOffset}, outside a base of ${baseBytesTotal}`);
      }
      from = base;
      start = copyOffset;
      bytes = copyBytes;
    } else if (instruction !== RESERVED_INSTRUCTION) {
      if (at + instruction > end) throw new DeltaError('delta truncated inside inserted data');
      from = delta;
      start = at;
      bytes = instruction;
      at += instruction;
    } else {
      throw new DeltaError('delta uses the reserved instruction 0x00');
    }
    if (written + bytes > resultBytes) throw new DeltaError('delta writes past its declared result size');
    // A short run is copied byte by byte: a view for set() costs more than the bytes themselves.
    if (bytes < SHORT_COPY_BYTES) {
      for (let i = 0; i < bytes; i++) out[written + i] = from[start + i];
    } else {
      out.set(from.subarray(start, start + bytes), written);
    }
    written += bytes;
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

// ---------------------------------------------------------------------------------------------
// Creating deltas
//
// The design follows git's diff-delta.c (described, not copied): the base is cut into
// DELTA_BLOCK_BYTES-byte blocks, each block's hash goes into a table; the target is scanned with a
// rolling hash of the same width, one position at a time. Where a target window's hash is in the
// table, the candidate blocks are compared byte by byte, the longest match (forwards from the
// window) wins and is then grown backwards over the literal bytes not yet written; a copy is
// emitted for it and the scan resumes after it. Every common run of at least
// DELTA_BLOCK_BYTES + step - 1 bytes holds a whole indexed block, so it is found. Where git starts
// a match at the window's last byte (so a chance likeness of one window is too short to take), we
// start at its first and look ahead one step past a short match instead (see createDeltaWithIndex).
//
// Limits keep it linear in practice: at most BUCKET_ENTRIES_MAX blocks per hash bucket (thinned
// evenly, so repetitive data cannot make a bucket a list of the whole base), a run of identical
// consecutive blocks indexed once (its first, the one that can match longest), the search stops at
// a match of MATCH_GOOD_ENOUGH_BYTES, and each candidate is compared for at most
// MATCH_COMPARE_BYTES_MAX bytes before the winner is grown to its full length. The index holds at
// most DELTA_INDEX_BLOCKS_MAX blocks: a larger base is indexed every `step` bytes instead of every
// DELTA_BLOCK_BYTES, which only loses matches shorter than the step.

/** Bytes of the base per indexed block, and the width of the rolling hash over the target. */
export const DELTA_BLOCK_BYTES = 16;
/** Blocks kept per hash bucket; more are thinned evenly (git keeps 64 too). */
const BUCKET_ENTRIES_MAX = 64;
/** About this many blocks per bucket before thinning: most target windows then find an empty bucket at once. */
const BLOCKS_PER_BUCKET = 1;
const BUCKET_BITS_MIN = 4;
/** Blocks indexed at most (4 Mi blocks: a base up to 64 MiB is indexed at every block). */
export const DELTA_INDEX_BLOCKS_MAX = 1 << 22;
/** A match this long ends the search among candidates: longer ones would save little more. */
const MATCH_GOOD_ENOUGH_BYTES = 4096;
/** How far one candidate is compared while choosing; the chosen one is then grown without limit. */
const MATCH_COMPARE_BYTES_MAX = 0x10000;
/** Shorter matches are written as literals: a copy instruction takes up to 8 bytes itself. */
const MATCH_BYTES_MIN = DELTA_BLOCK_BYTES;
/** The largest copy createDelta emits, as git's encoder does (pack v2: size bytes 00 00 01 mean 0x10000). */
const CREATE_COPY_BYTES_MAX = DELTA_COPY_SIZE_ZERO_MEANS;
/** Multiplier of the polynomial rolling hash (odd, so no byte's contribution vanishes mod 2^32). */
const HASH_MULTIPLIER = 0x01000193;
/** Fibonacci hashing: spreads the rolling hash's weak low bits before taking the bucket from the top bits. */
const BUCKET_SPREAD = 0x9e3779b1;
const UINT32_BITS = 32;

/** HASH_MULTIPLIER ** (DELTA_BLOCK_BYTES - 1) mod 2^32: the weight of the byte leaving the window. */
const OUTGOING_WEIGHT = (() => {
  let weight = 1;
  for (let i = 1; i < DELTA_BLOCK_BYTES; i++) weight = Math.imul(weight, HASH_MULTIPLIER);
  return weight;
})();

/** The hash of the DELTA_BLOCK_BYTES bytes at `start`. */
function blockHash(bytes: Uint8Array, start: number): number {
  let hash = 0;
  for (let i = start; i < start + DELTA_BLOCK_BYTES; i++) hash = (Math.imul(hash, HASH_MULTIPLIER) + bytes[i]) | 0;
  return hash;
}

/**
 * The blocks of one base, by hash: a reusable index, so a search that tries one base against
 * several targets (pack-objects' window) indexes it once.
 */
export class DeltaIndex {
  /** Bucket b holds entries bucketStarts[b] .. bucketStarts[b + 1] - 1, in ascending base position. */
  private readonly bucketStarts: Int32Array;
  /** Base position of each kept block. */
  private readonly positions: Uint32Array;
  /** Each kept block's full hash, to skip other hashes sharing its bucket without reading the base. */
  private readonly hashes: Int32Array;
  private readonly bucketShift: number;
  /** Distance between indexed blocks: DELTA_BLOCK_BYTES unless the base has more blocks than the index may hold. */
  readonly step: number;

  constructor(
    readonly base: Uint8Array,
    blocksMax = DELTA_INDEX_BLOCKS_MAX,
  ) {
    if (base.length > DELTA_COPY_OFFSET_MAX + 1) throw new DeltaError('delta base is too large to address');
    const blocksAtEveryBlock = Math.floor(base.length / DELTA_BLOCK_BYTES);
    this.step = blocksAtEveryBlock <= blocksMax ? DELTA_BLOCK_BYTES : Math.ceil(base.length / blocksMax / DELTA_BLOCK_BYTES) * DELTA_BLOCK_BYTES;
    const blocks = base.length < DELTA_BLOCK_BYTES ? 0 : Math.min(blocksMax, Math.floor((base.length - DELTA_BLOCK_BYTES) / this.step) + 1);

    // One pass for the hashes, skipping a block whose hash repeats its predecessor's (runs of equal data).
    const blockHashes = new Int32Array(blocks);
    const blockPositions = new Uint32Array(blocks);
    let kept = 0;
    let previous = 0;
    for (let i = 0; i < blocks; i++) {
      const position = i * this.step;
      const hash = blockHash(base, position);
      const repeats = i > 0 && hash === previous;
      previous = hash;
      if (repeats) continue;
      blockHashes[kept] = hash;
      blockPositions[kept] = position;
      kept++;
    }

    let bucketBits = BUCKET_BITS_MIN;
    while (1 << bucketBits < kept / BLOCKS_PER_BUCKET && bucketBits < UINT32_BITS - 2) bucketBits++;
    const buckets = 1 << bucketBits;
    this.bucketShift = UINT32_BITS - bucketBits;

    // Counting sort by bucket; positions stay ascending within a bucket.
    const counts = new Int32Array(buckets + 1);
    const bucketOf = new Int32Array(kept);
    for (let i = 0; i < kept; i++) {
      const bucket = Math.imul(blockHashes[i], BUCKET_SPREAD) >>> this.bucketShift;
      bucketOf[i] = bucket;
      counts[bucket + 1]++;
    }
    const starts = new Int32Array(buckets + 1);
    for (let b = 0; b < buckets; b++) starts[b + 1] = starts[b] + Math.min(counts[b + 1], BUCKET_ENTRIES_MAX);
    const total = starts[buckets];
    this.positions = new Uint32Array(total);
    this.hashes = new Int32Array(total);
    const seen = new Int32Array(buckets);
    const filled = new Int32Array(buckets);
    for (let i = 0; i < kept; i++) {
      const bucket = bucketOf[i];
      const count = counts[bucket + 1];
      const ordinal = seen[bucket]++;
      // Thinning: of `count` entries keep those where floor(ordinal * max / count) steps up, evenly spread.
      if (count > BUCKET_ENTRIES_MAX && Math.floor((ordinal * BUCKET_ENTRIES_MAX) / count) === Math.floor(((ordinal - 1) * BUCKET_ENTRIES_MAX) / count) && ordinal > 0) {
        continue;
      }
      const slot = starts[bucket] + filled[bucket]++;
      this.positions[slot] = blockPositions[i];
      this.hashes[slot] = blockHashes[i];
    }
    this.bucketStarts = starts;
  }

  /** False when no block has this hash (most windows of a target, found without a call into findMatch's loop). */
  mayHold(hash: number): boolean {
    const bucket = Math.imul(hash, BUCKET_SPREAD) >>> this.bucketShift;
    const end = this.bucketStarts[bucket + 1];
    for (let k = this.bucketStarts[bucket]; k < end; k++) if (this.hashes[k] === hash) return true;
    return false;
  }

  /** Entries kept in the index (for tests and tuning). */
  get entries(): number {
    return this.positions.length;
  }

  /** Bytes the index's own arrays take (a window of bases counts them against its memory bound). */
  get bytes(): number {
    return this.bucketStarts.byteLength + this.positions.byteLength + this.hashes.byteLength;
  }

  /**
   * The longest match (forwards only) of the target window at `at`, whose hash is `hash`, with a
   * block of the base: its base position and length, or length 0.
   */
  findMatch(target: Uint8Array, at: number, hash: number, result: { position: number; bytes: number }): void {
    const base = this.base;
    const bucket = Math.imul(hash, BUCKET_SPREAD) >>> this.bucketShift;
    const end = this.bucketStarts[bucket + 1];
    const targetLeft = target.length - at;
    let bestBytes = 0;
    let bestPosition = 0;
    const hashes = this.hashes;
    for (let k = this.bucketStarts[bucket]; k < end; k++) {
      if (hashes[k] !== hash) continue;
      const position = this.positions[k];
      const limit = Math.min(base.length - position, targetLeft, MATCH_COMPARE_BYTES_MAX);
      // Positions ascend, so no later block has more room than this one: none can beat the best.
      if (limit <= bestBytes) break;
      let length = 0;
      while (length < limit && base[position + length] === target[at + length]) length++;
      if (length > bestBytes) {
        bestBytes = length;
        bestPosition = position;
        if (length >= MATCH_GOOD_ENOUGH_BYTES) break;
      }
    }
    // The winner was compared up to the cap only: grow it to its full length.
    if (bestBytes === MATCH_COMPARE_BYTES_MAX) {
      const limit = Math.min(base.length - bestPosition, targetLeft);
      while (bestBytes < limit && base[bestPosition + bestBytes] === target[at + bestBytes]) bestBytes++;
    }
    result.position = bestPosition;
    result.bytes = bestBytes;
  }
}

function emitInserts(sink: ByteSink, target: Uint8Array, start: number, end: number): void {
  for (let at = start; at < end; at += DELTA_INSERT_BYTES_MAX) {
    const stop = Math.min(end, at + DELTA_INSERT_BYTES_MAX);
    sink.byte(stop - at);
    sink.bytes(target.subarray(at, stop));
  }
}

/** One copy instruction; only the non-zero offset and size bytes are written, as git does. */
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

/**
 * Makes a delta that turns `base` into `target`. With `deltaBytesMax`, gives up and returns null
 * as soon as the delta would be larger (a caller then stores the object whole).
 */
export function createDelta(base: Uint8Array, target: Uint8Array): Buffer;
export function createDelta(base: Uint8Array, target: Uint8Array, deltaBytesMax: number): Buffer | null;
export function createDelta(base: Uint8Array, target: Uint8Array, deltaBytesMax = Infinity): Buffer | null {
  return createDeltaWithIndex(new DeltaIndex(base), target, deltaBytesMax);
}

/** createDelta against a base already indexed. */
export function createDeltaWithIndex(index: DeltaIndex, target: Uint8Array): Buffer;
export function createDeltaWithIndex(index: DeltaIndex, target: Uint8Array, deltaBytesMax: number): Buffer | null;
export function createDeltaWithIndex(index: DeltaIndex, target: Uint8Array, deltaBytesMax = Infinity): Buffer | null {
  const base = index.base;
  const sink = new ByteSink();
  sink.bytes(encodeDeltaSize(base.length));
  sink.bytes(encodeDeltaSize(target.length));
  const match = { position: 0, bytes: 0 };
  const later = { position: 0, bytes: 0 };
  const lastWindow = target.length - DELTA_BLOCK_BYTES;
  let literalStart = 0;
  let at = 0;
  let hash = lastWindow >= 0 ? blockHash(target, 0) : 0;
  // Literals may run up to this position before the delta is over deltaBytesMax.
  let literalsUntil = literalStart + (deltaBytesMax - sink.length);
  while (at <= lastWindow) {
    if (index.mayHold(hash)) index.findMatch(target, at, hash, match);
    else match.bytes = 0;
    if (match.bytes < MATCH_BYTES_MIN) {
      // No copy here: this byte becomes a literal.
      if (at >= literalsUntil) return null;
      if (at < lastWindow) hash = (Math.imul((hash - Math.imul(target[at], OUTGOING_WEIGHT)) | 0, HASH_MULTIPLIER) + target[at + DELTA_BLOCK_BYTES]) | 0;
      at++;
      continue;
    }
    let from = match.position;
    let bytes = match.bytes;
    if (bytes < MATCH_GOOD_ENOUGH_BYTES) {
      // A short match may be a chance likeness (a common identifier) just before the real
      // continuation, which is only found where the target lines up with an indexed block, up to
      // one step later. Taking the short copy would hide the bytes the real match could have
      // reached backwards, so look ahead once and keep whichever match reaches further.
      const probeLast = Math.min(lastWindow, at + Math.min(index.step, bytes) - 1);
      let probeHash = hash;
      for (let probe = at + 1; probe <= probeLast; probe++) {
        probeHash = (Math.imul((probeHash - Math.imul(target[probe - 1], OUTGOING_WEIGHT)) | 0, HASH_MULTIPLIER) + target[probe + DELTA_BLOCK_BYTES - 1]) | 0;
        if (!index.mayHold(probeHash)) continue;
        index.findMatch(target, probe, probeHash, later);
        if (later.bytes >= MATCH_BYTES_MIN && probe + later.bytes > at + bytes) {
          at = probe;
          from = later.position;
          bytes = later.bytes;
        }
      }
    }
    // Grow the match backwards over literal bytes not yet written.
    while (at > literalStart && from > 0 && base[from - 1] === target[at - 1]) {
      at--;
      from--;
      bytes++;
    }
    emitInserts(sink, target, literalStart, at);
    for (let done = 0; done < bytes; done += CREATE_COPY_BYTES_MAX) {
      emitCopy(sink, from + done, Math.min(CREATE_COPY_BYTES_MAX, bytes - done));
    }
    if (sink.length > deltaBytesMax) return null;
    at += bytes;
    literalStart = at;
    literalsUntil = literalStart + (deltaBytesMax - sink.length);
    if (at <= lastWindow) hash = blockHash(target, at);
  }
  emitInserts(sink, target, literalStart, target.length);
  if (sink.length > deltaBytesMax) return null;
  return sink.toBuffer();
}
