/**
 * A write transaction of the PostgreSQL backend (src/store/asyncTypes.ts).
 *
 * Writes are buffered in the transaction (its own reads see them) and sent when the callback
 * resolves, in a few multi-row statements, followed by COMMIT (synchronous_commit on: `write`
 * resolves once the commit is durable). A callback that throws sends nothing.
 *
 * Serialisable by locks, held from the first read to the commit: a PostgreSQL transaction (READ
 * COMMITTED) is opened on the write pool when the callback first reads a project's refs, working
 * trees or version, or a record, and
 * - a project's refs, working trees and version are guarded by one lock, its version row
 *   (SELECT … FOR UPDATE, taken before the first such read or write of the project): writes of one
 *   project nearly always bump its version, so they would wait for each other on that row anyway,
 *   and a lock per project also covers listings and refs that do not exist yet. A row lock lives
 *   on the project's shard, so it holds across nodes under Citus too;
 * - a record read is guarded by an advisory lock on its key, a listing by one on its prefix's
 *   namespace (the prefix up to its last "/"), which every writer of a key under it takes shared:
 *   a record is written under its key's lock and shared locks on each "/"-prefix of the key.
 * What a transaction read cannot change before it commits, so no callback runs twice for a
 * conflict; a deadlock between two writers (PostgreSQL detects it) rolls one back, and its
 * callback runs again. Refs, working trees and the version still move by compare-and-swap
 * (conditional statements whose row counts are checked), which the locks make certain to match;
 * one that does not (a writer outside these rules) runs the callback again too.
 *
 * Objects and commit index entries are immutable: they need no lock, are read on the read pool
 * (through the node's caches) and inserted with ON CONFLICT DO NOTHING.
 *
 * Garbage collection (README "Garbage collection"): every id the store answered as present to the
 * callback's reads is checked at the commit to be stored still (a collection may have removed it
 * since, and another node's cache may answer an id a collection removed long ago); one that is
 * gone is forgotten by this node's caches and the callback runs again, so no write names an
 * object that is not stored. At its commit every write of a project takes the project's collection
 * lock, shared, which a collection's beginning and end take exclusive (statements.ts
 * lockCollection), then reads whether a collection runs. While one does, the ids read as present
 * and those put that were stored already are locked FOR KEY SHARE (a sweep's DELETE of one waits
 * for this commit), and the ids the write makes reachable are journalled: objects it stored that were absent, and the values
 * its refs and working trees had and take. A write that read the collection or the journal is
 * checked at its commit to read the same again; the journal after the write's removals, which
 * waited for every writer that had locked a removed row: a sweep whose removal such a writer
 * relied on finds that writer's journal entries and runs again.
 */
import { isDeepStrictEqual } from 'node:util';
import { inflateSync } from 'node:zlib';
import { applyDelta } from '../../git/delta.js';
import type postgres from 'postgres';
import { OBJECT_RECORD_BYTES } from '../../git/introducedObjects.js';
import { hashObject, type ObjectType, type Oid } from '../../git/oid.js';
import type { AsyncStoreWriteTx, CollectionWrites, PackFormWrites, ProjectWrites, ReceivedForm } from '../asyncTypes.js';
import { commitInfoFromBody } from '../commitIndex.js';
import { RefChangedError, type AnnexedObject, type CollectionState, type CommitInfo, type DeflatedObject, type DeltaForm, type FormChange, type NewObject, type WorkingTreeState } from '../types.js';
import { decodeRecord, encodeRecord, isIdPrefix, nameBytes, numberArray, oidPrefixRange, typeFromCode, TYPE_CODES } from './codec.js';
import { isUnavailable, storeError } from './errors.js';
import { copyForm, copyInfo, mapped, ProjectReader, type StoreContext } from './reader.js';
import { SIGNAL_CHANNEL_PATTERN, SIGNAL_MESSAGE_BYTES_MAX } from './signals.js';
import {
  copyObjects,
  copyObjectsDirect,
  COPY_BYTES_MIN,
  COPY_ROWS_MIN,
  deleteCollection,
  deleteJournal,
  deleteRecords,
  deleteStored,
  formInsertBatches,
  IDS_PER_STATEMENT_MAX,
  idKey,
  insertCommits,
  insertForms,
  insertJournal,
  insertObjects,
  lockCollection,
  lockProject,
  objectInsertBatches,
  replaceFormsTogether,
  replaceFormsWhole,
  selectCollection,
  selectJournal,
  selectObjectKinds,
  selectPresentIds,
  selectRecord,
  selectRecords,
  selectRef,
  selectRefs,
  selectWorkingTree,
  sendSignals,
  swapRef,
  swapVersion,
  swapWorkingTree,
  upsertCollection,
  upsertCommitObjects,
  upsertRecords,
  type ObjectToInsert,
  type RecordRange,
} from './statements.js';

/** Advisory lock classes (the first key of pg_advisory_xact_lock(int, int)) of records' keys and namespaces. */
const RECORD_KEY_LOCK = 0x7ee_4010;
const RECORD_NAMESPACE_LOCK = 0x7ee_4011;

/** A compare-and-swap the locks should have made certain failed: the callback runs again. */
export class WriteConflict extends Error {
  override name = 'WriteConflict';
}

/** What a transaction stored, for the caches and the onObjectsStored listeners once it has committed. */
export interface CommittedWrites {
  stored: Map<number, NewObject[]>;
  /** Objects worth caching (trees, commits, tags), as copies, and the commits' index entries. */
  objects: Array<{ project: number; oid: Oid; object: AnnexedObject }>;
  commits: Array<{ project: number; oid: Oid; info: CommitInfo }>;
  /** Ids a collection removed, which the caches forget. */
  removed: Array<{ project: number; oids: Oid[] }>;
}

/** Object insert statements (OBJECT_BATCH_BYTES_MAX each) a write sends before the first of them is answered. */
const OBJECT_BATCHES_IN_FLIGHT = 4;

/** Objects larger than this are not copied into the cache after a write. */
const CACHED_AFTER_WRITE_BYTES_MAX = 256 * 1024;

const ROLLED_BACK = new Error('the write transaction was rolled back');

/**
 * The PostgreSQL transaction of one write, opened on first use (a write that only puts objects
 * opens it at its commit), on postgres.js's `begin`, whose callback is held open until the write
 * commits or rolls back.
 *
 * When its connection closes, the transaction is over, and `begin` says so (it rejects):
 * nothing more is sent on it (postgres.js would send it on whatever session reuses the connection
 * next, or throw from a timer), its commit or rollback is never asked for (the callback `begin`
 * holds is left waiting, and is collected with the connection's state), and every run of
 * statements under way fails at once (statements queued behind one that waits for its
 * description are never sent nor failed by the driver, so each run races the transaction's end).
 * A statement's error alone does not mean the connection closed: postgres.js 3.4 keeps the error
 * of a statement cut off by a closing connection and gives it to the first statement on the
 * connection it opens next, so a connection error on a live connection is rolled back as any other.
 */
export class Transaction {
  private handle: Promise<postgres.TransactionSql> | null = null;
  private decide: ((commit: boolean) => void) | null = null;
  private finished: Promise<unknown> | null = null;
  /** Rejects when the transaction ends before its commit or rollback was asked for (its connection closed). */
  private ended: Promise<never> | null = null;
  /** Why the transaction ended before its commit or rollback was asked for. */
  private lost: unknown = null;
  /** Whether BEGIN went through: before that, nothing of this transaction was sent. */
  private started = false;

  constructor(private readonly pool: postgres.Sql) {}

  /** Runs statements on the transaction's connection; the driver's errors become the store's. */
  async run<T>(statements: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
    try {
      if (this.lost) throw this.lost;
      const tx = await this.open();
      if (this.lost) throw this.lost;
      const work = statements(tx);
      // Lost to the race below, it may still fail later: that is no unhandled rejection.
      work.catch(() => undefined);
      return await Promise.race([work, this.ended!]);
    } catch (error) {
      throw storeError(error);
    }
  }

  private open(): Promise<postgres.TransactionSql> {
    if (this.handle) return this.handle;
    const decision = new Promise<boolean>((resolve) => (this.decide = resolve));
    this.handle = new Promise((resolve, reject) => {
      const finished = this.pool.begin(async (tx) => {
        this.started = true;
        resolve(tx);
        if (!(await decision)) throw ROLLED_BACK;
      });
      this.finished = finished;
      this.ended = finished.then(
        () => new Promise<never>(() => undefined),
        (error: unknown) => {
          // Before a decision, `begin` rejects only when it could not start or its connection closed.
          this.lost ??= error;
          reject(error);
          throw error;
        },
      );
      // Awaited by run() and commit(); these only keep a failure from being an unhandled rejection.
      this.ended.catch(() => undefined);
    });
    this.handle.catch(() => undefined);
    return this.handle;
  }

  /** Commits what was sent; resolves once the commit is durable. */
  async commit(): Promise<void> {
    if (!this.handle) return;
    if (this.lost) throw storeError(this.lost);
    this.decide!(true);
    try {
      await this.finished;
    } catch (error) {
      // The connection may have dropped after COMMIT went out: the outcome is unknown.
      throw storeError(error, isUnavailable(error));
    }
  }

  /** Rolls back; true when nothing of the transaction can have been committed and its connection was alive (or never opened). */
  async rollback(): Promise<boolean> {
    if (!this.handle) return true;
    // A connection that closed fails its statements before `begin` hears of it: let it hear first.
    await new Promise((resolve) => setImmediate(resolve));
    if (!this.started) return true;
    // A lost connection took its transaction with it; the driver must not be asked to send more.
    if (this.lost) return false;
    this.decide!(false);
    await this.finished!.catch(() => undefined);
    return true;
  }
}

/** FNV-1a of the key's UTF-8, as the signed 32-bit second key of an advisory lock. */
function lockHash(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash | 0;
}

/** The namespace a listing of `prefix` locks: the prefix up to and with its last "/". */
function namespaceOf(prefix: string): string {
  return prefix.slice(0, prefix.lastIndexOf('/') + 1);
}

/** Every namespace a key lies in: "", and the key up to each "/". */
function namespacesOfKey(key: string): string[] {
  const out = [''];
  for (let at = key.indexOf('/'); at >= 0; at = key.indexOf('/', at + 1)) out.push(key.slice(0, at + 1));
  return out;
}

/** PostgreSQL's text holds no NUL: a key with one is refused when it is put, not at the commit. */
function checkedKey(key: string): string {
  if (key.includes('\0')) throw new RangeError(`record key ${JSON.stringify(key)} holds a NUL character`);
  return key;
}

function byKey<T>(a: { key: string } & T, b: { key: string } & T): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

export class WriteTx implements AsyncStoreWriteTx {
  readonly transaction: Transaction;
  private readonly projects = new Map<number, WriteProject>();
  /** Records put (their msgpack) or deleted (null). */
  private readonly records = new Map<string, Buffer | null>();
  private readonly lockedKeys = new Set<number>();
  private readonly lockedNamespaces = new Set<number>();
  /** Signals to send with the commit (pg_notify, delivered once it commits). */
  private readonly signals: Array<{ channel: string; message: string }> = [];

  /**
   * `attempt`: the run of the callback, from 1. A run after the first reads the collection and the
   * journal under the project's collection lock, exclusive: a collector's write whose read of the
   * journal changed (writers journal all the time) is not run again and again.
   */
  constructor(
    private readonly context: StoreContext,
    private readonly attempt = 1,
  ) {
    this.transaction = new Transaction(context.writes);
  }

  project(project: number): WriteProject {
    let tx = this.projects.get(project);
    if (!tx) this.projects.set(project, (tx = new WriteProject(this.context, project, this.transaction, this.attempt > 1, this.attempt > 1)));
    return tx;
  }

  async getRecord<T>(key: string): Promise<T | undefined> {
    const mine = this.records.get(key);
    if (mine !== undefined) return mine === null ? undefined : decodeRecord<T>(mine);
    const stored = await this.transaction.run(async (tx) => {
      const [, value] = await Promise.all([this.lockKeys(tx, [key]), selectRecord(tx, key)]);
      return value;
    });
    return stored === undefined ? undefined : decodeRecord<T>(stored);
  }

  async listRecords<T>(prefix: string, options: RecordRange = {}): Promise<Array<{ key: string; value: T }>> {
    const mine = [...this.records].filter(([key]) => key.startsWith(prefix));
    // Enough of the stored records to fill `limit` whatever this transaction deleted.
    const asked = { ...options, limit: options.limit === undefined ? undefined : options.limit + mine.length };
    const stored = await this.transaction.run(async (tx) => {
      const namespace = lockHash(namespaceOf(prefix));
      const lock = this.lockedNamespaces.has(namespace) ? undefined : tx`SELECT pg_advisory_xact_lock(${RECORD_NAMESPACE_LOCK}::int, ${namespace}::int)`.execute();
      this.lockedNamespaces.add(namespace);
      const [, rows] = await Promise.all([lock, selectRecords(tx, prefix, asked)]);
      return rows;
    });
    const merged = new Map<string, Buffer>(stored.map((row) => [row.key, row.value]));
    for (const [key, value] of mine) {
      if (value) merged.set(key, value);
      else merged.delete(key);
    }
    const after = options.after;
    const keys = [...merged.keys()].filter((key) => after === undefined || (options.reverse ? key < after : key > after)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (options.reverse) keys.reverse();
    return keys.slice(0, options.limit ?? keys.length).map((key) => ({ key, value: decodeRecord<T>(merged.get(key)!) }));
  }

  putRecord<T>(key: string, value: T): void {
    this.records.set(checkedKey(key), encodeRecord(value));
  }

  deleteRecord(key: string): void {
    this.records.set(checkedKey(key), null);
  }

  /** The signals put so far: this node's own listeners hear them at the commit (store.ts). */
  get signalsPut(): ReadonlyArray<{ channel: string; message: string }> {
    return this.signals;
  }

  signal(channel: string, message: string): void {
    if (!SIGNAL_CHANNEL_PATTERN.test(channel)) throw new RangeError(`signal channel ${JSON.stringify(channel)} is not lowercase letters, digits and "_"`);
    if (Buffer.byteLength(message) > SIGNAL_MESSAGE_BYTES_MAX || message.includes('\0')) throw new RangeError(`a signal's message is at most ${SIGNAL_MESSAGE_BYTES_MAX} bytes, without NUL`);
    this.signals.push({ channel, message });
  }

  /** Exclusive locks on records' keys (sorted, so two writers take them in one order). */
  private lockKeys(tx: postgres.TransactionSql, keys: readonly string[]): Promise<unknown> | undefined {
    const hashes = [...new Set(keys.map(lockHash))].filter((hash) => !this.lockedKeys.has(hash)).sort((a, b) => a - b);
    if (hashes.length === 0) return undefined;
    for (const hash of hashes) this.lockedKeys.add(hash);
    return tx`SELECT pg_advisory_xact_lock(${RECORD_KEY_LOCK}::int, h) FROM unnest(${numberArray(hashes)}::int[]) AS h`.execute();
  }

  /**
   * Sends every buffered write and commits. The statements go out together on the transaction's
   * connection (the lock statements first), object bodies a batch at a time.
   */
  async commit(): Promise<CommittedWrites> {
    const projects = [...this.projects.values()];
    // Generations need the parents' entries: read on the read pool, before the transaction sends its writes.
    for (const project of projects) await project.resolveGenerations();
    const writing = projects.filter((project) => project.hasWork());
    const committed: CommittedWrites = { stored: new Map(), objects: [], commits: [], removed: [] };
    if (writing.length > 0 || this.records.size > 0 || this.signals.length > 0) {
      await this.transaction.run(async (tx) => {
        const sent: Array<Promise<unknown>> = [];
        // After one statement fails, those behind it fail as "transaction aborted": the first says why.
        let firstFailure: unknown = null;
        const send = <T>(statement: Promise<T> | undefined): Promise<T> | undefined => {
          if (statement) {
            statement.catch((error: unknown) => (firstFailure ??= error));
            sent.push(statement);
          }
          return statement;
        };
        try {
          this.sendRecords(tx, send);
          // Delivered at the commit whatever their place: sent first, they wait for nothing.
          send(sendSignals(tx, this.context.node, this.signals));
          for (const project of writing) {
            const stored = await project.send(tx, send, committed);
            if (stored.length > 0) committed.stored.set(project.project, stored);
          }
          await Promise.all(sent);
        } catch (error) {
          throw firstFailure ?? error;
        }
      });
    }
    await this.transaction.commit();
    return committed;
  }

  private sendRecords(tx: postgres.TransactionSql, send: <T>(statement: Promise<T> | undefined) => Promise<T> | undefined): void {
    if (this.records.size === 0) return;
    const keys = [...this.records.keys()];
    send(this.lockKeys(tx, keys));
    const namespaces = [...new Set(keys.flatMap(namespacesOfKey).map(lockHash))].sort((a, b) => a - b);
    send(tx`SELECT pg_advisory_xact_lock_shared(${RECORD_NAMESPACE_LOCK}::int, h) FROM unnest(${numberArray(namespaces)}::int[]) AS h`.execute());
    const puts = [...this.records].flatMap(([key, value]) => (value ? [{ key, value }] : [])).sort(byKey);
    const deletes = [...this.records].flatMap(([key, value]) => (value ? [] : [key])).sort();
    send(upsertRecords(tx, puts));
    send(deleteRecords(tx, deletes));
  }

  /** True when it rolled back on a live connection (see Transaction.rollback). */
  rollback(): Promise<boolean> {
    return this.transaction.rollback();
  }
}

interface PendingObject {
  oid: Oid;
  type: ObjectType;
  body: Buffer;
  annex: Buffer | null;
  similarTo: Oid | null;
  nameHash: number | undefined;
}

/** A pack-ready form put in this transaction; its type and size come from the object's row when inserted. */
interface PendingForm {
  oid: Oid;
  deflated: Buffer;
  delta: DeltaForm | null;
}

interface PendingCommit {
  oid: Oid;
  info: Omit<CommitInfo, 'generation'>;
  /** Known once resolveGenerations has run since the commit was put. */
  generation: number | undefined;
}

/** A working tree's move: from what the transaction read (null: absent; 'unread': a blind write), to its last state. */
interface WorkingTreeChange {
  from: WorkingTreeState | null | 'unread';
  to: WorkingTreeState | null;
}

const copy = (buffer: Buffer) => Buffer.from(buffer);
const copyState = (state: WorkingTreeState): WorkingTreeState => ({ tree: copy(state.tree), locks: [...state.locks] });

/** A read of the journal, to be read again at the commit. */
interface JournalRead {
  after: Oid | null;
  limit: number;
  listed: Oid[];
}

type CollectionChange = { begin: CollectionState } | { end: true };

/** A putDeflatedDelta waiting for its flush's read. */
interface DeltaPut {
  oid: Oid;
  delta: DeltaForm;
  deflated: Buffer;
  resolve(kept: boolean): void;
  reject(error: unknown): void;
}

const hexList = (oids: readonly Oid[]) => oids.map((oid) => oid.toString('hex')).join(',');

export class WriteProject extends ProjectReader implements ProjectWrites, PackFormWrites, CollectionWrites {
  private readonly objects = new Map<string, PendingObject>();
  /** Forms put (the first put of an id counts; the insert keeps a stored form). */
  private readonly forms = new Map<string, PendingForm>();
  /** Delta forms a collection rewrites whole (replaceFormWhole), and forms it replaces together (replaceForms). */
  private readonly formsMadeWhole = new Map<string, { oid: Oid; base: Oid; deflated: Buffer }>();
  private readonly formChanges: FormChange[][] = [];
  /** Delta form puts of this turn of the event loop, waiting for their one read (putDeflatedDelta). */
  private deltaPuts: DeltaPut[] | null = null;
  private readonly commits = new Map<string, PendingCommit>();
  private readonly commitLists = new Map<string, { oid: Oid; records: Buffer }>();
  /** Refs moved: from the stored value the first casRef matched, to the last one's. */
  private readonly refs = new Map<string, { from: Oid | null; to: Oid | null }>();
  private readonly workingTrees = new Map<string, WorkingTreeChange>();
  /**
   * Refs and working trees as stored when this transaction read them, under the project's lock:
   * nothing else moves them until it commits, so a second read is answered from here.
   */
  private readonly refsRead = new Map<string, Oid | null>();
  private readonly workingTreesRead = new Map<string, WorkingTreeState | null>();
  /** The project's lock, once asked for: resolves to the stored version. */
  private lock: Promise<number> | null = null;
  /** The project's collection lock, once asked for (statements.ts lockCollection). */
  private collectionLock: { exclusive: boolean; taken: Promise<void> } | null = null;
  /** The version as this transaction sees it, once it bumped it. */
  private version: number | undefined;
  /** Ids the store answered as present (not this transaction's own puts): checked at the commit. */
  private readonly relied = new Map<string, Oid>();
  /** What each read of the collection answered, and the reads of the journal: read again at the commit. */
  private readonly collectionReads: Array<CollectionState | undefined> = [];
  private readonly journalReads: JournalRead[] = [];
  private readonly collectionChanges: CollectionChange[] = [];
  private readonly forgotten = new Map<string, Oid>();
  private readonly removed = new Map<string, Oid>();

  /**
   * `lockedCollectionReads`: reads of the collection and the journal take the project's exclusive
   * lock first; `copyStaged`: a large write's objects are copied through the staging table, which
   * skips stored ids (copyObjects), not straight into the table (both on a run after the first:
   * WriteTx's `attempt`).
   */
  constructor(
    context: StoreContext,
    project: number,
    private readonly transaction: Transaction,
    private readonly lockedCollectionReads = false,
    private readonly copyStaged = false,
  ) {
    super(context, project);
  }

  /** Runs `read` on the transaction after the project's lock (sent together: the lock runs first). */
  private locked<T>(read: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
    return this.transaction.run(async (tx) => {
      const lock = (this.lock ??= lockProject(tx, this.project));
      const [, value] = await Promise.all([lock, read(tx)]);
      return value;
    });
  }

  /** The collection lock, exclusive or at least shared, asked for on the transaction's connection. */
  private lockCollection(tx: postgres.TransactionSql, exclusive: boolean): Promise<void> {
    if (this.collectionLock && (this.collectionLock.exclusive || !exclusive)) return this.collectionLock.taken;
    this.collectionLock = { exclusive, taken: lockCollection(tx, this.project, exclusive) };
    return this.collectionLock.taken;
  }

  /** Whether the commit has anything to send or check for this project. */
  hasWork(): boolean {
    return (
      this.objects.size > 0 ||
      this.commitLists.size > 0 ||
      this.refs.size > 0 ||
      this.workingTrees.size > 0 ||
      this.version !== undefined ||
      this.relied.size > 0 ||
      this.collectionReads.length > 0 ||
      this.journalReads.length > 0 ||
      this.collectionChanges.length > 0 ||
      this.forgotten.size > 0 ||
      this.removed.size > 0 ||
      this.forms.size > 0 ||
      this.formsMadeWhole.size > 0 ||
      this.formChanges.length > 0
    );
  }

  /** Notes the ids of `oids` the store answered as present (`found`), for the commit's check. */
  private rely(oids: readonly Oid[], found: (index: number) => boolean): void {
    oids.forEach((oid, index) => {
      if (!found(index)) return;
      const key = idKey(oid);
      if (!this.relied.has(key)) this.relied.set(key, copy(oid));
    });
  }

  // ---- reads: this transaction's writes first

  override async getObjectsWithAnnex(oids: readonly Oid[]): Promise<Array<AnnexedObject | undefined>> {
    return this.mineOrStored(oids, (object) => ({ type: object.type, body: copy(object.body), annex: object.annex && copy(object.annex) }), (asked) => super.getObjectsWithAnnex(asked));
  }

  override async objectSizes(oids: readonly Oid[]): Promise<Array<number | undefined>> {
    return this.mineOrStored(oids, (object) => object.body.length, (asked) => super.objectSizes(asked));
  }

  override async objectTypes(oids: readonly Oid[]): Promise<Array<ObjectType | undefined>> {
    return this.mineOrStored(oids, (object) => object.type, (asked) => super.objectTypes(asked));
  }

  /**
   * Of each id, what this transaction's own object gives (`mine`), else the store's answer (asked
   * in one read), each "present" answer relied on (checked again at the commit).
   */
  private async mineOrStored<T>(oids: readonly Oid[], mine: (object: PendingObject) => T, stored: (asked: Oid[]) => Promise<Array<T | undefined>>): Promise<Array<T | undefined>> {
    const own = oids.map((oid) => this.objects.get(idKey(oid)));
    const asked = oids.filter((_, index) => !own[index]);
    const answers = await stored(asked);
    this.rely(asked, (index) => answers[index] !== undefined);
    let next = 0;
    return own.map((object) => (object ? mine(object) : answers[next++]));
  }

  override async findObjectsByPrefix(hexPrefix: string, limit: number): Promise<Oid[]> {
    if (!isIdPrefix(hexPrefix) || !(limit >= 1)) return [];
    const found = await super.findObjectsByPrefix(hexPrefix, limit);
    this.rely(found, () => true);
    const { start, end } = oidPrefixRange(hexPrefix);
    const seen = new Set(found.map(idKey));
    for (const { oid } of this.objects.values()) {
      if (oid.compare(start) >= 0 && (end === null || oid.compare(end) < 0) && !seen.has(idKey(oid))) {
        seen.add(idKey(oid));
        found.push(oid);
      }
    }
    return found.sort(Buffer.compare).slice(0, Math.floor(limit)).map(copy);
  }

  override async getCommitInfos(oids: readonly Oid[]): Promise<Array<CommitInfo | undefined>> {
    if (oids.some((oid) => this.commits.has(idKey(oid)))) await this.resolveGenerations();
    const mine = oids.map((oid) => this.commits.get(idKey(oid)));
    const asked = oids.filter((_, index) => !mine[index]);
    const stored = await super.getCommitInfos(asked);
    this.rely(asked, (index) => stored[index] !== undefined);
    let next = 0;
    return mine.map((commit) => (commit ? copyInfo({ ...commit.info, generation: commit.generation! }) : stored[next++]));
  }

  override async getCommitObjects(commit: Oid): Promise<Buffer | undefined> {
    const mine = this.commitLists.get(idKey(commit));
    if (mine) return copy(mine.records);
    const stored = await super.getCommitObjects(commit);
    this.rely([commit], () => stored !== undefined);
    return stored;
  }

  override async getRef(name: string): Promise<Oid | undefined> {
    const mine = this.refs.get(name);
    if (mine) return mine.to ? copy(mine.to) : undefined;
    const read = this.refsRead.get(name);
    if (read !== undefined) return read ? copy(read) : undefined;
    const stored = await this.locked((tx) => selectRef(tx, this.project, name));
    this.refsRead.set(name, stored ? copy(stored) : null);
    return stored;
  }

  override async listRefs(prefix: string): Promise<Array<{ name: string; oid: Oid }>> {
    const refs = new Map((await this.locked((tx) => selectRefs(tx, this.project, prefix))).map((ref) => [ref.name, ref.oid]));
    for (const [name, { to }] of this.refs) {
      if (!name.startsWith(prefix)) continue;
      if (to) refs.set(name, copy(to));
      else refs.delete(name);
    }
    // In the stored order: by the names' bytes.
    return [...refs].map(([name, oid]) => ({ name, oid, key: nameBytes(name) })).sort((a, b) => Buffer.compare(a.key, b.key)).map(({ name, oid }) => ({ name, oid }));
  }

  override async getWorkingTree(branch: string): Promise<WorkingTreeState | undefined> {
    const mine = this.workingTrees.get(branch);
    if (mine) return mine.to ? copyState(mine.to) : undefined;
    const read = this.workingTreesRead.get(branch);
    if (read !== undefined) return read ? copyState(read) : undefined;
    const stored = await this.locked((tx) => selectWorkingTree(tx, this.project, branch));
    this.workingTreesRead.set(branch, stored ? copyState(stored) : null);
    return stored;
  }

  override async getVersion(): Promise<number> {
    if (this.version !== undefined) return this.version;
    await this.locked(async () => undefined);
    return this.lock!;
  }

  /**
   * Reads of the collection and the journal: on the transaction's connection, and read again at the
   * commit (one that changed runs the callback again). The first run takes no lock for them (a
   * callback may wait for a collector's write that waits for such a lock); a run after it takes
   * the exclusive collection lock first, so what it reads cannot change before it commits.
   */
  private collectionRead<T>(read: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
    if (!this.lockedCollectionReads) return this.transaction.run(read);
    return this.transaction.run(async (tx) => {
      const [, value] = await Promise.all([this.lockCollection(tx, true), read(tx)]);
      return value;
    });
  }

  override async getCollection(): Promise<CollectionState | undefined> {
    const state = await this.collectionRead((tx) => selectCollection(tx, this.project));
    this.collectionReads.push(state && { ...state });
    return state;
  }

  override async listJournal(after: Oid | null, limit: number): Promise<Oid[]> {
    const rows = limit >= 1 ? Math.floor(Math.min(limit, Number.MAX_SAFE_INTEGER)) : 0;
    if (rows === 0) return [];
    const listed = await this.collectionRead((tx) => selectJournal(tx, this.project, after, rows));
    this.journalReads.push({ after: after && copy(after), limit: rows, listed: listed.map(copy) });
    return listed;
  }

  // ---- writes, buffered

  putObject(type: ObjectType, body: Buffer, annex?: Buffer, similarTo?: Oid | null, nameHash?: number): Oid {
    const oid = hashObject(type, body);
    this.keepObject(oid, type, body, annex, similarTo ?? null, nameHash);
    return oid;
  }

  putObjectWithId(oid: Oid, type: ObjectType, body: Buffer, annex?: Buffer): void {
    this.keepObject(copy(oid), type, body, annex, null, undefined);
  }

  /** Body and annex are the transaction's until it ends (asyncTypes.ts): kept as given. */
  private keepObject(oid: Oid, type: ObjectType, body: Buffer, annex: Buffer | undefined, similarTo: Oid | null, nameHash: number | undefined): void {
    const key = idKey(oid);
    // A stored id keeps its first copy, in the buffer as in the database.
    if (this.objects.has(key)) return;
    this.objects.set(key, { oid, type, body, annex: annex ?? null, similarTo: similarTo && !similarTo.equals(oid) ? copy(similarTo) : null, nameHash });
    if (type === 'commit') this.commits.set(key, { oid, info: commitInfoFromBody(body), generation: undefined });
  }

  async casRef(name: string, expected: Oid | null, next: Oid | null): Promise<void> {
    const current = (await this.getRef(name)) ?? null;
    const matches = expected === null ? current === null : current !== null && current.equals(expected);
    if (!matches) throw new RefChangedError(name, current);
    const moved = this.refs.get(name);
    if (moved) moved.to = next && copy(next);
    else this.refs.set(name, { from: current, to: next && copy(next) });
  }

  putCommitObjects(commit: Oid, records: Buffer): void {
    if (records.length % OBJECT_RECORD_BYTES !== 0) throw new Error(`a commit's object list of ${records.length} bytes is not whole records`);
    this.commitLists.set(idKey(commit), { oid: copy(commit), records: copy(records) });
  }

  putWorkingTree(branch: string, state: WorkingTreeState): void {
    this.moveWorkingTree(branch, copyState(state));
  }

  deleteWorkingTree(branch: string): void {
    this.moveWorkingTree(branch, null);
  }

  private moveWorkingTree(branch: string, to: WorkingTreeState | null): void {
    const moved = this.workingTrees.get(branch);
    if (moved) moved.to = to;
    else this.workingTrees.set(branch, { from: this.workingTreesRead.has(branch) ? this.workingTreesRead.get(branch)! : 'unread', to });
  }

  async bumpVersion(): Promise<number> {
    this.version = (await this.getVersion()) + 1;
    return this.version;
  }

  // ---- garbage collection's writes (src/store/asyncTypes.ts CollectionWrites), sent at the commit

  beginCollection(state: CollectionState): void {
    this.collectionChanges.push({ begin: { id: state.id, startedAt: state.startedAt } });
  }

  endCollection(): void {
    this.collectionChanges.push({ end: true });
  }

  forgetJournal(oids: readonly Oid[]): void {
    for (const oid of oids) this.forgotten.set(idKey(oid), copy(oid));
  }

  removeStored(oids: readonly Oid[]): void {
    for (const oid of oids) this.removed.set(idKey(oid), copy(oid));
  }

  replaceFormWhole(oid: Oid, base: Oid, deflated: Buffer): void {
    this.formsMadeWhole.set(idKey(oid), { oid: copy(oid), base: copy(base), deflated: copy(deflated) });
  }

  /**
   * Every object keeps its raw copy on this backend (its forms sit beside it: README "PostgreSQL"),
   * so none is dropped: each is kept as compactly as this backend keeps anything.
   */
  keepCompact(): void {}

  replaceForms(changes: readonly FormChange[]): void {
    if (changes.length === 0) return;
    this.formChanges.push(
      changes.map((change) => ({
        oid: copy(change.oid),
        was: { base: change.was.base && copy(change.was.base), depth: change.was.depth },
        form: { deflated: copy(change.form.deflated), ...(change.form.delta ? { delta: { ...change.form.delta, base: copy(change.form.delta.base) } } : {}) },
      })),
    );
  }

  // ---- pack-ready forms (src/store/asyncTypes.ts PackFormWrites), sent at the commit

  /**
   * The stored forms (relied on as any object read as present is: checked again at the commit),
   * else this transaction's (with the type and size of their object, put here or stored; a form
   * put for an object stored nowhere is none): a stored form is never replaced by a put.
   */
  override async getDeflated(oids: readonly Oid[]): Promise<Array<DeflatedObject | undefined>> {
    if (oids.length === 0) return [];
    const stored = await super.getDeflated(oids);
    this.rely(oids, (index) => stored[index] !== undefined);
    const mine = oids.map((oid, index) => (stored[index] ? undefined : this.forms.get(idKey(oid))));
    const unknown = mine.filter((form): form is PendingForm => form !== undefined && !this.objects.has(idKey(form.oid)));
    const kinds = unknown.length > 0 ? await mapped(() => selectObjectKinds(this.context.reads, this.project, unknown.map((form) => form.oid))) : new Map<string, { type: number; size: number }>();
    this.rely(unknown.map((form) => form.oid), (index) => kinds.has(idKey(unknown[index].oid)));
    return mine.map((form, index) => {
      if (!form) return stored[index];
      const object = this.objects.get(idKey(form.oid));
      const kind = object ? { type: object.type, size: object.body.length } : kinds.get(idKey(form.oid)) && { type: typeFromCode(kinds.get(idKey(form.oid))!.type), size: kinds.get(idKey(form.oid))!.size };
      if (!kind) return undefined;
      return copyForm({ type: kind.type, inflatedBytes: kind.size, deflated: form.deflated, ...(form.delta ? { delta: form.delta } : {}) });
    });
  }

  /** Kept as given (the transaction's until it ends); the insert skips an object that has a form or is not stored. */
  putDeflated(oid: Oid, deflated: Buffer): void {
    const key = idKey(oid);
    if (!this.forms.has(key)) this.forms.set(key, { oid: copy(oid), deflated, delta: null });
  }

  /**
   * Puts made in one turn of the event loop are checked together: one read of their forms and
   * their bases' and one of their sizes, where each took a round trip of its own (the deflate
   * cache puts a batch's deltas at once: some 140 statements after a 100-file commit). They are
   * settled in the order they were made, each seeing the forms the ones before it kept.
   */
  putDeflatedDelta(oid: Oid, delta: DeltaForm, deflated: Buffer): Promise<boolean> {
    // A form put here already, or stored (read at the flush), is kept.
    if (oid.equals(delta.base) || this.forms.has(idKey(oid))) return Promise.resolve(false);
    return new Promise((resolve, reject) => {
      if (this.deltaPuts === null) {
        this.deltaPuts = [];
        queueMicrotask(() => void this.checkDeltaPuts());
      }
      this.deltaPuts.push({ oid, delta, deflated, resolve, reject });
    });
  }

  private async checkDeltaPuts(): Promise<void> {
    const puts = this.deltaPuts!;
    this.deltaPuts = null;
    let forms: Array<DeflatedObject | undefined>;
    let sizes: Array<number | undefined>;
    try {
      [forms, sizes] = await Promise.all([this.getDeflated(puts.flatMap((put) => [put.oid, put.delta.base])), this.objectSizes(puts.map((put) => put.oid))]);
    } catch (error) {
      for (const put of puts) put.reject(error);
      return;
    }
    /** The depth of each form a put before it in this flush kept. */
    const keptDepths = new Map<string, number>();
    puts.forEach(({ oid, delta, deflated, resolve }, index) => {
      const key = idKey(oid);
      const own = forms[index * 2];
      const baseDepth = forms[index * 2 + 1] ? (forms[index * 2 + 1]!.delta?.depth ?? 0) : keptDepths.get(idKey(delta.base));
      // Another put of the same id came first (in this flush or meanwhile): the first one counts.
      if (own || baseDepth === undefined || sizes[index] === undefined || baseDepth + 1 !== delta.depth || this.forms.has(key)) return resolve(false);
      this.forms.set(key, { oid: copy(oid), deflated, delta: { base: copy(delta.base), bytes: delta.bytes, depth: delta.depth } });
      keptDepths.set(key, delta.depth);
      resolve(true);
    });
  }

  async putObjectAsForm(oid: Oid, type: ObjectType, inflatedBytes: number, form: { deflated: Buffer; delta?: DeltaForm }): Promise<boolean> {
    const entry: ReceivedForm = { oid, type, inflatedBytes, deflated: form.deflated, delta: form.delta ? { base: form.delta.base, bytes: form.delta.bytes } : null };
    const [kept] = await this.storeAsForms([entry], form.delta ? { depth: form.delta.depth } : { depth: 0 });
    return kept;
  }

  putObjectsAsForms(entries: readonly ReceivedForm[], depthMax: number): Promise<boolean[]> {
    return this.storeAsForms(entries, { depthMax });
  }

  /**
   * Received entries, each stored with its raw copy (every object keeps one here) and its form
   * beside it: the body the caller gave, or rebuilt from the entry (inflated, and applied to its
   * base's body for a delta). A delta is kept on a base that has a form (put here or stored) at 1 +
   * the base's depth, which must be `limit.depth` when given, or at most `limit.depthMax`. Ids
   * stored already answer true and keep what they have.
   */
  private async storeAsForms(entries: readonly ReceivedForm[], limit: { depth: number } | { depthMax: number }): Promise<boolean[]> {
    for (const entry of entries) {
      if (entry.type !== 'tree' && entry.type !== 'blob') throw new Error(`a ${entry.type} is not stored as its pack-ready form alone`);
    }
    const own = new Set(entries.map((entry) => idKey(entry.oid)));
    const outside = [...new Map(entries.flatMap((entry) => (entry.delta && !own.has(idKey(entry.delta.base)) ? [[idKey(entry.delta.base), entry.delta.base] as const] : []))).values()];
    const [sizes, outsideForms] = await Promise.all([this.objectSizes(entries.map((entry) => entry.oid)), this.getDeflated(outside)]);
    const depths = new Map<string, number>();
    outside.forEach((base, index) => outsideForms[index] && depths.set(idKey(base), outsideForms[index]!.delta?.depth ?? 0));
    const answers: boolean[] = [];
    for (const [index, entry] of entries.entries()) {
      const key = idKey(entry.oid);
      if (sizes[index] !== undefined || this.objects.has(key)) {
        answers.push(true);
        continue;
      }
      let depth = 0;
      let baseBody: Buffer | undefined;
      if (entry.delta) {
        const baseKey = idKey(entry.delta.base);
        const baseDepth = baseKey === key ? undefined : depths.get(baseKey);
        depth = (baseDepth ?? Infinity) + 1;
        const fits = 'depth' in limit ? depth === limit.depth : depth <= limit.depthMax;
        if (baseDepth === undefined || !fits) {
          answers.push(false);
          continue;
        }
        if (!entry.body) baseBody = this.objects.get(baseKey)?.body ?? (await this.getObjects([entry.delta.base]))[0]?.body;
        if (!entry.body && !baseBody) {
          answers.push(false);
          continue;
        }
      }
      const data = entry.body ? null : inflateSync(entry.deflated);
      const body = entry.body ?? (baseBody ? applyDelta(baseBody, data!) : data!);
      this.keepObject(copy(entry.oid), entry.type, body, undefined, null, undefined);
      this.forms.set(key, { oid: copy(entry.oid), deflated: entry.deflated, delta: entry.delta && { base: copy(entry.delta.base), bytes: entry.delta.bytes, depth } });
      depths.set(key, depth);
      answers.push(true);
    }
    return answers;
  }

  /**
   * Generations of the commits put in this transaction: 1 + the largest of their parents', from
   * commits put here (in whatever order they were put) or stored; a parent in neither (a shallow
   * boundary) counts as generation 1, as the LMDB backend counts it. A walk with an explicit stack
   * (a history pushed in one transaction is thousands of commits deep), each commit resolved once.
   */
  async resolveGenerations(): Promise<void> {
    const pending = [...this.commits.values()].filter((commit) => commit.generation === undefined);
    if (pending.length === 0) return;
    const outside = pending.flatMap((commit) => commit.info.parents.filter((parent) => !this.commits.has(idKey(parent))));
    const known = new Map<string, number>();
    const infos = await super.getCommitInfos(outside);
    // A stored parent is relied on as any object read as present is.
    this.rely(outside, (index) => infos[index] !== undefined);
    outside.forEach((oid, index) => infos[index] && known.set(idKey(oid), infos[index].generation));
    for (const start of pending) {
      if (start.generation !== undefined) continue;
      const stack = [start];
      const onStack = new Set([start]);
      while (stack.length > 0) {
        const top = stack[stack.length - 1];
        const unresolved = top.info.parents.map((parent) => this.commits.get(idKey(parent))).find((parent) => parent && parent.generation === undefined && !onStack.has(parent));
        if (unresolved) {
          stack.push(unresolved);
          onStack.add(unresolved);
          continue;
        }
        let generation = 1;
        for (const parent of top.info.parents) {
          // A parent on the stack (ids that loop, which no real history has) counts as unknown.
          const parentGeneration = this.commits.get(idKey(parent))?.generation ?? known.get(idKey(parent));
          generation = Math.max(generation, (parentGeneration ?? 1) + 1);
        }
        top.generation = generation;
        stack.pop();
        onStack.delete(top);
      }
    }
  }

  /**
   * Sends this project's writes and checks on the transaction, in this order: the project's lock
   * when refs, working trees or the version move, and its collection lock (exclusive when the
   * collection begins or ends here), then whether a collection runs (a statement of its own, so it
   * reads what was committed once the lock was held); the check of the ids read as present
   * (locking them while a collection runs); the compare-and-swaps; removals, then the journal read
   * again, then forgotten journal entries and the collection's beginning or end; the objects, by
   * COPY for a large write, else in batches one after the other (a batch's bodies are in memory
   * twice while it is sent), the commit index and
   * the commits' object lists after the commits they need; then the journal entries of this write.
   * Answers the objects the database did not have; notes what the caches take after the commit.
   */
  async send(tx: postgres.TransactionSql, send: <T>(statement: Promise<T> | undefined) => Promise<T> | undefined, committed: CommittedWrites): Promise<NewObject[]> {
    const keyed = this.refs.size > 0 || this.workingTrees.size > 0 || this.version !== undefined;
    if (keyed) send((this.lock ??= lockProject(tx, this.project)));
    send(this.lockCollection(tx, this.collectionChanges.length > 0));
    const runningRead = send(selectCollection(tx, this.project))!;
    const conflicts: Array<Promise<string | null>> = [];
    // A check's answer is awaited at the end; a statement that fails before then (a lost
    // connection) fails the write there, so the check's own rejection must not count as unhandled.
    const check = (answer: Promise<string | null>): void => {
      answer.catch(() => undefined);
      conflicts.push(answer);
    };
    // Nearly every write finds no collection running: on its first run, one that neither reads nor
    // changes the collection sends the rest as if none ran, together with the read that says so,
    // instead of a round trip later. Should one run, the write is rolled back and runs again (a run
    // after the first always waits for the answer), and the project's next writes on this node wait
    // for it until one finds none running.
    const collectingSeen = this.context.collecting;
    const assumeNone = !this.lockedCollectionReads && this.collectionChanges.length === 0 && this.collectionReads.length === 0 && this.journalReads.length === 0 && !collectingSeen.has(this.project);
    let running: CollectionState | undefined;
    if (assumeNone) {
      check(
        runningRead.then((state) => {
          if (state === undefined) return null;
          collectingSeen.add(this.project);
          return 'a collection began';
        }),
      );
    } else {
      running = await runningRead;
      if (running === undefined) collectingSeen.delete(this.project);
      else collectingSeen.add(this.project);
    }
    if (this.collectionReads.some((read) => !isDeepStrictEqual(read, running))) conflicts.push(Promise.resolve('the collection began or ended'));
    const last = this.collectionChanges[this.collectionChanges.length - 1];
    // Whether this write journals: a collection runs once it commits (LMDB's journals from a beginning in the same write on, too).
    const collecting = last ? 'begin' in last : running !== undefined;
    const locking = running !== undefined || collecting;

    const relied = [...this.relied].filter(([key]) => !this.objects.has(key)).map(([, oid]) => oid);
    if (relied.length > 0) {
      const present = send(selectPresentIds(tx, this.project, relied, locking))!;
      check(present.then((found) => this.gone(relied, found)));
    }

    // Values working trees written blind had, journalled while a collection runs (read under the project's lock).
    const blindTrees: Array<Promise<WorkingTreeState | undefined>> = [];
    if (collecting) for (const [branch, { from }] of this.workingTrees) if (from === 'unread') blindTrees.push(send(selectWorkingTree(tx, this.project, branch))!);
    const swaps: Array<Promise<boolean>> = [];
    for (const [name, { from, to }] of this.refs) swaps.push(send(swapRef(tx, this.project, name, from, to))!);
    for (const [branch, { from, to }] of this.workingTrees) swaps.push(send(swapWorkingTree(tx, this.project, branch, from, to))!);
    if (this.version !== undefined) {
      const to = this.version;
      swaps.push(send(this.lock!.then((from) => swapVersion(tx, this.project, from, to)))!);
    }

    const removed = [...this.removed.values()];
    if (removed.length > 0) send(deleteStored(tx, this.project, removed));
    // After the removals, which waited for the writers that had locked a removed row: their journal entries are read here.
    for (const read of this.journalReads) {
      const again = send(selectJournal(tx, this.project, read.after, read.limit))!;
      check(again.then((listed) => (hexList(listed) === hexList(read.listed) ? null : 'the journal changed')));
    }
    if (this.forgotten.size > 0) send(deleteJournal(tx, this.project, [...this.forgotten.values()]));
    for (const change of this.collectionChanges) send('begin' in change ? upsertCollection(tx, this.project, change.begin) : deleteCollection(tx, this.project));

    const objects: ObjectToInsert[] = [...this.objects.values()]
      .sort((a, b) => Buffer.compare(a.oid, b.oid))
      .map((object) => ({ oid: object.oid, type: TYPE_CODES[object.type], body: object.body, annex: object.annex }));
    // The statements of one connection run in the order sent, so none waits for the one before
    // (the commit index before the object lists that need it). The driver encodes each object batch
    // on the event loop, which gets a turn between batches; while the server inserts one batch the
    // next is encoded, up to OBJECT_BATCHES_IN_FLIGHT sent and not yet answered.
    const objectBytes = objects.reduce((sum, object) => sum + object.body.length + (object.annex?.length ?? 0), 0);
    const copying = objectBytes >= COPY_BYTES_MIN || objects.length >= COPY_ROWS_MIN;
    const batches = copying ? [] : objectInsertBatches(objects);
    const insertedBatches: Array<Promise<Oid[]>> = [];
    // A large write's objects go by COPY, which nothing may follow on the connection until it is sent.
    if (copying && !this.copyStaged) {
      // Straight into the table, the objects not stored when looked at under the collection lock
      // (where the insert statements skip stored ids); one stored meanwhile fails the COPY, and the
      // write runs again with the staged COPY.
      const present = await send(selectPresentIds(tx, this.project, objects.map((object) => object.oid), false))!;
      const absent = objects.filter((object) => !present.has(idKey(object.oid)));
      insertedBatches.push(Promise.resolve(await send(copyObjectsDirect(tx, this.project, absent))!));
    } else if (copying) insertedBatches.push(send((await send(copyObjects(tx, this.project, objects))!).inserted)!);
    for (const [index, batch] of batches.entries()) {
      insertedBatches.push(send(insertObjects(tx, this.project, batch))!);
      if (index === batches.length - 1) break;
      if (insertedBatches.length >= OBJECT_BATCHES_IN_FLIGHT) await insertedBatches[insertedBatches.length - OBJECT_BATCHES_IN_FLIGHT];
      await new Promise((resolve) => setImmediate(resolve));
    }
    // After the objects they belong to, bases before their deltas (a statement per depth), then
    // what a collection rewrites. Paced as the objects are: the driver encodes each batch on the event loop.
    const deltasFormed: Array<Promise<Oid[]>> = [];
    const formsSent: Array<Promise<Oid[]>> = [];
    for (const batch of formInsertBatches([...this.forms.values()])) {
      if (formsSent.length > 0) await new Promise((resolve) => setImmediate(resolve));
      if (formsSent.length >= OBJECT_BATCHES_IN_FLIGHT) await formsSent[formsSent.length - OBJECT_BATCHES_IN_FLIGHT];
      const inserted = send(insertForms(tx, this.project, batch))!;
      formsSent.push(inserted);
      if (batch[0].delta) deltasFormed.push(inserted);
    }
    if (this.formsMadeWhole.size > 0) send(replaceFormsWhole(tx, this.project, [...this.formsMadeWhole.values()]));
    for (const changes of this.formChanges) send(replaceFormsTogether(tx, this.project, changes));
    const commits = [...this.commits.values()].map((commit) => ({ oid: commit.oid, info: { ...commit.info, generation: commit.generation! } }));
    const commitsSent = commits.length > 0 ? send(insertCommits(tx, this.project, commits)) : undefined;
    // Commits of more than one statement: the later ones go out once the first is answered, so the
    // lists wait for all of them.
    if (commits.length > IDS_PER_STATEMENT_MAX) await commitsSent;
    const lists = [...this.commitLists.values()];
    const listsSent = lists.length > 0 ? send(upsertCommitObjects(tx, this.project, lists)) : undefined;
    const inserted = (await Promise.all(insertedBatches)).flat();
    const news = new Set(inserted.map(idKey));
    if (locking) {
      // Put, but stored already: relied on as a read's "present" is, and locked so a sweep waits.
      const kept = objects.filter((object) => !news.has(idKey(object.oid))).map((object) => object.oid);
      if (kept.length > 0) check(send(selectPresentIds(tx, this.project, kept, true))!.then((found) => this.gone(kept, found)));
    }
    await commitsSent;
    if (listsSent) {
      const indexed = await listsSent;
      const unstored = lists.find((list) => !indexed.has(idKey(list.oid)));
      if (unstored) throw new Error(`commit ${unstored.oid.toString('hex')} is not stored: its object list cannot be indexed`);
    }
    const formedDeltas = (await Promise.all(deltasFormed)).flat();
    if (collecting) {
      // An object that got a delta form is journalled too: its base must stay while it needs it.
      const journalled = [...inserted, ...formedDeltas];
      for (const { from, to } of this.refs.values()) journalled.push(...[from, to].filter((oid): oid is Oid => oid !== null));
      for (const { from, to } of this.workingTrees.values()) {
        if (from && from !== 'unread') journalled.push(from.tree);
        if (to) journalled.push(to.tree);
      }
      for (const state of await Promise.all(blindTrees)) if (state) journalled.push(state.tree);
      if (journalled.length > 0) await send(insertJournal(tx, this.project, journalled));
    }
    const conflict = (await Promise.all(conflicts)).find((reason) => reason !== null);
    if (conflict) throw new WriteConflict(`${conflict} in project ${this.project} since this write read it`);
    if ((await Promise.all(swaps)).some((swapped) => !swapped)) throw new WriteConflict(`a ref, working tree or the version of project ${this.project} moved outside its lock`);

    if (removed.length > 0) committed.removed.push({ project: this.project, oids: removed });
    const stored: NewObject[] = [];
    for (const object of this.objects.values()) {
      const key = idKey(object.oid);
      if (!news.has(key)) continue;
      stored.push(object.nameHash === undefined ? { oid: object.oid, similarTo: object.similarTo } : { oid: object.oid, similarTo: object.similarTo, nameHash: object.nameHash });
      if (object.type !== 'blob' && object.body.length <= CACHED_AFTER_WRITE_BYTES_MAX) {
        committed.objects.push({ project: this.project, oid: object.oid, object: { type: object.type, body: copy(object.body), annex: object.annex && copy(object.annex) } });
      }
    }
    for (const commit of commits) committed.commits.push({ project: this.project, oid: commit.oid, info: copyInfo(commit.info) });
    return stored;
  }

  /**
   * Null when every id of `oids` is in `found`; else the reason to run the callback again, once
   * this node's caches have forgotten the ids that are gone (a run again must not find them there).
   */
  private gone(oids: readonly Oid[], found: Set<string>): string | null {
    const missing = oids.filter((oid) => !found.has(idKey(oid)));
    if (missing.length === 0) return null;
    this.context.objects.forget(this.project, missing);
    this.context.commits.forget(this.project, missing);
    return `${missing.length} object(s) read as present were removed`;
  }
}
