/**
 * The asynchronous storage interface (issue 14): what a backend that pays a round trip per call (a
 * PostgreSQL of several nodes) can implement, and what the layers above move to from the
 * synchronous interface of src/store/types.ts, which LMDB alone can offer.
 *
 * Small interfaces by role, as go-git's storers are: object, commit-index, ref, working-tree and
 * record reads; the writes of a transaction; and the pack-ready forms as an optional capability.
 *
 * - **Reads are asynchronous and batched**: many objects, commit entries or sizes in one call (a
 *   tree level at a time), so a networked backend pays one round trip per batch. Objects are
 *   immutable, so any layer may cache what it read; bodies are the caller's copies.
 * - **Writes are buffered**: puts are recorded in the transaction (read back by its own reads) and
 *   applied together when the callback resolves. A body or annex given to a put belongs to the
 *   transaction until it ends: the caller does not change it meanwhile (a batch of 100,000 files
 *   is not copied twice); a compare-and-swap of a ref is checked at once
 *   against what the transaction sees and again when it commits. A callback that throws writes
 *   nothing. `write` resolves once the commit is durable, so the caller may acknowledge it.
 * - **Isolation**: a read transaction sees each committed write whole, never part of one (it is
 *   not one snapshot across its awaits: a ref read twice may have moved); objects are removed only
 *   with their project. A write transaction is serialisable: what it read
 *   of refs, working trees, versions and records is what it commits over (a backend may run the
 *   callback again when another writer changed those meanwhile, so a callback does nothing but
 *   reads and writes through `tx`).
 * - **Garbage collection** (src/repo/gc.ts) is a capability too (CollectionReads, CollectionWrites):
 *   while a collection of a project runs (getCollection), the backend journals, in every write of
 *   that project, the ids a collector must keep (ProjectWriteTx.beginCollection in types.ts), and a
 *   write callback's answers "present" to object reads (objects, sizes, commit entries, forms) are
 *   checked again when it commits, like its reads of refs: an object a collector removed meanwhile
 *   makes the callback run again, so no write ever refers to an object that is gone. Its reads of
 *   the collection and the journal are checked the same way.
 */
import type { ObjectType, Oid } from '../git/oid.js';
import type { AnnexedObject, CollectionState, CommitInfo, DeflatedObject, DeltaForm, FormChange, ListedEntry, NewObject, StoredEntry, StoredObject, WorkingTreeState } from './types.js';

export interface ObjectReads {
  getObject(oid: Oid): Promise<StoredObject | undefined>;
  /** Objects in the order asked, undefined where one is not stored. */
  getObjects(oids: readonly Oid[]): Promise<Array<StoredObject | undefined>>;
  /** Objects with the annex their writer kept beside them (null when none), undefined where not stored. */
  getObjectsWithAnnex(oids: readonly Oid[]): Promise<Array<AnnexedObject | undefined>>;
  hasObjects(oids: readonly Oid[]): Promise<boolean[]>;
  /** Body sizes, without reading the bodies. */
  objectSizes(oids: readonly Oid[]): Promise<Array<number | undefined>>;
  /** Types, without reading the bodies; undefined where not stored. */
  objectTypes(oids: readonly Oid[]): Promise<Array<ObjectType | undefined>>;
  /**
   * Optional: objects read one after the other in one read, each handed to `visit` (undefined
   * where not stored) with a body it may look at only during that call: a view of the store's
   * memory, not a copy. Stops after the first `visit` that returns false; resolves with how many
   * were visited. For walks that look at many bodies once and keep little of them (search); where a
   * backend lacks it, the walk reads copies (getObjects).
   */
  visitObjects?(oids: readonly Oid[], visit: (object: StoredObject | undefined, index: number) => boolean): Promise<number>;
  /** Every stored object whose id starts with the given hex digits, at most `limit` of them. */
  findObjectsByPrefix(hexPrefix: string, limit: number): Promise<Oid[]>;
}

export interface CommitIndexReads {
  /** Parents, tree, time and generation of stored commits, undefined where one is not a stored commit. */
  getCommitInfos(oids: readonly Oid[]): Promise<Array<CommitInfo | undefined>>;
  /** The trees and blobs a commit brings over its first parent (src/git/introducedObjects.ts), when indexed. */
  getCommitObjects(commit: Oid): Promise<Buffer | undefined>;
}

export interface RefReads {
  getRef(name: string): Promise<Oid | undefined>;
  /** Refs whose name starts with `prefix`, sorted by name. */
  listRefs(prefix: string): Promise<Array<{ name: string; oid: Oid }>>;
}

export interface WorkingTreeReads {
  getWorkingTree(branch: string): Promise<WorkingTreeState | undefined>;
  /** +1 on every change to the project's files, refs or settings. */
  getVersion(): Promise<number>;
}

export interface ProjectReads extends ObjectReads, CommitIndexReads, RefReads, WorkingTreeReads {
  readonly project: number;
  /**
   * How many collections of the project have begun, ever (CollectionWrites.beginCollection).
   * Offered by a store with writeObjectsMax, whose large pushes store their objects in writes
   * before the one that moves the refs: with no collection under way before the first of them,
   * the same count there means none ran in between, so none removed any. A write callback's read
   * is checked again when it commits, like its reads of refs.
   */
  collectionsBegun?(): Promise<number>;
}

export interface ProjectWrites extends ProjectReads {
  /**
   * Stores an object (a stored id keeps its first copy) and, for commits, indexes it; returns its
   * id. `annex`: data derived from the object its reader wants in the same read. The hints for the
   * delta search of the pack-ready forms, passed to onObjectsStored listeners and not kept:
   * `similarTo`, a stored object this one is likely close to (the version it replaces); `nameHash`,
   * the name hash of the path it is written at (src/git/nameHash.ts packNameHash).
   */
  putObject(type: ObjectType, body: Buffer, annex?: Buffer, similarTo?: Oid | null, nameHash?: number): Oid;
  /** Stores an object whose id the caller computed (received packs, imports). */
  putObjectWithId(oid: Oid, type: ObjectType, body: Buffer, annex?: Buffer): void;
  /**
   * Moves a ref: `expected` null means "must not exist", `next` null deletes. Rejects with
   * RefChangedError when the ref is not at `expected`, now or when the transaction commits.
   */
  casRef(name: string, expected: Oid | null, next: Oid | null): Promise<void>;
  /** Indexes a commit's introducedObjects() list, replacing an earlier one; the commit must be stored. */
  putCommitObjects(commit: Oid, records: Buffer): void;
  putWorkingTree(branch: string, state: WorkingTreeState): void;
  deleteWorkingTree(branch: string): void;
  /** Adds one to the project's version and returns the new version. */
  bumpVersion(): Promise<number>;
}

/**
 * Pack-ready forms (src/store/types.ts DeflatedObject), a capability a backend may lack: the layers
 * above then deflate what they send.
 */
export interface PackFormReads {
  /** Forms in the order asked (copies), undefined where an object has none. */
  getDeflated(oids: readonly Oid[]): Promise<Array<DeflatedObject | undefined>>;
  /**
   * getDeflated of the first of `oids`, read in order until their bytes reach `bytesMax` (at least
   * one): a form counts its deflated bytes, an object without one its size (the reader reads its
   * body next), an absent object none. One answer per object read, so the answer may be shorter
   * than `oids`. A reader that cannot stop part way asks the sizes first (deflatedWithinBySizes).
   */
  getDeflatedWithin(oids: readonly Oid[], bytesMax: number): Promise<Array<DeflatedObject | undefined>>;
}

export interface PackFormWrites extends PackFormReads {
  /** Keeps the zlib-deflated body of a stored object; a form, once kept, is replaced only by a garbage collection. */
  putDeflated(oid: Oid, deflated: Buffer): void;
  /** Keeps a form as a delta on a base that has a form, at 1 + its depth; false when nothing was kept. */
  putDeflatedDelta(oid: Oid, delta: DeltaForm, deflated: Buffer): Promise<boolean>;
  /** Stores a tree or blob as its form alone (a received pack's entry); false, storing nothing, when the delta does not fit. */
  putObjectAsForm(oid: Oid, type: ObjectType, inflatedBytes: number, form: { deflated: Buffer; delta?: DeltaForm }): Promise<boolean>;
  /**
   * putObjectAsForm for each entry in turn, in one call (every delta after its base): a delta is
   * kept on its base's form at 1 + the base's depth, when the base has a form and that depth is at
   * most `depthMax`. One answer per entry, as putObjectAsForm's.
   */
  putObjectsAsForms(entries: readonly ReceivedForm[], depthMax: number): Promise<boolean[]>;
}

/** A received pack's tree or blob entry as putObjectsAsForms takes it (putFormsAlone takes a commit's too, with its body). */
export interface ReceivedForm {
  oid: Oid;
  type: ObjectType;
  /** The body's length. */
  inflatedBytes: number;
  /** The entry's zlib stream: the body's, or the delta's. */
  deflated: Buffer;
  /** For a delta: its base and the bytes its stream inflates to. */
  delta: { base: Oid; bytes: number } | null;
  /**
   * The body, when the caller holds it whole: a store that keeps every raw copy (`formsAlone`
   * false) stores it rather than rebuild it from the entry; one that keeps forms alone ignores it.
   */
  body?: Buffer;
}

/** An object of a project: where a scan of the backlog stopped, or an object it found. */
export interface ObjectCursor {
  project: number;
  oid: Oid;
}

export interface UndeflatedPage {
  /** The objects of the page that have no pack-ready form, in (project, id) order. */
  undeflated: ObjectCursor[];
  /** Where the next page starts (after this object); null when the scan has reached the end. */
  next: ObjectCursor | null;
}

/** What a backend with pack-ready forms offers beside its transactions: the objects still without one. */
export interface PackFormBacklog {
  /**
   * A page of the stored objects, across projects, in (project, id) order after `after` (from the
   * first when null): at most `limit` objects are looked at, and those without a pack-ready form
   * listed. Objects stored as their form alone have one. Not a snapshot: the deflate cache pages
   * through it at start for what an earlier run stored but did not reach, a page at a time.
   */
  listUndeflated(after: ObjectCursor | null, limit: number): Promise<UndeflatedPage>;
}

/**
 * What garbage collection reads (src/repo/gc.ts), a capability a backend may lack: then no project
 * is ever collected. Listings are by id, in pages, so a project of millions of ids is read in
 * bounded pieces.
 */
export interface CollectionReads {
  /** The collection of this project under way, if any. */
  getCollection(): Promise<CollectionState | undefined>;
  /** Every working tree record of the project. */
  listWorkingTrees(): Promise<Array<{ branch: string; state: WorkingTreeState }>>;
  /** The ids kept after `after` (null: from the first), in id order, at most `limit`; no body is read. */
  listStored(after: Oid | null, limit: number): Promise<ListedEntry[]>;
  /** What is kept under each of `oids`, undefined where nothing is. */
  describeStored(oids: readonly Oid[]): Promise<Array<StoredEntry | undefined>>;
  /** Ids journalled since the collection began (CollectionWrites.beginCollection), after `after`, in id order. */
  listJournal(after: Oid | null, limit: number): Promise<Oid[]>;
}

export interface CollectionWrites extends CollectionReads {
  /**
   * Records a collection of the project, replacing any: from the commit of this write until
   * endCollection, every write of the project journals each object it stores that was absent, each
   * object that gets a delta form, each value a ref or working tree takes and each value one had
   * before it moved or went.
   */
  beginCollection(state: CollectionState): void;
  /** Ends the collection and empties its journal. */
  endCollection(): void;
  forgetJournal(oids: readonly Oid[]): void;
  /** Removes everything kept under each id: raw copy, pack-ready form, commit entry, object list. */
  removeStored(oids: readonly Oid[]): void;
  /** Replaces the object's form, if it is still a delta on `base`, by `deflated`: its whole body as a zlib stream. */
  replaceFormWhole(oid: Oid, base: Oid, deflated: Buffer): void;
  /**
   * Keeps objects compactly (what only history reaches): each one's form moves into the backend's
   * compact layout, in the order given, and where `dropRaw` is set its raw copy and annex go when it
   * has a form and is not a commit; reads rebuild it from the form (ProjectWriteTx.keepCompact in types.ts).
   */
  keepCompact(objects: ReadonlyArray<{ oid: Oid; dropRaw: boolean }>): void;
  /**
   * Replaces several objects' forms together, only when each is still what `was` says (else none
   * is replaced): a collection turning a delta chain around (ProjectWriteTx.replaceForms in types.ts).
   */
  replaceForms(changes: readonly FormChange[]): void;
}

export interface RecordReads {
  getRecord<T>(key: string): Promise<T | undefined>;
  /** Records whose key starts with `prefix`, in key order (reverse: descending). */
  listRecords<T>(prefix: string, options?: { reverse?: boolean; after?: string; limit?: number }): Promise<Array<{ key: string; value: T }>>;
}

export interface AsyncStoreReadTx extends RecordReads {
  project(project: number): ProjectReads & Partial<PackFormReads> & Partial<CollectionReads>;
}

export interface AsyncStoreWriteTx extends RecordReads {
  project(project: number): ProjectWrites & Partial<PackFormWrites> & Partial<CollectionWrites>;
  putRecord<T>(key: string, value: T): void;
  deleteRecord(key: string): void;
  /**
   * Sends `message` on `channel` to the listeners of every node (StoreSignals) when the
   * transaction commits, and nothing when it does not; present exactly when the store has `signals`.
   */
  signal?(channel: string, message: string): void;
  /**
   * For a store with writeObjectsMax: the writes (objects, refs, records) the transaction has
   * buffered so far, which its replay makes in one piece on the event loop.
   */
  readonly bufferedWrites?: number;
}

/**
 * Messages between the nodes that share a store, a capability of a store several nodes use at once
 * (one process alone hears its own changes on its event bus): what one node's committed change
 * means for work another follows (event streams, the webhook fan-out).
 */
export interface StoreSignals {
  /**
   * Calls `listener` with each message a committed write sent on `channel` (`signal`), from any node,
   * this one included: once each, this node's own when its write commits, before `write` resolves
   * (and when a write's commit was under way as its connection was lost, since it may have
   * committed), so what a node keeps on the word of signals is never stale to its own next request.
   * And with null each time listening starts (the first time, and when the
   * connection it listens on was lost and is back): messages before it may have been missed, so the
   * caller looks again at what it follows. Returns a
   * function that stops listening. A channel is lowercase letters, digits and "_"; a message at most
   * 7,000 bytes.
   */
  listen(channel: string, listener: (message: string | null) => void): () => void;
  /**
   * Whether this node hears every signal sent on `channel` now: it listens and its connection is up
   * (a listener has been told null since). What a node caches on the word of signals it serves only
   * while this holds.
   */
  hears(channel: string): boolean;
}

/**
 * Token buckets that hold across the nodes of a store (a capability of a store several nodes use at
 * once; one process alone keeps its buckets in memory). Not durable: a bucket lost to a crash is full.
 */
export interface SharedRateLimits {
  /**
   * Takes a token from `key`'s bucket (`ratePerSecond` tokens a second, up to `burst`), by the
   * store's clock: `waitSeconds` 0 when one was taken, else the seconds (fractional) until one is
   * free; `tokens`, what the bucket holds afterwards (fractional).
   */
  takeToken(key: string, ratePerSecond: number, burst: number): Promise<{ waitSeconds: number; tokens: number }>;
}

/**
 * What another thread of this process opens the same store from (src/store/open.ts
 * openStoreInThread), to read it there: a search reads blobs on worker threads.
 */
export interface StoreThreadAccess {
  backend: 'lmdb';
  path: string;
}

/** A hold of a project's forms (AsyncStore.beginFormHold): opaque but for its project. */
export interface FormHold {
  readonly project: number;
}

/** `listUndeflated` (PackFormBacklog) is there exactly when `packForms` is true. */
export interface AsyncStore extends Partial<PackFormBacklog> {
  /** Whether transactions offer pack-ready forms (PackFormReads, PackFormWrites) and the store its backlog (PackFormBacklog). */
  readonly packForms: boolean;
  /**
   * Whether putObjectAsForm, putObjectsAsForms and keepCompact keep an object as its form alone,
   * without a raw copy (reads rebuild it). False or absent: every object keeps its raw copy, its
   * form beside it, so a received pack's bodies are wanted whole (src/service/packChecker.ts wholeBlobs).
   */
  readonly formsAlone?: boolean;
  /**
   * Optional: the objects a write should store at most, for a store that replays a write's callback
   * in one piece on the event loop (LMDB: 3,000 indexed commits held it some 100 ms). Absent: no bound.
   */
  readonly writeObjectsMax?: number;
  /** Whether transactions offer garbage collection (CollectionReads, CollectionWrites). */
  readonly collection: boolean;
  /**
   * After a collection that removed `removedIds` ids (or moved their forms) and kept `keptIds`,
   * and removed or dropped `rawRemoved` raw copies and kept `rawKept`: the backend's own
   * compaction of what the removals left behind in the project (LMDB: shelves of pack-ready forms
   * less than three quarters alive are rewritten; pages left sparse are packed again), in short writes.
   */
  compactAfterCollection?(project: number, collected: { removedIds: number; keptIds: number; rawRemoved?: number; rawKept?: number }): Promise<{ rewrittenBytes: number; freedBytes: number }>;
  /** Messages between nodes (write transactions then offer `signal`): a store several nodes share. */
  readonly signals?: StoreSignals;
  /** Rate limits across nodes: a store several nodes share. */
  readonly rateLimits?: SharedRateLimits;
  /** Optional: how other threads of this process open this store to read it (a backend that cannot is read on one thread). */
  readonly threadAccess?: StoreThreadAccess;
  read<T>(action: (tx: AsyncStoreReadTx) => Promise<T>): Promise<T>;
  /** Runs `action` as one write transaction and resolves once its commit is durable. */
  write<T>(action: (tx: AsyncStoreWriteTx) => Promise<T>): Promise<T>;
  /**
   * Removes at most `keysMax` of a project's stored entries in a transaction of its own and returns
   * how many it removed: 0 when none are left.
   */
  dropProjectKeys(project: number, keysMax: number): Promise<number>;
  /**
   * Optional: putObjectsAsForms in a write of its own, for objects nobody refers to yet (a git
   * seed's, under its reserved project number), read and written in one pass where the backend's
   * write callbacks would otherwise be replayed (LMDB). Answers as putObjectsAsForms. A commit
   * comes with its body, and is stored whole too (indexed, so after its parents) whatever the
   * answer for its entry.
   */
  putFormsAlone?(project: number, entries: readonly ReceivedForm[], depthMax: number, hold?: FormHold): Promise<boolean[]>;
  /**
   * Optional (offered with putFormsAlone): a hold of `project`'s forms for the putFormsAlone calls
   * given it (a push's, while its pack is still checked). Those forms read as absent, to everyone,
   * until endFormHold keeps them; every other write of the project goes on as usual meanwhile.
   * Objects may be held that the project has, or that another write puts meanwhile: the stored
   * one wins. The answers mean what putFormsAlone's do, once the hold is kept.
   */
  beginFormHold?(project: number): FormHold;
  /**
   * Ends a hold: with `keep`, its forms are stored (where none is), and the answer is whether every
   * object held is now stored. False when a delta was not put because its base lost to another
   * write's form (its recorded depth would be wrong) and nobody stored its object meanwhile: the
   * caller stores those objects again. Without `keep`, they are let go and leave nothing (false).
   */
  endFormHold?(hold: FormHold, keep: boolean): Promise<boolean>;
  /**
   * Optional (offered with beginFormHold): readies what the hold took so far for endFormHold, so
   * that keeping it takes less then (a push calls it while its pack's check runs and the request
   * thread has nothing else to do). Any number of calls; what is held stays held.
   */
  prepareFormHold?(hold: FormHold): Promise<void>;
  /**
   * Optional, for a project number reserved for a git seed (empty, and nobody else writes it): from now until
   * settleForms, the backend may hold back part of what writes store for it (LMDB: the pointers of
   * pack-ready forms, to put them in key order at the end), so those forms read as absent meanwhile.
   */
  holdForms?(project: number): void;
  /**
   * Ends holdForms: with `keep`, what was held is stored now; without (the seed failed, and its
   * number will be dropped), it is let go.
   */
  settleForms?(project: number, keep: boolean): Promise<void>;
  /** Called after each committed write with the objects it stored, per project (the deflate cache). */
  onObjectsStored(listener: (project: number, stored: NewObject[]) => void): void;
  /** Called after each write transaction, committed or not, with how long it took (metrics). */
  onWriteDone(listener: (durationMs: number, committed: boolean) => void): void;
  /** Bytes the backend's data takes now. */
  storageUsedBytes(): Promise<number>;
  /**
   * A consistent copy of the whole store into the empty directory `dir`, taken while writers run
   * (every write committed when it began, none after): a capability of embedded backends; a
   * database server is backed up with its own tools.
   */
  backup?(dir: string): Promise<void>;
  close(): Promise<void>;
}
