/**
 * Three-way merge of file contents, computing what git's ll_merge() computes for merge-ort
 * (ll-merge.c ll_xdl_merge() → xdiff/xmerge.c xdl_merge()), with merge-ort's settings in git 2.39:
 *   - level XDL_MERGE_ZEALOUS: after overlapping hunks are found, each conflict is re-diffed
 *     between the two sides and shrunk to the lines that really differ; a conflict whose sides
 *     turn out identical is resolved; conflicts fewer than 4 lines apart are then joined;
 *   - histogram diff (see lineDiff.ts), no whitespace options, favor none, style "merge"
 *     (merge.conflictStyle unset); markers of 7 characters plus merge-ort's extra size.
 * Binary inputs (a NUL byte in the first 8000 bytes, buffer_is_binary()) are not merged:
 * ll_binary_merge() keeps "ours" and reports a conflict, or, while building a virtual merge base,
 * keeps the base and reports success.
 *
 * Conflict markers are written exactly as git writes them: only virtual merge bases keep
 * conflicted content, and there it decides later results byte for byte.
 */
import { diffLines, splitLines, type LineHunk } from './lineDiff.js';

/** Git's FIRST_FEW_BYTES: how far buffer_is_binary() looks for a NUL byte. */
export const BINARY_PROBE_BYTES = 8000;
/** Git's MAX_XDIFF_SIZE: larger inputs are treated as binary. */
export const XDIFF_SIZE_MAX = 1024 * 1024 * 1023;
/** DEFAULT_CONFLICT_MARKER_SIZE. */
export const CONFLICT_MARKER_SIZE = 7;

export interface ContentMergeOptions {
  /** Label after "<<<<<<<"; git uses the branch name (with ":path" when renames are involved). */
  oursLabel?: string;
  /** Label after ">>>>>>>". */
  theirsLabel?: string;
  /** Marker length; merge-ort adds 2 per level of virtual-base recursion. */
  markerSize?: number;
  /** Building a virtual merge base: binary files resolve to the base instead of conflicting. */
  virtualAncestor?: boolean;
}

export type ContentMergeResult =
  | { clean: true; content: Buffer }
  /** `content` is what git would leave: text with conflict markers, or "ours" for binary. */
  | { clean: false; kind: 'content' | 'binary'; content: Buffer; conflicts: number };

const NUL = 0;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** Conflicts at most this many lines apart are joined (xdl_simplify_non_conflicts). */
const CONFLICT_JOIN_GAP_MAX = 3;

export function isBinary(content: Buffer): boolean {
  const probe = content.length > BINARY_PROBE_BYTES ? content.subarray(0, BINARY_PROBE_BYTES) : content;
  return probe.indexOf(NUL) >= 0;
}

export function mergeContent(base: Buffer, ours: Buffer, theirs: Buffer, options: ContentMergeOptions = {}): ContentMergeResult {
  const treatAsBinary = [base, ours, theirs].some((buffer) => buffer.length > XDIFF_SIZE_MAX || isBinary(buffer));
  if (treatAsBinary) {
    if (options.virtualAncestor) return { clean: true, content: base };
    return { clean: false, kind: 'binary', content: ours, conflicts: 1 };
  }
  return mergeText(base, ours, theirs, options);
}

/** A region of the merge: mode 0 conflict, 1 take ours, 2 take theirs, 4 identical on both sides. */
interface MergeRegion {
  mode: 0 | 1 | 2 | 4;
  i0: number;
  chg0: number;
  /** Position and length in ours. */
  i1: number;
  chg1: number;
  /** Position and length in theirs. */
  i2: number;
  chg2: number;
}

const CONFLICT = 0;
const TAKE_OURS = 1;
const TAKE_THEIRS = 2;
const IDENTICAL = 4;

function mergeText(base: Buffer, ours: Buffer, theirs: Buffer, options: ContentMergeOptions): ContentMergeResult {
  const baseLines = splitLines(base);
  const oursLines = splitLines(ours);
  const theirsLines = splitLines(theirs);
  const oursHunks = diffLines(baseLines, oursLines);
  const theirsHunks = diffLines(baseLines, theirsLines);
  // xdl_merge(): one side unchanged means the other side's bytes, untouched.
  if (oursHunks.length === 0) return { clean: true, content: theirs };
  if (theirsHunks.length === 0) return { clean: true, content: ours };

  const regions = pairHunks(oursHunks, theirsHunks, baseLines.length, oursLines, theirsLines);
  const refined = refineConflicts(regions, oursLines, theirsLines);
  const joined = joinCloseConflicts(refined);
  const conflicts = joined.filter((region) => region.mode === CONFLICT).length;
  const content = writeMerge(joined, baseLines, oursLines, theirsLines, options);
  if (conflicts === 0) return { clean: true, content };
  return { clean: false, kind: 'content', content, conflicts };
}

function linesEqual(a: readonly Buffer[], aStart: number, b: readonly Buffer[], bStart: number, count: number): boolean {
  for (let i = 0; i < count; i++) if (!a[aStart + i].equals(b[bStart + i])) return false;
  return true;
}

/** xdl_append_merge(): a region touching the previous one in either side is folded into it. */
function appendRegion(regions: MergeRegion[], next: MergeRegion): void {
  const last = regions[regions.length - 1];
  if (last && (next.i1 <= last.i1 + last.chg1 || next.i2 <= last.i2 + last.chg2)) {
    if (next.mode !== last.mode) last.mode = CONFLICT;
    last.chg0 = next.i0 + next.chg0 - last.i0;
    last.chg1 = next.i1 + next.chg1 - last.i1;
    last.chg2 = next.i2 + next.chg2 - last.i2;
    return;
  }
  regions.push(next);
}

/**
 * The first pass of xdl_do_merge(): walk both hunk lists by base position. A hunk that ends
 * strictly before the other side's next hunk starts is one-sided; anything else overlaps or
 * touches, and conflicts unless both hunks are the same change.
 */
function pairHunks(
  oursHunks: readonly LineHunk[],
  theirsHunks: readonly LineHunk[],
  baseLineCount: number,
  oursLines: readonly Buffer[],
  theirsLines: readonly Buffer[],
): MergeRegion[] {
  const regions: MergeRegion[] = [];
  let a = 0;
  let b = 0;
  while (a < oursHunks.length && b < theirsHunks.length) {
    const x = oursHunks[a];
    const y = theirsHunks[b];
    if (x.oldStart + x.oldCount < y.oldStart) {
      appendRegion(regions, {
        mode: TAKE_OURS,
        i0: x.oldStart,
        chg0: x.oldCount,
        i1: x.newStart,
        chg1: x.newCount,
        i2: y.newStart - y.oldStart + x.oldStart,
        chg2: x.oldCount,
      });
      a++;
      continue;
    }
    if (y.oldStart + y.oldCount < x.oldStart) {
      appendRegion(regions, {
        mode: TAKE_THEIRS,
        i0: y.oldStart,
        chg0: y.oldCount,
        i1: x.newStart - x.oldStart + y.oldStart,
        chg1: y.oldCount,
        i2: y.newStart,
        chg2: y.newCount,
      });
      b++;
      continue;
    }
    const sameChange =
      x.oldStart === y.oldStart &&
      x.oldCount === y.oldCount &&
      x.newCount === y.newCount &&
      linesEqual(oursLines, x.newStart, theirsLines, y.newStart, x.newCount);
    if (!sameChange) {
      const off = x.oldStart - y.oldStart;
      const ffo = off + x.oldCount - y.oldCount;
      let i0 = x.oldStart;
      let i1 = x.newStart;
      let i2 = y.newStart;
      if (off > 0) {
        i0 -= off;
        i1 -= off;
      } else {
        i2 += off;
      }
      let chg0 = x.oldStart + x.oldCount - i0;
      let chg1 = x.newStart + x.newCount - i1;
      let chg2 = y.newStart + y.newCount - i2;
      if (ffo < 0) {
        chg0 -= ffo;
        chg1 -= ffo;
      } else {
        chg2 += ffo;
      }
      appendRegion(regions, { mode: CONFLICT, i0, chg0, i1, chg1, i2, chg2 });
    }
    const end1 = x.oldStart + x.oldCount;
    const end2 = y.oldStart + y.oldCount;
    if (end1 >= end2) b++;
    if (end2 >= end1) a++;
  }
  for (; a < oursHunks.length; a++) {
    const x = oursHunks[a];
    appendRegion(regions, {
      mode: TAKE_OURS,
      i0: x.oldStart,
      chg0: x.oldCount,
      i1: x.newStart,
      chg1: x.newCount,
      // Past the other side's last hunk, positions shift by the difference in line counts.
      i2: x.oldStart + theirsLines.length - baseLineCount,
      chg2: x.oldCount,
    });
  }
  for (; b < theirsHunks.length; b++) {
    const y = theirsHunks[b];
    appendRegion(regions, {
      mode: TAKE_THEIRS,
      i0: y.oldStart,
      chg0: y.oldCount,
      i1: y.oldStart + oursLines.length - baseLineCount,
      chg1: y.oldCount,
      i2: y.newStart,
      chg2: y.newCount,
    });
  }
  return regions;
}

/**
 * xdl_refine_conflicts(): diff the two sides of each conflict against each other. Identical
 * sides resolve the conflict; otherwise it becomes one conflict per differing hunk.
 */
function refineConflicts(regions: readonly MergeRegion[], oursLines: readonly Buffer[], theirsLines: readonly Buffer[]): MergeRegion[] {
  const out: MergeRegion[] = [];
  for (const region of regions) {
    if (region.mode !== CONFLICT || region.chg1 === 0 || region.chg2 === 0) {
      out.push(region);
      continue;
    }
    const oursPart = oursLines.slice(region.i1, region.i1 + region.chg1);
    const theirsPart = theirsLines.slice(region.i2, region.i2 + region.chg2);
    const hunks = diffLines(oursPart, theirsPart);
    if (hunks.length === 0) {
      out.push({ ...region, mode: IDENTICAL });
      continue;
    }
    // Like git, only the ours/theirs positions are narrowed; base positions keep the whole conflict.
    for (const hunk of hunks) {
      out.push({
        mode: CONFLICT,
        i0: region.i0,
        chg0: region.chg0,
        i1: region.i1 + hunk.oldStart,
        chg1: hunk.oldCount,
        i2: region.i2 + hunk.newStart,
        chg2: hunk.newCount,
      });
    }
  }
  return out;
}

/** xdl_simplify_non_conflicts() at level ZEALOUS: join conflicts at most 3 lines apart. */
function joinCloseConflicts(regions: readonly MergeRegion[]): MergeRegion[] {
  const out: MergeRegion[] = [];
  for (const region of regions) {
    const last = out[out.length - 1];
    if (last && last.mode === CONFLICT && region.mode === CONFLICT && region.i1 - (last.i1 + last.chg1) <= CONFLICT_JOIN_GAP_MAX) {
      last.chg1 = region.i1 + region.chg1 - last.i1;
      last.chg2 = region.i2 + region.chg2 - last.i2;
      continue;
    }
    out.push({ ...region });
  }
  return out;
}

/**
 * is_eol_crlf(): 1 if line i ends in CR LF (for a last line without LF, the line before it),
 * 0 if LF only, -1 if it cannot tell.
 */
function endsInCrLf(lines: readonly Buffer[], i: number): number {
  const crlf = (line: Buffer) => (line.length > 1 && line[line.length - 2] === CARRIAGE_RETURN ? 1 : 0);
  if (i < lines.length - 1) return crlf(lines[i]);
  if (lines.length === 0) return -1;
  const line = lines[i];
  if (line.length > 0 && line[line.length - 1] === NEWLINE) return crlf(line);
  if (i === 0) return -1;
  return crlf(lines[i - 1]);
}

/** is_cr_needed(): conflict markers follow the line endings around them. */
function needsCarriageReturn(region: MergeRegion, baseLines: readonly Buffer[], oursLines: readonly Buffer[], theirsLines: readonly Buffer[]): boolean {
  let needs = endsInCrLf(oursLines, region.i1 ? region.i1 - 1 : 0);
  if (needs) needs = endsInCrLf(theirsLines, region.i2 ? region.i2 - 1 : 0);
  if (needs) needs = endsInCrLf(baseLines, 0);
  return needs > 0;
}

/** xdl_fill_merge_buffer() with favor none and style "merge". */
function writeMerge(
  regions: readonly MergeRegion[],
  baseLines: readonly Buffer[],
  oursLines: readonly Buffer[],
  theirsLines: readonly Buffer[],
  options: ContentMergeOptions,
): Buffer {
  const parts: Buffer[] = [];
  const markerSize = options.markerSize && options.markerSize > 0 ? options.markerSize : CONFLICT_MARKER_SIZE;
  const copy = (lines: readonly Buffer[], start: number, count: number, addNewline: boolean, crlf: boolean) => {
    if (count < 1) return;
    for (let i = start; i < start + count; i++) parts.push(lines[i]);
    const last = lines[start + count - 1];
    if (addNewline && (last.length === 0 || last[last.length - 1] !== NEWLINE)) {
      parts.push(Buffer.from(crlf ? '\r\n' : '\n', 'latin1'));
    }
  };
  const marker = (char: string, label: string | undefined, crlf: boolean) => {
    const text = char.repeat(markerSize) + (label !== undefined ? ` ${label}` : '') + (crlf ? '\r\n' : '\n');
    parts.push(Buffer.from(text, 'utf8'));
  };

  let next = 0; // next line of ours not yet written
  for (const region of regions) {
    if (region.mode === CONFLICT) {
      const crlf = needsCarriageReturn(region, baseLines, oursLines, theirsLines);
      copy(oursLines, next, region.i1 - next, false, false);
      marker('<', options.oursLabel, crlf);
      copy(oursLines, region.i1, region.chg1, true, crlf);
      marker('=', undefined, crlf);
      copy(theirsLines, region.i2, region.chg2, true, crlf);
      marker('>', options.theirsLabel, crlf);
    } else if (region.mode === TAKE_OURS || region.mode === TAKE_THEIRS) {
      copy(oursLines, next, region.i1 - next, false, false);
      if (region.mode === TAKE_OURS) copy(oursLines, region.i1, region.chg1, false, false);
      else copy(theirsLines, region.i2, region.chg2, false, false);
    } else {
      // Identical on both sides: the lines are already in ours and get copied with it.
      continue;
    }
    next = region.i1 + region.chg1;
  }
  copy(oursLines, next, oursLines.length - next, false, false);
  return Buffer.concat(parts);
}
