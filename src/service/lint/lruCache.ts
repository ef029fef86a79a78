/**
 * A least-recently-used cache bounded in entries. A Map keeps insertion order, so re-inserting on
 * every hit moves the entry to the young end and the oldest is always first.
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly entriesMax: number) {
    if (!Number.isSafeInteger(entriesMax) || entriesMax < 1) throw new RangeError('entriesMax must be a positive integer');
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.entriesMax) this.entries.delete(this.entries.keys().next().value as K);
  }

  clear(): void {
    this.entries.clear();
  }
}
