/**
 * Values by key, least recently used first, bounded in bytes. The stores cache what never goes stale
 * under its key: LMDB's bodies rebuilt from pack-ready forms and its shelves (named by an object id
 * or a random shelf id never reused), PostgreSQL's objects and commit index entries (immutable). What
 * a cache may still have to forget is a dropped project's entries (deleteWhere), and, in PostgreSQL's,
 * objects a garbage collection removed (delete). Bounded in entries instead when each counts one
 * (the linter's results, a node's principals of API keys).
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();
  private bytes = 0;
  /**
   * Where eviction goes on: every entry before it was evicted through it. A Map leaves a hole for
   * each deletion until it is rehashed, and the holes of evictions gather at its front, so a new walk
   * from the front for each eviction stepped over all of them (bench/lruCache.bench.ts); one walk
   * that goes on steps over each hole once.
   */
  private oldest: IterableIterator<[K, V]> | undefined;

  constructor(
    private readonly bytesMax: number,
    private readonly entryBytesMax: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** Bytes the entries take, as sizeOf counts them. */
  get bytesUsed(): number {
    return this.bytes;
  }

  /** How many entries it holds. */
  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
    this.oldest = undefined;
  }

  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  /** Adds or replaces (a cache key may stand for part of a longer name). */
  set(key: K, value: V): void {
    if (this.sizeOf(value) > this.entryBytesMax) return;
    const replaced = this.entries.get(key);
    if (replaced !== undefined) {
      this.entries.delete(key);
      this.bytes -= this.sizeOf(replaced);
    }
    this.entries.set(key, value);
    this.bytes += this.sizeOf(value);
    while (this.bytes > this.bytesMax) {
      let next = this.oldest?.next();
      if (next === undefined || next.done) {
        this.oldest = this.entries.entries();
        next = this.oldest.next();
        if (next.done) return;
      }
      const [oldest, evicted] = next.value;
      this.entries.delete(oldest);
      this.bytes -= this.sizeOf(evicted);
    }
  }

  delete(key: K): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    this.bytes -= this.sizeOf(value);
  }

  /** Forgets every entry whose key `doomed` accepts (a walk over all of them: for rare events). */
  deleteWhere(doomed: (key: K) => boolean): void {
    for (const [key, value] of this.entries) {
      if (!doomed(key)) continue;
      this.entries.delete(key);
      this.bytes -= this.sizeOf(value);
    }
  }
}
