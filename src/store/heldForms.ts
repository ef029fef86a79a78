/**
 * Forms a git seed (or a push, until its check passes) stores in several writes (its trees and blobs through putFormsAlone, its commits'
 * pack entries beside them) whose `packed` pointers are held back (LmdbStore.holdForms) and put at
 * the end, sorted by key, in writes of their own (LmdbAsyncStore.settleForms).
 * A seed's ids are random, so each of its writes put pointers all over the project's keys: every
 * write copied nearly every leaf page of `packed` (leaving them two thirds full), and the pages it
 * freed could serve only the writes after the next one, so the data file grew by that copy each
 * time. Put in key order into the project's empty range, each pointer lands at the end of a page,
 * which LMDB then leaves full, and a write copies only the pages it appends to.
 */
import { sortByOid } from '../git/oid.js';
import { OidTable } from '../git/oidTable.js';

/** Bytes before the id in a project's key (lmdb.ts). */
const PROJECT_PREFIX_BYTES = 4;

/** A form a write shelved with its pointer held back: its `packed` key and value, and its chain depth. */
export interface HeldForm {
  key: Buffer;
  value: Buffer;
  depth: number;
  /** A delta's base, as a `packed` key (the project's prefix, then the id); null for a whole stream. */
  base: Buffer | null;
}

/**
 * A seed's commit, stored whole and indexed with its raw copy and its commit index entry held back
 * too (LmdbStore.holdForms): its `objects` key, its `objects` value and its `commits` value.
 */
export interface HeldCommit {
  key: Buffer;
  value: Buffer;
  info: Buffer;
}

export class HeldForms {
  /** Each held form's chain depth (0 for a whole stream), by id. */
  readonly depths = new OidTable();
  /**
   * Shelves written for the held forms (their `shelves` keys), kept by a hold of a project that
   * others write (`projectEmpty` false): dropped with the hold when its forms are let go.
   */
  readonly shelves: Buffer[] = [];
  /**
   * Keys a push's settle did not put (another writer's form was there, or the form's base was
   * not put): a delta on one of them is not put either, as its recorded depth would not be its
   * chain's.
   */
  readonly notPut = new OidTable();
  /**
   * Of those deltas not put for their base, how many no other write stored meanwhile: their objects
   * are missing after the settle (endFormHold answers false, and the push stores them again).
   */
  missing = 0;

  /**
   * `projectEmpty`: the hold is a seed's, of a number nobody else writes, so a form is absent
   * unless held. Otherwise (a push's, LmdbStore.beginPrivateHold) the project's tables are asked
   * too, and the pointers go in only where none is (another writer may put the same object meanwhile).
   */
  constructor(readonly projectEmpty = true) {}

  /**
   * A seed's commits (projectEmpty holds only), by `objects` key (latin1): held like the pointers,
   * and put in key order with them. Their ids are random too, and put as a seed stored them (128 to a
   * write, parents first), they left the pages of `objects` and `commits` two thirds full and copied
   * them at every write: a seed of express's 6,158 commits kept its 1.9 MB of raw commits on 3.3 MB
   * of pages. Reads find them here until they are put (LmdbProjectTx.rawValue, getCommitInfo).
   * Put when the seed settles, after the pointers, a commit whose form is in by then goes in as
   * that form alone: its raw copy is left out (LmdbAsyncStore.settleForms).
   */
  private readonly commits = new Map<string, HeldCommit>();
  /** Held commits not yet given out by drainCommits, and their bytes. */
  private commitsToPut: HeldCommit[] = [];
  commitBytes = 0;

  /** A held commit, by `objects` key. */
  commit(key: Buffer): HeldCommit | undefined {
    return this.commits.size === 0 ? undefined : this.commits.get(key.toString('latin1'));
  }

  get commitCount(): number {
    return this.commitsToPut.length;
  }

  /** Takes the commits a committed write held back (those held already are kept). */
  takeCommits(added: readonly HeldCommit[]): void {
    for (const commit of added) {
      const name = commit.key.toString('latin1');
      if (this.commits.has(name)) continue;
      this.commits.set(name, commit);
      this.commitsToPut.push(commit);
      this.commitBytes += commit.value.length + commit.info.length;
    }
  }

  /**
   * The held commits in key order, in runs of about `runLength` entries or `runBytes` bytes, once.
   * They stay readable here until forgetCommits(run) once a run is put. A push's hold (not
   * `projectEmpty`) gives them in the order held, its parents first: put a run at a time in a
   * project others read, every commit put has its parents there, even if the writes after it
   * never happen (a history the store holds is complete, src/repo/wire/receivePack.ts).
   */
  *drainCommits(runLength: number, runBytes: number): Generator<HeldCommit[]> {
    const entries = this.commitsToPut;
    this.commitsToPut = [];
    this.commitBytes = 0;
    const bytesOf = (entry: HeldCommit) => entry.value.length + entry.info.length;
    yield* inRuns(this.projectEmpty ? bucketsInKeyOrder(entries) : entries.map((entry) => [entry]), runLength, runBytes, bytesOf);
  }

  /** Commits that are put now: reads find them in the tables. */
  forgetCommits(run: readonly HeldCommit[]): void {
    for (const commit of run) this.commits.delete(commit.key.toString('latin1'));
  }

  /** `packed` keys and values (a shelf pointer, or a form of its own), chain depths and bases, taken and not yet bucketed. */
  private entries: HeldForm[] = [];
  /**
   * The entries bucketed: by group (a push's by chain depth; a seed's all in one), then by the id's
   * first byte (a project's keys share their prefix). Each bucket is its part sorted by key, then
   * its part taken since it was sorted.
   */
  private groups: Array<Array<HeldBucket | undefined> | undefined> = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Takes what a committed write held back. */
  take(added: readonly HeldForm[]): void {
    for (const entry of added) {
      if (this.depths.add(entry.key, PROJECT_PREFIX_BYTES, entry.depth)) {
        this.entries.push(entry);
        this.count++;
      }
    }
  }

  /**
   * Sorts what was taken so far, a bucket at a time (a step between two buckets: the caller gives the
   * event loop a turn there), so a drain after it sorts only what is taken later: a push sorts its
   * pointers while its pack is checked, when the request thread is idle, rather than after the
   * verdict. A bucket already sorted is sorted again only once its new part is an eighth of it, so
   * preparing after every take would still cost O(n log n) in all.
   */
  *prepare(): Generator<void> {
    this.bucketEntries();
    for (const buckets of this.groups) {
      if (!buckets) continue;
      for (const bucket of buckets) {
        if (!bucket || bucket.fresh.length === 0 || bucket.fresh.length * 8 < bucket.sorted.length) continue;
        sortBucket(bucket);
        yield;
      }
    }
  }

  /**
   * The entries in key order, in runs of about `runLength`, once: the list is empty afterwards (the
   * depths stay). Sorted a bucket at a time, so the caller can give the event loop a turn between
   * runs (sortByOid). A push's hold (not `projectEmpty`) gives them by chain depth first, then in
   * key order: put a run at a time in a project others read, every pointer put names a base put
   * before it (or stored), even if the writes after it never happen.
   */
  *drain(runLength: number): Generator<HeldForm[]> {
    this.bucketEntries();
    const groups = this.groups;
    this.groups = [];
    this.count = 0;
    yield* inRuns(sortedBuckets(groups), runLength);
  }

  private bucketEntries(): void {
    for (const entry of this.entries) {
      const buckets = (this.groups[this.projectEmpty ? 0 : entry.depth] ??= new Array(256));
      (buckets[entry.key[PROJECT_PREFIX_BYTES]] ??= { sorted: [], fresh: [] }).fresh.push(entry);
    }
    this.entries = [];
  }
}

/** A bucket of held pointers: `sorted` in key order, `fresh` taken since. */
interface HeldBucket {
  sorted: HeldForm[];
  fresh: HeldForm[];
}

/** Sorts a bucket's fresh part and merges it into its sorted part. */
function sortBucket(bucket: HeldBucket): void {
  if (bucket.fresh.length === 0) return;
  const fresh = sortByOid(bucket.fresh, (held) => held.key, PROJECT_PREFIX_BYTES);
  bucket.fresh = [];
  const sorted = bucket.sorted;
  if (sorted.length === 0) {
    bucket.sorted = fresh;
    return;
  }
  // Keys are unique (take() adds each id once) and share the project's prefix.
  const merged: HeldForm[] = new Array(sorted.length + fresh.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < sorted.length && j < fresh.length) merged[k++] = Buffer.compare(sorted[i].key, fresh[j].key) < 0 ? sorted[i++] : fresh[j++];
  while (i < sorted.length) merged[k++] = sorted[i++];
  while (j < fresh.length) merged[k++] = fresh[j++];
  bucket.sorted = merged;
}

/** Each group's buckets in order, each sorted as it is reached (a bucket at a time). */
function* sortedBuckets(groups: ReadonlyArray<ReadonlyArray<HeldBucket | undefined> | undefined>): Generator<HeldForm[]> {
  for (const buckets of groups) {
    if (!buckets) continue;
    for (const bucket of buckets) {
      if (!bucket) continue;
      sortBucket(bucket);
      yield bucket.sorted;
    }
  }
}

/** `entries` in key order, bucketed on the id's first byte (a project's keys share their prefix), each bucket sorted as it is reached. */
function* bucketsInKeyOrder<T extends { key: Buffer }>(entries: readonly T[]): Generator<T[]> {
  const buckets: T[][] = Array.from({ length: 256 }, () => []);
  for (const entry of entries) buckets[entry.key[PROJECT_PREFIX_BYTES]].push(entry);
  for (const bucket of buckets) yield sortByOid(bucket, (held) => held.key, PROJECT_PREFIX_BYTES);
}

/**
 * The buckets' entries, in order, in runs: a run ends after the bucket that takes it to `runLength`
 * entries or `runBytes` bytes (`bytesOf` each), so a bucket is never split. Lazy: a bucket is
 * reached (and sorted, by the generators above) only when the run before it has been taken.
 */
function* inRuns<T>(buckets: Iterable<readonly T[]>, runLength: number, runBytes = Infinity, bytesOf: (entry: T) => number = () => 0): Generator<T[]> {
  let run: T[] = [];
  let bytes = 0;
  for (const bucket of buckets) {
    for (const entry of bucket) {
      run.push(entry);
      bytes += bytesOf(entry);
    }
    if (run.length >= runLength || bytes >= runBytes) {
      yield run;
      run = [];
      bytes = 0;
    }
  }
  if (run.length > 0) yield run;
}
