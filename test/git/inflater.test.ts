/**
 * The reusable inflater behind parsePack (src/git/inflater.ts): one native zlib handle reset
 * between streams must give what zlib.inflateSync gives, stream after stream, and find where each
 * stream ends among the bytes after it; its fallback (node's internals missing) must agree with it
 * on every case, refusals included.
 */
import fc from 'fast-check';
import { deflateSync, gzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { InflateError, Inflater } from '../../src/git/inflater.js';

/** Bytes that compress a little, the same every run. */
function noise(bytes: number, seed: number): Buffer {
  const out = Buffer.alloc(bytes);
  let state = seed >>> 0;
  for (let i = 0; i < bytes; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = (state >>> 24) & 0x3f;
  }
  return out;
}

const kinds = [
  { name: 'native handle', make: () => new Inflater() },
  { name: 'inflateSync fallback', make: () => new Inflater({ fallback: true }) },
];

/** What inflateInto answers for a stream expected to make `size` bytes (room for one more), or the refusal. */
function inflated(inflater: Inflater, input: Buffer, start: number, end: number, size: number): { body: Buffer; consumed: number } | 'too large' | 'refused' {
  const output = Buffer.alloc(size + 1);
  try {
    const { bytes, consumed } = inflater.inflateInto(input, start, end, output);
    if (bytes > size) return 'too large';
    return { body: Buffer.from(output.subarray(0, bytes)), consumed };
  } catch (error) {
    if (error instanceof InflateError) return 'refused';
    throw error;
  }
}

describe.each(kinds)('Inflater ($name)', ({ make }) => {
  it('inflates streams back to back in one buffer, each with where it ends, as inflateSync does', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 20 }), fc.integer({ min: 0, max: 9 }), (bodies, level) => {
        const streams = bodies.map((body) => deflateSync(body, { level }));
        const all = Buffer.concat([...streams, Buffer.from('trailing bytes after the last stream')]);
        const inflater = make();
        let at = 0;
        bodies.forEach((body, i) => {
          const answer = inflated(inflater, all, at, all.length, body.length);
          expect(answer).not.toBe('refused');
          const { body: out, consumed } = answer as { body: Buffer; consumed: number };
          expect(out.equals(Buffer.from(body))).toBe(true);
          expect(out.equals(inflateSync(streams[i]))).toBe(true);
          expect(consumed).toBe(streams[i].length);
          at += consumed;
        });
        inflater.close();
      }),
      { numRuns: 60 },
    );
  });

  it('shows a stream that makes more than expected, and refuses cut, corrupt and foreign streams', () => {
    const inflater = make();
    const body = noise(5000, 1);
    const stream = deflateSync(body);
    expect(inflated(inflater, stream, 0, stream.length, body.length - 1)).toBe('too large');
    // A bomb: 10 MiB of zeros, 10 KB deflated, expected to make 1,000 bytes.
    const bomb = deflateSync(Buffer.alloc(10 * 1024 * 1024));
    expect(inflated(inflater, bomb, 0, bomb.length, 1000)).toBe('too large');
    // Cut before its end (the input ends inside the stream).
    expect(inflated(inflater, stream, 0, stream.length - 5, body.length)).toBe('refused');
    expect(inflated(inflater, Buffer.from('not zlib at all'), 0, 15, 4)).toBe('refused');
    const corrupt = Buffer.from(stream);
    corrupt[corrupt.length - 1] ^= 0xff; // the Adler-32 checksum
    expect(inflated(inflater, corrupt, 0, corrupt.length, body.length)).toBe('refused');
    // A raw deflate stream or a gzip member is not a zlib stream.
    expect(inflated(inflater, Buffer.from(stream.subarray(2)), 0, stream.length - 2, body.length)).toBe('refused');
    const gzip = gzipSync(body);
    expect(inflated(inflater, gzip, 0, gzip.length, body.length)).toBe('refused');
    // Shorter than expected: the caller sees how much it made.
    const answer = inflated(inflater, stream, 0, stream.length, body.length + 10);
    expect(answer).not.toBe('refused');
    expect((answer as { body: Buffer }).body.length).toBe(body.length);
    // After every refusal the same inflater goes on inflating right.
    const next = inflated(inflater, stream, 0, stream.length, body.length);
    expect((next as { body: Buffer }).body.equals(body)).toBe(true);
    inflater.close();
  });

  it('inflates an object larger than any chunk at once, and an empty one', () => {
    const inflater = make();
    const big = noise(4 * 1024 * 1024, 2);
    const stream = deflateSync(big, { level: 1 });
    const answer = inflated(inflater, stream, 0, stream.length, big.length) as { body: Buffer; consumed: number };
    expect(answer.body.equals(big)).toBe(true);
    expect(answer.consumed).toBe(stream.length);
    const empty = deflateSync(Buffer.alloc(0));
    expect(inflated(inflater, empty, 0, empty.length, 0)).toEqual({ body: Buffer.alloc(0), consumed: empty.length });
    inflater.close();
  });
});
