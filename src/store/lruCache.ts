/**
 * Values by key, least recently used first, bounded in bytes. The stores cache what never goes stale
 * under its key: LMDB's bodies rebuilt from pack-ready forms and its shelves (named by an object id
 * or a random shelf id never reused), PostgreSQL's objects and commit index entries (immutable). What
 * a cache may still have to forget is a dropped project's entries (deleteWhere), and, in PostgreSQL's,
 * objects a garbage collection removed (delete). Bounded in entries instead when each counts one
 * (the linter's results, a node's principals of API keys).
 *
 * The order is a list of its own, oldest first, not the Map's order of insertion: a Map leaves a
 * hole for each deletion until it is rehashed, and evictions leave theirs at its front, so finding
 * the oldest entry by a walk from the front stepped over every hole left since the last rehash
 * (bench/lruCache.bench.ts: 38.5 µs a set in a full cache of 60,000). A hit moves its entry in the
 * list and leaves the Map as it is.
 */
interface Entry<K, V> {
  key: K;
  value: V;
  bytes: number;
  older: Entry<K, V> | null;
  newer: Entry<K, V> | null;
}

export class LruCache<K, V> {
  private readonly entries = new Map<K, Entry<K, V>>();
  private oldest: Entry<K, V> | null = null;
  private newest: Entry<K, V> | null = null;
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

  /** How many entries it holds. */
  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.oldest = this.newest = null;
    this.bytes = 0;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry !== this.newest) {
      this.unlink(entry);
      this.append(entry);
    }
    return entry.value;
  }

  /** Adds or replaces (a cache key may stand for part of a longer name). */
  set(key: K, value: V): void {
    const bytes = this.sizeOf(value);
    if (bytes > this.entryBytesMax) return;
    this.delete(key);
    const entry: Entry<K, V> = { key, value, bytes, older: null, newer: null };
    this.entries.set(key, entry);
    this.append(entry);
    this.bytes += bytes;
    while (this.bytes > this.bytesMax && this.oldest) this.remove(this.oldest);
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry) this.remove(entry);
  }

  /** Forgets every entry whose key `doomed` accepts (a walk over all of them: for rare events). */
  deleteWhere(doomed: (key: K) => boolean): void {
    for (const [key, entry] of this.entries) if (doomed(key)) this.remove(entry);
  }

  private remove(entry: Entry<K, V>): void {
    this.entries.delete(entry.key);
    this.unlink(entry);
    this.bytes -= entry.bytes;
  }

  private append(entry: Entry<K, V>): void {
    entry.older = this.newest;
    entry.newer = null;
    if (this.newest) this.newest.newer = entry;
    else this.oldest = entry;
    this.newest = entry;
  }

  private unlink(entry: Entry<K, V>): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.newest = entry.older;
    entry.older = entry.newer = null;
  }
}
