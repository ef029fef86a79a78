import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  byteOrderKey,
  comparePathBytes,
  decodePath,
  displayPath,
  encodePath,
  hasLoneSurrogate,
  isUtf8Path,
  pathByteLength,
} from '../../src/git/pathBytes.js';

const bytes = fc.uint8Array({ maxLength: 40 }).map((array) => Buffer.from(array));
/** Bytes that lean towards UTF-8 lead and continuation bytes, so sequences are often almost valid. */
const nearUtf8 = fc
  .array(fc.oneof(fc.integer({ min: 0x20, max: 0x7f }), fc.integer({ min: 0x80, max: 0xbf }), fc.integer({ min: 0xc0, max: 0xff })), { maxLength: 40 })
  .map((array) => Buffer.from(array));
const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

describe('decodePath / encodePath', () => {
  it('round-trips every byte string exactly', () => {
    fc.assert(
      fc.property(fc.oneof(bytes, nearUtf8), (name) => {
        const decoded = decodePath(name);
        expect(encodePath(decoded).equals(name)).toBe(true);
        expect(pathByteLength(decoded)).toBe(name.length);
      }),
      { numRuns: 5000 },
    );
  });

  it('decodes valid UTF-8 as UTF-8 and nothing else as a well-formed string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 20 }), (text) => {
        const name = Buffer.from(text, 'utf8');
        expect(decodePath(name)).toBe(text);
        expect(isUtf8Path(decodePath(name))).toBe(true);
      }),
    );
    const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    fc.assert(
      fc.property(fc.oneof(bytes, nearUtf8), (name) => {
        let valid: string | null = null;
        try {
          valid = strict.decode(name);
        } catch {
          // Not UTF-8: the decoded string must say so with an escape.
        }
        if (valid !== null) expect(decodePath(name)).toBe(valid);
        else expect(isUtf8Path(decodePath(name))).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });

  it('escapes each byte of an invalid sequence as U+DC00 + byte', () => {
    expect(decodePath(Buffer.from('caf\xe9.txt', 'latin1'))).toBe('caf\udce9.txt');
    // An encoded surrogate (ED A0 80) is not UTF-8: three escapes, never the surrogate itself.
    expect(decodePath(Buffer.from([0x78, 0xed, 0xa0, 0x80]))).toBe('x\udced\udca0\udc80');
    // Overlong "/" and a truncated sequence before valid text.
    expect(decodePath(Buffer.from([0xc0, 0xaf, 0xe2, 0x82, 0x41]))).toBe('\udcc0\udcaf\udce2\udc82A');
    // Valid UTF-8 around an invalid byte stays text.
    expect(decodePath(Buffer.concat([Buffer.from('\u00e9'), Buffer.of(0xff), Buffer.from('\u{1f600}')]))).toBe('\u00e9\udcff\u{1f600}');
    // A literal U+FFFD is valid UTF-8 and stays itself.
    expect(decodePath(Buffer.from('index\ufffd.html'))).toBe('index\ufffd.html');
  });

  it('gives different strings for different bytes (no two names collapse)', () => {
    fc.assert(
      fc.property(fc.oneof(bytes, nearUtf8), fc.oneof(bytes, nearUtf8), (a, b) => {
        expect(decodePath(a) === decodePath(b)).toBe(a.equals(b));
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses to encode a lone surrogate that is not an escape', () => {
    expect(() => encodePath('u\ud800')).toThrow(RangeError);
    expect(() => encodePath('u\udc7f')).toThrow(RangeError);
    expect(hasLoneSurrogate('u\ud800')).toBe(true);
    expect(hasLoneSurrogate('\u{1f600}')).toBe(false);
  });
});

describe('comparePathBytes and byteOrderKey', () => {
  it('order decoded names as git orders their bytes', () => {
    fc.assert(
      fc.property(fc.oneof(bytes, nearUtf8), fc.oneof(bytes, nearUtf8), (a, b) => {
        const expected = sign(Buffer.compare(a, b));
        expect(sign(comparePathBytes(decodePath(a), decodePath(b)))).toBe(expected);
        const ka = byteOrderKey(decodePath(a));
        const kb = byteOrderKey(decodePath(b));
        expect(ka < kb ? -1 : ka > kb ? 1 : 0).toBe(expected);
      }),
      { numRuns: 5000 },
    );
    // UTF-16 order puts U+1F600 before U+FF61; bytes put it after.
    expect(comparePathBytes('\u{1f600}', '\uff61')).toBeGreaterThan(0);
    expect(comparePathBytes('caf\u00e9', 'caf\udce9')).toBeLessThan(0);
  });
});

describe('displayPath', () => {
  it('shows bytes that are not UTF-8 as U+FFFD and leaves text alone', () => {
    expect(displayPath('caf\udce9.txt')).toBe('caf\ufffd.txt');
    expect(displayPath('\u{1f600}/caf\u00e9')).toBe('\u{1f600}/caf\u00e9');
  });
});
