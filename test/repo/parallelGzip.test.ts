/**
 * parallelGzip against zlib: whatever the input and however it arrives (empty, one byte, exactly a
 * block, blocks and a byte, one chunk of many blocks, many small chunks), the output inflates
 * (Node's gunzip, and the gzip CLI where it checks the CRC and length) to the input, starts with
 * zlib's level-6 header (git archive's), and compresses about as well as one zlib stream.
 */
import { spawnSync } from 'node:child_process';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { mulberry32, SourceTree } from '../../fixtures/sourceTree.js';
import { GZIP_BLOCK_BYTES, parallelGzip } from '../../src/repo/parallelGzip.js';

async function gzipOf(chunks: Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  async function* source() {
    for (const chunk of chunks) yield chunk;
  }
  for await (const part of parallelGzip(source())) out.push(part);
  return Buffer.concat(out);
}

/** Text-like bytes that compress (source files) with some noise that does not. */
function sample(bytes: number, seed: number): Buffer {
  const tree = new SourceTree({ files: 50, seed });
  const rng = mulberry32(seed);
  const parts: Buffer[] = [];
  let total = 0;
  for (let i = 0; total < bytes; i = (i + 1) % 50) {
    const part = rng() < 0.1 ? Buffer.from(Array.from({ length: 300 }, () => Math.floor(rng() * 256))) : tree.content(i);
    parts.push(part);
    total += part.length;
  }
  return Buffer.concat(parts).subarray(0, bytes);
}

/** Cuts `data` into chunks of the given sizes, cycling through them. */
function cut(data: Buffer, sizes: number[]): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0, i = 0; at < data.length; i++) {
    const size = sizes[i % sizes.length];
    chunks.push(data.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

describe('parallelGzip', () => {
  const cases: Array<[string, Buffer, number[]]> = [
    ['nothing', Buffer.alloc(0), [1]],
    ['one byte', Buffer.from('x'), [1]],
    ['exactly one block', sample(GZIP_BLOCK_BYTES, 1), [GZIP_BLOCK_BYTES]],
    ['blocks and one byte, in odd chunks', sample(3 * GZIP_BLOCK_BYTES + 1, 2), [65_536, 1, 100_000, 7]],
    ['many blocks in one chunk', sample(7 * GZIP_BLOCK_BYTES + 12_345, 3), [Number.MAX_SAFE_INTEGER]],
    ['many small chunks', sample(GZIP_BLOCK_BYTES + 5000, 4), [512, 1024, 3]],
    ['zeros (long matches across blocks)', Buffer.alloc(2 * GZIP_BLOCK_BYTES + 99), [300_000]],
  ];
  for (const [name, data, sizes] of cases) {
    it(`inflates to its input: ${name}`, async () => {
      const gz = await gzipOf(cut(data, sizes));
      expect(gz.subarray(0, 10)).toEqual(gzipSync(Buffer.alloc(0), { level: 6 }).subarray(0, 10));
      expect(gunzipSync(gz).equals(data)).toBe(true);
      // The CLI checks the trailer's CRC and length too.
      const cli = spawnSync('gzip', ['-dc'], { input: gz, maxBuffer: 1 << 28 });
      expect(cli.status).toBe(0);
      expect(cli.stdout.equals(data)).toBe(true);
    });
  }

  it('compresses about as well as one zlib stream', async () => {
    const data = sample(6 * GZIP_BLOCK_BYTES, 5);
    const ours = await gzipOf(cut(data, [65_536]));
    const single = gzipSync(data, { level: 6 });
    expect(ours.length / single.length).toBeLessThan(1.01);
  });

  it('passes on a failure of its source', async () => {
    async function* failing() {
      yield sample(GZIP_BLOCK_BYTES + 10, 6);
      throw new Error('source failed');
    }
    const drain = async () => {
      for await (const part of parallelGzip(failing())) expect(part.length).toBeGreaterThan(0);
    };
    await expect(drain()).rejects.toThrow('source failed');
  });
});
