/**
 * Line diff with git's choices, so that three-way merges built on it give git's bytes.
 *
 * Which algorithm: merge-ort (what `git merge-tree --write-tree` runs) sets
 * `xdl_opts = DIFF_WITH_ALG(opt, HISTOGRAM_DIFF)` in merge_start() regardless of diff.algorithm,
 * and ll_xdl_merge() passes those flags on; no whitespace flags and no indent heuristic. So every
 * content merge diffs with the histogram algorithm (xdiff/xhistogram.c), which falls back to the
 * classic Myers diff of xdiff/xdiffi.c for a region whose common lines all occur more than 64
 * times in the old side. The result is then "compacted" (xdl_change_compact: change groups slid
 * to their last position, or aligned with a change on the other side) and turned into hunks
 * (xdl_build_script). This module reproduces those steps; the code is our own.
 *
 * Lines are split git's way: a line ends after its '\n' and includes it; the last line may lack
 * one. Two lines are equal when their bytes are equal (so "a" and "a\n" differ).
 */

import { randomInt } from 'node:crypto';

/** A changed region: `oldCount` lines at `oldStart` became `newCount` lines at `newStart` (0-based). */
export interface LineHunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
}

/** xhistogram.c: a region whose candidate lines all repeat more often than this is diffed with Myers. */
const HISTOGRAM_CHAIN_LENGTH_MAX = 64;
/** xdiffi.c: Myers cost limits (XDL_MAX_COST_MIN, XDL_HEUR_MIN_COST, XDL_SNAKE_CNT, XDL_K_HEUR). */
const MYERS_COST_MIN = 256;
const MYERS_HEURISTIC_COST_MIN = 256;
const MYERS_SNAKE_LENGTH = 20;
const MYERS_HEURISTIC_FACTOR = 4;
/** xprepare.c: XDL_MAX_EQLIMIT, XDL_SIMSCAN_WINDOW, XDL_KPDIS_RUN. */
const EQUAL_LINES_LIMIT = 1024;
const SIMILAR_SCAN_WINDOW = 100;
const DISCARD_RUN_FACTOR = 4;
/** A sentinel larger than any line index (XDL_LINE_MAX). */
const LINE_INDEX_MAX = 0x7fffffff;

const NEWLINE = 0x0a;

/** Splits content into lines, each including its '\n'; the last may lack one. */
export function splitLines(content: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  while (start < content.length) {
    const newline = content.indexOf(NEWLINE, start);
    const end = newline < 0 ? content.length : newline + 1;
    lines.push(content.subarray(start, end));
    start = end;
  }
  return lines;
}

/**
 * Thrown where git's own xdiff gives up: the histogram index keeps at most 64 distinct lines per
 * hash bucket (scanA() in xhistogram.c) and git then fails the whole merge. Realistic text never
 * gets there; we fail the same way rather than produce a result git would not.
 */
export class DiffLimitError extends Error {
  override name = 'DiffLimitError';
}

/**
 * Numbers the distinct lines of both sides in order of first appearance, old side first, as
 * xdl_classify_record() does. The numbers matter beyond equality only for the histogram's hash
 * buckets, so they must be git's to fail exactly where git fails.
 */
function classify(oldLines: readonly Buffer[], newLines: readonly Buffer[]): { oldIds: Int32Array; newIds: Int32Array } {
  const classes = new LineClasses(oldLines.length + newLines.length);
  const number = (lines: readonly Buffer[]): Int32Array => {
    const out = new Int32Array(lines.length);
    for (let i = 0; i < lines.length; i++) out[i] = classes.intern(lines[i], 0, lines[i].length);
    return out;
  };
  const oldIds = number(oldLines);
  const newIds = number(newLines);
  return { oldIds, newIds };
}

/** Lines up to this long are compared and copied byte by byte in JS rather than natively. */
const SHORT_LINE_BYTES = 64;
/** Bytes of distinct lines a LineClasses keeps before it starts over (LineClasses.full). */
const LINE_CLASS_BYTES_MAX = 64 * 1024 * 1024;

/** Slots one lookup may probe before the table gives way to a Map (see LineClasses). */
const PROBES_MAX = 48;
/** Mixed into every line's hash: the slots a line lands in cannot be worked out from outside. */
const HASH_SEED = randomInt(2 ** 31);

/**
 * Numbers lines by their bytes: equal lines get the same number, numbers in order of first
 * appearance from 0. A hash table of its own (a line hashed once, its bytes compared only on equal
 * hashes) rather than a Map of strings, which cost a string and its hash per line per diff. A copy
 * of each distinct line is kept, so the buffers it saw may go; a walk that shares one instance
 * over many diffs (blame) checks `full` and starts a new one past LINE_CLASS_BYTES_MAX.
 *
 * The lines are the client's: lines made to share slots would make each lookup walk all of them.
 * The hash is seeded at random per process, and a lookup that probes more than PROBES_MAX slots
 * moves the table into a Map of strings (V8's string hash is seeded too) for the rest of its life,
 * with the same numbers: never worse than before the table.
 */
export class LineClasses {
  /** Once probing went too far: every class by its line as a latin1 string. */
  private byText: Map<string, number> | null = null;
  /** Open addressing: class + 1 per slot, 0 for an empty slot. */
  private slots: Int32Array;
  private hashes: Int32Array;
  /** Where each class's copy of its line starts in `arena` (its end is the next class's start). */
  private offsets: Int32Array;
  private arena: Buffer;
  private arenaUsed = 0;
  count = 0;

  /** `probesMax`: PROBES_MAX unless a test wants the Map sooner. */
  constructor(
    expectedLines = 64,
    private readonly probesMax = PROBES_MAX,
  ) {
    let capacity = 16;
    while (capacity < expectedLines * 2) capacity *= 2;
    this.slots = new Int32Array(capacity);
    this.hashes = new Int32Array(capacity >> 1);
    this.offsets = new Int32Array((capacity >> 1) + 1);
    this.arena = Buffer.allocUnsafe(Math.max(1024, expectedLines * 48));
  }

  /** True once the copies of its lines hold LINE_CLASS_BYTES_MAX bytes. */
  get full(): boolean {
    return this.arenaUsed >= LINE_CLASS_BYTES_MAX;
  }

  /** The class of the line `bytes[start, end)`. */
  intern(bytes: Buffer, start: number, end: number): number {
    if (this.byText) return this.internText(bytes, start, end);
    // FNV-1a over the bytes from a seeded basis, then a final mix so that the low bits (the slot)
    // depend on all of them.
    let hash = (0x811c9dc5 ^ HASH_SEED) | 0;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193);
    hash ^= hash >>> 15;
    hash = Math.imul(hash, 0x2c1b3c6d);
    hash ^= hash >>> 12;
    const mask = this.slots.length - 1;
    const length = end - start;
    let probes = 0;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const found = this.slots[slot];
      if (found === 0) break;
      const id = found - 1;
      const from = this.offsets[id];
      if (this.hashes[id] === hash && this.offsets[id + 1] - from === length && this.sameBytes(bytes, start, from, length)) return id;
      if (++probes > this.probesMax) {
        this.toMap();
        return this.internText(bytes, start, end);
      }
    }
    return this.add(bytes, start, end, hash);
  }

  /** The table's classes moved into a Map of strings, for every lookup from now on. */
  private toMap(): void {
    const byText = new Map<string, number>();
    for (let id = 0; id < this.count; id++) byText.set(this.arena.toString('latin1', this.offsets[id], this.offsets[id + 1]), id);
    this.byText = byText;
  }

  private internText(bytes: Buffer, start: number, end: number): number {
    const text = bytes.toString('latin1', start, end);
    const known = this.byText!.get(text);
    if (known !== undefined) return known;
    const id = this.count++;
    this.byText!.set(text, id);
    // Counted as copies are, so `full` still bounds what one instance keeps.
    this.arenaUsed += end - start;
    return id;
  }

  /** Whether bytes[start, start + length) equals the arena's copy at `from`; short lines in JS (a native call costs more). */
  private sameBytes(bytes: Buffer, start: number, from: number, length: number): boolean {
    if (length > SHORT_LINE_BYTES) return bytes.compare(this.arena, from, from + length, start, start + length) === 0;
    const arena = this.arena;
    for (let i = 0; i < length; i++) if (arena[from + i] !== bytes[start + i]) return false;
    return true;
  }

  private add(bytes: Buffer, start: number, end: number, hash: number): number {
    const id = this.count++;
    if (this.count * 2 > this.slots.length) this.grow();
    const length = end - start;
    if (this.arenaUsed + length > this.arena.length) {
      const arena = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.arenaUsed + length));
      this.arena.copy(arena, 0, 0, this.arenaUsed);
      this.arena = arena;
    }
    if (length > SHORT_LINE_BYTES) {
      bytes.copy(this.arena, this.arenaUsed, start, end);
    } else {
      const arena = this.arena;
      for (let i = 0, at = this.arenaUsed; i < length; i++) arena[at + i] = bytes[start + i];
    }
    this.arenaUsed += length;
    this.hashes[id] = hash;
    this.offsets[id + 1] = this.arenaUsed;
    const mask = this.slots.length - 1;
    let slot = hash & mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    this.slots[slot] = id + 1;
    return id;
  }

  private grow(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let id = 0; id < this.count - 1; id++) {
      let slot = this.hashes[id] & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = id + 1;
    }
    this.slots = slots;
    const hashes = new Int32Array(slots.length >> 1);
    hashes.set(this.hashes);
    this.hashes = hashes;
    const offsets = new Int32Array((slots.length >> 1) + 1);
    offsets.set(this.offsets);
    this.offsets = offsets;
  }
}

/**
 * One side of a diff: line class ids and the "changed" flags. `changed` has a zero sentinel on
 * each end (git's rchg[-1] and rchg[nrec]): line i's flag lives at changed[i + 1].
 */
interface DiffFile {
  ids: Int32Array;
  changed: Uint8Array;
}

/**
 * The changed flags of a diff's two files, kept between diffs: a diff runs to its end without a
 * pause, and its result (hunks) keeps none of them.
 */
const changedScratch = [new Uint8Array(1024), new Uint8Array(1024)];

function newDiffFile(ids: Int32Array, side: 0 | 1): DiffFile {
  if (changedScratch[side].length < ids.length + 2) changedScratch[side] = new Uint8Array(Math.max(ids.length + 2, changedScratch[side].length * 2));
  const changed = changedScratch[side].subarray(0, ids.length + 2);
  changed.fill(0);
  return { ids, changed };
}

/** Which of xdiff's choices a diff makes (xpparam_t flags). */
export interface LineDiffOptions {
  /**
   * 'histogram' (merges, `git diff --histogram`) or 'myers' (xdiff's classic algorithm: git's
   * default, and what `git blame` uses unless told otherwise).
   */
  algorithm: 'histogram' | 'myers';
  /**
   * XDF_INDENT_HEURISTIC: slide ambiguous change groups to the split that reads best
   * (diff.indentHeuristic, on by default for `git diff` and `git blame`; merges never set it).
   */
  indentHeuristic: boolean;
}

/** What merge-ort asks of xdiff (see the module comment). */
export const MERGE_DIFF_OPTIONS: LineDiffOptions = Object.freeze({ algorithm: 'histogram', indentHeuristic: false });

/**
 * The hunks git's xdiff reports between two line sequences: the algorithm's changed lines, change
 * groups compacted in both files (xdl_change_compact), then collected into hunks (xdl_build_script).
 * The default options are a merge's.
 */
export function diffLines(oldLines: readonly Buffer[], newLines: readonly Buffer[], options: LineDiffOptions = MERGE_DIFF_OPTIONS): LineHunk[] {
  const indents = options.indentHeuristic ? { old: indentsOfLines(oldLines), new: indentsOfLines(newLines) } : null;
  const { oldIds, newIds } = classify(oldLines, newLines);
  return diffLineIds(oldIds, newIds, indents, options.algorithm);
}

/** A line's indentation as the indent heuristic measures it (get_indent()): columns, -1 for a blank line. */
export interface LineIndents {
  length: number;
  measure(line: number): number;
}

function indentsOfLines(lines: readonly Buffer[]): LineIndents {
  return { length: lines.length, measure: (line) => measureIndent(lines[line], 0, lines[line].length) };
}

/**
 * diffLines on lines already numbered by content: equal lines have equal ids. The classic
 * algorithm (xdl_do_diff() without XDF_*_DIFF flags: git's default and git blame's) looks at
 * nothing else, so any numbering does (one LineClasses shared by many diffs, say); the histogram's
 * buckets hash the ids, so for it they must be numbered as xdl_classify_record() numbers them (in
 * order of first appearance, old side first: a fresh LineClasses given the old lines, then the new).
 * `indents`: apply the indent heuristic with these.
 */
export function diffLineIds(
  oldIds: Int32Array,
  newIds: Int32Array,
  indents: { old: LineIndents; new: LineIndents } | null,
  algorithm: LineDiffOptions['algorithm'] = 'myers',
  /** More than any id (LineClasses.count), when known. */
  classCount = -1,
): LineHunk[] {
  const oldFile = newDiffFile(oldIds, 0);
  const newFile = newDiffFile(newIds, 1);
  if (algorithm === 'histogram') {
    histogramDiff(oldFile, newFile);
  } else {
    // xdl_do_diff() with the classic algorithm over the whole files: the same steps the histogram
    // diff's fall-back runs on a region.
    myersDiff(oldIds, newIds, oldFile.changed.subarray(1, oldIds.length + 1), newFile.changed.subarray(1, newIds.length + 1), classCount);
  }
  compactChanges(oldFile, newFile, indents && new IndentCache(indents.old));
  compactChanges(newFile, oldFile, indents && new IndentCache(indents.new));
  return buildHunks(oldFile, newFile);
}

// ---------------------------------------------------------------------------------------------
// Histogram diff (xdiff/xhistogram.c). Line numbers are 1-based inside, as in git.

interface Region {
  line1: number;
  count1: number;
  line2: number;
  count2: number;
}

function histogramDiff(oldFile: DiffFile, newFile: DiffFile): void {
  // git recurses on the part before the common run and loops on the part after it; the parts
  // are disjoint, so an explicit stack in any order marks the same lines.
  const pending: Region[] = [{ line1: 1, count1: oldFile.ids.length, line2: 1, count2: newFile.ids.length }];
  while (pending.length > 0) {
    const { line1, count1, line2, count2 } = pending.pop()!;
    if (count1 <= 0 && count2 <= 0) continue;
    if (count1 === 0) {
      for (let i = 0; i < count2; i++) newFile.changed[line2 + i] = 1;
      continue;
    }
    if (count2 === 0) {
      for (let i = 0; i < count1; i++) oldFile.changed[line1 + i] = 1;
      continue;
    }
    const found = findLongestCommonRun(oldFile.ids, newFile.ids, line1, count1, line2, count2);
    if (found === 'chain-overflow') {
      throw new DiffLimitError('a region has more than 64 distinct lines in one histogram bucket; git cannot diff it either');
    }
    if (found === 'fall-back') {
      myersFallback(oldFile, newFile, line1, count1, line2, count2);
      continue;
    }
    if (found.begin1 === 0 && found.begin2 === 0) {
      // No line in common: everything in the region changed.
      for (let i = 0; i < count1; i++) oldFile.changed[line1 + i] = 1;
      for (let i = 0; i < count2; i++) newFile.changed[line2 + i] = 1;
      continue;
    }
    const end1 = line1 + count1 - 1;
    const end2 = line2 + count2 - 1;
    pending.push({ line1: found.end1 + 1, count1: end1 - found.end1, line2: found.end2 + 1, count2: end2 - found.end2 });
    pending.push({ line1, count1: found.begin1 - line1, line2, count2: found.begin2 - line2 });
  }
}

interface CommonRun {
  begin1: number;
  end1: number;
  begin2: number;
  end2: number;
}

/** xdl_hashbits(): the number of bits for a table of at least `size` slots (at least 1). */
function hashBits(size: number): number {
  let value = 1;
  let bits = 0;
  while (value < size && bits < 32) {
    value *= 2;
    bits++;
  }
  return bits === 0 ? 1 : bits;
}

/** XDL_HASHLONG(v, b) = (v + (v >> b)) & ((1 << b) - 1), on a class id. */
function bucketOf(id: number, bits: number): number {
  return (id + Math.floor(id / 2 ** bits)) % 2 ** bits;
}

/**
 * find_lcs(): the longest run of equal lines whose rarest line is as rare as possible, searching
 * the old side's lines by occurrence count. Returns 'fall-back' when the only common lines are
 * too frequent, 'chain-overflow' when git's index would overflow.
 */
function findLongestCommonRun(
  ids1: Int32Array,
  ids2: Int32Array,
  line1: number,
  count1: number,
  line2: number,
  count2: number,
): CommonRun | 'fall-back' | 'chain-overflow' {
  const tableBits = hashBits(count1);
  const heads = new Int32Array(2 ** tableBits).fill(-1);
  // Records: one per distinct line of the old region, in a singly linked chain per bucket.
  const recordFirst: number[] = [];
  const recordCount: number[] = [];
  const recordNext: number[] = [];
  const recordId: number[] = [];
  const lineRecord = new Int32Array(count1);
  const nextOccurrence = new Int32Array(count1); // 0: none (lines are 1-based)
  const end1 = line1 + count1 - 1;
  const end2 = line2 + count2 - 1;
  const id1 = (line: number) => ids1[line - 1];
  const id2 = (line: number) => ids2[line - 1];

  // scanA(): walk the old region backwards so each record's chain lists occurrences in order.
  for (let ptr = end1; ptr >= line1; ptr--) {
    const bucket = bucketOf(id1(ptr), tableBits);
    let record = heads[bucket];
    let chainLength = 0;
    let matched = false;
    while (record >= 0) {
      if (recordId[record] === id1(ptr)) {
        nextOccurrence[ptr - line1] = recordFirst[record];
        recordFirst[record] = ptr;
        recordCount[record] += 1;
        lineRecord[ptr - line1] = record;
        matched = true;
        break;
      }
      record = recordNext[record];
      chainLength++;
    }
    if (matched) continue;
    if (chainLength === HISTOGRAM_CHAIN_LENGTH_MAX) return 'chain-overflow';
    const created = recordFirst.length;
    recordFirst.push(ptr);
    recordCount.push(1);
    recordNext.push(heads[bucket]);
    recordId.push(id1(ptr));
    heads[bucket] = created;
    lineRecord[ptr - line1] = created;
  }

  const run: CommonRun = { begin1: 0, end1: 0, begin2: 0, end2: 0 };
  let bestCount = HISTOGRAM_CHAIN_LENGTH_MAX + 1;
  let hasCommon = false;
  const countAt = (line: number) => recordCount[lineRecord[line - line1]];

  // try_lcs() for every line of the new region, skipping past runs already found.
  let bPtr = line2;
  while (bPtr <= end2) {
    let bNext = bPtr + 1;
    for (let record = heads[bucketOf(id2(bPtr), tableBits)]; record >= 0; record = recordNext[record]) {
      if (recordCount[record] > bestCount) {
        if (!hasCommon) hasCommon = recordId[record] === id2(bPtr);
        continue;
      }
      let as = recordFirst[record];
      if (id1(as) !== id2(bPtr)) continue;
      hasCommon = true;
      for (;;) {
        let np = nextOccurrence[as - line1];
        let bs = bPtr;
        let ae = as;
        let be = bs;
        let rarest = recordCount[record];
        while (line1 < as && line2 < bs && id1(as - 1) === id2(bs - 1)) {
          as--;
          bs--;
          if (rarest > 1) rarest = Math.min(rarest, countAt(as));
        }
        while (ae < end1 && be < end2 && id1(ae + 1) === id2(be + 1)) {
          ae++;
          be++;
          if (rarest > 1) rarest = Math.min(rarest, countAt(ae));
        }
        if (bNext <= be) bNext = be + 1;
        if (run.end1 - run.begin1 < ae - as || rarest < bestCount) {
          run.begin1 = as;
          run.begin2 = bs;
          run.end1 = ae;
          run.end2 = be;
          bestCount = rarest;
        }
        if (np === 0) break;
        while (np <= ae) {
          np = nextOccurrence[np - line1];
          if (np === 0) break;
        }
        if (np === 0) break;
        as = np;
      }
    }
    bPtr = bNext;
  }
  if (hasCommon && HISTOGRAM_CHAIN_LENGTH_MAX < bestCount) return 'fall-back';
  return run;
}

// ---------------------------------------------------------------------------------------------
// Classic Myers diff (xdiff/xdiffi.c, xdiff/xprepare.c) for histogram fall-back regions. git
// diffs the region as two fresh files, so classification, trimming and discarding are per region.

function myersFallback(oldFile: DiffFile, newFile: DiffFile, line1: number, count1: number, line2: number, count2: number): void {
  // A fresh classification of the region would number its lines differently, but Myers looks at
  // equality and counts within the region only, which the region's ids already give.
  // The region's flags are all clear: regions do not overlap.
  myersDiff(
    oldFile.ids.subarray(line1 - 1, line1 - 1 + count1),
    newFile.ids.subarray(line2 - 1, line2 - 1 + count2),
    oldFile.changed.subarray(line1, line1 + count1),
    newFile.changed.subarray(line2, line2 + count2),
  );
}

/** xdl_bogosqrt(): a power of two near the square root. */
function roughSquareRoot(n: number): number {
  let i = 1;
  for (let rest = n; rest > 0; rest = Math.floor(rest / 4)) i *= 2;
  return i;
}

/** Per-class occurrence counts of myersDiff, kept between calls (zeroed again after each). */
let classCounts = { in1: new Int32Array(1024), in2: new Int32Array(1024) };

/**
 * Myers diff of two whole sequences of line ids (equal lines, equal ids): sets the changed flag
 * (1) of each changed line in `changed1` and `changed2`, which come clear. `knownClassCount`: a
 * bound on the ids when the caller knows one (saves a pass over both files).
 */
function myersDiff(ids1: Int32Array, ids2: Int32Array, changed1: Uint8Array, changed2: Uint8Array, knownClassCount = -1): void {
  const n1 = ids1.length;
  const n2 = ids2.length;

  // Occurrences of each class in each file (len1/len2 of xdlclass_t), over the whole files.
  let classCount = knownClassCount;
  if (classCount < 0) {
    for (let i = 0; i < n1; i++) if (ids1[i] >= classCount) classCount = ids1[i] + 1;
    for (let i = 0; i < n2; i++) if (ids2[i] >= classCount) classCount = ids2[i] + 1;
  }
  if (classCount > classCounts.in1.length) {
    const size = Math.max(classCount, classCounts.in1.length * 2);
    classCounts = { in1: new Int32Array(size), in2: new Int32Array(size) };
  }
  const { in1, in2 } = classCounts;
  for (let i = 0; i < n1; i++) in1[ids1[i]]++;
  for (let i = 0; i < n2; i++) in2[ids2[i]]++;
  try {
    myersDiffCounted(ids1, ids2, in1, in2, changed1, changed2);
  } finally {
    for (let i = 0; i < n1; i++) in1[ids1[i]] = 0;
    for (let i = 0; i < n2; i++) in2[ids2[i]] = 0;
  }
}

function myersDiffCounted(ids1: Int32Array, ids2: Int32Array, in1: Int32Array, in2: Int32Array, changed1: Uint8Array, changed2: Uint8Array): void {
  const n1 = ids1.length;
  const n2 = ids2.length;
  // xdl_trim_ends(): equal prefix and suffix lines take no part.
  const limit = Math.min(n1, n2);
  let start = 0;
  while (start < limit && ids1[start] === ids2[start]) start++;
  let suffix = 0;
  while (suffix < limit - start && ids1[n1 - 1 - suffix] === ids2[n2 - 1 - suffix]) suffix++;
  const end1 = n1 - suffix - 1;
  const end2 = n2 - suffix - 1;

  // xdl_cleanup_records(): lines without a match on the other side are changed for sure, and
  // lines with very many matches are dropped when they sit among such lines.
  const kept1 = keepRecords(ids1, in2, start, end1, n1, changed1, 0);
  const kept2 = keepRecords(ids2, in1, start, end2, n2, changed2, 1);

  const ndiags = kept1.ids.length + kept2.ids.length + 3;
  const costMax = Math.max(roughSquareRoot(ndiags), MYERS_COST_MIN);
  compareRecords(kept1, kept2, changed1, changed2, costMax);
}

interface KeptRecords {
  ids: Int32Array;
  /** Index of each kept line in its file. */
  lineOf: Int32Array;
}

let discardScratch = new Uint8Array(1024);

/** keepRecords' per-line kinds, kept between calls (each call writes the span it reads). */
function scratchDiscard(span: number): Uint8Array {
  if (discardScratch.length < span) discardScratch = new Uint8Array(Math.max(span, discardScratch.length * 2));
  return discardScratch;
}

/** keepRecords' results for each side, kept between diffs (a diff uses them to its end, then no more). */
const keptScratch = [
  { ids: new Int32Array(1024), lineOf: new Int32Array(1024) },
  { ids: new Int32Array(1024), lineOf: new Int32Array(1024) },
];

function keepRecords(ids: Int32Array, otherCounts: Int32Array, start: number, end: number, total: number, changed: Uint8Array, side: 0 | 1): KeptRecords {
  const matchLimit = Math.min(roughSquareRoot(total), EQUAL_LINES_LIMIT);
  const span = Math.max(0, end - start + 1);
  // 0: no match on the other side, 1: some, 2: many.
  const discard = scratchDiscard(span);
  for (let i = start; i <= end; i++) {
    const matches = otherCounts[ids[i]];
    discard[i - start] = matches === 0 ? 0 : matches >= matchLimit ? 2 : 1;
  }
  if (keptScratch[side].ids.length < span) {
    const size = Math.max(span, keptScratch[side].ids.length * 2);
    keptScratch[side] = { ids: new Int32Array(size), lineOf: new Int32Array(size) };
  }
  const { ids: keptIds, lineOf: keptLines } = keptScratch[side];
  let kept = 0;
  for (let i = start; i <= end; i++) {
    const kind = discard[i - start];
    if (kind === 1 || (kind === 2 && !isDiscardableMultimatch(discard, i - start, 0, span - 1))) {
      keptIds[kept] = ids[i];
      keptLines[kept++] = i;
    } else {
      changed[i] = 1;
    }
  }
  return { ids: keptIds.subarray(0, kept), lineOf: keptLines.subarray(0, kept) };
}

/** xdl_clean_mmatch(): is a many-match line surrounded by enough no-match lines to drop it? */
function isDiscardableMultimatch(discard: Uint8Array, i: number, lowest: number, highest: number): boolean {
  let s = lowest;
  let e = highest;
  if (i - s > SIMILAR_SCAN_WINDOW) s = i - SIMILAR_SCAN_WINDOW;
  if (e - i > SIMILAR_SCAN_WINDOW) e = i + SIMILAR_SCAN_WINDOW;
  let noMatchBefore = 0;
  let manyBefore = 1;
  for (let r = 1; i - r >= s; r++) {
    if (discard[i - r] === 0) noMatchBefore++;
    else if (discard[i - r] === 2) manyBefore++;
    else break;
  }
  if (noMatchBefore === 0) return false;
  let noMatchAfter = 0;
  let manyAfter = 1;
  for (let r = 1; i + r <= e; r++) {
    if (discard[i + r] === 0) noMatchAfter++;
    else if (discard[i + r] === 2) manyAfter++;
    else break;
  }
  if (noMatchAfter === 0) return false;
  const noMatch = noMatchAfter + noMatchBefore;
  const many = manyAfter + manyBefore;
  return many * DISCARD_RUN_FACTOR < many + noMatch;
}

interface Box {
  off1: number;
  lim1: number;
  off2: number;
  lim2: number;
  needMinimal: boolean;
}

let diagonals = { forward: new Int32Array(4096), backward: new Int32Array(4096) };

/** xdl_recs_cmp(): divide and conquer over boxes; an explicit stack instead of recursion. */
function compareRecords(kept1: KeptRecords, kept2: KeptRecords, changed1: Uint8Array, changed2: Uint8Array, costMax: number): void {
  const ha1 = kept1.ids;
  const ha2 = kept2.ids;
  const ndiags = ha1.length + ha2.length + 3;
  const diagonalOffset = ha2.length + 1;
  // xdiff's kvdf and kvdb: every cell is written before it is read, so they are reused between diffs.
  if (diagonals.forward.length < ndiags) {
    const size = Math.max(ndiags, diagonals.forward.length * 2);
    diagonals = { forward: new Int32Array(size), backward: new Int32Array(size) };
  }
  const { forward, backward } = diagonals;
  const boxes: Box[] = [{ off1: 0, lim1: ha1.length, off2: 0, lim2: ha2.length, needMinimal: false }];
  while (boxes.length > 0) {
    const box = boxes.pop()!;
    let { off1, lim1, off2, lim2 } = box;
    while (off1 < lim1 && off2 < lim2 && ha1[off1] === ha2[off2]) {
      off1++;
      off2++;
    }
    while (off1 < lim1 && off2 < lim2 && ha1[lim1 - 1] === ha2[lim2 - 1]) {
      lim1--;
      lim2--;
    }
    if (off1 === lim1) {
      for (let i = off2; i < lim2; i++) changed2[kept2.lineOf[i]] = 1;
    } else if (off2 === lim2) {
      for (let i = off1; i < lim1; i++) changed1[kept1.lineOf[i]] = 1;
    } else {
      const split = splitBox(ha1, off1, lim1, ha2, off2, lim2, forward, backward, diagonalOffset, costMax, box.needMinimal);
      boxes.push({ off1: split.i1, lim1, off2: split.i2, lim2, needMinimal: split.minimalHigh });
      boxes.push({ off1, lim1: split.i1, off2, lim2: split.i2, needMinimal: split.minimalLow });
    }
  }
}

interface Split {
  i1: number;
  i2: number;
  minimalLow: boolean;
  minimalHigh: boolean;
}

/**
 * xdl_split(): walk forward and backward diagonals until they meet, with git's heuristics that
 * cut expensive searches short. Merges never set XDF_NEED_MINIMAL, so the top box is searched
 * with heuristics; a split found by a heuristic asks for a minimal search of one of its halves.
 */
function splitBox(
  ha1: Int32Array,
  off1: number,
  lim1: number,
  ha2: Int32Array,
  off2: number,
  lim2: number,
  kvdfArray: Int32Array,
  kvdbArray: Int32Array,
  offset: number,
  costMax: number,
  needMinimal: boolean,
): Split {
  const kvdf = {
    get: (d: number) => kvdfArray[d + offset],
    set: (d: number, v: number) => {
      kvdfArray[d + offset] = v;
    },
  };
  const kvdb = {
    get: (d: number) => kvdbArray[d + offset],
    set: (d: number, v: number) => {
      kvdbArray[d + offset] = v;
    },
  };
  const dmin = off1 - lim2;
  const dmax = lim1 - off2;
  const fmid = off1 - off2;
  const bmid = lim1 - lim2;
  const odd = ((fmid - bmid) & 1) !== 0;
  let fmin = fmid;
  let fmax = fmid;
  let bmin = bmid;
  let bmax = bmid;
  kvdf.set(fmid, off1);
  kvdb.set(bmid, lim1);

  for (let ec = 1; ; ec++) {
    let gotSnake = false;
    if (fmin > dmin) kvdf.set(--fmin - 1, -1);
    else ++fmin;
    if (fmax < dmax) kvdf.set(++fmax + 1, -1);
    else --fmax;
    for (let d = fmax; d >= fmin; d -= 2) {
      let i1 = kvdf.get(d - 1) >= kvdf.get(d + 1) ? kvdf.get(d - 1) + 1 : kvdf.get(d + 1);
      const prev1 = i1;
      let i2 = i1 - d;
      while (i1 < lim1 && i2 < lim2 && ha1[i1] === ha2[i2]) {
        i1++;
        i2++;
      }
      if (i1 - prev1 > MYERS_SNAKE_LENGTH) gotSnake = true;
      kvdf.set(d, i1);
      if (odd && bmin <= d && d <= bmax && kvdb.get(d) <= i1) {
        return { i1, i2, minimalLow: true, minimalHigh: true };
      }
    }

    if (bmin > dmin) kvdb.set(--bmin - 1, LINE_INDEX_MAX);
    else ++bmin;
    if (bmax < dmax) kvdb.set(++bmax + 1, LINE_INDEX_MAX);
    else --bmax;
    for (let d = bmax; d >= bmin; d -= 2) {
      let i1 = kvdb.get(d - 1) < kvdb.get(d + 1) ? kvdb.get(d - 1) : kvdb.get(d + 1) - 1;
      const prev1 = i1;
      let i2 = i1 - d;
      while (i1 > off1 && i2 > off2 && ha1[i1 - 1] === ha2[i2 - 1]) {
        i1--;
        i2--;
      }
      if (prev1 - i1 > MYERS_SNAKE_LENGTH) gotSnake = true;
      kvdb.set(d, i1);
      if (!odd && fmin <= d && d <= fmax && i1 <= kvdf.get(d)) {
        return { i1, i2, minimalLow: true, minimalHigh: true };
      }
    }

    // A box that must be split minimally gets no heuristics and no cost limit.
    if (needMinimal) continue;

    if (gotSnake && ec > MYERS_HEURISTIC_COST_MIN) {
      let best = 0;
      let bestI1 = 0;
      let bestI2 = 0;
      for (let d = fmax; d >= fmin; d -= 2) {
        const dd = d > fmid ? d - fmid : fmid - d;
        const i1 = kvdf.get(d);
        const i2 = i1 - d;
        const v = i1 - off1 + (i2 - off2) - dd;
        if (
          v > MYERS_HEURISTIC_FACTOR * ec &&
          v > best &&
          off1 + MYERS_SNAKE_LENGTH <= i1 &&
          i1 < lim1 &&
          off2 + MYERS_SNAKE_LENGTH <= i2 &&
          i2 < lim2
        ) {
          for (let k = 1; ha1[i1 - k] === ha2[i2 - k]; k++) {
            if (k === MYERS_SNAKE_LENGTH) {
              best = v;
              bestI1 = i1;
              bestI2 = i2;
              break;
            }
          }
        }
      }
      if (best > 0) return { i1: bestI1, i2: bestI2, minimalLow: true, minimalHigh: false };

      best = 0;
      for (let d = bmax; d >= bmin; d -= 2) {
        const dd = d > bmid ? d - bmid : bmid - d;
        const i1 = kvdb.get(d);
        const i2 = i1 - d;
        const v = lim1 - i1 + (lim2 - i2) - dd;
        if (
          v > MYERS_HEURISTIC_FACTOR * ec &&
          v > best &&
          off1 < i1 &&
          i1 <= lim1 - MYERS_SNAKE_LENGTH &&
          off2 < i2 &&
          i2 <= lim2 - MYERS_SNAKE_LENGTH
        ) {
          for (let k = 0; ha1[i1 + k] === ha2[i2 + k]; k++) {
            if (k === MYERS_SNAKE_LENGTH - 1) {
              best = v;
              bestI1 = i1;
              bestI2 = i2;
              break;
            }
          }
        }
      }
      if (best > 0) return { i1: bestI1, i2: bestI2, minimalLow: false, minimalHigh: true };
    }

    if (ec >= costMax) {
      // Enough: take the furthest reaching path by i1 + i2.
      let fbest = -1;
      let fbest1 = -1;
      for (let d = fmax; d >= fmin; d -= 2) {
        let i1 = Math.min(kvdf.get(d), lim1);
        let i2 = i1 - d;
        if (lim2 < i2) {
          i1 = lim2 + d;
          i2 = lim2;
        }
        if (fbest < i1 + i2) {
          fbest = i1 + i2;
          fbest1 = i1;
        }
      }
      let bbest = LINE_INDEX_MAX;
      let bbest1 = LINE_INDEX_MAX;
      for (let d = bmax; d >= bmin; d -= 2) {
        let i1 = Math.max(off1, kvdb.get(d));
        let i2 = i1 - d;
        if (i2 < off2) {
          i1 = off2 + d;
          i2 = off2;
        }
        if (i1 + i2 < bbest) {
          bbest = i1 + i2;
          bbest1 = i1;
        }
      }
      if (lim1 + lim2 - bbest < fbest - (off1 + off2)) {
        return { i1: fbest1, i2: fbest - fbest1, minimalLow: true, minimalHigh: false };
      }
      return { i1: bbest1, i2: bbest - bbest1, minimalLow: false, minimalHigh: true };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Compaction (xdl_change_compact) and hunks (xdl_build_script), xdiff/xdiffi.c.

/** A group of changed lines [start, end) in one file; start === end for an empty group. */
interface Group {
  start: number;
  end: number;
}

const isChanged = (file: DiffFile, line: number) => file.changed[line + 1] !== 0;
const setChanged = (file: DiffFile, line: number, value: number) => {
  file.changed[line + 1] = value;
};

function firstGroup(file: DiffFile): Group {
  const group = { start: 0, end: 0 };
  while (isChanged(file, group.end)) group.end++;
  return group;
}

/** Moves to the next group; false at the end of the file. */
function nextGroup(file: DiffFile, group: Group): boolean {
  if (group.end === file.ids.length) return false;
  group.start = group.end + 1;
  group.end = group.start;
  while (isChanged(file, group.end)) group.end++;
  return true;
}

/** Moves to the previous group; false at the start of the file. */
function previousGroup(file: DiffFile, group: Group): boolean {
  if (group.start === 0) return false;
  group.end = group.start - 1;
  group.start = group.end;
  while (isChanged(file, group.start - 1)) group.start--;
  return true;
}

/** Slides the group one line down if the line after it equals its first line, merging groups it meets. */
function slideDown(file: DiffFile, group: Group): boolean {
  if (group.end < file.ids.length && file.ids[group.start] === file.ids[group.end]) {
    setChanged(file, group.start++, 0);
    setChanged(file, group.end++, 1);
    while (isChanged(file, group.end)) group.end++;
    return true;
  }
  return false;
}

/** Slides the group one line up if the line before it equals its last line, merging groups it meets. */
function slideUp(file: DiffFile, group: Group): boolean {
  if (group.start > 0 && file.ids[group.start - 1] === file.ids[group.end - 1]) {
    setChanged(file, --group.start, 1);
    setChanged(file, --group.end, 0);
    while (isChanged(file, group.start - 1)) group.start--;
    return true;
  }
  return false;
}

class CompactionError extends Error {
  override name = 'CompactionError';
}

function compactChanges(file: DiffFile, other: DiffFile, indents: IndentCache | null): void {
  const group = firstGroup(file);
  const otherGroup = firstGroup(other);
  for (;;) {
    if (group.end !== group.start) {
      let groupSize: number;
      let earliestEnd: number;
      let endMatchingOther: number;
      do {
        groupSize = group.end - group.start;
        endMatchingOther = -1;
        while (slideUp(file, group)) {
          if (!previousGroup(other, otherGroup)) throw new CompactionError('group sync broken sliding up');
        }
        earliestEnd = group.end;
        if (otherGroup.end > otherGroup.start) endMatchingOther = group.end;
        for (;;) {
          if (!slideDown(file, group)) break;
          if (!nextGroup(other, otherGroup)) throw new CompactionError('group sync broken sliding down');
          if (otherGroup.end > otherGroup.start) endMatchingOther = group.end;
        }
      } while (groupSize !== group.end - group.start);

      if (group.end === earliestEnd) {
        // It cannot move at all.
      } else if (endMatchingOther !== -1) {
        // Line the group up with the last change on the other side it can align with.
        while (otherGroup.end === otherGroup.start) {
          if (!slideUp(file, group)) throw new CompactionError('match disappeared');
          if (!previousGroup(other, otherGroup)) throw new CompactionError('group sync broken sliding to match');
        }
      } else if (indents) {
        const best = bestIndentShift(indents, group.end, groupSize, earliestEnd);
        while (group.end > best) {
          if (!slideUp(file, group)) throw new CompactionError('best shift unreached');
          if (!previousGroup(other, otherGroup)) throw new CompactionError('group sync broken sliding to blank line');
        }
      }
    }
    if (group.end === group.start && group.end < file.ids.length) {
      // An unchanged line, and the ones after it up to the next change: each an empty group that
      // nothing above touches, stepped over in both files at once (the other file one group per
      // line, whatever its groups hold).
      const changedAt = file.changed.indexOf(1, group.end + 2);
      const next = changedAt < 0 ? file.ids.length : changedAt - 1;
      for (let step = group.end; step < next; step++) {
        if (!nextGroup(other, otherGroup)) throw new CompactionError('group sync broken moving to next group');
      }
      group.start = next;
      group.end = next;
      while (isChanged(file, group.end)) group.end++;
      continue;
    }
    if (!nextGroup(file, group)) break;
    if (!nextGroup(other, otherGroup)) throw new CompactionError('group sync broken moving to next group');
  }
}

// ---------------------------------------------------------------------------------------------
// The indent heuristic (xdiffi.c, "indent heuristic"): a group of added or removed lines that can
// slide is put where the two splits it makes (above and below it) look most like block edges.
// The weights are git's, found empirically by its authors; only their comparisons matter.

/** Indentation counted up to this (MAX_INDENT); consecutive blank lines up to MAX_BLANKS. */
const INDENT_MAX = 200;
const BLANKS_MAX = 20;
const START_OF_FILE_PENALTY = 1;
const END_OF_FILE_PENALTY = 21;
const TOTAL_BLANK_WEIGHT = -30;
const POST_BLANK_WEIGHT = 6;
const RELATIVE_INDENT_PENALTY = -4;
const RELATIVE_INDENT_WITH_BLANK_PENALTY = 10;
const RELATIVE_OUTDENT_PENALTY = 24;
const RELATIVE_OUTDENT_WITH_BLANK_PENALTY = 17;
const RELATIVE_DEDENT_PENALTY = 23;
const RELATIVE_DEDENT_WITH_BLANK_PENALTY = 17;
const INDENT_WEIGHT = 60;
/** A group is slid at most this far (INDENT_HEURISTIC_MAX_SLIDING). */
const INDENT_SLIDING_MAX = 100;

const SPACE = 0x20;
const TAB = 0x09;

/** C's isspace() in the C locale: space, \t, \n, \v, \f, \r. */
function isCSpace(byte: number): boolean {
  return byte === SPACE || (byte >= 0x09 && byte <= 0x0d);
}

/** get_indent() per line, computed once: columns of leading blanks (tab stops of 8), -1 for a blank line. */
class IndentCache {
  /** Allocated when first asked: most groups cannot slide, and then no indent is measured. */
  private values: Int16Array | null = null;

  constructor(private readonly lines: LineIndents) {}

  get length(): number {
    return this.lines.length;
  }

  of(line: number): number {
    this.values ??= new Int16Array(this.lines.length).fill(-2);
    let value = this.values[line];
    if (value === -2) {
      value = this.lines.measure(line);
      this.values[line] = value;
    }
    return value;
  }
}

/** get_indent() of the line `bytes[start, end)`. */
export function measureIndent(bytes: Buffer, start: number, end: number): number {
  let indent = 0;
  for (let i = start; i < end; i++) {
    const byte = bytes[i];
    if (!isCSpace(byte)) return indent;
    if (byte === SPACE) indent += 1;
    else if (byte === TAB) indent += 8 - (indent % 8);
    if (indent >= INDENT_MAX) return INDENT_MAX;
  }
  return -1;
}

interface SplitMeasurement {
  endOfFile: boolean;
  indent: number;
  preBlank: number;
  preIndent: number;
  postBlank: number;
  postIndent: number;
}

/** measure_split(): what surrounds a split above line `split`. */
function measureSplit(indents: IndentCache, split: number): SplitMeasurement {
  const count = indents.length;
  const m: SplitMeasurement = { endOfFile: split >= count, indent: split >= count ? -1 : indents.of(split), preBlank: 0, preIndent: -1, postBlank: 0, postIndent: -1 };
  for (let i = split - 1; i >= 0; i--) {
    m.preIndent = indents.of(i);
    if (m.preIndent !== -1) break;
    m.preBlank += 1;
    if (m.preBlank === BLANKS_MAX) {
      m.preIndent = 0;
      break;
    }
  }
  for (let i = split + 1; i < count; i++) {
    m.postIndent = indents.of(i);
    if (m.postIndent !== -1) break;
    m.postBlank += 1;
    if (m.postBlank === BLANKS_MAX) {
      m.postIndent = 0;
      break;
    }
  }
  return m;
}

interface SplitScore {
  effectiveIndent: number;
  penalty: number;
}

/** score_add_split(). */
function addSplitScore(m: SplitMeasurement, score: SplitScore): void {
  if (m.preIndent === -1 && m.preBlank === 0) score.penalty += START_OF_FILE_PENALTY;
  if (m.endOfFile) score.penalty += END_OF_FILE_PENALTY;
  const postBlank = m.indent === -1 ? 1 + m.postBlank : 0;
  const totalBlank = m.preBlank + postBlank;
  score.penalty += TOTAL_BLANK_WEIGHT * totalBlank;
  score.penalty += POST_BLANK_WEIGHT * postBlank;
  const indent = m.indent !== -1 ? m.indent : m.postIndent;
  const anyBlanks = totalBlank !== 0;
  score.effectiveIndent += indent;
  if (indent === -1 || m.preIndent === -1) return;
  if (indent > m.preIndent) {
    score.penalty += anyBlanks ? RELATIVE_INDENT_WITH_BLANK_PENALTY : RELATIVE_INDENT_PENALTY;
  } else if (indent < m.preIndent) {
    if (m.postIndent !== -1 && m.postIndent > indent) {
      score.penalty += anyBlanks ? RELATIVE_OUTDENT_WITH_BLANK_PENALTY : RELATIVE_OUTDENT_PENALTY;
    } else {
      score.penalty += anyBlanks ? RELATIVE_DEDENT_WITH_BLANK_PENALTY : RELATIVE_DEDENT_PENALTY;
    }
  }
}

/** score_cmp(): negative when `a` is the better split. */
function compareScores(a: SplitScore, b: SplitScore): number {
  const indents = Math.sign(a.effectiveIndent - b.effectiveIndent);
  return INDENT_WEIGHT * indents + (a.penalty - b.penalty);
}

/** The group end (between its highest and lowest position) whose two splits score best; ties go low. */
function bestIndentShift(indents: IndentCache, end: number, groupSize: number, earliestEnd: number): number {
  let shift = Math.max(earliestEnd, end - groupSize - 1, end - INDENT_SLIDING_MAX);
  let best = -1;
  let bestScore: SplitScore = { effectiveIndent: 0, penalty: 0 };
  for (; shift <= end; shift++) {
    const score: SplitScore = { effectiveIndent: 0, penalty: 0 };
    addSplitScore(measureSplit(indents, shift), score);
    addSplitScore(measureSplit(indents, shift - groupSize), score);
    if (best === -1 || compareScores(score, bestScore) <= 0) {
      bestScore = score;
      best = shift;
    }
  }
  return best;
}

/** xdl_build_script(): pairs change groups of both files walking back from the end. */
function buildHunks(oldFile: DiffFile, newFile: DiffFile): LineHunk[] {
  const hunks: LineHunk[] = [];
  let i1 = oldFile.ids.length;
  let i2 = newFile.ids.length;
  while (i1 >= 0 || i2 >= 0) {
    if (i1 > 0 && i2 > 0 && !isChanged(oldFile, i1 - 1) && !isChanged(newFile, i2 - 1)) {
      // Unchanged lines on both sides, up to the nearest change above on either: stepped over.
      const above1 = oldFile.changed.lastIndexOf(1, i1) - 1;
      const above2 = newFile.changed.lastIndexOf(1, i2) - 1;
      const run = Math.min(i1 - 1 - Math.max(above1, -1), i2 - 1 - Math.max(above2, -1));
      i1 -= run;
      i2 -= run;
      continue;
    }
    if (isChanged(oldFile, i1 - 1) || isChanged(newFile, i2 - 1)) {
      const last1 = i1;
      const last2 = i2;
      while (isChanged(oldFile, i1 - 1)) i1--;
      while (isChanged(newFile, i2 - 1)) i2--;
      hunks.push({ oldStart: i1, oldCount: last1 - i1, newStart: i2, newCount: last2 - i2 });
    }
    i1--;
    i2--;
  }
  return hunks.reverse();
}
