/** git's strmap, kept for its iteration order (see GitStrMap). */
import { encodePath } from '../../git/pathBytes.js';

/** git's strhash(): 32-bit FNV-1 over the path's bytes. */
function gitStrHash(key: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encodePath(key)) hash = (Math.imul(hash, 0x01000193) ^ byte) >>> 0;
  return hash;
}

/** hashmap.c: 64 buckets at first, four times as many once more than 80% full. */
const GIT_HASHMAP_INITIAL_SIZE = 64;
const GIT_HASHMAP_RESIZE_FACTOR = 4;
const GIT_HASHMAP_LOAD_PERCENT = 80;

interface GitStrMapEntry<V> {
  key: string;
  hash: number;
  value: V;
  next: GitStrMapEntry<V> | null;
}

/**
 * A string map that iterates in the order git's strmap (hashmap.c with strhash) does: by bucket,
 * newest first within a bucket, with git's growth and rehash. merge-ort walks some maps in that
 * order, and the order decides some ties.
 */
export class GitStrMap<V> {
  private table: Array<GitStrMapEntry<V> | null> = new Array(GIT_HASHMAP_INITIAL_SIZE).fill(null);
  private count = 0;

  private growAt(): number {
    return Math.floor((this.table.length * GIT_HASHMAP_LOAD_PERCENT) / 100);
  }

  private find(key: string, hash: number): GitStrMapEntry<V> | null {
    for (let entry = this.table[hash & (this.table.length - 1)]; entry; entry = entry.next) {
      if (entry.hash === hash && entry.key === key) return entry;
    }
    return null;
  }

  get(key: string): V | undefined {
    return this.find(key, gitStrHash(key))?.value;
  }

  set(key: string, value: V): void {
    const hash = gitStrHash(key);
    const existing = this.find(key, hash);
    if (existing) {
      existing.value = value;
      return;
    }
    const bucket = hash & (this.table.length - 1);
    this.table[bucket] = { key, hash, value, next: this.table[bucket] };
    this.count++;
    if (this.count > this.growAt()) this.rehash(this.table.length * GIT_HASHMAP_RESIZE_FACTOR);
  }

  delete(key: string): void {
    const hash = gitStrHash(key);
    const bucket = hash & (this.table.length - 1);
    let previous: GitStrMapEntry<V> | null = null;
    for (let entry = this.table[bucket]; entry; previous = entry, entry = entry.next) {
      if (entry.hash === hash && entry.key === key) {
        if (previous) previous.next = entry.next;
        else this.table[bucket] = entry.next;
        this.count--;
        return;
      }
    }
  }

  private rehash(size: number): void {
    const old = this.table;
    this.table = new Array(size).fill(null);
    for (const head of old) {
      for (let entry = head; entry; ) {
        const next = entry.next;
        const bucket = entry.hash & (size - 1);
        entry.next = this.table[bucket];
        this.table[bucket] = entry;
        entry = next;
      }
    }
  }

  entries(): Array<[string, V]> {
    const out: Array<[string, V]> = [];
    for (const head of this.table) for (let entry = head; entry; entry = entry.next) out.push([entry.key, entry.value]);
    return out;
  }
}
