/**
 * Values by key, least recently used first, bounded in bytes. The stores cache what never goes stale
 * under its key: LMDB's bodies rebuilt from pack-ready forms and its shelves (named by an object id
 * or a random shelf id never reused), PostgreSQL's objects and commit index entries (immutable). What
 * a cache may still have to forget is a dropped project's entries (deleteWhere), and, in PostgreSQL's,
 * objects a garbage collection removed (delete).
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();
  private bytes = 0;

  constructor(
    private readonly bytesMax: number,
    private readonly entryBytesMax: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** Bytes the entries take, as sizeOf counts them. */
  get bytesUsed(): number {
    return this.bytes;
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
    for (const [oldest, evicted] of this.entries) {
      if (this.bytes <= this.bytesMax) break;
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
