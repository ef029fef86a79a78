import { describe, expect, it } from 'vitest';
import { columnFromByteColumn, firstDifference, lineAt, positionAt } from '../../../src/service/lint/textPosition.js';

describe('textPosition', () => {
  it('turns offsets into 1-based lines and UTF-16 columns', () => {
    const text = 'ab\ncü\n';
    expect(positionAt(text, 0)).toEqual({ line: 1, column: 1 });
    expect(positionAt(text, 2)).toEqual({ line: 1, column: 3 });
    expect(positionAt(text, 3)).toEqual({ line: 2, column: 1 });
    expect(positionAt(text, 5)).toEqual({ line: 2, column: 3 });
    expect(positionAt(text, text.length)).toEqual({ line: 3, column: 1 });
  });

  it("converts esbuild's byte columns", () => {
    expect(columnFromByteColumn('const ü = 1', 0)).toBe(1);
    // "ü" is two bytes: byte 9 is the "=" at character 8.
    expect(columnFromByteColumn('const ü = 1', 9)).toBe(9);
    expect(columnFromByteColumn('ab', 2)).toBe(3);
  });

  it('finds the first difference and reads lines', () => {
    expect(firstDifference('abc', 'abc')).toBe(-1);
    expect(firstDifference('abc', 'abd')).toBe(2);
    expect(firstDifference('ab', 'abc')).toBe(2);
    expect(lineAt('a\r\nb\nc', 1)).toBe('a');
    expect(lineAt('a\nb\nc', 3)).toBe('c');
    expect(lineAt('a', 5)).toBe('');
  });
});
