import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../fixtures/sourceTree.js';
import { Linter } from '../../src/service/lint.js';
import { LruCache } from '../../src/store/lruCache.js';

/** The same cache as a plain list, oldest first: what LruCache must answer, step by step. */
class ListCache {
  readonly entries: Array<[number, number]> = [];
  constructor(private readonly bytesMax: number) {}
  private bytes(): number {
    return this.entries.reduce((sum, [, value]) => sum + value, 0);
  }
  get(key: number): number | undefined {
    const at = this.entries.findIndex(([k]) => k === key);
    if (at < 0) return undefined;
    const [entry] = this.entries.splice(at, 1);
    this.entries.push(entry);
    return entry[1];
  }
  set(key: number, value: number): void {
    const at = this.entries.findIndex(([k]) => k === key);
    if (at >= 0) this.entries.splice(at, 1);
    this.entries.push([key, value]);
    while (this.bytes() > this.bytesMax) this.entries.shift();
  }
  delete(key: number): void {
    const at = this.entries.findIndex(([k]) => k === key);
    if (at >= 0) this.entries.splice(at, 1);
  }
}

describe('LruCache', () => {
  it('keeps at most its bytes, dropping the least recently used first', () => {
    const cache = new LruCache<string, number>(2, 2, () => 1);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
    cache.set('big', 4);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.bytesUsed).toBe(2);
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.bytesUsed).toBe(0);
    cache.set('d', 5);
    expect(cache.get('d')).toBe(5);
  });

  it('refuses an entry larger than its bound and leaves the others', () => {
    const cache = new LruCache<string, Buffer>(100, 10, (value) => value.length);
    cache.set('small', Buffer.alloc(10));
    cache.set('large', Buffer.alloc(11));
    expect(cache.get('large')).toBeUndefined();
    expect(cache.get('small')?.length).toBe(10);
  });

  // The cache keeps its order in a list of its own beside the Map: that order must stay the plain
  // list's through hits, replacements, deletions, clears and evictions.
  it('evicts in least-recently-used order through a long mixed run, as a plain list does', () => {
    const next = mulberry32(13);
    for (const bytesMax of [1, 7, 64, 500]) {
      const cache = new LruCache<number, number>(bytesMax, bytesMax, (value) => value);
      const model = new ListCache(bytesMax);
      for (let step = 0; step < 20_000; step++) {
        const roll = next();
        const key = Math.floor(next() * 200);
        if (roll < 0.45) {
          const value = 1 + Math.floor(next() * Math.min(bytesMax, 9));
          cache.set(key, value);
          model.set(key, value);
        } else if (roll < 0.9) {
          expect(cache.get(key)).toBe(model.get(key));
        } else if (roll < 0.99) {
          cache.delete(key);
          model.delete(key);
        } else if (roll < 0.995) {
          cache.deleteWhere((k) => k % 3 === 0);
          for (const [k] of [...model.entries]) if (k % 3 === 0) model.delete(k);
        } else {
          cache.clear();
          model.entries.length = 0;
        }
        expect(cache.size).toBe(model.entries.length);
      }
      expect(cache.bytesUsed).toBe(model.entries.reduce((sum, [, value]) => sum + value, 0));
    }
  });

  it("bounds the linter's caches in entries, at least one", () => {
    expect(() => new Linter({ cacheEntriesMax: 0, workers: 0 })).toThrow(RangeError);
  });
});
