/**
 * The per-node caches of the PostgreSQL backend: objects (bodies with their annexes) and commit
 * index entries, by project and id, each bounded in bytes. Both are immutable once stored, so an
 * entry is never invalidated by a write on this node or another; a dropped project's entries are
 * forgotten (on this node; project numbers are not given out again, so another node's stale
 * entries of a dropped project are never asked for), and so are the ids a garbage collection on
 * this node removed. Another node may still hold an id a collection removed: its content is right,
 * and a write transaction checks every id it was answered as present against the database at its
 * commit (writeTx.ts), forgetting those that are gone.
 *
 * Entries are this cache's own: what goes in is a copy or a buffer no caller holds, and what comes
 * out is copied (bodies) or rebuilt (commit entries), so callers may change what they get.
 */
import type { ObjectType, Oid } from '../../git/oid.js';
import { LruCache } from '../lruCache.js';
import type { AnnexedObject, CommitInfo } from '../types.js';
import { idKey } from './statements.js';

/** Bytes counted per entry beyond its buffers: the key, the Map's node, the object. */
const ENTRY_OVERHEAD_BYTES = 96;

function cacheKey(project: number, oid: Oid): string {
  return `${project}:${idKey(oid)}`;
}

function keyOfProject(project: number): (key: string) => boolean {
  const prefix = `${project}:`;
  return (key) => key.startsWith(prefix);
}

export class ObjectCache {
  private readonly cache: LruCache<string, AnnexedObject>;

  /** `entryBytesMax`: larger objects are not cached (one would push out thousands of trees). */
  constructor(bytesMax: number, entryBytesMax: number) {
    this.cache = new LruCache(bytesMax, entryBytesMax, (object) => object.body.length + (object.annex?.length ?? 0) + ENTRY_OVERHEAD_BYTES);
  }

  get bytesUsed(): number {
    return this.cache.bytesUsed;
  }

  /** A copy of the cached object, or undefined. */
  get(project: number, oid: Oid): AnnexedObject | undefined {
    const hit = this.cache.get(cacheKey(project, oid));
    return hit && { type: hit.type, body: Buffer.from(hit.body), annex: hit.annex && Buffer.from(hit.annex) };
  }

  /** Whether the object is cached, without copying it. */
  has(project: number, oid: Oid): boolean {
    return this.cache.get(cacheKey(project, oid)) !== undefined;
  }

  size(project: number, oid: Oid): number | undefined {
    return this.cache.get(cacheKey(project, oid))?.body.length;
  }

  type(project: number, oid: Oid): ObjectType | undefined {
    return this.cache.get(cacheKey(project, oid))?.type;
  }

  /** Keeps `object` as it is: the caller hands it over and keeps no reference to its buffers. */
  adopt(project: number, oid: Oid, object: AnnexedObject): void {
    this.cache.set(cacheKey(project, oid), object);
  }

  forgetProject(project: number): void {
    this.cache.deleteWhere(keyOfProject(project));
  }

  forget(project: number, oids: readonly Oid[]): void {
    for (const oid of oids) this.cache.delete(cacheKey(project, oid));
  }
}

export class CommitCache {
  private readonly cache: LruCache<string, CommitInfo>;

  constructor(bytesMax: number) {
    this.cache = new LruCache(bytesMax, bytesMax, (info) => (1 + info.parents.length) * 20 + ENTRY_OVERHEAD_BYTES);
  }

  get(project: number, oid: Oid): CommitInfo | undefined {
    const hit = this.cache.get(cacheKey(project, oid));
    return hit && { tree: Buffer.from(hit.tree), parents: hit.parents.map((parent) => Buffer.from(parent)), commitTime: hit.commitTime, generation: hit.generation };
  }

  /** Keeps `info` as it is: the caller hands it over and keeps no reference to its buffers. */
  adopt(project: number, oid: Oid, info: CommitInfo): void {
    this.cache.set(cacheKey(project, oid), info);
  }

  forgetProject(project: number): void {
    this.cache.deleteWhere(keyOfProject(project));
  }

  forget(project: number, oids: readonly Oid[]): void {
    for (const oid of oids) this.cache.delete(cacheKey(project, oid));
  }
}
