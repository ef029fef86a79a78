/**
 * One file's patch as `git diff` prints it: xdiff's change script (lineDiff.ts) grouped into hunks
 * with `context` lines around them (xdiff/xemit.c xdl_get_hunk() and xdl_emit_diff()), each hunk
 * headed by "@@ -a,b +c,d @@" and, as git's default funcname rule has it, the nearest line above the
 * hunk that starts with a letter, "_" or "$" (def_ff()).
 *
 * With no context at all, git first drops a common tail of the two files in 1 KiB blocks
 * (xdiff-interface.c trim_common_tail()), which can change where the diff puts ambiguous changes;
 * we do the same, so -U0 hunks are git's too.
 */
import { DiffLimitError, diffLineIds, LineClasses, type LineDiffOptions, type LineHunk } from '../merge/lineDiff.js';
import { LineTable } from './lineTable.js';

/** `git diff --histogram` with git's default indent heuristic. */
export const HISTOGRAM_DIFF: LineDiffOptions = Object.freeze({ algorithm: 'histogram', indentHeuristic: true });
/** What `git blame` diffs with by default: the classic algorithm and the indent heuristic. */
export const BLAME_DIFF: LineDiffOptions = Object.freeze({ algorithm: 'myers', indentHeuristic: true });

export interface PatchHunk {
  /** As the header shows them: 1-based, or the line before an empty range. */
  old_start: number;
  old_lines: number;
  new_start: number;
  new_lines: number;
  /** The whole "@@ … @@ funcname" line. */
  header: string;
  /** Each line starts with " ", "-" or "+", without its "\n" (a "\r" before it is content). */
  lines: string[];
}

export interface FilePatch {
  hunks: PatchHunk[];
  additions: number;
  deletions: number;
  /** git would print "\ No newline at end of file" after a line of the old (new) side. */
  oldMissingNewline: boolean;
  newMissingNewline: boolean;
  /** Size of the patch as git prints it (headers and lines with their newlines), in bytes. */
  bytes: number;
}

const NEWLINE = 0x0a;
/** trim_common_tail(): the block size it compares the files' ends by. */
const TAIL_BLOCK_BYTES = 1024;
/** struct func_line: git keeps at most this many bytes of a hunk's function line. */
const FUNC_LINE_BYTES_MAX = 80;

/**
 * trim_common_tail(): drops equal 1 KiB blocks from the ends of both files, then gives back the
 * part of the last dropped block up to and including its first newline.
 */
export function trimCommonTail(a: Buffer, b: Buffer): [Buffer, Buffer] {
  const smaller = Math.min(a.length, b.length);
  let trimmed = 0;
  while (trimmed + TAIL_BLOCK_BYTES <= smaller) {
    const aEnd = a.length - trimmed;
    const bEnd = b.length - trimmed;
    if (a.compare(b, bEnd - TAIL_BLOCK_BYTES, bEnd, aEnd - TAIL_BLOCK_BYTES, aEnd) !== 0) break;
    trimmed += TAIL_BLOCK_BYTES;
  }
  if (trimmed === 0) return [a, b];
  const cut = a.length - trimmed;
  let recovered = 0;
  while (recovered < trimmed) {
    if (a[cut + recovered++] === NEWLINE) break;
  }
  const drop = trimmed - recovered;
  return [a.subarray(0, a.length - drop), b.subarray(0, b.length - drop)];
}

/** The hunks of `oldContent` → `newContent` with `context` lines of context, as git diff prints them. */
export function buildPatch(oldContent: Buffer, newContent: Buffer, context: number, options: LineDiffOptions = HISTOGRAM_DIFF): FilePatch {
  const [oldTrimmed, newTrimmed] = context === 0 ? trimCommonTail(oldContent, newContent) : [oldContent, newContent];
  // Numbered old side first, in order of first appearance, as the histogram diff needs; the new
  // side takes the runs of lines it shares with the old as they are (the same numbers LineTable.of
  // would give them, without hashing them again).
  const classes = new LineClasses(Math.ceil((oldTrimmed.length + newTrimmed.length) / 32));
  const oldLines = LineTable.of(oldTrimmed, classes);
  const newLines = LineTable.from(newTrimmed, oldLines, classes);
  const indents = options.indentHeuristic ? { old: oldLines.indents(), new: newLines.indents() } : null;
  let script: LineHunk[];
  try {
    script = diffLineIds(oldLines.ids, newLines.ids, indents, options.algorithm);
  } catch (error) {
    // Where git's histogram index overflows, git cannot diff the file at all ("unable to generate
    // diff"); an answer is more use than a failure, so the classic algorithm diffs it instead.
    if (!(error instanceof DiffLimitError)) throw error;
    script = diffLineIds(oldLines.ids, newLines.ids, indents, 'myers');
  }
  return emitPatch(oldLines, newLines, script, context);
}

/** xdl_emit_diff() without function context, with git's default funcname rule. */
function emitPatch(oldLines: LineTable, newLines: LineTable, script: readonly LineHunk[], context: number): FilePatch {
  const patch: FilePatch = { hunks: [], additions: 0, deletions: 0, oldMissingNewline: false, newMissingNewline: false, bytes: 0 };
  let funcLine = '';
  let funcSearchedTo = -1;
  let first = 0;
  while (first < script.length) {
    // xdl_get_hunk(): changes at most 2 × context lines apart share a hunk.
    let last = first;
    while (last + 1 < script.length && script[last + 1].oldStart - (script[last].oldStart + script[last].oldCount) <= 2 * context) last++;
    const head = script[first];
    const tail = script[last];
    const s1 = Math.max(head.oldStart - context, 0);
    let s2 = Math.max(head.newStart - context, 0);
    const trailing = Math.min(context, oldLines.lineCount - (tail.oldStart + tail.oldCount), newLines.lineCount - (tail.newStart + tail.newCount));
    const e1 = tail.oldStart + tail.oldCount + trailing;
    const e2 = tail.newStart + tail.newCount + trailing;

    // get_func_line(): the nearest function line above the hunk; the previous hunk's stays when
    // none lies between the two.
    for (let l = s1 - 1; l !== funcSearchedTo && l >= 0 && l < oldLines.lineCount; l--) {
      const found = functionLine(oldLines, l);
      if (found !== null) {
        funcLine = found;
        break;
      }
    }
    funcSearchedTo = s1 - 1;

    const oldCount = e1 - s1;
    const newCount = e2 - s2;
    const hunk: PatchHunk = {
      old_start: oldCount > 0 ? s1 + 1 : s1,
      old_lines: oldCount,
      new_start: newCount > 0 ? s2 + 1 : s2,
      new_lines: newCount,
      header: '',
      lines: [],
    };
    hunk.header = `@@ -${hunk.old_start}${oldCount === 1 ? '' : `,${oldCount}`} +${hunk.new_start}${newCount === 1 ? '' : `,${newCount}`} @@${funcLine === '' ? '' : ` ${funcLine}`}`;
    patch.bytes += Buffer.byteLength(hunk.header) + 1;

    const emit = (prefix: string, lines: LineTable, line: number, side: 'old' | 'new' | 'both') => {
      const terminated = lines.terminated(line);
      hunk.lines.push(prefix + lines.text(line, true));
      const length = lines.startOf(line + 1) - lines.startOf(line);
      patch.bytes += length + (terminated ? 1 : 2);
      if (!terminated) {
        patch.bytes += '\\ No newline at end of file\n'.length;
        if (side !== 'new') patch.oldMissingNewline = true;
        if (side !== 'old') patch.newMissingNewline = true;
      }
    };
    for (; s2 < head.newStart; s2++) emit(' ', newLines, s2, 'both');
    let o = head.oldStart;
    let n = head.newStart;
    for (let k = first; k <= last; k++) {
      const change = script[k];
      for (; o < change.oldStart && n < change.newStart; o++, n++) emit(' ', newLines, n, 'both');
      for (o = change.oldStart; o < change.oldStart + change.oldCount; o++) emit('-', oldLines, o, 'old');
      for (n = change.newStart; n < change.newStart + change.newCount; n++) emit('+', newLines, n, 'new');
      patch.deletions += change.oldCount;
      patch.additions += change.newCount;
      o = change.oldStart + change.oldCount;
      n = change.newStart + change.newCount;
    }
    for (n = tail.newStart + tail.newCount; n < e2; n++) emit(' ', newLines, n, 'both');
    patch.hunks.push(hunk);
    first = last + 1;
  }
  return patch;
}

/** def_ff(): a line starting with an ASCII letter, "_" or "$", cut to 80 bytes, trailing blanks dropped. */
function functionLine(lines: LineTable, line: number): string | null {
  const start = lines.startOf(line);
  const length = lines.startOf(line + 1) - start;
  if (length === 0) return null;
  const content = lines.content;
  const c = content[start];
  const isAlpha = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
  if (!isAlpha && c !== 0x5f && c !== 0x24) return null;
  let end = start + Math.min(length, FUNC_LINE_BYTES_MAX);
  while (end > start && isCSpace(content[end - 1])) end--;
  return content.toString('utf8', start, end);
}

function isCSpace(byte: number): boolean {
  return byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);
}
