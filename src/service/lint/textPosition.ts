/**
 * Positions in text as the lint API reports them: line and column count from 1, and a column counts
 * UTF-16 code units (what JavaScript strings and most editors count), so "ü" is one column.
 */
export interface TextPosition {
  line: number;
  column: number;
}

/** The position of the character at `offset` (an offset at the end names the end of the last line). */
export function positionAt(text: string, offset: number): TextPosition {
  const end = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: end - lineStart + 1 };
}

/** The 1-based UTF-16 column of a 0-based UTF-8 byte column of `lineText` (esbuild counts bytes). */
export function columnFromByteColumn(lineText: string, byteColumn: number): number {
  const bytes = Buffer.from(lineText, 'utf8');
  if (byteColumn >= bytes.length) return lineText.length + 1 + (byteColumn - bytes.length);
  return bytes.subarray(0, byteColumn).toString('utf8').length + 1;
}

/** The offset of the first character where `a` and `b` differ; -1 when they are equal. */
export function firstDifference(a: string, b: string): number {
  if (a === b) return -1;
  const common = Math.min(a.length, b.length);
  for (let i = 0; i < common; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return i;
  return common;
}

/** The text of line `line` (1-based) without its line break. */
export function lineAt(text: string, line: number): string {
  let start = 0;
  for (let n = 1; n < line; n++) {
    const next = text.indexOf('\n', start);
    if (next === -1) return '';
    start = next + 1;
  }
  const end = text.indexOf('\n', start);
  return text.slice(start, end === -1 ? text.length : end).replace(/\r$/, '');
}
