/**
 * The raw objects of small writes, appended to a log in commit order before they join `objects`.
 *
 * Object keys are ids, so every new object lands on a B-tree page of its own: a merge's 83 new trees
 * dirtied some 83 leaf pages, and the commit that writes and fdatasyncs them scattered took 6-7 ms
 * where the same values under increasing keys took 1-1.5 ms (README "Recent objects"). So a
 * write's first small objects go to `recent`, keyed by a sequence number that only grows (each
 * append lands on the log's last page), and the store moves the log into `objects` in batches
 * while writes pause (LmdbStore.moveRecentWhenIdle), where nobody waits for those pages.
 *
 * A log entry's value is the object's `objects` key followed by its `objects` value; the key of
 * sequence number 0 holds the last number given, so numbers only grow across moves, processes and
 * threads, and entries commit in the order of their numbers (LMDB has one writer). Each store
 * instance keeps an index of the log in memory (key -> sequence number), filled by its own appends
 * and by reading entries it has not seen (at open, and when a read misses everywhere: another
 * thread's store may have appended). An index entry may be stale (its append was rolled back, or
 * the entry has been moved since): every read checks that the entry under the sequence number
 * holds the key asked for, and otherwise reads on in `objects`, where a moved entry is.
 */
import type { Database } from 'lmdb';

const SEQ_BYTES = 8;

/** Unless the index names it, an object is not in the log; moved or rolled-back entries leave stale names behind until forgotten. */
export class RecentObjects {
  /** The `objects` key (latin1) of each entry this instance knows of, and its sequence number. */
  private readonly index = new Map<string, number>();
  /** The highest sequence number this instance has read in the log (its own appends are read again). */
  private seen = 0;
  /** Index entries below this sequence number have been pruned. */
  private prunedBelow = 0;
  /** Walks of the log for entries this instance had not seen (tests). */
  walks = 0;

  constructor(
    private readonly log: Database<Buffer, Buffer>,
    private readonly keyBytes: number,
  ) {
    this.catchUp();
  }

  /** Entries the index names (some may be stale). */
  get size(): number {
    return this.index.size;
  }

  /**
   * The `objects` value stored under `key` in the log, if it is there. `fast`: a view into
   * lmdb-js's shared buffer, valid until the next read (getBinaryFast); else a copy of its own.
   */
  get(key: Buffer, fast: boolean): Buffer | undefined {
    if (this.index.size === 0) return undefined;
    const seq = this.index.get(key.toString('latin1'));
    if (seq === undefined) return undefined;
    const entry = fast ? this.log.getBinaryFast(seqKey(seq)) : this.log.getBinary(seqKey(seq));
    if (!entry || entry.length < this.keyBytes || entry.compare(key, 0, this.keyBytes, 0, this.keyBytes) !== 0) return undefined;
    return entry.subarray(this.keyBytes);
  }

  has(key: Buffer): boolean {
    return this.get(key, true) !== undefined;
  }

  /**
   * Reads the entries appended since this instance last looked (by another thread's or process's
   * store); true when there were any, so a read that missed everywhere may look again. The last
   * number given (number 0) tells whether there are any in one read, so a read of an object that
   * is nowhere costs no walk of the log.
   */
  catchUp(): boolean {
    const last = this.log.getBinaryFast(LAST_KEY);
    const lastGiven = last ? last.readUIntBE(2, 6) : 0;
    if (lastGiven <= this.seen) return false;
    this.walks++;
    this.prune();
    let found = false;
    for (const { key, value } of this.log.getRange({ start: seqKey(this.seen + 1) })) {
      if ((value as Buffer).length < this.keyBytes) continue;
      const seq = (key as Buffer).readUIntBE(2, 6);
      this.index.set((value as Buffer).toString('latin1', 0, this.keyBytes), seq);
      if (seq > this.seen) this.seen = seq;
      found = true;
    }
    // Numbers up to the last given that the log no longer holds were moved (a rolled-back append
    // takes the last number back with it), and no number is given twice: seen passes them, or
    // every read that misses would walk the log again once a move emptied it (40,000 walks in a seed).
    if (lastGiven > this.seen) this.seen = lastGiven;
    return found;
  }

  /**
   * Drops the index entries below the log's first entry: nothing is ever put below it, so those were
   * moved or removed (by another opener, whose commits this instance does not hear of). An empty log
   * proves nothing: this instance's own appends may not have committed yet.
   */
  private prune(): void {
    let first = 0;
    for (const key of this.log.getKeys({ start: seqKey(1), limit: 1 })) first = (key as Buffer).readUIntBE(2, 6);
    if (first <= this.prunedBelow) return;
    for (const [name, seq] of this.index) if (seq < first) this.index.delete(name);
    this.prunedBelow = first;
  }

  /**
   * Appends `value` under `key`, inside a write transaction that found the key in neither `objects`
   * nor the log, under the number after the last one given (kept under number 0, in the same
   * transaction: a rolled-back append gives its number back, which nobody has read).
   */
  append(key: Buffer, value: Buffer): [string, number] {
    const last = this.log.getBinary(LAST_KEY);
    const seq = (last ? last.readUIntBE(2, 6) : 0) + 1;
    this.log.putSync(LAST_KEY, seqKey(seq));
    const entry = Buffer.allocUnsafe(this.keyBytes + value.length);
    key.copy(entry, 0, 0, this.keyBytes);
    value.copy(entry, this.keyBytes);
    this.log.putSync(seqKey(seq), entry);
    const name = key.toString('latin1', 0, this.keyBytes);
    this.index.set(name, seq);
    return [name, seq];
  }

  /**
   * Moves the oldest `limit` entries whose key passes `take` into `put` (which stores an `objects`
   * value unless one is there), inside a write transaction; returns what to forget once it has
   * committed. `take` defaults to every entry.
   */
  move(limit: number, put: (key: Buffer, value: Buffer) => void, take?: (key: Buffer) => boolean): Array<[string, number]> {
    const moved: Array<{ seq: Buffer; key: Buffer; value: Buffer }> = [];
    for (const { key, value } of this.log.getRange({ start: seqKey(1) })) {
      const entry = value as Buffer;
      const objectKey = entry.subarray(0, this.keyBytes);
      if (take && !take(objectKey)) continue;
      moved.push({ seq: Buffer.from(key as Buffer), key: Buffer.from(objectKey), value: Buffer.from(entry.subarray(this.keyBytes)) });
      if (moved.length >= limit) break;
    }
    // Seen inside a write transaction, an empty log is the truth: whatever the index names is stale.
    if (!take && moved.length === 0) this.index.clear();
    for (const { seq, key, value } of moved.sort((a, b) => Buffer.compare(a.key, b.key))) {
      put(key, value);
      this.log.removeSync(seq);
    }
    return moved.map(({ seq, key }) => [key.toString('latin1'), seq.readUIntBE(2, 6)]);
  }

  /** The highest sequence number this instance has read (a write notes it before it starts). */
  get lastSeen(): number {
    return this.seen;
  }

  /**
   * A write rolled back: its appends are gone, and the numbers it gave, or read inside it, will be
   * given again, so reading goes back to what was seen before it (`seenBefore`).
   */
  rolledBack(appended: ReadonlyArray<[string, number]>, seenBefore: number): void {
    this.forget(appended);
    if (seenBefore < this.seen) this.seen = seenBefore;
  }

  /** Drops index entries whose log entries a committed transaction moved or removed, or a rolled-back one appended. */
  forget(moved: ReadonlyArray<[string, number]>): void {
    for (const [key, seq] of moved) if (this.index.get(key) === seq) this.index.delete(key);
  }

  /** The keys in the log that start with `prefix` (copies), each checked against its entry. */
  keysStartingWith(prefix: Buffer): Buffer[] {
    const start = prefix.toString('latin1');
    return this.sortedKeys((name) => name.startsWith(start));
  }

  /**
   * The keys in the log whose latin1 form passes `take` (copies, each checked against its entry),
   * in key order. The log is short (RECENT_MOVE_AT), so its index is read whole.
   */
  sortedKeys(take: (name: string) => boolean): Buffer[] {
    this.catchUp();
    const out: Buffer[] = [];
    for (const name of this.index.keys()) {
      if (!take(name)) continue;
      const key = Buffer.from(name, 'latin1');
      if (this.has(key)) out.push(key);
    }
    return out.sort(Buffer.compare);
  }

  /** The test `move` takes for one project's entries: their keys start with `prefix`. */
  static inProject(prefix: Buffer): (key: Buffer) => boolean {
    return (key) => key.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
  }

  /** Removes the entries of `keys` (latin1) inside a write transaction; returns what to forget once it has committed. */
  remove(keys: ReadonlySet<string>): Array<[string, number]> {
    if (keys.size === 0) return [];
    return this.move(Infinity, () => {}, (key) => keys.has(key.toString('latin1')));
  }
}

/** Sequence number 0: its value is the last number given. */
const LAST_KEY = Buffer.alloc(SEQ_BYTES);

/** Sequence numbers are kept below 2^48 (a million appends a second for eight years), written as 8 bytes so keys sort by number. */
function seqKey(seq: number): Buffer {
  const key = Buffer.alloc(SEQ_BYTES);
  key.writeUIntBE(seq, 2, 6);
  return key;
}
