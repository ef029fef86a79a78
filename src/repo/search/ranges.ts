/** Sets of Unicode code points as inclusive ranges, for classes in search patterns. */

export type Ranges = Array<[number, number]>;

export const CODE_POINT_MAX = 0x10ffff;

/** Sorted, with overlapping and adjacent ranges joined. */
export function normaliseRanges(ranges: Ranges): Ranges {
  const sorted = ranges.map(([lo, hi]): [number, number] => [lo, hi]).sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** Every code point not in `ranges`. */
export function negateRanges(ranges: Ranges): Ranges {
  const out: Ranges = [];
  let next = 0;
  for (const [lo, hi] of normaliseRanges(ranges)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= CODE_POINT_MAX) out.push([next, CODE_POINT_MAX]);
  return out;
}

/**
 * The UTF-8 byte sequences of a code point range, as alternatives of byte ranges (the split Go's
 * and RE2's compilers use): the range is cut where the encoded length changes and where a
 * continuation byte would not cover all of 0x80..0xBF, until each piece is a product of byte ranges.
 * Surrogates (not valid in UTF-8) are left out.
 */
export function utf8Sequences(lo: number, hi: number, out: Array<Array<[number, number]>> = []): Array<Array<[number, number]>> {
  if (lo > hi) return out;
  if (lo <= 0xdfff && hi >= 0xd800) {
    if (lo < 0xd800) utf8Sequences(lo, 0xd7ff, out);
    if (hi > 0xdfff) utf8Sequences(0xe000, hi, out);
    return out;
  }
  for (const boundary of [0x7f, 0x7ff, 0xffff]) {
    if (lo <= boundary && hi > boundary) {
      utf8Sequences(lo, boundary, out);
      utf8Sequences(boundary + 1, hi, out);
      return out;
    }
  }
  if (hi <= 0x7f) {
    out.push([[lo, hi]]);
    return out;
  }
  const length = encodedLength(lo);
  for (let i = 1; i < length; i++) {
    const mask = (1 << (6 * i)) - 1;
    if ((lo & ~mask) !== (hi & ~mask)) {
      if ((lo & mask) !== 0) {
        utf8Sequences(lo, lo | mask, out);
        utf8Sequences((lo | mask) + 1, hi, out);
        return out;
      }
      if ((hi & mask) !== mask) {
        utf8Sequences(lo, (hi & ~mask) - 1, out);
        utf8Sequences(hi & ~mask, hi, out);
        return out;
      }
    }
  }
  const a = Buffer.from(String.fromCodePoint(lo), 'utf8');
  const b = Buffer.from(String.fromCodePoint(hi), 'utf8');
  out.push(Array.from(a, (byte, i): [number, number] => [byte, b[i]]));
  return out;
}

function encodedLength(code: number): number {
  return code <= 0x7f ? 1 : code <= 0x7ff ? 2 : code <= 0xffff ? 3 : 4;
}
