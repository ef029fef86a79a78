/**
 * The delta search of git's pack-objects (Documentation/technical/pack-heuristics.txt; in
 * builtin/pack-objects.c `type_size_sort`, `find_deltas` and `try_delta`; `pack_name_hash` in
 * pack-objects.h), described and written anew, for objects that reach the deflate cache with no
 * base named by their writer, or whose named base gave no delta worth keeping.
 *
 * git sorts every object of a pack by type, then by the hash of its path's last characters
 * (src/git/nameHash.ts: files of one name, or one extension, sort together), then by size, largest first,
 * and tries each against the `window` objects before it, keeping the smallest delta. We see the
 * objects a few hundred at a time, as they are written, so the window spans batches: the objects
 * searched lately stay in a pool per project and type, sorted git's way, and an object is tried
 * against its `window` nearest neighbours in that order (those with the same name hash and a
 * similar size first). The pool is bounded in bytes (bodies and the indexes built of them) and in
 * entries, and forgets the least recently useful first; git's window memory limit does the same.
 *
 * git's rules for a try, kept as they are: a delta must be under half the target (less the id's
 * size), scaled down for bases deep in their chain, so shallower bases win; a base already at the
 * depth limit is not tried; nor one whose size differs from the target's by more than the delta
 * may be, or more than 32 times the target; a second delta of equal size wins only when shallower.
 * Each object makes at most `window` tries, each costing about its own size (createDelta gives up
 * once the delta would be too large) plus, once per base, indexing the base; objects larger than
 * `objectBytesMax` are neither tried nor kept, and one call scans at most `scanBytesMax` bytes, so
 * the work is linear in what was written, whatever its shape.
 */
import { deflateSync } from 'node:zlib';
import { createDeltaWithIndex, DeltaIndex } from './delta.js';
import type { ObjectType } from './oid.js';
import { deltaBytesMaxOf, DELTA_TARGET_BYTES_MIN } from './packForm.js';

/** Objects each object is tried against: git's default pack.window. */
export const DELTA_WINDOW_OBJECTS = 10;
/** Bytes of bodies and their indexes the pool keeps, all projects together. */
export const DELTA_WINDOW_BYTES_MAX = 16 * 1024 * 1024;
/** Objects the pool keeps at most (a pool of small trees stays quick to insert into). */
export const DELTA_WINDOW_ENTRIES_MAX = 4096;
/** Objects larger than this are not searched nor kept as bases (their named base, if any, is still tried). */
export const DELTA_WINDOW_OBJECT_BYTES_MAX = 2 * 1024 * 1024;
/** Bytes one call may scan (targets tried and bases indexed); past it the rest are deflated whole. */
export const DELTA_WINDOW_SCAN_BYTES_MAX = 256 * 1024 * 1024;
/** git's try_delta: a target this many times smaller than the base is not tried. */
const BASE_TO_TARGET_RATIO_MAX = 32;

/** WindowObject.named.depth of a base given earlier in the same formsOf call. */
export const NAMED_IN_CALL = -1;

/** git's object type numbers: the sort puts higher ones first (tags, blobs, trees, commits). */
const TYPE_ORDER: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

/** One object to give a pack-ready form. */
export interface WindowObject {
  project: number;
  oid: Uint8Array;
  type: ObjectType;
  /** packNameHash (src/git/nameHash.ts) of its path; 0 when unknown. */
  nameHash: number;
  body: Uint8Array;
  /**
   * The base its writer named (the version it replaced), tried first; depth is its form's, or
   * NAMED_IN_CALL when the base is one of the objects of the same formsOf call, before it (its form
   * is made there: a chain of versions written in a row gets its forms in one call).
   */
  named: { oid: Uint8Array; body: Uint8Array; depth: number } | null;
  /** Deflate it whole without a search (a retry after the store refused its delta). */
  whole: boolean;
}

export interface WindowForm {
  /** The zlib stream of the body, or of the delta when `delta` is set. */
  deflated: Uint8Array;
  delta: { base: Uint8Array; bytes: number; depth: number } | null;
}

type Sorted = Pick<WindowObject, 'project' | 'type' | 'nameHash' | 'body'>;

/** git's pack order for a delta search, by project: type, name hash and size, each largest first. */
export function compareForWindow(a: Sorted, b: Sorted): number {
  return a.project - b.project || TYPE_ORDER[b.type] - TYPE_ORDER[a.type] || b.nameHash - a.nameHash || b.body.length - a.body.length;
}

/** An object kept in the pool as a base for the objects after it. */
interface Candidate {
  key: string;
  poolKey: string;
  oid: Uint8Array;
  nameHash: number;
  size: number;
  /** Order of arrival: among equals, the newest sorts first (git: "newest first"). */
  arrival: number;
  body: Uint8Array;
  depth: number;
  index: DeltaIndex | null;
  bytes: number;
}

export interface DeltaWindowOptions {
  /** Longest chain a delta may end (git's pack.depth). */
  depthMax: number;
  /** zlib level of the forms. */
  level: number;
  window?: number;
  bytesMax?: number;
  entriesMax?: number;
  objectBytesMax?: number;
  scanBytesMax?: number;
}

const hexOf = (oid: Uint8Array) => Buffer.from(oid.buffer, oid.byteOffset, oid.byteLength).toString('hex');

/** A copy that owns its memory: a view into a larger buffer would keep all of it alive in the pool. */
const owned = (bytes: Uint8Array): Uint8Array => (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice());

export class DeltaWindow {
  private readonly window: number;
  private readonly bytesMax: number;
  private readonly entriesMax: number;
  private readonly objectBytesMax: number;
  private readonly scanBytesMax: number;
  /** Per project and type, sorted as compareForWindow sorts (name hash, size, then newest first). */
  private readonly pools = new Map<string, Candidate[]>();
  /** Every candidate by project and id, least recently useful first. */
  private readonly recency = new Map<string, Candidate>();
  private arrivals = 0;
  private keptBytes = 0;
  /** Deltas tried and bytes scanned since the window was made (for tests and benchmarks). */
  readonly counts = { tries: 0, scannedBytes: 0, searched: 0, found: 0 };

  constructor(private readonly options: DeltaWindowOptions) {
    this.window = options.window ?? DELTA_WINDOW_OBJECTS;
    this.bytesMax = options.bytesMax ?? DELTA_WINDOW_BYTES_MAX;
    this.entriesMax = options.entriesMax ?? DELTA_WINDOW_ENTRIES_MAX;
    this.objectBytesMax = options.objectBytesMax ?? DELTA_WINDOW_OBJECT_BYTES_MAX;
    this.scanBytesMax = options.scanBytesMax ?? DELTA_WINDOW_SCAN_BYTES_MAX;
  }

  /** Bytes of bodies and indexes the pool holds now. */
  get bytes(): number {
    return this.keptBytes;
  }

  get entries(): number {
    return this.recency.size;
  }

  /**
   * Forms of `objects`, in the order given (the caller sorts them with compareForWindow and stores
   * the forms in this order, so a base found among them has its form before the delta on it).
   */
  formsOf(objects: readonly WindowObject[]): WindowForm[] {
    let scanned = 0;
    /** The chain depth of each form made in this call, by project and id (NAMED_IN_CALL bases). */
    const made = new Map<string, number>();
    return objects.map((object) => {
      let named = object.named;
      if (named && named.depth === NAMED_IN_CALL) {
        // A base that comes later (objects naming each other) is no base: the object is searched.
        const depth = made.get(`${object.project}/${hexOf(named.oid)}`);
        named = depth === undefined ? null : { ...named, depth };
      }
      const form = this.formOf(named === object.named ? object : { ...object, named }, () => scanned < this.scanBytesMax, (bytes) => {
        scanned += bytes;
        this.counts.scannedBytes += bytes;
      });
      made.set(`${object.project}/${hexOf(object.oid)}`, form.delta ? form.delta.depth : 0);
      this.keep(object, form);
      return form;
    });
  }

  /** Drops these objects from the pool (the store refused their forms: they are not bases). */
  forget(objects: ReadonlyArray<{ project: number; oid: Uint8Array }>): void {
    for (const { project, oid } of objects) {
      const candidate = this.recency.get(`${project}/${hexOf(oid)}`);
      if (candidate) this.evict(candidate);
    }
  }

  private formOf(object: WindowObject, mayScan: () => boolean, scan: (bytes: number) => void): WindowForm {
    const { body, named } = object;
    const level = this.options.level;
    if (named && body.length >= DELTA_TARGET_BYTES_MIN && named.body.length > 0 && named.depth < this.options.depthMax) {
      const delta = createDeltaWithIndex(new DeltaIndex(named.body), body, deltaBytesMaxOf(body.length));
      if (delta) return { deflated: deflateSync(delta, { level }), delta: { base: named.oid, bytes: delta.length, depth: named.depth + 1 } };
    }
    const searchable = !object.whole && body.length >= DELTA_TARGET_BYTES_MIN && body.length <= this.objectBytesMax && mayScan();
    const found = searchable ? this.search(object, scan) : null;
    if (found) return { deflated: deflateSync(found.delta, { level }), delta: { base: found.base.oid, bytes: found.delta.length, depth: found.base.depth + 1 } };
    return { deflated: deflateSync(body, { level }), delta: null };
  }

  /** The smallest delta on one of the object's nearest neighbours in its pool, git's try_delta rules. */
  private search(object: WindowObject, scan: (bytes: number) => void): { base: Candidate; delta: Buffer } | null {
    const pool = this.pools.get(`${object.project}/${object.type}`);
    if (!pool || pool.length === 0) return null;
    this.counts.searched++;
    const depthMax = this.options.depthMax;
    const target = object.body;
    const targetBytes = target.length;
    let best: { base: Candidate; delta: Buffer } | null = null;
    for (const base of this.neighbours(pool, object.nameHash, targetBytes)) {
      if (base.depth >= depthMax) continue;
      // The bound a delta must meet, and how it shrinks for deeper bases (git's max_size).
      const [bound, boundDepth] = best ? [best.delta.length, best.base.depth + 1] : [deltaBytesMaxOf(targetBytes), 1];
      const deltaBytesMax = Math.floor((bound * (depthMax - base.depth)) / (depthMax - boundDepth + 1));
      if (deltaBytesMax <= 0) continue;
      const sizeDifference = base.size < targetBytes ? targetBytes - base.size : 0;
      if (sizeDifference >= deltaBytesMax || targetBytes < base.size / BASE_TO_TARGET_RATIO_MAX) continue;
      if (!base.index) {
        base.index = new DeltaIndex(base.body);
        const grown = base.index.bytes;
        base.bytes += grown;
        this.keptBytes += grown;
        scan(base.size);
      }
      this.counts.tries++;
      scan(targetBytes);
      const delta = createDeltaWithIndex(base.index, target, deltaBytesMax);
      if (!delta) continue;
      // An equal delta wins only on a shallower base.
      if (best && delta.length === best.delta.length && base.depth + 1 >= best.base.depth + 1) continue;
      best = { base, delta };
    }
    if (best) {
      this.counts.found++;
      // Kept longer: the base that served one object is the likeliest to serve the next (git moves it up its window).
      this.touch(best.base);
    }
    return best;
  }

  /** Up to `window` candidates nearest to where the object sorts in its pool, alternating sides. */
  private neighbours(pool: Candidate[], nameHash: number, size: number): Candidate[] {
    const at = this.insertionPoint(pool, nameHash, size, Number.MAX_SAFE_INTEGER);
    const out: Candidate[] = [];
    for (let before = at - 1, after = at; out.length < this.window && (before >= 0 || after < pool.length); ) {
      if (before >= 0) out.push(pool[before--]);
      if (out.length < this.window && after < pool.length) out.push(pool[after++]);
    }
    return out;
  }

  /** Where a candidate of this name hash, size and arrival goes in a sorted pool (binary search). */
  private insertionPoint(pool: Candidate[], nameHash: number, size: number, arrival: number): number {
    let low = 0;
    let high = pool.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const entry = pool[middle];
      const before = entry.nameHash !== nameHash ? entry.nameHash > nameHash : entry.size !== size ? entry.size > size : entry.arrival > arrival;
      if (before) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Keeps an object as a base for later ones, when it has a form a delta may name and room below the depth limit. */
  private keep(object: WindowObject, form: WindowForm): void {
    const depth = form.delta ? form.delta.depth : 0;
    const size = object.body.length;
    if (size < DELTA_TARGET_BYTES_MIN || size > this.objectBytesMax || depth >= this.options.depthMax) return;
    const key = `${object.project}/${hexOf(object.oid)}`;
    if (this.recency.has(key)) return;
    const poolKey = `${object.project}/${object.type}`;
    let pool = this.pools.get(poolKey);
    if (!pool) this.pools.set(poolKey, (pool = []));
    const body = owned(object.body);
    const candidate: Candidate = { key, poolKey, oid: owned(object.oid), nameHash: object.nameHash, size, arrival: ++this.arrivals, body, depth, index: null, bytes: body.length };
    pool.splice(this.insertionPoint(pool, candidate.nameHash, size, candidate.arrival), 0, candidate);
    this.recency.set(key, candidate);
    this.keptBytes += candidate.bytes;
    for (const oldest of this.recency.values()) {
      if (this.keptBytes <= this.bytesMax && this.recency.size <= this.entriesMax) break;
      this.evict(oldest);
    }
  }

  private touch(candidate: Candidate): void {
    this.recency.delete(candidate.key);
    this.recency.set(candidate.key, candidate);
  }

  private evict(candidate: Candidate): void {
    this.recency.delete(candidate.key);
    this.keptBytes -= candidate.bytes;
    const pool = this.pools.get(candidate.poolKey)!;
    // Arrivals are unique, so the search lands on the candidate itself.
    pool.splice(this.insertionPoint(pool, candidate.nameHash, candidate.size, candidate.arrival), 1);
    if (pool.length === 0) this.pools.delete(candidate.poolKey);
  }
}

/** The deflate cache's worker loads this module alone: the one-pair form of upload-pack's thin deltas is here too. */
export { packForm } from './packForm.js';
