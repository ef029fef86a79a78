/**
 * The deflater that reuses one zlib stream (src/git/deflater.ts) makes exactly deflateSync's bytes
 * at its level, for every size (empty, one byte, compressible, random, past its scratch limit) and
 * one object after another, so a pack made with it equals one made without.
 */
import { randomBytes } from 'node:crypto';
import { constants, deflateSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Deflater } from '../../src/git/deflater.js';

const bodies = (): Buffer[] => [
  Buffer.alloc(0),
  Buffer.from('x'),
  Buffer.from('export const value = 1;\n'.repeat(2_000)),
  randomBytes(70_000),
  // Past the 4 MiB scratch limit: deflateSync's own chunked output.
  Buffer.from('a larger file\n'.repeat(400_000)),
  randomBytes(100),
];

describe('Deflater', () => {
  for (const level of [1, constants.Z_DEFAULT_COMPRESSION, 9]) {
    it(`makes deflateSync's bytes at level ${level}, object after object`, () => {
      const deflater = new Deflater(level);
      // Node 20's internals as expected: the reused stream, not the fallback, is what is tested.
      expect(deflater.native).toBe(true);
      for (let round = 0; round < 2; round++) {
        for (const body of bodies()) {
          const deflated = deflater.deflate(body);
          expect(deflated.equals(deflateSync(body, { level }))).toBe(true);
          expect(inflateSync(deflated).equals(body)).toBe(true);
        }
      }
      deflater.close();
      // Closed, it opens a new stream for the next object.
      const body = Buffer.from('after close');
      expect(deflater.deflate(body).equals(deflateSync(body, { level }))).toBe(true);
    });
  }

  it('returns buffers of their own: a later call does not change an earlier answer', () => {
    const deflater = new Deflater(1);
    const first = deflater.deflate(Buffer.from('first body '.repeat(50)));
    const copy = Buffer.from(first);
    deflater.deflate(Buffer.from('second body, something else entirely '.repeat(50)));
    expect(first.equals(copy)).toBe(true);
  });
});
