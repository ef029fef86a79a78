import { describe, expect, it } from 'vitest';
import { SlabAllocator } from '../../src/git/slab.js';

describe('SlabAllocator', () => {
  it('takes a small slab for a few small buffers, and larger ones as it goes on', () => {
    const slabs = new SlabAllocator();
    // A write transaction keeping one id: its slab is kilobytes, not the 4 MB of the largest.
    const first = slabs.allocate(20);
    expect(first.buffer.byteLength).toBeLessThanOrEqual(16 * 1024);
    const backing = new Set<ArrayBufferLike>([first.buffer]);
    let bytes = 20;
    while (bytes < 64 * 1024 * 1024) {
      const out = slabs.allocate(1000);
      backing.add(out.buffer);
      bytes += 1000;
    }
    // 64 MB in 1,000-byte pieces: slabs doubling up to 4 MB, so about twenty, not 64,000 allocations.
    expect(backing.size).toBeLessThan(30);
    expect(Math.max(...[...backing].map((buffer) => buffer.byteLength))).toBe(4 * 1024 * 1024);
  });

  it('hands out views that do not overlap, and a buffer of its own for large sizes', () => {
    const slabs = new SlabAllocator();
    const views = Array.from({ length: 2_000 }, (_, index) => {
      const view = slabs.allocate(1 + (index % 300));
      view.fill(index % 256);
      return view;
    });
    for (const [index, view] of views.entries()) expect(view.every((byte) => byte === index % 256)).toBe(true);
    const large = slabs.allocate(300 * 1024);
    expect(large.buffer.byteLength).toBe(300 * 1024);
  });
});
