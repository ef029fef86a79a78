/**
 * The synchronous storage interface, which LMDB (src/store/lmdb.ts) alone can offer; its suite is
 * test/store/contract.ts. The layers above use the asynchronous interface (src/store/asyncTypes.ts,
 * `Store.async`), which LMDB implements over this one (src/store/lmdbAsync.ts); what only LMDB has
 * (hot backup, the pushed-pack check's blocking lookups) is still reached through this interface. The shared types (CommitInfo, forms, working trees) live here.
 *
 * Transactions are synchronous callbacks: a write callback runs alone (writers are serialised), sees
 * its own writes, and either commits whole or, when it throws, leaves nothing behind. `write`
 * resolves only once the commit is durable, so a caller may acknowledge the work it did.
 */
import type { ObjectType, Oid } from '../git/oid.js';
import type { AsyncStore } from './asyncTypes.js';

/** Parents, tree, committer time and generation number of one commit, kept so walks never inflate. */
export interface CommitInfo {
  tree: Oid;
  parents: Oid[];
  /** Committer time, seconds since the epoch. */
  commitTime: number;
  /** 1 for a root commit, else 1 + the largest generation of its parents. */
  generation: number;
}

/**
 * An object's pack-ready form: a zlib stream of its whole body, or of a delta (src/git/delta.ts)
 * against another stored object, as a pack entry holds it.
 */
export interface DeflatedObject {
  type: ObjectType;
  /** The object's body size. */
  inflatedBytes: number;
  /** Present when `deflated` holds a delta: its base, the delta's inflated size, and the chain's depth. */
  delta?: DeltaForm;
  deflated: Buffer;
}

export interface DeltaForm {
  base: Oid;
  /** Bytes the delta's zlib stream inflates to. */
  bytes: number;
  /** 1 + the base's depth (0 for a base kept whole): how many deltas rebuild the object. */
  depth: number;
}

export interface StoredObject {
  type: ObjectType;
  body: Buffer;
}

/**
 * Where a branch's working tree stands: the id of the tree it holds now (stored, with its
 * subtrees, whether or not a commit has it yet) and the branch's locked paths, sorted.
 */
export interface WorkingTreeState {
  tree: Oid;
  locks: string[];
}

/** An object with the annex its writer kept beside it (see ProjectWriteTx.putObject). */
export interface AnnexedObject extends StoredObject {
  annex: Buffer | null;
}

/**
 * A garbage collection of one project under way (src/repo/gc.ts): while it is recorded, writers
 * journal what they reference (ProjectWriteTx.listJournal). It does not change while the collection
 * runs, so a writer that read it is not made to run again by the collector's progress.
 */
export interface CollectionState {
  /** Names the run, so a collector can tell its own collection from one that took over. */
  id: string;
  /** ISO 8601. */
  startedAt: string;
}

/** What a project keeps under one object id: garbage collection's view of the store. */
export interface StoredEntry {
  oid: Oid;
  /** From whichever copy is kept; undefined when only index entries are left. */
  type: ObjectType | undefined;
  /** Bytes of the raw copy (0: none). */
  rawBytes: number;
  /** Bytes of the pack-ready form, its pointer included when it lives in a shelf (0: none). */
  formBytes: number;
  /** The base of a delta form; null for a whole form or none. */
  formBase: Oid | null;
  /** A delta form's depth; 0 for a whole form or none. */
  formDepth: number;
  /** Bytes of the commit index entry and the commit's object list (0: none). */
  indexBytes: number;
}

/** What a listing tells of one id without reading bodies: where it is kept, and its form's delta base. */
export interface ListedEntry {
  oid: Oid;
  /** Kept whole (a raw copy). */
  raw: boolean;
  /** Kept as a pack-ready form (with or without a raw copy). */
  form: boolean;
  /** The base of a delta form; null for a whole form or none. */
  formBase: Oid | null;
  /** A delta form's depth; 0 for a whole form or none. */
  formDepth: number;
  /** Has a commit index entry: a stored commit (which keeps its raw copy whatever keepCompact is told). */
  commit: boolean;
  /** The form is kept as compactly as the backend keeps cold forms (LMDB: in a shelf, or too large for one); false when there is none. */
  formCompact: boolean;
}

/** An object a write stored, with its writer's hints for a delta search (ProjectWriteTx.putObject). */
export interface NewObject {
  oid: Oid;
  similarTo: Oid | null;
  /** The name hash of the path it was written at (src/git/nameHash.ts packNameHash), when its writer knew one. */
  nameHash?: number;
}

export interface ProjectReadTx {
  readonly project: number;
  getObject(oid: Oid): StoredObject | undefined;
  /**
   * getObject without the copy: `body` may be a view into storage that the next read reuses, so
   * use it before reading again and copy what you keep (search scans every blob of a tree this way).
   */
  peekObject(oid: Oid): StoredObject | undefined;
  hasObject(oid: Oid): boolean;
  /** Size in bytes of a stored object's body, without copying it. */
  objectSize(oid: Oid): number | undefined;
  /** A stored object's type, without reading its body. */
  objectType(oid: Oid): ObjectType | undefined;
  /** Every stored object whose id starts with the given hex digits, at most `limit` of them. */
  findObjectsByPrefix(hexPrefix: string, limit: number): Oid[];
  getCommitInfo(oid: Oid): CommitInfo | undefined;
  /**
   * The trees and blobs `commit` brings over its first parent, as src/git/introducedObjects.ts
   * lists them, when they were indexed (received packs and seeds index their commits).
   */
  getCommitObjects(commit: Oid): Buffer | undefined;
  getRef(name: string): Oid | undefined;
  /** Refs whose name starts with `prefix`, sorted by name. */
  listRefs(prefix: string): Array<{ name: string; oid: Oid }>;
  /** The object and its annex, if one was stored with it. */
  getObjectWithAnnex(oid: Oid): AnnexedObject | undefined;
  getWorkingTree(branch: string): WorkingTreeState | undefined;
  /** +1 on every change to the project's files, refs or settings. */
  getVersion(): number;
  /**
   * The object as a pack-ready zlib stream with its type and inflated size, when the deflate cache
   * has it. `deflated` may be a view into storage that the next read reuses: copy it before reading again.
   */
  peekDeflated(oid: Oid): DeflatedObject | undefined;
  /** The garbage collection of this project under way, if any. */
  getCollection(): CollectionState | undefined;
  /** How many collections of the project have begun, ever (asyncTypes.ts ProjectReads.collectionsBegun). */
  collectionsBegun(): number;
  /** Every working tree record of the project, by branch name. */
  listWorkingTrees(): Array<{ branch: string; state: WorkingTreeState }>;
  /** The ids kept after `after` (null: from the first), in id order, at most `limit`; no body is read. */
  listStored(after: Oid | null, limit: number): ListedEntry[];
  /** What is kept under each of `oids`, undefined where nothing is. */
  describeStored(oids: readonly Oid[]): Array<StoredEntry | undefined>;
  /** Ids journalled while a collection runs (see ProjectWriteTx.beginCollection), after `after`, in id order. */
  listJournal(after: Oid | null, limit: number): Oid[];
}

export interface ProjectWriteTx extends ProjectReadTx {
  /**
   * Stores an object (idempotent: a stored id keeps its first copy) and, for commits, indexes it;
   * returns its id. `annex` is data derived from the object that its reader wants in the same read
   * (the repo layer keeps a tree's blob sizes there); it is not part of the object. `similarTo`
   * names a stored object this one is likely close to (the version it replaces at the same path),
   * passed on to onObjectsStored listeners as a delta base to try; `nameHash` the name hash of the
   * path it is written at, by which a delta search sorts (src/git/nameHash.ts, src/git/deltaWindow.ts). Neither is kept.
   */
  putObject(type: ObjectType, body: Buffer, annex?: Buffer, similarTo?: Oid | null, nameHash?: number): Oid;
  /** Stores an object whose id the caller already computed (received packs, imports, replayed writes); the hints as putObject's. */
  putObjectWithId(oid: Oid, type: ObjectType, body: Buffer, annex?: Buffer, similarTo?: Oid | null, nameHash?: number): void;
  /**
   * The one way a ref moves: `expected` null means "must not exist", `next` null deletes.
   * A mismatch throws RefChangedError and leaves the ref as it was.
   */
  casRef(name: string, expected: Oid | null, next: Oid | null): void;
  /** Indexes a stored commit's introducedObjects() list (which the caller vouches for); replaces any earlier one. */
  putCommitObjects(commit: Oid, records: Buffer): void;
  putWorkingTree(branch: string, state: WorkingTreeState): void;
  deleteWorkingTree(branch: string): void;
  bumpVersion(): number;
  /**
   * Keeps the zlib-deflated body of a stored object, so packs copy it instead of compressing. A
   * pack-ready form, once kept, is replaced only by a garbage collection (replaceFormWhole,
   * replaceForms), never by a writer: a writer's delta names a form kept before it, and a
   * collection's names only forms of its own plan that end at a whole one, so no chain loops.
   */
  putDeflated(oid: Oid, deflated: Buffer): void;
  /**
   * Keeps a stored object's pack-ready form as a delta: `deflated` is the zlib stream of a delta
   * against `delta.base`, which must have a pack-ready form already (refused otherwise, as is a
   * depth that is not 1 + the base's). False when nothing was kept.
   */
  putDeflatedDelta(oid: Oid, delta: DeltaForm, deflated: Buffer): boolean;
  /**
   * Stores a tree or blob as its pack-ready form alone (a received pack's entry, as git keeps it),
   * without the raw body: reads rebuild it. `form.deflated` inflates to the body (or, with
   * `form.delta`, to a delta against a base that has a form, at 1 + its depth), which the caller
   * vouches for. True when the object is stored (or was already); false, storing nothing, when the
   * delta's base has no form or the depth is wrong: the caller stores it whole instead.
   */
  putObjectAsForm(oid: Oid, type: ObjectType, inflatedBytes: number, form: { deflated: Buffer; delta?: DeltaForm }): boolean;
  /**
   * putObjectAsForm for each of `forms` in turn, in one call; the index of the first that did not
   * fit (nothing of it stored, nor of those after it), or -1 when all are stored.
   */
  putObjectsAsForms(forms: ReadonlyArray<{ oid: Oid; type: ObjectType; inflatedBytes: number; form: { deflated: Buffer; delta?: DeltaForm } }>): number;
  /**
   * Received entries as putObjectsAsForms takes them in the asynchronous interface (every delta
   * after its base), each delta's depth decided here: 1 + its base's form's, at most `depthMax`.
   * One answer per entry: true when stored or already there, false for a delta whose base has no
   * form or would be too deep (nothing stored for it). A commit comes with its body and is stored
   * whole as well (indexed: after its parents), whatever the answer for its entry.
   */
  putReceivedForms(entries: ReadonlyArray<{ oid: Oid; type: ObjectType; inflatedBytes: number; deflated: Buffer; delta: { base: Oid; bytes: number } | null; body?: Buffer }>, depthMax: number): boolean[];
  /**
   * Records a garbage collection of the project, replacing any. From then on, until endCollection,
   * every write of the project journals ids to be kept: each object stored that was absent, each
   * object that gets a delta form, each value a ref or working tree takes, and the value each had
   * before it changed or was deleted.
   */
  beginCollection(state: CollectionState): void;
  /** Ends the collection: nothing is journalled any more, and the journal is emptied. */
  endCollection(): void;
  /** Removes the journal entries of `oids`. */
  forgetJournal(oids: readonly Oid[]): void;
  /** Removes all that is kept under each id (raw copy, form, commit index, object list); returns how many keys went. */
  removeStored(oids: readonly Oid[]): number;
  /**
   * Replaces the object's form, when it is a delta on `base`, by `deflated`, the zlib stream of its
   * whole body (so `base` may go); false, changing nothing, when its form is anything else.
   */
  replaceFormWhole(oid: Oid, base: Oid, deflated: Buffer): boolean;
  /**
   * Keeps objects compactly, as a collection asks for what only history reaches (cold objects):
   * each one's pack-ready form moves into the backend's compact layout (LMDB: shelves, filled in
   * the order given), and where `dropRaw` is set its raw copy (with its annex) is removed, when it
   * has a form and is not a commit (a commit keeps its body: the commit index and log read it).
   * Reads rebuild an object kept as its form alone. An id with no form, or nothing stored, is left
   * as it is. Nothing becomes unreadable, so no reader or writer has to be told.
   */
  keepCompact(objects: ReadonlyArray<{ oid: Oid; dropRaw: boolean }>): { rawDropped: number; formsMoved: number };
  /**
   * Replaces the forms of several objects at once, when every one of them is still what `was` says
   * (its delta base, or null for a whole form, and its depth); otherwise changes nothing and answers
   * false. The caller vouches that each new form rebuilds its object and that, all together, every
   * delta names a base with a form at 1 + that base's depth and no chain loops: a collection turning
   * a chain around so its newest version is whole (src/repo/gc/newestWhole.ts) is the one caller.
   */
  replaceForms(changes: readonly FormChange[]): boolean;
}

/** One form replaced by ProjectWriteTx.replaceForms. */
export interface FormChange {
  oid: Oid;
  was: { base: Oid | null; depth: number };
  form: { deflated: Buffer; delta?: DeltaForm };
}

export interface StoreReadTx {
  project(project: number): ProjectReadTx;
  getRecord<T>(key: string): T | undefined;
  /** Records whose key starts with `prefix`, in key order (reverse: descending). */
  listRecords<T>(prefix: string, options?: { reverse?: boolean; after?: string; limit?: number }): Array<{ key: string; value: T }>;
}

export interface StoreWriteTx extends StoreReadTx {
  project(project: number): ProjectWriteTx;
  putRecord<T>(key: string, value: T): void;
  deleteRecord(key: string): void;
  /**
   * Removes at most `keysMax` of the project's stored entries (objects, commit index, refs, working
   * trees, cache) and returns how many it removed: 0 when none are left. A project too large to drop
   * in one short transaction is dropped this way, a transaction at a time.
   */
  dropProjectKeys(project: number, keysMax: number): number;
  /**
   * Rewrites shelves of pack-ready forms (LMDB's own layout, src/store/lmdb.ts) into new ones holding
   * only the forms named, each still pointing where it was found (others are left as they are), and
   * removes the old shelves: what a garbage collection's removals left dead in them is freed.
   */
  rewriteShelves(project: number, shelves: ReadonlyArray<{ id: Buffer; forms: ReadonlyArray<ShelvedForm> }>): { rewrittenBytes: number; freedBytes: number };
  /**
   * Takes the project's entries of one of LMDB's databases below the key `before` (null: from the
   * last), up to `entriesMax` of them or `bytesMax` of values read, out and puts them back in key
   * order: LMDB packs keys put in order into full pages, where removals left pages sparse (src/store/lmdb.ts).
   * Returns the lowest key taken (where the next call goes on down), null when the project's range is done.
   */
  repackProjectKeys(project: number, table: RepackedTable, before: Buffer | null, entriesMax: number, bytesMax: number): { last: Buffer | null; bytes: number };
}

/** The databases of a project's objects, which a collection's removals leave sparse. */
export type RepackedTable = 'objects' | 'packed' | 'commits' | 'introduced';

/** A pack-ready form kept in a shelf: its object, and where in the shelf it lies. */
export interface ShelvedForm {
  oid: Oid;
  offset: number;
  length: number;
}

export interface Store {
  /**
   * The same storage through the asynchronous interface (src/store/asyncTypes.ts), one view per
   * store (its writers share one queue). The layers above move to it (issue 14).
   */
  readonly async: AsyncStore;
  read<T>(action: (tx: StoreReadTx) => T): T;
  /**
   * Called after each committed write transaction with the objects it stored, per project, so work
   * that follows a write (the deflate cache) need not scan for it.
   */
  onObjectsStored(listener: (project: number, stored: NewObject[]) => void): void;
  /** Called after each write transaction, committed or not, with how long it took (metrics). */
  onWriteDone(listener: (durationMs: number, committed: boolean) => void): void;
  /**
   * Writes a consistent copy of everything stored (one snapshot: the writes committed when it
   * starts, none after) into the existing, empty directory `dir`, compacted; writers go on meanwhile.
   */
  backup(dir: string): Promise<void>;
  /** Bytes the backend's data takes now (for LMDB: the data file up to its last used page). */
  storageUsedBytes(): number;
  /** Runs `action` in one write transaction and resolves once its commit is durable. */
  write<T>(action: (tx: StoreWriteTx) => T): Promise<T>;
  close(): Promise<void>;
}

export class RefChangedError extends Error {
  override name = 'RefChangedError';
  constructor(
    readonly ref: string,
    readonly current: Oid | null,
  ) {
    super(`ref ${ref} is not at the expected value`);
  }
}

/** The backend ran out of room (map or disk full); the transaction was rolled back. */
export class StorageFullError extends Error {
  override name = 'StorageFullError';
}

/**
 * The backend cannot be reached now (a networked database that is down, restarting, refusing
 * connections or dropped the connection mid-transaction). Nothing was written, unless the
 * connection was lost while the commit was under way: `commitUnknown` is then true, and the write
 * may or may not have landed (a caller that retries should expect either).
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  constructor(
    message: string,
    readonly commitUnknown = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
