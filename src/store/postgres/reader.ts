/**
 * Reads of the PostgreSQL backend outside write transactions: each call is one statement (or one
 * per IDS_PER_STATEMENT_MAX ids) on the read pool, in its own snapshot, so a reader sees every
 * committed write whole and never part of one. Objects and commit index entries are answered from
 * the node's caches first (immutable; caches.ts).
 */
import type postgres from 'postgres';
import type { ObjectType, Oid } from '../../git/oid.js';
import type { AsyncStoreReadTx, CollectionReads, PackFormReads, ProjectReads } from '../asyncTypes.js';
import type { AnnexedObject, CollectionState, CommitInfo, DeflatedObject, ListedEntry, StoredEntry, StoredObject, WorkingTreeState } from '../types.js';
import type { CommitCache, ObjectCache } from './caches.js';
import { decodeRecord, isIdPrefix, oidPrefixRange, typeFromCode } from './codec.js';
import { isStale, storeError } from './errors.js';
import { deflatedWithinBySizes } from '../deflatedWithin.js';
import {
  idKey,
  selectCollection,
  selectCommitInfos,
  selectCommitObjects,
  selectForms,
  selectObjectIdsInRange,
  selectObjects,
  selectObjectSizes,
  selectObjectTypes,
  selectRecord,
  selectRecords,
  selectRef,
  selectRefs,
  selectJournal,
  selectStored,
  selectStoredEntries,
  selectVersion,
  selectWorkingTree,
  selectWorkingTrees,
  type RecordRange,
} from './statements.js';

/** What reads and writes of one store share. */
export interface StoreContext {
  /** The pool reads run on (write transactions have connections of their own: store.ts). */
  readonly reads: postgres.Sql;
  readonly writes: postgres.Sql;
  readonly objects: ObjectCache;
  readonly commits: CommitCache;
  /**
   * Projects whose last write on this node found a collection running: their writes wait for the
   * collection's row before sending the rest (writeTx.ts WriteProject.send), where the others send
   * it with that read and check its answer.
   */
  readonly collecting: Set<number>;
  /**
   * This node's mark on the signals its writes send (signals.ts): its own listeners hear them when
   * the write commits, so the database's echo of them is not delivered here a second time.
   */
  readonly node: string;
}

/**
 * A read's result, with the driver's errors turned into the store's (errors.ts); a read that
 * failed with an error the driver may have kept from an earlier session (isStale) runs once more.
 */
export async function mapped<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!isStale(error)) throw storeError(error);
  }
  try {
    return await read();
  } catch (error) {
    throw storeError(error);
  }
}

const copyObject = (object: AnnexedObject): AnnexedObject => ({ type: object.type, body: Buffer.from(object.body), annex: object.annex && Buffer.from(object.annex) });

/** A listing's `limit` as a row count: whole, and none for anything below one. */
function listLimit(limit: number): number {
  return limit >= 1 ? Math.floor(Math.min(limit, Number.MAX_SAFE_INTEGER)) : 0;
}

export class ProjectReader implements ProjectReads, PackFormReads, CollectionReads {
  constructor(
    protected readonly context: StoreContext,
    readonly project: number,
  ) {}

  async getObject(oid: Oid): Promise<StoredObject | undefined> {
    return (await this.getObjects([oid]))[0];
  }

  async getObjects(oids: readonly Oid[]): Promise<Array<StoredObject | undefined>> {
    return (await this.getObjectsWithAnnex(oids)).map((object) => object && { type: object.type, body: object.body });
  }

  async getObjectsWithAnnex(oids: readonly Oid[]): Promise<Array<AnnexedObject | undefined>> {
    const { objects } = this.context;
    const out = oids.map((oid) => objects.get(this.project, oid));
    const missing = oids.filter((_, index) => out[index] === undefined);
    if (missing.length === 0) return out;
    const found = await mapped(() => selectObjects(this.context.reads, this.project, missing));
    for (const [key, object] of found) objects.adopt(this.project, Buffer.from(key, 'latin1'), object);
    return oids.map((oid, index) => {
      if (out[index]) return out[index];
      const object = found.get(idKey(oid));
      // Every answer a copy of its own: the cache keeps the row, and an id may be asked twice.
      return object && copyObject(object);
    });
  }

  async hasObjects(oids: readonly Oid[]): Promise<boolean[]> {
    const sizes = await this.objectSizes(oids);
    return sizes.map((size) => size !== undefined);
  }

  async objectTypes(oids: readonly Oid[]): Promise<Array<ObjectType | undefined>> {
    return this.cachedOrSelected(oids, (oid) => this.context.objects.type(this.project, oid), (missing) => selectObjectTypes(this.context.reads, this.project, missing));
  }

  async objectSizes(oids: readonly Oid[]): Promise<Array<number | undefined>> {
    return this.cachedOrSelected(oids, (oid) => this.context.objects.size(this.project, oid), (missing) => selectObjectSizes(this.context.reads, this.project, missing));
  }

  /** What the node's object cache knows of each id, the rest selected in one statement (by idKey). */
  private async cachedOrSelected<T>(oids: readonly Oid[], cached: (oid: Oid) => T | undefined, select: (missing: Oid[]) => Promise<Map<string, T>>): Promise<Array<T | undefined>> {
    const out = oids.map(cached);
    const missing = oids.filter((_, index) => out[index] === undefined);
    if (missing.length === 0) return out;
    const found = await mapped(() => select(missing));
    return oids.map((oid, index) => out[index] ?? found.get(idKey(oid)));
  }

  async findObjectsByPrefix(hexPrefix: string, limit: number): Promise<Oid[]> {
    if (!isIdPrefix(hexPrefix) || !(limit >= 1)) return [];
    const { start, end } = oidPrefixRange(hexPrefix);
    return mapped(() => selectObjectIdsInRange(this.context.reads, this.project, start, end, Math.floor(Math.min(limit, Number.MAX_SAFE_INTEGER))));
  }

  async getCommitInfos(oids: readonly Oid[]): Promise<Array<CommitInfo | undefined>> {
    const { commits } = this.context;
    const out = oids.map((oid) => commits.get(this.project, oid));
    const missing = oids.filter((_, index) => out[index] === undefined);
    if (missing.length === 0) return out;
    const found = await mapped(() => selectCommitInfos(this.context.reads, this.project, missing));
    for (const [key, info] of found) commits.adopt(this.project, Buffer.from(key, 'latin1'), info);
    return oids.map((oid, index) => {
      if (out[index]) return out[index];
      const info = found.get(idKey(oid));
      return info && copyInfo(info);
    });
  }

  async getCommitObjects(commit: Oid): Promise<Buffer | undefined> {
    return mapped(() => selectCommitObjects(this.context.reads, this.project, commit));
  }

  async getRef(name: string): Promise<Oid | undefined> {
    return mapped(() => selectRef(this.context.reads, this.project, name));
  }

  async listRefs(prefix: string): Promise<Array<{ name: string; oid: Oid }>> {
    return mapped(() => selectRefs(this.context.reads, this.project, prefix));
  }

  async getWorkingTree(branch: string): Promise<WorkingTreeState | undefined> {
    return mapped(() => selectWorkingTree(this.context.reads, this.project, branch));
  }

  async getVersion(): Promise<number> {
    return mapped(() => selectVersion(this.context.reads, this.project));
  }

  // ---- pack-ready forms (a capability: src/store/asyncTypes.ts PackFormReads)

  /** One statement per IDS_PER_STATEMENT_MAX ids; forms are not cached (a clone reads each once). */
  async getDeflated(oids: readonly Oid[]): Promise<Array<DeflatedObject | undefined>> {
    if (oids.length === 0) return [];
    const found = await mapped(() => selectForms(this.context.reads, this.project, oids));
    const seen = new Set<string>();
    return oids.map((oid) => {
      const key = idKey(oid);
      const form = found.get(key);
      if (!form) return undefined;
      // An id asked twice gets a copy of its own the second time.
      if (!seen.has(key)) {
        seen.add(key);
        return form;
      }
      return copyForm(form);
    });
  }

  /** By the sizes first: a statement reads every row it selects. */
  async getDeflatedWithin(oids: readonly Oid[], bytesMax: number): Promise<Array<DeflatedObject | undefined>> {
    return deflatedWithinBySizes(this, oids, bytesMax);
  }

  // ---- garbage collection (a capability: src/store/asyncTypes.ts CollectionReads)

  async getCollection(): Promise<CollectionState | undefined> {
    return mapped(() => selectCollection(this.context.reads, this.project));
  }

  async listWorkingTrees(): Promise<Array<{ branch: string; state: WorkingTreeState }>> {
    return mapped(() => selectWorkingTrees(this.context.reads, this.project));
  }

  /**
   * An id is kept raw (with its pack-ready form beside it, when it has one), or as index entries
   * alone; every object keeps its raw copy here, so no form counts as kept compactly.
   */
  async listStored(after: Oid | null, limit: number): Promise<ListedEntry[]> {
    const rows = listLimit(limit) === 0 ? [] : await mapped(() => selectStored(this.context.reads, this.project, after, listLimit(limit)));
    return rows.map((row) => ({ oid: row.oid, raw: row.raw, form: row.form, formBase: row.base, formDepth: row.depth ?? 0, commit: row.indexed, formCompact: false }));
  }

  async describeStored(oids: readonly Oid[]): Promise<Array<StoredEntry | undefined>> {
    const found = await mapped(() => selectStoredEntries(this.context.reads, this.project, oids));
    return oids.map((oid) => {
      const row = found.get(idKey(oid));
      if (!row) return undefined;
      return {
        oid: Buffer.from(oid),
        type: row.type === null ? undefined : typeFromCode(row.type),
        rawBytes: row.raw_bytes,
        formBytes: row.form_bytes,
        formBase: row.base,
        formDepth: row.depth ?? 0,
        indexBytes: row.index_bytes,
      };
    });
  }

  async listJournal(after: Oid | null, limit: number): Promise<Oid[]> {
    if (listLimit(limit) === 0) return [];
    return mapped(() => selectJournal(this.context.reads, this.project, after, listLimit(limit)));
  }
}

export function copyForm(form: DeflatedObject): DeflatedObject {
  const out: DeflatedObject = { type: form.type, inflatedBytes: form.inflatedBytes, deflated: Buffer.from(form.deflated) };
  if (form.delta) out.delta = { base: Buffer.from(form.delta.base), bytes: form.delta.bytes, depth: form.delta.depth };
  return out;
}

export function copyInfo(info: CommitInfo): CommitInfo {
  return { tree: Buffer.from(info.tree), parents: info.parents.map((parent) => Buffer.from(parent)), commitTime: info.commitTime, generation: info.generation };
}

export class ReadTx implements AsyncStoreReadTx {
  constructor(private readonly context: StoreContext) {}

  project(project: number): ProjectReader {
    return new ProjectReader(this.context, project);
  }

  async getRecord<T>(key: string): Promise<T | undefined> {
    const value = await mapped(() => selectRecord(this.context.reads, key));
    return value === undefined ? undefined : decodeRecord<T>(value);
  }

  async listRecords<T>(prefix: string, options: RecordRange = {}): Promise<Array<{ key: string; value: T }>> {
    const rows = await mapped(() => selectRecords(this.context.reads, prefix, options));
    return rows.map((row) => ({ key: row.key, value: decodeRecord<T>(row.value) }));
  }
}
