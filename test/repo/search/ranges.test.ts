import { describe, expect, it } from 'vitest';
import { foldRanges } from '../../../src/repo/search/caseFold.js';
import { negateRanges, normaliseRanges, utf8Sequences } from '../../../src/repo/search/ranges.js';

/** Does one of the byte-range sequences accept exactly these bytes? */
function accepted(sequences: Array<Array<[number, number]>>, bytes: Buffer): boolean {
  return sequences.some((sequence) => sequence.length === bytes.length && sequence.every(([lo, hi], i) => bytes[i] >= lo && bytes[i] <= hi));
}

describe('utf8Sequences', () => {
  it.each([
    [0x00, 0x7f],
    [0x41, 0x5a],
    [0x7f, 0x800],
    [0xe9, 0xe9],
    [0x400, 0x4ff],
    [0xd000, 0xe100],
    [0xfff0, 0x10010],
    [0x1f600, 0x1f64f],
    [0x10fff0, 0x10ffff],
  ])('accepts exactly the UTF-8 of U+%s..U+%s, surrogates left out', (lo, hi) => {
    const sequences = utf8Sequences(lo, hi);
    for (let code = Math.max(0, lo - 300); code <= Math.min(0x10ffff, hi + 300); code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const inside = code >= lo && code <= hi;
      expect(accepted(sequences, Buffer.from(String.fromCodePoint(code), 'utf8')), `U+${code.toString(16)}`).toBe(inside);
    }
  });

  it('covers all of Unicode with few sequences', () => {
    expect(utf8Sequences(0, 0x10ffff).length).toBeLessThan(12);
  });
});

describe('ranges and case folding', () => {
  it('normalises, negates and folds', () => {
    expect(normaliseRanges([[5, 9], [1, 3], [4, 4], [20, 21]])).toEqual([[1, 9], [20, 21]]);
    expect(negateRanges([[0, 9], [11, 0x10ffff]])).toEqual([[10, 10]]);
    expect(foldRanges([[0x61, 0x61]])).toEqual([[0x41, 0x41], [0x61, 0x61]]);
    // k, K and the Kelvin sign are one orbit; ſ joins s and S.
    expect(foldRanges([[0x6b, 0x6b]])).toEqual([[0x4b, 0x4b], [0x6b, 0x6b], [0x212a, 0x212a]]);
    expect(foldRanges([[0x73, 0x73]])).toEqual([[0x53, 0x53], [0x73, 0x73], [0x17f, 0x17f]]);
    expect(foldRanges([[0xc9, 0xc9]])).toEqual([[0xc9, 0xc9], [0xe9, 0xe9]]);
  });
});
