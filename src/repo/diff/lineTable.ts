/**
 * A blob split into lines (git's way: a line ends after its "\n", the last may lack one) and each
 * line numbered by a LineClasses (equal lines, equal numbers), for walks that diff many versions
 * of one file (blame). A version is mostly its neighbour's lines: LineTable.from takes the runs of
 * lines the two blobs share from the neighbour's table as they are (found with native compares of
 * the bytes) and splits and numbers only the lines between, so a walk over 500 versions of a
 * 2,000-line file numbers a few lines per version instead of 4,000 per diff.
 */
import { LineClasses, measureIndent, type LineIndents } from '../merge/lineDiff.js';

const NEWLINE = 0x0a;
/** Bytes compared at once while looking for the first difference (then halved down to one). */
const COMPARE_CHUNK_BYTES = 4096;

export class LineTable {
  private constructor(
    readonly content: Buffer,
    /** Where each line starts, then content.length: lineCount + 1 entries. */
    private readonly starts: Int32Array,
    readonly ids: Int32Array,
  ) {}

  get lineCount(): number {
    return this.ids.length;
  }

  /** Where line `line` starts (lineCount: the content's end). */
  startOf(line: number): number {
    return this.starts[line];
  }

  /** @internal the starts themselves, for GrowingLines to copy runs of. */
  startsView(): Int32Array {
    return this.starts;
  }

  /** @internal GrowingLines's result. */
  static fromParts(content: Buffer, starts: Int32Array, ids: Int32Array): LineTable {
    return new LineTable(content, starts, ids);
  }

  /** Every line of `content` split and numbered. */
  static of(content: Buffer, classes: LineClasses): LineTable {
    const lines = new GrowingLines(Math.ceil(content.length / 32));
    let at = 0;
    while (at < content.length) {
      const newline = content.indexOf(NEWLINE, at);
      const end = newline < 0 ? content.length : newline + 1;
      lines.push(at, classes.intern(content, at, end));
      at = end;
    }
    return lines.table(content);
  }

  /** Line `line`'s bytes as text (`encoding` utf8 by default), without its "\n" when `withoutNewline`. */
  text(line: number, withoutNewline = false, encoding: BufferEncoding = 'utf8'): string {
    let end = this.starts[line + 1];
    if (withoutNewline && end > this.starts[line] && this.content[end - 1] === NEWLINE) end--;
    return this.content.toString(encoding, this.starts[line], end);
  }

  /** Whether line `line` ends with "\n" (only the last may not). */
  terminated(line: number): boolean {
    const end = this.starts[line + 1];
    return end > this.starts[line] && this.content[end - 1] === NEWLINE;
  }

  /**
   * `content` split and numbered, the runs of lines it shares with `near` taken from it. The two
   * are walked together: a run of equal bytes (found with native compares, a chunk at a time) gives
   * the lines of `near` it holds whole; a line that differs is split and numbered, and the walk
   * finds its place in `near` again by that line's number among the next RESYNC_LINES lines there.
   * Where that guess is wrong the walk only numbers more lines itself: every line taken from `near`
   * has been compared byte for byte.
   */
  static from(content: Buffer, near: LineTable, classes: LineClasses): LineTable {
    const other = near.content;
    const n = near.lineCount;
    const lines = new GrowingLines(n + 16);
    let at = 0;
    let i = 0;
    while (at < content.length) {
      if (i < n) {
        const from = near.starts[i];
        const same = commonRunLength(content, at, other, from);
        // The lines of `near` from i on that lie whole in the run; the last may lack its "\n" only
        // where both contents end with it.
        let j = upperLine(near.starts, from + same);
        if (j > i && near.starts[j] === other.length && other[other.length - 1] !== NEWLINE && at + (other.length - from) !== content.length) j--;
        if (j > i) {
          lines.copy(near, i, j, at - from);
          at += near.starts[j] - from;
          i = j;
          continue;
        }
      }
      const newline = content.indexOf(NEWLINE, at);
      const end = newline < 0 ? content.length : newline + 1;
      const id = classes.intern(content, at, end);
      lines.push(at, id);
      at = end;
      // Where `near` goes on: just after its next line with this number whose following line is
      // also the next one here (an edit replaced or inserted lines); else where it was (lines were
      // inserted here).
      for (let k = i; k < Math.min(n, i + RESYNC_LINES); k++) {
        if (near.ids[k] !== id) continue;
        if (k + 1 < n && !lineAt(other, near.starts[k + 1], near.starts[k + 2], content, at)) continue;
        i = k + 1;
        break;
      }
    }
    return lines.table(content);
  }

  /** The ids of the lines in the first `bytes` bytes, which must end at a line's end. */
  idsUpTo(bytes: number): Int32Array {
    const lines = upperLine(this.starts, bytes);
    if (this.starts[lines] !== bytes) throw new Error('a line table was cut inside a line');
    return this.ids.subarray(0, lines);
  }

  /** The indent heuristic's view of the first `lines` lines. */
  indents(lines = this.lineCount): LineIndents {
    return { length: lines, measure: (line) => measureIndent(this.content, this.starts[line], this.starts[line + 1]) };
  }
}

/** How far past a differing line the walk of LineTable.from looks for its place in the other table. */
const RESYNC_LINES = 32;

/** Lines gathered for a table: starts and ids in typed arrays that grow. */
class GrowingLines {
  private starts: Int32Array;
  private ids: Int32Array;
  private count = 0;

  constructor(expected: number) {
    this.starts = new Int32Array(expected + 1);
    this.ids = new Int32Array(expected);
  }

  private reserve(lines: number): void {
    if (this.count + lines < this.ids.length) return;
    const size = Math.max(this.ids.length * 2, this.count + lines + 1);
    const starts = new Int32Array(size + 1);
    starts.set(this.starts.subarray(0, this.count));
    const ids = new Int32Array(size);
    ids.set(this.ids.subarray(0, this.count));
    this.starts = starts;
    this.ids = ids;
  }

  push(start: number, id: number): void {
    this.reserve(1);
    this.starts[this.count] = start;
    this.ids[this.count++] = id;
  }

  /** Lines [from, to) of `table`, their starts moved by `shift`. */
  copy(table: LineTable, from: number, to: number, shift: number): void {
    this.reserve(to - from);
    const starts = table.startsView();
    if (shift === 0) this.starts.set(starts.subarray(from, to), this.count);
    else for (let k = from, at = this.count; k < to; k++, at++) this.starts[at] = starts[k] + shift;
    this.ids.set(table.ids.subarray(from, to), this.count);
    this.count += to - from;
  }

  table(content: Buffer): LineTable {
    this.starts[this.count] = content.length;
    return LineTable.fromParts(content, this.starts.subarray(0, this.count + 1), this.ids.subarray(0, this.count));
  }
}

/** Whether `a[start, end)` (a line) is also the line at `bAt` in `b`. */
function lineAt(a: Buffer, start: number, end: number, b: Buffer, bAt: number): boolean {
  const length = end - start;
  return bAt + length <= b.length && b.compare(a, start, end, bAt, bAt + length) === 0 && (a[end - 1] === NEWLINE || bAt + length === b.length);
}

/** The largest i with starts[i] <= bytes (starts ascending, starts[0] = 0). */
function upperLine(starts: Int32Array, bytes: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (starts[middle] <= bytes) low = middle;
    else high = middle - 1;
  }
  return low;
}

/** How many bytes `a` from `aStart` and `b` from `bStart` have in common before they differ. */
export function commonRunLength(a: Buffer, aStart: number, b: Buffer, bStart: number): number {
  const limit = Math.min(a.length - aStart, b.length - bStart);
  let same = 0;
  for (let chunk = COMPARE_CHUNK_BYTES; chunk >= 1; chunk >>= 1) {
    while (same + chunk <= limit && a.compare(b, bStart + same, bStart + same + chunk, aStart + same, aStart + same + chunk) === 0) same += chunk;
  }
  return same;
}
