/**
 * The LMDB backend: one environment holding every project, in ten named databases.
 *
 * | database  | key                                  | value                                          |
 * |-----------|--------------------------------------|------------------------------------------------|
 * | objects   | project u32 BE + 20-byte id          | type code u8 + the raw object body (see below) |
 * | commits   | project u32 BE + 20-byte id          | tree id, generation u32, time f64, parent ids  |
 * | refs      | project u32 BE + ref name (UTF-8)    | 20-byte id                                     |
 * | worktrees | project u32 BE + branch + NUL        | msgpack {t: tree id, l: locked paths (below)}  |
 * | records   | string                               | msgpack (teams, keys, projects, counters)      |
 * | packed    | project u32 BE + 20-byte id          | pack-ready form: whole or delta (see below), or a pointer into a shelf |
 * | shelves   | project u32 BE + 8-byte random id    | pack-ready forms, concatenated (see SHELF_POINTER) |
 * | introduced| project u32 BE + 20-byte id          | the commit's object list (src/git/introducedObjects.ts) |
 * | gcjournal | project u32 BE + 20-byte id          | one byte: an id journalled while a garbage collection runs |
 * | recent    | sequence number (8 bytes BE)         | an `objects` key and value: a small write's new object, until moved (recentObjects.ts) |
 *
 * Object bodies are stored raw: hashing them is the only work on the write path. Their deflated form
 * is filled in after the write, off the request path (src/service/deflateCache.ts), so a clone
 * copies pack-ready bytes instead of compressing every object while the client waits.
 * A pack-ready form is the type code u8, the body size u32 BE and the body as a zlib stream; or, for
 * a delta, the type code with DELTA_FLAG, the body size u32 BE, the delta's size u32 BE, the chain
 * depth u8, the base's 20-byte id and the delta as a zlib stream.
 * A tree or blob that came in a pack may be kept as its pack-ready form alone, with no entry in
 * `objects` (putObjectAsForm): reads rebuild it (inflating, applying its delta chain), through a
 * cache of rebuilt bodies, so a history stored this way takes about the room git's pack does.
 * An object stored with an annex (ProjectWriteTx.putObject) has ANNEX_FLAG in its type code, then
 * the body length (u32 BE), the body and the annex, so one read returns both.
 * The project prefix keeps each project's keys contiguous, so dropping a project is a range delete.
 * A locked path is a msgpack string, or its bytes (msgpack bin) when they are not UTF-8: msgpack
 * would write the escapes of src/git/pathBytes.ts as U+FFFD and lose the name.
 */
import { randomBytes } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { open, type Database, type RootDatabase } from 'lmdb';
import { applyDelta } from '../git/delta.js';
import { OidTable } from '../git/oidTable.js';
import { OBJECT_RECORD_BYTES } from '../git/introducedObjects.js';
import { hashObject, type ObjectType, type Oid, OID_BYTES } from '../git/oid.js';
import { decodePath, encodePath, isUtf8Path } from '../git/pathBytes.js';
import {
  RefChangedError,
  StorageFullError,
  type CommitInfo,
  type CollectionState,
  type AnnexedObject,
  type DeflatedObject,
  type DeltaForm,
  type FormChange,
  type NewObject,
  type ShelvedForm,
  type RepackedTable,
  type ProjectReadTx,
  type ProjectWriteTx,
  type Store,
  type StoreReadTx,
  type StoreWriteTx,
  type ListedEntry,
  type StoredEntry,
  type StoredObject,
  type WorkingTreeState,
} from './types.js';
import { decodeCommitInfo, encodeCommitInfo, commitInfoFromBody } from './commitIndex.js';
import { LmdbAsyncStore, RAW_REMOVED_SINCE_REPACK_PREFIX, REMOVED_SINCE_REPACK_PREFIX } from './lmdbAsync.js';
import { HeldForms, type HeldCommit, type HeldForm } from './heldForms.js';
import { LruCache } from './lruCache.js';
import { RecentObjects } from './recentObjects.js';
import type { ObjectCursor, UndeflatedPage } from './asyncTypes.js';

const PROJECT_PREFIX_BYTES = 4;
const TYPE_CODES: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };
const TYPE_NAMES: ObjectType[] = ['commit', 'commit', 'tree', 'blob', 'tag'];
const NUL = 0;
/**
 * Puts unless the key exists (MDB_NOOVERWRITE), in one descent of the B-tree; false when it existed.
 * lmdb-js returns that boolean from putSync inside a transaction, though its types say void.
 */
function putIfAbsent(db: Database<Buffer, Buffer>, key: Buffer, value: Buffer): boolean {
  const putSync = db.putSync as (this: typeof db, key: Buffer, value: Buffer, options: { noOverwrite: boolean }) => unknown;
  return putSync.call(db, key, value, { noOverwrite: true }) === true;
}
const VERSION_RECORD_PREFIX = 'project-version/';
/** The garbage collection under way per project (CollectionState), read by every write that journals. */
const COLLECTION_RECORD_PREFIX = 'gc-collection/';
/** How many collections of a project have begun (collectionsBegun), under this prefix and its number. */
const COLLECTIONS_BEGUN_PREFIX = 'gc-begun/';
/** The value of a journal entry: its key says it all. */
const JOURNALLED = Buffer.of(1);
/** Journal entries endCollection removes in its own transaction; a collector forgets the rest as it goes. */
const JOURNAL_CLEAR_MAX = 10_000;
const STORE_FORMAT_RECORD = 'store-format';
const STORE_FORMAT = 4;
/**
 * Formats this build reads and upgrades by writing the new format record (format 3 added shelves,
 * format 4 the log of recent objects, which a build before it would not read).
 */
const STORE_FORMATS_UPGRADED = new Set([2, 3]);
/**
 * A write's new objects go to the log of recent objects (recentObjects.ts) up to this many and
 * these many bytes of values; the rest go to `objects` at once (a large write dirties each page
 * once anyway). So does any value too large for a node of a 4 KB leaf page: LMDB keeps it on
 * overflow pages of its own, written whole wherever its key is, so the log would save one leaf
 * and cost a copy, and freeing its pages at the move grows the free list that every later
 * overflow allocation searches (with 4 KB blobs logged too, 100-file commits went 10-15 % slower).
 */
const RECENT_PER_WRITE_MAX = 1024;
const RECENT_PER_WRITE_BYTES_MAX = 1024 * 1024;
const RECENT_VALUE_BYTES_MAX = 1900;
/**
 * The log is moved into `objects` while no write comes: once no write has started for
 * RECENT_IDLE_MS, in writes of RECENT_MOVE_BATCH entries, each looking again whether a write came.
 * A move is about as costly as the random puts it saves a write (each entry dirties a page), so
 * it is done where nobody waits for it: moved back to back, 512 entries a write, under a stream of
 * 100-file commits, the commits' median went from 27-29 ms to 31-38 ms.
 */
const RECENT_IDLE_MS = 50;
const RECENT_MOVE_BATCH = 256;
/** Past this many entries (writes that never pause) new objects go to `objects` until the log is moved. */
const RECENT_LOG_MAX = 8192;
/** Type byte and inflated size (u32 BE) before the zlib stream in the packed cache. */
const PACKED_HEADER_BYTES = 5;
/** In a pack-ready form's type byte: the stream is a delta. */
const DELTA_FLAG = 0x80;
/** A delta form's header: type, body size, delta size, depth, base id. */
const PACKED_DELTA_HEADER_BYTES = PACKED_HEADER_BYTES + 4 + 1 + OID_BYTES;
/** A delta form's depth is one byte; the repo layer keeps chains far shorter (git's default: 50). */
const PACKED_DEPTH_MAX = 255;
/**
 * Object values up to this size are assembled (type byte + body) in one reused buffer instead of a
 * fresh allocation per object: inside a write transaction lmdb-js copies the value into LMDB's page
 * before putSync returns, so the buffer is free again at once. An import of 100,000 files otherwise
 * allocates (and the GC reclaims) a second copy of every file. Larger values get their own buffer.
 */
const VALUE_SCRATCH_BYTES = 1024 * 1024;
/** Bytes of bodies rebuilt from pack-ready forms kept for the next reads (the bases of later versions, mostly). */
const REBUILT_CACHE_BYTES = 64 * 1024 * 1024;
/** A rebuilt body larger than this is not cached (it would push out everything else). */
const REBUILT_CACHE_ENTRY_BYTES_MAX = 8 * 1024 * 1024;
/**
 * Objects stored as their pack entries alone (putObjectAsForm: a seed's or a push's trees and
 * blobs) are kept in shelves: a write transaction's forms of one project, in the order they came
 * (a pack's order, so a clone or a walk reads them in about that order again), concatenated into
 * one value of the `shelves` database of at most SHELF_BYTES_MAX, with a SHELF_POINTER value in
 * `packed` per form (the shelf's id, the form's offset and length). LMDB keeps a 4 KB B-tree page
 * of random keys about two thirds full, plus a node header per value: a history's 43,000 forms of
 * 200 bytes each took 16 MB of pages for 8.6 MB of forms; a shelf is written once, whole, on pages
 * of its own. A transaction that puts fewer than SHELF_ENTRIES_MIN forms for a project keeps them
 * as values of their own (unless it has filled a shelf already, or their pointers are held for a
 * seed: src/store/heldForms.ts), and so does a form larger than SHELF_VALUE_BYTES_MAX (its own
 * overflow pages waste little). The deflate cache's forms (putDeflated*) stay values of their own:
 * it may fill them in any order (a restart catches up in id order), and a shelf of unrelated
 * objects would make every read of a walk load another shelf. A seed's commits are the exception:
 * their pack entries are shelved in the order the seed stores them (parents first).
 */
const SHELF_POINTER = 0;
const SHELF_ID_BYTES = 8;
const SHELF_POINTER_BYTES = 1 + SHELF_ID_BYTES + 4 + 4;
/** A shelf is closed before a form would take it past this: 16 overflow pages of 4 KB, less the first page's header. */
const SHELF_BYTES_MAX = 64 * 1024 - 16;
const SHELF_ENTRIES_MIN = 16;
const SHELF_VALUE_BYTES_MAX = 16 * 1024;
/** Shelves kept in memory for reads (copies; lmdb-js copies a value on every read anyway). */
const SHELF_CACHE_BYTES = 16 * 1024 * 1024;
/**
 * Values up to this size sit in LMDB's leaf pages (a 4 KB page takes nodes of up to about 2 KB);
 * larger ones get overflow pages of their own. A repack (repackProjectKeys) moves only the former.
 */
const REPACK_VALUE_BYTES_MAX = 2_000;
/** A chain longer than this is a corrupt store, not a long history. */
const REBUILD_CHAIN_MAX = PACKED_DEPTH_MAX + 1;

/** A pack-ready form as the `packed` database keeps it (see the layout at the top). */
function packedValue(typeCode: number, inflatedBytes: number, deflated: Buffer, delta: DeltaForm | null): Buffer {
  const header = delta ? PACKED_DELTA_HEADER_BYTES : PACKED_HEADER_BYTES;
  const value = Buffer.allocUnsafe(header + deflated.length);
  value[0] = delta ? typeCode | DELTA_FLAG : typeCode;
  value.writeUInt32BE(inflatedBytes, 1);
  if (delta) {
    value.writeUInt32BE(delta.bytes, PACKED_HEADER_BYTES);
    value[PACKED_HEADER_BYTES + 4] = delta.depth;
    delta.base.copy(value, PACKED_HEADER_BYTES + 5);
  }
  deflated.copy(value, header);
  return value;
}

/** The type, base and depth of the form at `offset` in `value` (a form of its own, or a shelf). */
function describeForm(entry: StoredEntry, value: Buffer, offset: number): void {
  const typeCode = value[offset] & ~DELTA_FLAG;
  entry.type ??= TYPE_NAMES[typeCode];
  if ((value[offset] & DELTA_FLAG) === 0) return;
  entry.formDepth = value[offset + PACKED_HEADER_BYTES + 4];
  entry.formBase = Buffer.from(value.subarray(offset + PACKED_HEADER_BYTES + 5, offset + PACKED_DELTA_HEADER_BYTES));
}

/** Inflates a stream whose inflated size is known: one output buffer of that size, not zlib's 16 KB chunks. */
function inflateKnown(stream: Buffer, bytes: number): Buffer {
  return inflateSync(stream, { chunkSize: Math.max(64, bytes), maxOutputLength: Math.max(1, bytes) });
}

/** A shelf read lately, with what names it (the cache's key holds only part of the id). */
interface CachedShelf {
  project: number;
  id: Buffer;
  bytes: Buffer;
}

/**
 * The pack-ready forms one write transaction puts for one project, gathered into a shelf: the
 * `packed` database gets a pointer per form at once (so the key exists for every check), the
 * bytes stay here until the shelf is full or the transaction ends.
 */
class ShelfBuilder {
  readonly id = randomBytes(SHELF_ID_BYTES);
  readonly keys: Buffer[] = [];
  readonly values: Buffer[] = [];
  /** Each value by its offset in the shelf, for reads inside the same transaction. */
  readonly byOffset = new Map<number, Buffer>();
  bytes = 0;

  /** The pointer `value` gets when it is added next. */
  pointerToNext(value: Buffer): Buffer {
    const pointer = Buffer.allocUnsafe(SHELF_POINTER_BYTES);
    pointer[0] = SHELF_POINTER;
    this.id.copy(pointer, 1);
    pointer.writeUInt32BE(this.bytes, 1 + SHELF_ID_BYTES);
    pointer.writeUInt32BE(value.length, 1 + SHELF_ID_BYTES + 4);
    return pointer;
  }

  /** Adds a form; returns its pointer value. */
  add(key: Buffer, value: Buffer): Buffer {
    const pointer = this.pointerToNext(value);
    this.keys.push(key);
    this.values.push(value);
    this.byOffset.set(this.bytes, value);
    this.bytes += value.length;
    return pointer;
  }
}

export interface LmdbStoreOptions {
  /** A directory (created when missing) that holds data.mdb and lock.mdb. */
  path: string;
  /** Initial map size; lmdb-js grows it as the data grows. */
  mapSizeBytes?: number;
  /**
   * Reads only (a worker thread's view of a store another thread of the process writes): no write
   * transaction, no format upgrade (a store of another format is refused).
   */
  readOnly?: boolean;
  /** How long writes must pause before the log of recent objects is moved (default RECENT_IDLE_MS; tests). */
  recentIdleMs?: number;
}

function projectPrefix(project: number): Buffer {
  const prefix = Buffer.allocUnsafe(PROJECT_PREFIX_BYTES);
  prefix.writeUInt32BE(project, 0);
  return prefix;
}

/** The first key after every key that starts with `prefix`. */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] !== 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  throw new RangeError('prefix has no end');
}

/** A branch's working tree as stored. */
interface StoredWorkingTree {
  t: Uint8Array;
  l: Array<string | Uint8Array>;
}

function storedLockPath(path: string): string | Buffer {
  return isUtf8Path(path) ? path : encodePath(path);
}

function lockPathFromStore(stored: string | Uint8Array): string {
  return typeof stored === 'string' ? stored : decodePath(Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength));
}

/** Set in an object value's type code when an annex follows the body (see the table above). */
const ANNEX_FLAG = 0x80;
const ANNEX_HEADER_BYTES = 1 + 4;

function valueTypeCode(value: Buffer): number {
  return value[0] & ~ANNEX_FLAG;
}

/**
 * Length of the body. Unlike valueBody, safe on lmdb-js's getBinaryFast buffers, whose `length` is
 * set to the value's size over a larger shared buffer (subarray would run to the real end).
 */
function valueBodyLength(value: Buffer): number {
  return (value[0] & ANNEX_FLAG) === 0 ? value.length - 1 : value.readUInt32BE(1);
}

/** The body as a view; `value` must be a buffer of its own (getBinary, not getBinaryFast). */
function valueBody(value: Buffer): Buffer {
  if ((value[0] & ANNEX_FLAG) === 0) return value.subarray(1);
  return value.subarray(ANNEX_HEADER_BYTES, ANNEX_HEADER_BYTES + value.readUInt32BE(1));
}

function valueAnnex(value: Buffer): Buffer | null {
  if ((value[0] & ANNEX_FLAG) === 0) return null;
  return value.subarray(ANNEX_HEADER_BYTES + value.readUInt32BE(1));
}

/** errno values and LMDB codes that mean the disk (or the map) cannot take the write. */
const STORAGE_FULL_CODES = new Set<number | string>([5 /* EIO: LMDB's pwrite on a full disk */, 28 /* ENOSPC */, -30792 /* MDB_MAP_FULL */, 'ENOSPC', 'EIO']);

/**
 * `flushed` (lmdb-js's flush of a commit), or, when it has not settled after FLUSH_WAIT_MS_MAX, an
 * explicit sync of everything committed so far (`sync`): either way the commit is on disk when
 * this resolves. A flush whose batch then failed (a full disk: lmdb-js logs the batch's error and
 * calls none of its flush resolvers) is never settled, and a write that took it for its own would
 * wait for good: an HTTP write on a disk just freed once hung so.
 */
export async function untilDurable(flushed: Promise<void>, sync: () => Promise<void>, waitMs = FLUSH_WAIT_MS_MAX): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const synced = new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => sync().then(resolve, reject), waitMs);
  });
  try {
    await Promise.race([flushed, synced]);
  } finally {
    clearTimeout(timer);
  }
}

/** How long a write waits for lmdb-js's flush of its commit before it syncs the file itself (a flush takes milliseconds). */
const FLUSH_WAIT_MS_MAX = 5_000;

function isStorageFull(error: unknown): boolean {
  const code = (error as { code?: number | string })?.code;
  if (code !== undefined && STORAGE_FULL_CODES.has(code)) return true;
  const text = String((error as { message?: string })?.message ?? error);
  return /MDB_MAP_FULL|ENOSPC|No space left|Input\/output error/i.test(text);
}

/**
 * The error behind a failed asynchronous commit: lmdb-js rejects the transaction with a generic
 * error whose `commitError` promise rejects with the real one (an errno such as EIO or ENOSPC).
 */
async function commitFailure(thrown: unknown): Promise<unknown> {
  const pending = (thrown as { commitError?: Promise<unknown> } | null)?.commitError;
  if (!pending) return thrown;
  try {
    await pending;
    return thrown;
  } catch (cause) {
    return cause;
  }
}

export class LmdbStore implements Store {
  private readonly env: RootDatabase;
  private readonly objects: Database<Buffer, Buffer>;
  private readonly commits: Database<Buffer, Buffer>;
  private readonly refs: Database<Buffer, Buffer>;
  private readonly worktrees: Database<StoredWorkingTree, Buffer>;
  private readonly records: Database<unknown, string>;
  private readonly deflated: Database<Buffer, Buffer>;
  private readonly shelves: Database<Buffer, Buffer>;
  private readonly introduced: Database<Buffer, Buffer>;
  private readonly journal: Database<Buffer, Buffer>;
  /** @internal The log of recent objects and this instance's index of it. */
  readonly recent: RecentObjects;
  /** The move of the log into `objects` under way, if any, or waiting for the writes to pause. */
  private moving: Promise<void> | null = null;
  private moveTimer: NodeJS.Timeout | null = null;
  /** Writes under way, and when the last one started: the log is moved only between them. */
  private writesUnderWay = 0;
  private lastWriteStarted = 0;
  private readonly recentIdleMs: number;
  private readonly readOnly: boolean;
  /** @internal the databases, for the transaction objects below. */
  readonly dbs: {
    objects: Database<Buffer, Buffer>;
    commits: Database<Buffer, Buffer>;
    refs: Database<Buffer, Buffer>;
    worktrees: Database<StoredWorkingTree, Buffer>;
    records: Database<unknown, string>;
    deflated: Database<Buffer, Buffer>;
    shelves: Database<Buffer, Buffer>;
    introduced: Database<Buffer, Buffer>;
    journal: Database<Buffer, Buffer>;
    recent: Database<Buffer, Buffer>;
  };
  private readonly objectListeners: Array<(project: number, stored: NewObject[]) => void> = [];
  private readonly writeListeners: Array<(durationMs: number, committed: boolean) => void> = [];
  /** Objects stored by the write transaction under way, per project, announced after it commits. */
  private storedInTransaction: Map<number, NewObject[]> | null = null;
  /** @internal Bodies rebuilt from pack-ready forms (see LruCache). */
  readonly rebuilt = new LruCache<string, StoredObject>(REBUILT_CACHE_BYTES, REBUILT_CACHE_ENTRY_BYTES_MAX, (object) => object.body.length);
  /** Pointers held back for seeds (holdForms), by project. */
  private readonly heldForms = new Map<number, HeldForms>();
  /** @internal Shelves read lately (copies), by project prefix and shelf id. */
  readonly shelfCache = new LruCache<number, CachedShelf>(SHELF_CACHE_BYTES, SHELF_BYTES_MAX + SHELF_VALUE_BYTES_MAX, (shelf) => shelf.bytes.length);
  /** See VALUE_SCRATCH_BYTES; one per store, since write transactions never overlap. */
  private readonly valueScratch = Buffer.allocUnsafeSlow(VALUE_SCRATCH_BYTES);
  private closed = false;

  /** Where the environment is (StoreThreadAccess: another thread opens it there). */
  readonly path: string;

  constructor(options: LmdbStoreOptions) {
    this.path = options.path;
    this.env = open({
      path: options.path,
      readOnly: options.readOnly ?? false,
      // lmdb-js takes a path with an extension ("treehouse.d") for a single file unless told otherwise.
      noSubdir: false,
      maxDbs: 16,
      mapSize: options.mapSizeBytes ?? 2 * 1024 ** 3,
      // Durability: see write().
      overlappingSync: true,
      // Each write() is one transaction callback of its own; lmdb-js's grouping of loose puts per
      // event turn is not used, and with it on, a failed commit leaves a promise nobody can handle.
      eventTurnBatching: false,
    } as Parameters<typeof open>[0]);
    this.objects = this.env.openDB({ name: 'objects', keyEncoding: 'binary', encoding: 'binary' });
    this.commits = this.env.openDB({ name: 'commits', keyEncoding: 'binary', encoding: 'binary' });
    this.refs = this.env.openDB({ name: 'refs', keyEncoding: 'binary', encoding: 'binary' });
    this.worktrees = this.env.openDB({ name: 'worktrees', keyEncoding: 'binary', encoding: 'msgpack' });
    this.records = this.env.openDB({ name: 'records', encoding: 'msgpack' });
    // A cache: type and size ride along, so a pack reads one small value and never the raw object.
    this.deflated = this.env.openDB({ name: 'packed', keyEncoding: 'binary', encoding: 'binary' });
    this.shelves = this.env.openDB({ name: 'shelves', keyEncoding: 'binary', encoding: 'binary' });
    // An index: what each commit brings over its first parent (src/git/introducedObjects.ts).
    this.introduced = this.env.openDB({ name: 'introduced', keyEncoding: 'binary', encoding: 'binary' });
    // What writers reference while a garbage collection runs (LmdbProjectTx.beginCollection).
    this.journal = this.env.openDB({ name: 'gcjournal', keyEncoding: 'binary', encoding: 'binary' });
    const recent: Database<Buffer, Buffer> = this.env.openDB({ name: 'recent', keyEncoding: 'binary', encoding: 'binary' });
    this.dbs = {
      objects: this.objects,
      commits: this.commits,
      refs: this.refs,
      worktrees: this.worktrees,
      records: this.records,
      deflated: this.deflated,
      shelves: this.shelves,
      introduced: this.introduced,
      journal: this.journal,
      recent,
    };
    this.readOnly = options.readOnly ?? false;
    this.recentIdleMs = options.recentIdleMs ?? RECENT_IDLE_MS;
    this.checkFormat(options.path, this.readOnly);
    this.recent = new RecentObjects(recent, PROJECT_PREFIX_BYTES + OID_BYTES);
    // What a stopped process left in the log goes where every other reader looks (the deflate
    // cache's scan at start, a collection's listings) before anything else runs.
    if (!this.readOnly && this.recent.size > 0) {
      const moved = this.env.transactionSync(() => this.recent.move(Infinity, (key, value) => putIfAbsent(this.objects, key, value)));
      this.recent.forget(moved);
    }
  }

  /**
   * Format 3 may keep pack-ready forms in shelves, which format 2 could not read; a format-2 store
   * is read as it is and marked format 3. Format 2 keeps one record per working tree (its tree id
   * and locks); format 1 kept a node per directory. A format-1 store has working-tree keys and no format record; it is refused with a
   * clear message rather than read wrongly (no released build wrote it).
   */
  private checkFormat(path: string, readOnly: boolean): void {
    const format = this.records.get(STORE_FORMAT_RECORD);
    if (format === STORE_FORMAT) return;
    const empty = format === undefined && this.worktrees.getKeysCount({ limit: 1 }) === 0;
    if (readOnly || (!empty && !STORE_FORMATS_UPGRADED.has(format as number))) {
      void this.env.close();
      throw new Error(`${path} holds a Treehouse store of format ${String(format ?? 1)}; this build reads format ${STORE_FORMAT}. Start with an empty data directory.`);
    }
    this.records.putSync(STORE_FORMAT_RECORD, STORE_FORMAT);
  }

  onObjectsStored(listener: (project: number, stored: NewObject[]) => void): void {
    this.objectListeners.push(listener);
  }

  onWriteDone(listener: (durationMs: number, committed: boolean) => void): void {
    this.writeListeners.push(listener);
  }

  async backup(dir: string): Promise<void> {
    this.assertOpen();
    // mdb_env_copy2 with MDB_CP_COMPACT: a read transaction's snapshot, free pages left out.
    await this.env.backup(dir, true);
  }

  storageUsedBytes(): number {
    const stats = this.env.getStats() as { pageSize: number; lastPageNumber: number };
    return (stats.lastPageNumber + 1) * stats.pageSize;
  }

  /**
   * Bytes of the pages that hold data now: every database's branch, leaf and overflow pages. The
   * data file never shrinks (LMDB reuses freed pages), so this, not storageUsedBytes, shows what a
   * removal freed.
   */
  pagesInUseBytes(): number {
    type PageStats = { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
    const pages = (stats: PageStats) => stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
    const main = this.env.getStats() as PageStats;
    let total = pages(main);
    for (const db of Object.values(this.dbs) as Array<{ getStats(): unknown }>) total += pages(db.getStats() as PageStats);
    return total * main.pageSize;
  }

  /**
   * The project's forms kept in shelves, after the object `after`, in id order: at most `limit`
   * of the forms scanned (`next` is where the next page starts, null at the end).
   */
  listShelvedForms(project: number, after: Oid | null, limit: number): { forms: Array<ShelvedForm & { shelf: string }>; next: Oid | null } {
    this.assertOpen();
    const prefix = projectPrefix(project);
    const start = after ? Buffer.concat([prefix, after]) : prefix;
    const forms: Array<ShelvedForm & { shelf: string }> = [];
    let scanned = 0;
    let last: Oid | null = null;
    const range = this.deflated.getRange({ start, end: prefixEnd(prefix), exclusiveStart: after !== null, limit } as Parameters<typeof this.deflated.getRange>[0]);
    for (const { key, value } of range) {
      scanned++;
      last = Buffer.from((key as Buffer).subarray(PROJECT_PREFIX_BYTES));
      if (value[0] !== SHELF_POINTER || value.length !== SHELF_POINTER_BYTES) continue;
      forms.push({
        oid: last,
        shelf: value.toString('hex', 1, 1 + SHELF_ID_BYTES),
        offset: value.readUInt32BE(1 + SHELF_ID_BYTES),
        length: value.readUInt32BE(1 + SHELF_ID_BYTES + 4),
      });
    }
    return { forms, next: scanned < limit ? null : last };
  }

  /** The project's shelves and their sizes, after the shelf `after` (hex), at most `limit`. */
  listShelves(project: number, after: string | null, limit: number): Array<{ shelf: string; bytes: number }> {
    this.assertOpen();
    const prefix = projectPrefix(project);
    const start = after ? Buffer.concat([prefix, Buffer.from(after, 'hex')]) : prefix;
    const out: Array<{ shelf: string; bytes: number }> = [];
    for (const key of this.shelves.getKeys({ start, end: prefixEnd(prefix), exclusiveStart: after !== null, limit } as Parameters<typeof this.shelves.getKeys>[0])) {
      const id = key as Buffer;
      out.push({ shelf: id.toString('hex', PROJECT_PREFIX_BYTES), bytes: this.shelves.getBinaryFast(id)?.length ?? 0 });
    }
    return out;
  }

  /** @internal a page of the deflate cache's backlog, for LmdbAsyncStore (asyncTypes.ts PackFormBacklog). */
  listUndeflated(after: ObjectCursor | null, limit: number): UndeflatedPage {
    this.assertOpen();
    // Keys are all as long: the key with a zero byte appended is the first one after `after`.
    const start = after ? Buffer.concat([projectPrefix(after.project), after.oid, Buffer.of(0)]) : undefined;
    const undeflated: ObjectCursor[] = [];
    let looked = 0;
    let last: Buffer | null = null;
    // The first `limit` keys of `objects` and of the log together are among the first `limit` of each.
    const keys: Buffer[] = [...this.objects.getKeys({ start, limit })].map((key) => Buffer.from(key as Buffer));
    const startName = start?.toString('latin1');
    keys.push(...this.recent.sortedKeys((name) => startName === undefined || name >= startName).slice(0, limit));
    for (const key of keys.sort(Buffer.compare).slice(0, limit)) {
      last = key;
      looked++;
      if (!this.deflated.doesExist(last)) undeflated.push({ project: last.readUInt32BE(0), oid: Buffer.from(last.subarray(PROJECT_PREFIX_BYTES)) });
    }
    const next = looked < limit || !last ? null : { project: last.readUInt32BE(0), oid: Buffer.from(last.subarray(PROJECT_PREFIX_BYTES)) };
    return { undeflated, next };
  }

  /** @internal records an object stored by the current write transaction. */
  noteStored(project: number, oid: Oid, similarTo: Oid | null, nameHash: number | undefined): void {
    const stored = this.storedInTransaction;
    if (!stored) return;
    let list = stored.get(project);
    if (!list) stored.set(project, (list = []));
    // The hint may be a view into a buffer its writer goes on patching.
    list.push({ oid, similarTo: similarTo && !similarTo.equals(oid) ? Buffer.from(similarTo) : null, ...(nameHash === undefined ? {} : { nameHash }) });
  }

  private asyncView: LmdbAsyncStore | null = null;

  get async(): LmdbAsyncStore {
    return (this.asyncView ??= new LmdbAsyncStore(this));
  }

  /**
   * @internal Whether an object is kept under `key` anywhere: raw, as its pack-ready form alone, or
   * in the log of recent objects as this instance has read it (hasObject reads the log's tail too).
   */
  isStored(key: Buffer): boolean {
    return this.dbs.objects.doesExist(key) || this.dbs.deflated.doesExist(key) || this.recent.has(key) || this.heldCommit(key) !== undefined;
  }

  read<T>(action: (tx: StoreReadTx) => T): T {
    this.assertOpen();
    return action(new LmdbTx(this, false));
  }

  /**
   * Holds back, from now until releaseHeldForms(project), the `packed` pointers of the forms every
   * write puts for `project` (src/store/heldForms.ts): a number reserved for a seed, which holds
   * nothing yet and which nobody else writes (the seed's commits aside, whose raw copies are not
   * forms), so a form put is found among those held without a search of `packed` or `objects`.
   * Reads miss them meanwhile.
   */
  holdForms(project: number): HeldForms {
    let held = this.heldForms.get(project);
    if (!held) this.heldForms.set(project, (held = new HeldForms()));
    return held;
  }

  /** Stops holding `project`'s pointers; what is held (HeldForms.drain()) is the caller's to put or let go. */
  releaseHeldForms(project: number): HeldForms | undefined {
    const held = this.heldForms.get(project);
    this.heldForms.delete(project);
    return held;
  }

  /** @internal The pointers held for `project`, if any (LmdbTx). */
  heldFormsOf(project: number): HeldForms | undefined {
    return this.heldForms.size === 0 ? undefined : this.heldForms.get(project);
  }

  /** Holds of projects others write too (beginPrivateHold), by project. */
  private readonly privateHolds = new Map<number, Set<HeldForms>>();

  /**
   * A hold of `project`'s forms for the writes given it alone (LmdbTx.useHold: a push's, until its
   * check passes): those writes shelve their forms and hold the pointers back, so nobody reads
   * them meanwhile; every other write of the project goes on as before. Ended by endPrivateHold.
   */
  beginPrivateHold(project: number): HeldForms {
    const held = new HeldForms(false);
    let holds = this.privateHolds.get(project);
    if (!holds) this.privateHolds.set(project, (holds = new Set()));
    holds.add(held);
    return held;
  }

  endPrivateHold(project: number, held: HeldForms): void {
    const holds = this.privateHolds.get(project);
    holds?.delete(held);
    if (holds?.size === 0) this.privateHolds.delete(project);
  }

  /** The shelves (hex ids) private holds of `project` wrote: no pointer names them yet, but they are not dead. */
  heldShelves(project: number): Set<string> {
    const ids = new Set<string>();
    for (const held of this.privateHolds.get(project) ?? []) for (const key of held.shelves) ids.add(key.toString('hex', PROJECT_PREFIX_BYTES));
    return ids;
  }

  /**
   * Puts held pointers (a run of `held`'s drain()) into `packed`: a private hold's only where none
   * is (another writer may have put the object meanwhile), and not onto a base that was not put.
   */
  putHeldPointers(tx: StoreWriteTx, entries: readonly HeldForm[], held: HeldForms): void {
    if (!(tx instanceof LmdbTx)) throw new Error('held forms need an LMDB write');
    tx.putHeldPointers(entries, held);
  }

  /**
   * Puts held commits (a run of `held`'s drainCommits()): their entries into `commits`, and their
   * raw copies into `objects`, but, when `formsAlone` (the seed's last puts, after its pointers),
   * for those whose form `packed` has in this very write.
   */
  putHeldCommits(tx: StoreWriteTx, run: readonly HeldCommit[], formsAlone: boolean, held: HeldForms): void {
    if (!(tx instanceof LmdbTx)) throw new Error('held forms need an LMDB write');
    tx.putHeldCommits(run, formsAlone, held);
  }

  /** A seed's commit held back (holdForms) under `key`, an `objects` key. */
  heldCommit(key: Buffer): HeldCommit | undefined {
    if (this.heldForms.size === 0) return undefined;
    return this.heldForms.get(key.readUInt32BE(0))?.commit(key);
  }

  /** Removes shelves a private hold wrote (their forms let go): no pointer names them. */
  dropShelves(tx: StoreWriteTx, keys: readonly Buffer[]): void {
    if (!(tx instanceof LmdbTx)) throw new Error('held forms need an LMDB write');
    tx.dropShelves(keys);
  }

  /**
   * One lmdb-js child transaction: `action` runs on this thread (a throw rolls back only its own
   * changes), while the commit and the fdatasync that follows it run on lmdb-js's writer thread, so
   * the event loop never waits for the disk; several writes that queue up meanwhile share one commit.
   * The promise resolves after `flushed`, when the commit is durable, so the caller may acknowledge it.
   */
  async write<T>(action: (tx: StoreWriteTx) => T, options: { afterCommit?: () => void } = {}): Promise<T> {
    this.assertOpen();
    const stored = new Map<number, NewObject[]>();
    const started = performance.now();
    this.lastWriteStarted = started;
    this.writesUnderWay++;
    try {
      return await this.writeTransaction(action, options, stored, started);
    } finally {
      this.writesUnderWay--;
      this.moveRecentWhenIdle();
    }
  }

  private async writeTransaction<T>(action: (tx: StoreWriteTx) => T, options: { afterCommit?: () => void }, stored: Map<number, NewObject[]>, started: number): Promise<T> {
    let result: T;
    let tx: LmdbTx | null = null;
    let seenBefore = Infinity;
    try {
      result = (await this.env.childTransaction(() => {
        seenBefore = Math.min(seenBefore, this.recent.lastSeen);
        this.storedInTransaction = stored;
        try {
          tx = new LmdbTx(this, true);
          const result = action(tx);
          tx.closeShelves();
          return result;
        } finally {
          this.storedInTransaction = null;
        }
      })) as T;
    } catch (thrown) {
      // Rolled back: what it appended is not in the log (and its numbers are not given again).
      this.recent.rolledBack((tx as LmdbTx | null)?.recentAppended ?? [], seenBefore);
      this.noteWriteDone(started, false);
      const error = await commitFailure(thrown);
      if (isStorageFull(error)) throw new StorageFullError(String((error as Error).message));
      throw error;
    }
    // Committed (the next transaction reads it), not yet durable. lmdb-js's \`flushed\` is the flush of
    // the newest batch when it is asked: asked after afterCommit (which lets the next writer queue
    // its batch), it would hold this write's acknowledgement until that one is durable too.
    const flushed = this.untilFlushed();
    this.recent.forget((tx as LmdbTx | null)?.recentMoved ?? []);
    for (const [held, added] of (tx as LmdbTx | null)?.heldAdded ?? []) held.take(added);
    for (const [held, added] of (tx as LmdbTx | null)?.heldCommitsAdded ?? []) held.takeCommits([...added.values()]);
    options.afterCommit?.();
    await flushed;
    this.noteWriteDone(started, true);
    if (this.objectListeners.length > 0) {
      for (const [project, oids] of stored) for (const listener of this.objectListeners) listener(project, oids);
    }
    return result;
  }

  private noteWriteDone(started: number, committed: boolean): void {
    const durationMs = performance.now() - started;
    for (const listener of this.writeListeners) listener(durationMs, committed);
  }

  /** Arranges a move of the log once writes pause (RECENT_IDLE_MS), unless one is arranged or under way. */
  private moveRecentWhenIdle(): void {
    if (this.readOnly || this.closed || this.moving || this.moveTimer || this.recent.size === 0) return;
    const waited = performance.now() - this.lastWriteStarted;
    this.moveTimer = setTimeout(() => {
      this.moveTimer = null;
      if (this.closed) return;
      if (this.writesUnderWay > 0 || performance.now() - this.lastWriteStarted < this.recentIdleMs) return this.moveRecentWhenIdle();
      this.moving = this.moveRecentBatch().finally(() => {
        this.moving = null;
        this.moveRecentWhenIdle();
      });
    }, Math.min(2 ** 31 - 1, Math.max(1, this.recentIdleMs - waited)));
    // A log left unmoved is moved by the next writer that opens the store.
    this.moveTimer.unref();
  }

  /** Moves the RECENT_MOVE_BATCH oldest entries of the log into `objects` (in key order: pages near each other together). */
  private async moveRecentBatch(): Promise<void> {
    try {
      let moved: Array<[string, number]> = [];
      await this.env.childTransaction(() => {
        moved = this.recent.move(RECENT_MOVE_BATCH, (key, value) => putIfAbsent(this.objects, key, value));
      });
      this.recent.forget(moved);
    } catch {
      // Committed nothing; the log is read as before, and the next pause tries again.
    }
  }

  /**
   * lmdb-js's flush of the newest batch, or this store's own sync if it never settles
   * (untilDurable). Its `then` is called at once: the thenable reads the newest batch when its
   * `then` is called, and a later call would wait for a batch queued after this one. A read-only
   * environment has no flush: nothing to wait for.
   */
  private untilFlushed(): Promise<void> {
    const flush = this.env.flushed as PromiseLike<unknown> | undefined;
    return untilDurable(new Promise<void>((resolve, reject) => (flush ? flush.then(() => resolve(), reject) : resolve())), () => this.syncNow());
  }

  /** Everything committed so far, synced to disk now (mdb_env_sync on lmdb-js's thread). */
  private syncNow(): Promise<void> {
    // (lmdb-js's sync(callback) is missing from its type declarations.)
    const env = this.env as unknown as { sync(callback: (error: unknown) => void): void };
    return new Promise((resolve, reject) => env.sync((error) => (error ? reject(error) : resolve())));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.moveTimer) clearTimeout(this.moveTimer);
    await this.moving;
    await this.untilFlushed();
    await this.env.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('store is closed');
  }

  /** @internal The stored form of an object, valid until the next call (see VALUE_SCRATCH_BYTES). */
  objectValue(typeCode: number, body: Buffer, annex?: Buffer): Buffer {
    const header = annex ? ANNEX_HEADER_BYTES : 1;
    const bytes = header + body.length + (annex?.length ?? 0);
    const value = bytes <= VALUE_SCRATCH_BYTES ? this.valueScratch.subarray(0, bytes) : Buffer.allocUnsafe(bytes);
    if (annex) {
      value[0] = typeCode | ANNEX_FLAG;
      value.writeUInt32BE(body.length, 1);
      annex.copy(value, header + body.length);
    } else {
      value[0] = typeCode;
    }
    body.copy(value, header);
    return value;
  }

}

class LmdbTx implements StoreWriteTx {
  /** Forms this transaction shelved with their pointers held back (LmdbStore.holdForms), by the hold they go to. */
  readonly heldAdded = new Map<HeldForms, HeldForm[]>();
  /** Commits this transaction held back (a seed's: LmdbStore.holdForms), by the hold they go to, by `objects` key (latin1). */
  readonly heldCommitsAdded = new Map<HeldForms, Map<string, HeldCommit>>();
  /** Private holds this transaction's forms go to (useHold), by project. */
  private holds: Map<number, HeldForms> | null = null;

  constructor(
    private readonly store: LmdbStore,
    private readonly writable: boolean,
  ) {}

  /** This transaction's forms of `project` go to `held` (LmdbStore.beginPrivateHold). */
  useHold(project: number, held: HeldForms): void {
    (this.holds ??= new Map()).set(project, held);
  }

  /**
   * A commit held back under `key` (an `objects` key of `project`), by this transaction or a
   * committed one: a seed's, or one of this transaction's private hold (a push's, seen by its writes alone).
   */
  heldCommit(project: number, key: Buffer): HeldCommit | undefined {
    const held = this.heldFor(project);
    if (!held) return undefined;
    return this.heldCommitsAdded.get(held)?.get(key.toString('latin1')) ?? held.commit(key);
  }

  /** Holds a commit back (see HeldForms.commits). */
  holdCommit(held: HeldForms, commit: HeldCommit): void {
    let added = this.heldCommitsAdded.get(held);
    if (!added) this.heldCommitsAdded.set(held, (added = new Map()));
    added.set(commit.key.toString('latin1'), commit);
  }

  putHeldCommits(run: readonly HeldCommit[], formsAlone: boolean, held: HeldForms): void {
    this.assertWritable();
    const { objects, commits, deflated } = this.store.dbs;
    for (const { key, value, info } of run) {
      // Asked of `packed`, not of what is held: a form held after the pointers went in (the deflate
      // cache's, of a commit whose pack entry was a delta on a base not stored yet) is not in it.
      if (!formsAlone || !deflated.doesExist(key)) objects.putSync(key, value);
      commits.putSync(key, info);
      // A seed's were told of when held; a push's are read by others only from now on.
      if (!held.projectEmpty) this.store.noteStored(key.readUInt32BE(0), key.subarray(PROJECT_PREFIX_BYTES), null, undefined);
    }
  }

  /** Where the pointers of `project`'s forms are held, if they are: this transaction's private hold, or a seed's. */
  heldFor(project: number): HeldForms | undefined {
    return this.holds?.get(project) ?? this.store.heldFormsOf(project);
  }

  project(project: number): ProjectWriteTx {
    return new LmdbProjectTx(this.store, project, this);
  }

  getRecord<T>(key: string): T | undefined {
    return this.store.dbs.records.get(key) as T | undefined;
  }

  listRecords<T>(prefix: string, options: { reverse?: boolean; after?: string; limit?: number } = {}) {
    const end = prefix + '\uffff';
    const range = options.reverse
      ? { start: options.after ?? end, end: prefix, reverse: true, exclusiveStart: options.after !== undefined }
      : { start: options.after ?? prefix, end, exclusiveStart: options.after !== undefined };
    const out: Array<{ key: string; value: T }> = [];
    for (const { key, value } of this.store.dbs.records.getRange({ ...range, limit: options.limit })) {
      out.push({ key: key as string, value: value as T });
    }
    return out;
  }

  putRecord<T>(key: string, value: T): void {
    this.assertWritable();
    this.store.dbs.records.putSync(key, value);
  }

  deleteRecord(key: string): void {
    this.assertWritable();
    this.store.dbs.records.removeSync(key);
  }

  dropProjectKeys(project: number, keysMax: number): number {
    this.assertWritable();
    const prefix = projectPrefix(project);
    const { objects, commits, refs, worktrees, deflated, shelves, introduced, journal } = this.store.dbs;
    const dropped = this.store.recent.move(keysMax, () => {}, RecentObjects.inProject(prefix));
    this.recentMoved.push(...dropped);
    let removed = dropped.length;
    if (removed >= keysMax) return removed;
    for (const db of [objects, commits, refs, worktrees, deflated, shelves, introduced, journal] as Array<Database<unknown, Buffer>>) {
      for (const key of db.getKeys({ start: prefix, end: prefixEnd(prefix), limit: keysMax - removed })) {
        db.removeSync(key);
        removed++;
      }
      if (removed >= keysMax) return removed;
    }
    if (removed === 0) {
      this.store.dbs.records.removeSync(VERSION_RECORD_PREFIX + project);
      this.store.dbs.records.removeSync(COLLECTION_RECORD_PREFIX + project);
      this.store.dbs.records.removeSync(COLLECTIONS_BEGUN_PREFIX + project);
      this.store.dbs.records.removeSync(REMOVED_SINCE_REPACK_PREFIX + project);
      this.store.dbs.records.removeSync(RAW_REMOVED_SINCE_REPACK_PREFIX + project);
    }
    return removed;
  }

  rewriteShelves(project: number, shelves: ReadonlyArray<{ id: Buffer; forms: ReadonlyArray<ShelvedForm> }>): { rewrittenBytes: number; freedBytes: number } {
    this.assertWritable();
    const { deflated, shelves: shelvesDb } = this.store.dbs;
    const prefix = projectPrefix(project);
    let rewrittenBytes = 0;
    let freedBytes = 0;
    for (const { id, forms } of shelves) {
      const shelfKey = Buffer.concat([prefix, id]);
      const bytes = shelvesDb.getBinary(shelfKey);
      if (!bytes) continue;
      for (const { oid, offset, length } of forms) {
        const key = Buffer.concat([prefix, oid]);
        const pointer = deflated.getBinaryFast(key);
        // Moved or removed since it was listed: it is not this shelf's any more.
        if (!pointer || pointer.length !== SHELF_POINTER_BYTES || pointer[0] !== SHELF_POINTER) continue;
        if (pointer.compare(id, 0, SHELF_ID_BYTES, 1, 1 + SHELF_ID_BYTES) !== 0 || pointer.readUInt32BE(1 + SHELF_ID_BYTES) !== offset) continue;
        this.putForm(project, key, Buffer.from(bytes.subarray(offset, offset + length)));
        rewrittenBytes += length;
      }
      shelvesDb.removeSync(shelfKey);
      freedBytes += bytes.length;
    }
    return { rewrittenBytes, freedBytes: freedBytes - rewrittenBytes };
  }

  repackProjectKeys(project: number, table: RepackedTable, before: Buffer | null, entriesMax: number, bytesMax: number): { last: Buffer | null; bytes: number } {
    this.assertWritable();
    const { objects, deflated, commits, introduced } = this.store.dbs;
    const db = { objects, packed: deflated, commits, introduced }[table];
    const prefix = projectPrefix(project);
    const taken: Array<{ key: Buffer; value: Buffer }> = [];
    let bytes = 0;
    const range = db.getRange({ start: before ?? prefixEnd(prefix), end: prefix, reverse: true } as Parameters<typeof db.getRange>[0]);
    let lowest: Buffer | null = null;
    // Bytes of every value read, moved or not: what bounds this write's work.
    let read = 0;
    for (const { key, value } of range) {
      const bytesKey = key as Buffer;
      // The range's upper end is exclusive of `before` and of the next project's first key.
      if ((before && bytesKey.equals(before)) || bytesKey.compare(prefix, 0, PROJECT_PREFIX_BYTES, 0, PROJECT_PREFIX_BYTES) !== 0) continue;
      lowest = Buffer.from(bytesKey);
      read += value.length;
      // A value on overflow pages of its own is left there: its leaf node is small, and moving it would copy it whole.
      if (value.length <= REPACK_VALUE_BYTES_MAX) {
        taken.push({ key: lowest, value: Buffer.from(value) });
        bytes += value.length;
      }
      if (taken.length >= entriesMax || read >= bytesMax) break;
    }
    // All out first, so the pages they leave are merged or freed; then in again in key order. Put
    // in order after the keys below them (the part of the range not packed yet), each lands at the
    // end of a page, where LMDB's page split leaves the old page full: so the range is packed from
    // its end down.
    for (const { key } of taken) db.removeSync(key);
    for (let i = taken.length - 1; i >= 0; i--) db.putSync(taken[i].key, taken[i].value);
    const done = taken.length < entriesMax && read < bytesMax;
    return { last: done ? null : lowest, bytes };
  }

  assertWritable(): void {
    if (!this.writable) throw new Error('write outside a write transaction');
  }

  /** Log entries this transaction moved or removed: forgotten by the index once it commits. */
  readonly recentMoved: Array<[string, number]> = [];
  /** Log entries this transaction appended: forgotten by the index if it rolls back. */
  readonly recentAppended: Array<[string, number]> = [];
  private recentBytes = 0;

  /**
   * Whether a new object's value goes to the log of recent objects: up to RECENT_PER_WRITE_MAX per
   * write, and none while the log is RECENT_LOG_MAX long (writes outpacing the move go to `objects`).
   */
  appendsRecent(valueBytes: number): boolean {
    if (valueBytes > RECENT_VALUE_BYTES_MAX || this.recentAppended.length >= RECENT_PER_WRITE_MAX || this.recentBytes + valueBytes > RECENT_PER_WRITE_BYTES_MAX) return false;
    if (this.store.recent.size >= RECENT_LOG_MAX) return false;
    this.recentBytes += valueBytes;
    return true;
  }

  /** Open shelves of this transaction, by project. */
  private readonly openShelves = new Map<number, ShelfBuilder>();
  /** The depth of each form putObjectsAsForms put in this transaction, by project: a delta on one reads no form back. */
  private readonly putDepths = new Map<number, OidTable>();

  formDepthsPut(project: number): OidTable {
    let depths = this.putDepths.get(project);
    if (!depths) this.putDepths.set(project, (depths = new OidTable()));
    return depths;
  }

  /**
   * Puts a pack-ready form under `key` unless `packed` has one (one descent of the B-tree for the
   * check and the put); false when it had.
   */
  putFormIfAbsent(project: number, key: Buffer, value: Buffer): boolean {
    const held = this.heldFor(project);
    if (held) return this.holdForm(project, held, key, value);
    const { deflated } = this.store.dbs;
    if (value.length > SHELF_VALUE_BYTES_MAX) return putIfAbsent(deflated, key, value);
    const shelf = this.shelfFor(project, value.length);
    if (!putIfAbsent(deflated, key, shelf.pointerToNext(value))) return false;
    shelf.add(key, value);
    return true;
  }

  /**
   * Shelves a form whose pointer is held back (LmdbStore.holdForms), unless `packed` or what is
   * held has one; false when it had.
   */
  holdForm(project: number, held: HeldForms, key: Buffer, value: Buffer): boolean {
    const depths = this.formDepthsPut(project);
    const depth = (value[0] & DELTA_FLAG) === 0 ? 0 : value[PACKED_HEADER_BYTES + 4];
    // (A seed's `packed` has none of the project's forms but those held: see holdForms.)
    if (held.depths.has(key, PROJECT_PREFIX_BYTES) || depths.has(key, PROJECT_PREFIX_BYTES)) return false;
    if (!held.projectEmpty && this.store.dbs.deflated.doesExist(key)) return false;
    const pointer = value.length > SHELF_VALUE_BYTES_MAX ? value : this.shelfFor(project, value.length).add(key, value);
    let added = this.heldAdded.get(held);
    if (!added) this.heldAdded.set(held, (added = []));
    const base = depth === 0 ? null : Buffer.concat([key.subarray(0, PROJECT_PREFIX_BYTES), value.subarray(PACKED_HEADER_BYTES + 5, PACKED_DELTA_HEADER_BYTES)]);
    added.push({ key, value: pointer, depth, base });
    depths.add(key, PROJECT_PREFIX_BYTES, depth);
    return true;
  }

  /**
   * Puts pointers held back (LmdbStore.holdForms), in the order given. A push's (not
   * `projectEmpty`) go only where no form is, and not onto a base that was not put (HeldForms.notPut).
   */
  putHeldPointers(entries: readonly HeldForm[], held: HeldForms): void {
    this.assertWritable();
    const { deflated } = this.store.dbs;
    if (held.projectEmpty) {
      for (const { key, value } of entries) deflated.putSync(key, value);
      return;
    }
    for (const { key, value, base } of entries) {
      if (base && held.notPut.has(base, PROJECT_PREFIX_BYTES)) {
        held.notPut.add(key, PROJECT_PREFIX_BYTES);
        if (!this.store.isStored(key)) held.missing++;
        continue;
      }
      if (!putIfAbsent(deflated, key, value)) held.notPut.add(key, PROJECT_PREFIX_BYTES);
    }
  }

  dropShelves(keys: readonly Buffer[]): void {
    this.assertWritable();
    for (const key of keys) this.store.dbs.shelves.removeSync(key);
  }

  /** Puts a pack-ready form under `key`, which the caller has found absent from `packed`. */
  putForm(project: number, key: Buffer, value: Buffer): void {
    const held = this.heldFor(project);
    if (held) {
      this.holdForm(project, held, key, value);
      return;
    }
    const { deflated } = this.store.dbs;
    if (value.length > SHELF_VALUE_BYTES_MAX) {
      deflated.putSync(key, value);
      return;
    }
    deflated.putSync(key, this.shelfFor(project, value.length).add(key, value));
  }

  /** The project's open shelf with room for `bytes` more; a full one is written first. */
  shelfFor(project: number, bytes: number): ShelfBuilder {
    let shelf = this.openShelves.get(project);
    if (shelf && shelf.bytes > 0 && shelf.bytes + bytes > SHELF_BYTES_MAX) {
      this.closeShelf(project, shelf, true);
      shelf = undefined;
    }
    if (!shelf) this.openShelves.set(project, (shelf = new ShelfBuilder()));
    return shelf;
  }

  /** A form in a shelf this transaction has not written yet, if `id` names one. */
  openShelfValue(project: number, id: Buffer, offset: number): Buffer | undefined {
    const shelf = this.openShelves.get(project);
    return shelf && shelf.id.equals(id) ? shelf.byOffset.get(offset) : undefined;
  }

  /** Writes every open shelf; the transaction's last step. */
  closeShelves(): void {
    for (const [project, shelf] of this.openShelves) this.closeShelf(project, shelf, false);
    this.openShelves.clear();
    this.projectsShelved.clear();
  }

  /** Projects that had a full shelf written in this transaction. */
  private readonly projectsShelved = new Set<number>();

  private closeShelf(project: number, shelf: ShelfBuilder, full: boolean): void {
    const { deflated, shelves } = this.store.dbs;
    const held = this.heldFor(project);
    if (full) this.projectsShelved.add(project);
    // (A held form's pointer is given already: it stays in its shelf, however few share it.)
    else if (!held && !this.projectsShelved.has(project) && shelf.keys.length < SHELF_ENTRIES_MIN) {
      shelf.keys.forEach((key, index) => deflated.putSync(key, shelf.values[index]));
      return;
    }
    const shelfKey = Buffer.concat([projectPrefix(project), shelf.id]);
    shelves.putSync(shelfKey, Buffer.concat(shelf.values, shelf.bytes));
    // (Noted before the commit: a shelf a failed write never wrote is dropped as well, which does nothing.)
    if (held && !held.projectEmpty) held.shelves.push(shelfKey);
  }
}

class LmdbProjectTx implements ProjectWriteTx {
  private readonly prefix: Buffer;
  /** Whether a garbage collection of the project runs, read at the first write that may journal. */
  private journalling: boolean | undefined;

  constructor(
    private readonly store: LmdbStore,
    readonly project: number,
    private readonly parent: LmdbTx,
  ) {
    this.prefix = projectPrefix(project);
  }

  private objectKey(oid: Oid): Buffer {
    const key = Buffer.allocUnsafe(PROJECT_PREFIX_BYTES + OID_BYTES);
    this.prefix.copy(key, 0);
    oid.copy(key, PROJECT_PREFIX_BYTES);
    return key;
  }

  /**
   * The pack-ready form under `key`, wherever it is kept (a value of its own, or in a shelf). A view
   * valid until the next read of this store.
   */
  private readPacked(key: Buffer): Buffer | undefined {
    const value = this.store.dbs.deflated.getBinaryFast(key);
    if (!value || value[0] !== SHELF_POINTER) return value;
    const offset = value.readUInt32BE(1 + SHELF_ID_BYTES);
    const length = value.readUInt32BE(1 + SHELF_ID_BYTES + 4);
    // 48 of the id's 64 random bits, with the project, find the cached shelf; the whole id confirms it.
    const cacheKey = this.project * 2 ** 20 + (value.readUIntBE(1, 6) % 2 ** 32);
    const cached = this.store.shelfCache.get(cacheKey);
    if (cached && cached.project === this.project && value.compare(cached.id, 0, SHELF_ID_BYTES, 1, 1 + SHELF_ID_BYTES) === 0) {
      return cached.bytes.subarray(offset, offset + length);
    }
    // Copy the pointer's id out before another read reuses lmdb-js's buffer.
    const id = Buffer.from(value.subarray(1, 1 + SHELF_ID_BYTES));
    const open = this.parent.openShelfValue(this.project, id, offset);
    if (open) return open;
    const bytes = this.store.dbs.shelves.getBinary(Buffer.concat([this.prefix, id]));
    if (!bytes) throw new Error(`shelf ${id.toString('hex')} of ${key.subarray(PROJECT_PREFIX_BYTES).toString('hex')} is missing (corrupt store)`);
    this.store.shelfCache.set(cacheKey, { project: this.project, id, bytes });
    return bytes.subarray(offset, offset + length);
  }

  private stringKey(text: string): Buffer {
    return Buffer.concat([this.prefix, Buffer.from(text, 'utf8')]);
  }

  /** Journals `oid` when a garbage collection of the project runs (beginCollection says what and why). */
  private journalled(oid: Oid | null | undefined): void {
    if (oid && this.isJournalling()) this.store.dbs.journal.putSync(this.objectKey(oid), JOURNALLED);
  }

  private isJournalling(): boolean {
    return (this.journalling ??= this.getCollection() !== undefined);
  }

  private worktreeKey(branch: string): Buffer {
    return Buffer.concat([this.prefix, Buffer.from(branch, 'utf8'), Buffer.of(NUL)]);
  }

  /**
   * The raw value under `key`: in `objects`, else in the log of recent objects. `fast`: a view into
   * lmdb-js's shared buffer (getBinaryFast), valid until the next read; else a copy of its own.
   */
  private rawValue(key: Buffer, fast: boolean): Buffer | undefined {
    const { objects } = this.store.dbs;
    return (fast ? objects.getBinaryFast(key) : objects.getBinary(key)) ?? this.store.recent.get(key, fast) ?? this.parent.heldCommit(this.project, key)?.value;
  }

  // A read that finds an object nowhere reads the log's new entries (another thread's or process's
  // store may have appended) and looks once more before it answers that the object is absent.

  getObject(oid: Oid): StoredObject | undefined {
    const key = this.objectKey(oid);
    // getBinary returns a copy of its own, so the body can be a view into it.
    const value = this.rawValue(key, false);
    if (!value) return this.rebuild(key, true) ?? (this.store.recent.catchUp() ? this.getObject(oid) : undefined);
    return { type: TYPE_NAMES[valueTypeCode(value)], body: valueBody(value) };
  }

  peekObject(oid: Oid): StoredObject | undefined {
    const key = this.objectKey(oid);
    // getBinaryFast's buffer is lmdb-js's shared one, sized to this value: bound every view by hand.
    const value = this.rawValue(key, true);
    if (!value) return this.rebuild(key, false) ?? (this.store.recent.catchUp() ? this.peekObject(oid) : undefined);
    const start = (value[0] & ANNEX_FLAG) === 0 ? 1 : ANNEX_HEADER_BYTES;
    return { type: TYPE_NAMES[valueTypeCode(value)], body: value.subarray(start, start + valueBodyLength(value)) };
  }

  getObjectWithAnnex(oid: Oid): AnnexedObject | undefined {
    const key = this.objectKey(oid);
    // getBinary copies the value once; body and annex are views into that copy.
    const value = this.rawValue(key, false);
    if (!value) {
      const rebuilt = this.rebuild(key, true);
      if (!rebuilt && this.store.recent.catchUp()) return this.getObjectWithAnnex(oid);
      return rebuilt && { ...rebuilt, annex: null };
    }
    return { type: TYPE_NAMES[valueTypeCode(value)], body: valueBody(value), annex: valueAnnex(value) };
  }

  hasObject(oid: Oid): boolean {
    const key = this.objectKey(oid);
    if (this.store.isStored(key) || this.parent.heldCommit(this.project, key)) return true;
    return this.store.recent.catchUp() && this.store.recent.has(key);
  }

  objectSize(oid: Oid): number | undefined {
    const key = this.objectKey(oid);
    const value = this.rawValue(key, true);
    if (value) return valueBodyLength(value);
    const size = this.readPacked(key)?.readUInt32BE(1);
    return size === undefined && this.store.recent.catchUp() ? this.objectSize(oid) : size;
  }

  objectType(oid: Oid): ObjectType | undefined {
    const key = this.objectKey(oid);
    const value = this.rawValue(key, true);
    if (value) return TYPE_NAMES[valueTypeCode(value)];
    const form = this.readPacked(key);
    if (form) return TYPE_NAMES[form[0] & ~DELTA_FLAG];
    return this.store.recent.catchUp() ? this.objectType(oid) : undefined;
  }

  /**
   * An object kept only as its pack-ready form, rebuilt: the chain of deltas is followed down to a
   * whole form (or a body rebuilt before), then applied upwards. `copy`: the caller may keep and
   * change the body, so a cached one is copied.
   */
  private rebuild(key: Buffer, copy: boolean): StoredObject | undefined {
    const { objects } = this.store.dbs;
    const first = this.readPacked(key);
    if (!first) return undefined;
    const type = TYPE_NAMES[first[0] & ~DELTA_FLAG];
    const cacheKey = key.toString('latin1');
    const cached = this.store.rebuilt.get(cacheKey);
    if (cached) return copy ? { type, body: Buffer.from(cached.body) } : cached;
    const deltas: Array<{ key: string; delta: Buffer }> = [];
    let body: Buffer | null = null;
    let current = key;
    while (body === null) {
      if (deltas.length > REBUILD_CHAIN_MAX) throw new Error(`object ${key.subarray(PROJECT_PREFIX_BYTES).toString('hex')}: delta chain too long (corrupt store)`);
      const currentKey = current.toString('latin1');
      const hit = current === key ? undefined : this.store.rebuilt.get(currentKey);
      if (hit) {
        body = hit.body;
        break;
      }
      const value = this.readPacked(current);
      if (!value) {
        // Forms are never removed alone, so a base without one is kept raw.
        const raw = objects.getBinary(current) ?? this.store.recent.get(current, false);
        if (!raw) throw new Error(`object ${current.subarray(PROJECT_PREFIX_BYTES).toString('hex')} is missing: a delta's base (corrupt store)`);
        body = valueBody(raw);
        break;
      }
      if ((value[0] & DELTA_FLAG) === 0) {
        body = inflateKnown(value.subarray(PACKED_HEADER_BYTES), value.readUInt32BE(1));
        if (current !== key) this.store.rebuilt.set(currentKey, { type, body });
        break;
      }
      deltas.push({ key: currentKey, delta: inflateKnown(value.subarray(PACKED_DELTA_HEADER_BYTES), value.readUInt32BE(PACKED_HEADER_BYTES)) });
      const base = Buffer.allocUnsafe(key.length);
      current.copy(base, 0, 0, PROJECT_PREFIX_BYTES);
      value.copy(base, PROJECT_PREFIX_BYTES, PACKED_HEADER_BYTES + 5, PACKED_DELTA_HEADER_BYTES);
      current = base;
    }
    // Every body on the way is cached: a walk meets the versions below this one next, and each then
    // costs one delta instead of the whole chain again.
    for (let at = deltas.length - 1; at >= 0; at--) {
      body = applyDelta(body, deltas[at].delta);
      this.store.rebuilt.set(deltas[at].key, { type, body });
    }
    const object = { type, body };
    if (deltas.length === 0) this.store.rebuilt.set(cacheKey, object);
    return copy ? { type, body: Buffer.from(body) } : object;
  }

  findObjectsByPrefix(hexPrefix: string, limit: number): Oid[] {
    const evenHex = hexPrefix.length % 2 === 0 ? hexPrefix : `${hexPrefix}0`;
    const start = Buffer.concat([this.prefix, Buffer.from(evenHex, 'hex')]);
    const end = hexPrefix.length % 2 === 0 ? prefixEnd(start) : prefixEnd(Buffer.concat([this.prefix, Buffer.from(`${hexPrefix}f`, 'hex')]));
    // Objects kept raw, and those kept as a pack-ready form alone; an id in both counts once.
    const found = new Map<string, Oid>();
    for (const keys of [this.store.dbs.objects.getKeys({ start, end }), this.store.dbs.deflated.getKeys({ start, end }), this.store.recent.keysStartingWith(start.subarray(0, PROJECT_PREFIX_BYTES + (hexPrefix.length >> 1)))]) {
      let taken = 0;
      for (const key of keys) {
        const oid = Buffer.from((key as Buffer).subarray(PROJECT_PREFIX_BYTES));
        const hex = oid.toString('hex');
        if (!hex.startsWith(hexPrefix)) continue;
        found.set(hex, oid);
        if (++taken >= limit) break;
      }
    }
    return [...found.keys()].sort().slice(0, limit).map((hex) => found.get(hex)!);
  }

  peekDeflated(oid: Oid): DeflatedObject | undefined {
    const value = this.readPacked(this.objectKey(oid));
    if (!value) return undefined;
    const inflatedBytes = value.readUInt32BE(1);
    if ((value[0] & DELTA_FLAG) === 0) return { type: TYPE_NAMES[value[0]], inflatedBytes, deflated: value.subarray(PACKED_HEADER_BYTES) };
    const delta = {
      bytes: value.readUInt32BE(PACKED_HEADER_BYTES),
      depth: value[PACKED_HEADER_BYTES + 4],
      base: Buffer.from(value.subarray(PACKED_HEADER_BYTES + 5, PACKED_DELTA_HEADER_BYTES)),
    };
    return { type: TYPE_NAMES[value[0] & ~DELTA_FLAG], inflatedBytes, delta, deflated: value.subarray(PACKED_DELTA_HEADER_BYTES) };
  }

  putDeflated(oid: Oid, deflated: Buffer): void {
    this.parent.assertWritable();
    const key = this.objectKey(oid);
    const raw = this.rawValue(key, true);
    if (!raw) return;
    const value = packedValue(valueTypeCode(raw), valueBodyLength(raw), deflated, null);
    const held = this.parent.heldFor(this.project);
    if (held) this.parent.holdForm(this.project, held, key, value);
    else putIfAbsent(this.store.dbs.deflated, key, value);
  }

  putDeflatedDelta(oid: Oid, delta: DeltaForm, deflated: Buffer): boolean {
    this.parent.assertWritable();
    const key = this.objectKey(oid);
    if (this.store.dbs.deflated.doesExist(key) || !this.deltaFits(oid, delta)) return false;
    const raw = this.rawValue(key, true);
    if (!raw) return false;
    const value = packedValue(valueTypeCode(raw), valueBodyLength(raw), deflated, delta);
    const held = this.parent.heldFor(this.project);
    if (!(held ? this.parent.holdForm(this.project, held, key, value) : putIfAbsent(this.store.dbs.deflated, key, value))) return false;
    // Its base must stay while this form does: a collector keeps what a journalled id's form names.
    this.journalled(oid);
    return true;
  }

  putObjectAsForm(oid: Oid, type: ObjectType, inflatedBytes: number, form: { deflated: Buffer; delta?: DeltaForm }): boolean {
    this.parent.assertWritable();
    if (type === 'commit') throw new Error('a commit is stored whole (putObjectWithId), so it is indexed');
    const key = this.objectKey(oid);
    if (this.store.isStored(key)) return true;
    if (form.delta && !this.deltaFits(oid, form.delta)) return false;
    this.parent.putForm(this.project, key, packedValue(TYPE_CODES[type], inflatedBytes, form.deflated, form.delta ?? null));
    this.journalled(oid);
    return true;
  }

  putObjectsAsForms(forms: ReadonlyArray<{ oid: Oid; type: ObjectType; inflatedBytes: number; form: { deflated: Buffer; delta?: DeltaForm } }>): number {
    this.parent.assertWritable();
    if (forms.some(({ type }) => type === 'commit')) throw new Error('a commit is stored whole (putObjectWithId), so it is indexed');
    const { objects } = this.store.dbs;
    const depths = this.parent.formDepthsPut(this.project);
    for (let i = 0; i < forms.length; i++) {
      const { oid, type, inflatedBytes, form } = forms[i];
      const key = this.objectKey(oid);
      if (objects.doesExist(key) || this.store.recent.has(key)) continue;
      if (form.delta) {
        // A base this transaction put (most are) is not read back.
        const baseDepth = depths.get(form.delta.base);
        const fits = baseDepth >= 0 ? !form.delta.base.equals(oid) && form.delta.depth === baseDepth + 1 && form.delta.depth <= PACKED_DEPTH_MAX : this.deltaFits(oid, form.delta);
        // One that has a form already is passed over whether its delta would fit or not.
        if (!fits) {
          if (this.store.dbs.deflated.doesExist(key)) continue;
          return i;
        }
      }
      if (!this.parent.putFormIfAbsent(this.project, key, packedValue(TYPE_CODES[type], inflatedBytes, form.deflated, form.delta ?? null))) continue;
      this.journalled(oid);
      depths.add(oid, 0, form.delta?.depth ?? 0);
    }
    return -1;
  }

  putReceivedForms(entries: ReadonlyArray<{ oid: Oid; type: ObjectType; inflatedBytes: number; deflated: Buffer; delta: { base: Oid; bytes: number } | null; body?: Buffer }>, depthMax: number): boolean[] {
    this.parent.assertWritable();
    // A commit is stored whole too (putObjectWithId), so it is indexed: after its parents.
    if (entries.some(({ type, body }) => type === 'commit' && !body)) throw new Error('a commit is stored whole, so its body must come with its entry');
    const { objects, deflated: packed } = this.store.dbs;
    const depths = this.parent.formDepthsPut(this.project);
    const held = this.parent.heldFor(this.project);
    const deepest = Math.min(depthMax, PACKED_DEPTH_MAX);
    const answers = new Array<boolean>(entries.length).fill(false);
    for (let i = 0; i < entries.length; i++) {
      const { oid, type, inflatedBytes, deflated, delta, body } = entries[i];
      const key = this.objectKey(oid);
      // A seed's held project was empty when its forms began to be held, and nothing but them is put
      // in it meanwhile (holdForms): what it has is in the tables, and the B-tree is not searched.
      // Asked before a commit is stored whole below, which would otherwise answer it.
      const there = held
        ? held.depths.has(oid) || depths.has(oid) || (!held.projectEmpty && (objects.doesExist(key) || this.store.recent.has(key)))
        : objects.doesExist(key) || this.store.recent.has(key);
      if (type === 'commit') this.putObjectWithId(oid, type, body!);
      if (there) {
        answers[i] = true;
        continue;
      }
      let depth = 0;
      if (delta) {
        // One that has a form already is there, whether its delta would fit or not.
        if (delta.base.equals(oid)) {
          answers[i] = packed.doesExist(key);
          continue;
        }
        // A base this transaction put (most are) is not read back.
        let baseDepth = depths.get(delta.base);
        if (baseDepth < 0) baseDepth = this.storedFormDepth(delta.base);
        if (baseDepth < 0 || baseDepth + 1 > deepest) {
          answers[i] = packed.doesExist(key);
          continue;
        }
        depth = baseDepth + 1;
      }
      answers[i] = true;
      const value = packedValue(TYPE_CODES[type], inflatedBytes, deflated, delta ? { base: delta.base, bytes: delta.bytes, depth } : null);
      // (A form there already is kept, and so is its depth.)
      if (!this.parent.putFormIfAbsent(this.project, key, value)) continue;
      this.journalled(oid);
      depths.add(oid, 0, depth);
    }
    return answers;
  }

  /** A delta form may name only another object with a form of its own, at 1 + that form's depth. */
  private deltaFits(oid: Oid, delta: DeltaForm): boolean {
    if (delta.base.equals(oid) || delta.depth > PACKED_DEPTH_MAX) return false;
    const baseDepth = this.storedFormDepth(delta.base);
    return baseDepth >= 0 && delta.depth === baseDepth + 1;
  }

  /** The depth of `oid`'s stored pack-ready form (0 for a whole stream), or -1 when it has none. */
  private storedFormDepth(oid: Oid): number {
    const held = this.parent.heldFor(this.project);
    if (held) {
      // Held back (LmdbStore.holdForms): by an earlier write, or by this one.
      const depth = Math.max(held.depths.get(oid), this.parent.formDepthsPut(this.project).get(oid));
      if (depth >= 0) return depth;
    }
    const form = this.readPacked(this.objectKey(oid));
    if (!form) return -1;
    return (form[0] & DELTA_FLAG) === 0 ? 0 : form[PACKED_HEADER_BYTES + 4];
  }

  getCommitObjects(commit: Oid): Buffer | undefined {
    return this.store.dbs.introduced.getBinary(this.objectKey(commit));
  }

  putCommitObjects(commit: Oid, records: Buffer): void {
    this.parent.assertWritable();
    if (records.length % OBJECT_RECORD_BYTES !== 0) throw new Error(`a commit's object list of ${records.length} bytes is not whole records`);
    const key = this.objectKey(commit);
    if (!this.store.dbs.commits.doesExist(key) && !this.parent.heldCommit(this.project, key)) throw new Error(`commit ${commit.toString('hex')} is not stored`);
    this.store.dbs.introduced.putSync(this.objectKey(commit), records);
  }

  getCommitInfo(oid: Oid): CommitInfo | undefined {
    const key = this.objectKey(oid);
    const value = this.store.dbs.commits.getBinaryFast(key) ?? this.parent.heldCommit(this.project, key)?.info;
    return value ? decodeCommitInfo(value) : undefined;
  }

  getRef(name: string): Oid | undefined {
    const value = this.store.dbs.refs.getBinary(this.stringKey(name));
    return value ? Buffer.from(value) : undefined;
  }

  listRefs(prefix: string): Array<{ name: string; oid: Oid }> {
    const start = this.stringKey(prefix);
    const out: Array<{ name: string; oid: Oid }> = [];
    for (const { key, value } of this.store.dbs.refs.getRange({ start, end: prefixEnd(start) })) {
      const name = (key as Buffer).toString('utf8', PROJECT_PREFIX_BYTES);
      if (name.startsWith(prefix)) out.push({ name, oid: Buffer.from(value) });
    }
    return out;
  }

  getWorkingTree(branch: string): WorkingTreeState | undefined {
    const stored = this.store.dbs.worktrees.get(this.worktreeKey(branch));
    return stored ? { tree: Buffer.from(stored.t), locks: stored.l.map(lockPathFromStore) } : undefined;
  }

  getVersion(): number {
    return (this.parent.getRecord<number>(VERSION_RECORD_PREFIX + this.project) ?? 0) as number;
  }

  putObject(type: ObjectType, body: Buffer, annex?: Buffer, similarTo?: Oid | null, nameHash?: number): Oid {
    const oid = hashObject(type, body);
    this.storeObject(oid, type, body, annex, similarTo ?? null, nameHash);
    return oid;
  }

  putObjectWithId(oid: Oid, type: ObjectType, body: Buffer, annex?: Buffer, similarTo?: Oid | null, nameHash?: number): void {
    this.storeObject(oid, type, body, annex, similarTo ?? null, nameHash);
  }

  private storeObject(oid: Oid, type: ObjectType, body: Buffer, annex: Buffer | undefined, similarTo: Oid | null, nameHash: number | undefined): void {
    this.parent.assertWritable();
    const key = this.objectKey(oid);
    const { objects, commits } = this.store.dbs;
    const value = this.store.objectValue(TYPE_CODES[type], body, annex);
    const held = type === 'commit' ? this.parent.heldFor(this.project) : undefined;
    if (held) {
      // A seed's commit, or a held push's: held back with its index entry, and put at the end (HeldForms.commits).
      // A seed's number held nothing when the hold began, and nobody else writes it: no B-tree to search.
      if (this.parent.heldCommit(this.project, key)) return;
      if (!held.projectEmpty && (objects.doesExist(key) || this.store.recent.has(key))) return;
      const parsed = commitInfoFromBody(body);
      // (objectValue may answer a view of the store's scratch buffer, which the next object overwrites.)
      this.parent.holdCommit(held, { key, value: Buffer.from(value), info: encodeCommitInfo({ ...parsed, generation: this.generationOf(parsed.parents) }) });
      // A push's is read by nobody else until it is put, and kept through a collection that runs meanwhile.
      if (held.projectEmpty) this.store.noteStored(this.project, oid, similarTo, nameHash);
      else this.journalled(oid);
      return;
    }
    // While a collection of the project runs its new objects go straight to `objects`, which its
    // listings read (beginCollection moved the project's log there).
    if (!this.isJournalling() && this.parent.appendsRecent(value.length)) {
      if (objects.doesExist(key) || this.store.recent.has(key)) return;
      this.parent.recentAppended.push(this.store.recent.append(key, value));
    } else if (this.store.recent.has(key) || !putIfAbsent(objects, key, value)) {
      return;
    }
    this.store.noteStored(this.project, oid, similarTo, nameHash);
    // An object kept as its form alone was there already; only one that was absent is journalled
    // (looked up only while a collection runs: a merge stores dozens of new trees).
    if (this.isJournalling() && !this.store.dbs.deflated.doesExist(key)) this.journalled(oid);
    if (type === 'commit') {
      const parsed = commitInfoFromBody(body);
      commits.putSync(key, encodeCommitInfo({ ...parsed, generation: this.generationOf(parsed.parents) }));
    }
  }

  /** A commit's generation number: one more than its parents' highest. */
  private generationOf(parents: readonly Oid[]): number {
    let generation = 1;
    for (const parent of parents) {
      // A parent outside the store (a shallow boundary) counts as generation 1.
      generation = Math.max(generation, (this.getCommitInfo(parent)?.generation ?? 1) + 1);
    }
    return generation;
  }

  casRef(name: string, expected: Oid | null, next: Oid | null): void {
    this.parent.assertWritable();
    const key = this.stringKey(name);
    const current = this.getRef(name) ?? null;
    const matches = expected === null ? current === null : current !== null && current.equals(expected);
    if (!matches) throw new RefChangedError(name, current);
    if (next === null) this.store.dbs.refs.removeSync(key);
    else this.store.dbs.refs.putSync(key, next);
    // A reader may have taken the old value before it moved: both are kept through a collection.
    this.journalled(current);
    this.journalled(next);
  }

  putWorkingTree(branch: string, state: WorkingTreeState): void {
    this.parent.assertWritable();
    this.journalWorkingTree(branch);
    this.store.dbs.worktrees.putSync(this.worktreeKey(branch), { t: state.tree, l: state.locks.map(storedLockPath) });
    this.journalled(state.tree);
  }

  deleteWorkingTree(branch: string): void {
    this.parent.assertWritable();
    this.journalWorkingTree(branch);
    this.store.dbs.worktrees.removeSync(this.worktreeKey(branch));
  }

  /** Journals the tree a working tree holds before it changes, when a collection runs. */
  private journalWorkingTree(branch: string): void {
    if (this.isJournalling()) this.journalled(this.getWorkingTree(branch)?.tree);
  }

  getCollection(): CollectionState | undefined {
    return this.parent.getRecord<CollectionState>(COLLECTION_RECORD_PREFIX + this.project);
  }

  collectionsBegun(): number {
    return this.parent.getRecord<number>(COLLECTIONS_BEGUN_PREFIX + this.project) ?? 0;
  }

  listWorkingTrees(): Array<{ branch: string; state: WorkingTreeState }> {
    const out: Array<{ branch: string; state: WorkingTreeState }> = [];
    for (const { key, value } of this.store.dbs.worktrees.getRange({ start: this.prefix, end: prefixEnd(this.prefix) })) {
      const branch = (key as Buffer).toString('utf8', PROJECT_PREFIX_BYTES, (key as Buffer).length - 1);
      out.push({ branch, state: { tree: Buffer.from(value.t), locks: value.l.map(lockPathFromStore) } });
    }
    return out;
  }

  listStored(after: Oid | null, limit: number): ListedEntry[] {
    const { objects, deflated, commits, introduced } = this.store.dbs;
    // The `limit` first ids of the union are among the `limit` first of each database; only the
    // forms' values are read (their headers name delta bases), never a body.
    const listed = new Map<string, ListedEntry>();
    const entry = (key: Buffer): ListedEntry => {
      const hex = key.toString('latin1');
      let found = listed.get(hex);
      if (!found) listed.set(hex, (found = { oid: Buffer.from(key.subarray(PROJECT_PREFIX_BYTES)), raw: false, form: false, formBase: null, formDepth: 0, commit: false, formCompact: false }));
      return found;
    };
    for (const key of this.keysAfter(objects, after, limit)) entry(key).raw = true;
    const afterName = after && this.objectKey(after).toString('latin1');
    const prefixName = this.prefix.toString('latin1');
    const recent = this.store.recent.sortedKeys((name) => name.startsWith(prefixName) && (afterName === null || name > afterName));
    for (const key of recent.slice(0, limit)) entry(key).raw = true;
    for (const key of this.keysAfter(commits, after, limit)) entry(key).commit = true;
    for (const key of this.keysAfter(introduced, after, limit)) entry(key);
    const inShelves = new Map<string, Array<{ entry: ListedEntry; offset: number }>>();
    const range = deflated.getRange({ start: after ? this.objectKey(after) : this.prefix, end: prefixEnd(this.prefix), exclusiveStart: after !== null, limit } as Parameters<typeof deflated.getRange>[0]);
    for (const { key, value } of range) {
      const listedEntry = entry(Buffer.from(key as Buffer));
      listedEntry.form = true;
      // Shelved, or too large for a shelf (keepCompact leaves it a value of its own).
      listedEntry.formCompact = value[0] === SHELF_POINTER || value.length > SHELF_VALUE_BYTES_MAX;
      if (value[0] !== SHELF_POINTER) {
        if ((value[0] & DELTA_FLAG) !== 0) {
          listedEntry.formBase = Buffer.from(value.subarray(PACKED_HEADER_BYTES + 5, PACKED_DELTA_HEADER_BYTES));
          listedEntry.formDepth = value[PACKED_HEADER_BYTES + 4];
        }
        continue;
      }
      const id = value.toString('hex', 1, 1 + SHELF_ID_BYTES);
      const waiting = inShelves.get(id) ?? [];
      waiting.push({ entry: listedEntry, offset: value.readUInt32BE(1 + SHELF_ID_BYTES) });
      inShelves.set(id, waiting);
    }
    for (const [id, waiting] of inShelves) {
      for (const { entry: listedEntry, offset } of waiting) {
        const form = this.shelvedForm(Buffer.from(id, 'hex'), offset);
        if ((form[0] & DELTA_FLAG) !== 0) {
          listedEntry.formBase = Buffer.from(form.subarray(PACKED_HEADER_BYTES + 5, PACKED_DELTA_HEADER_BYTES));
          listedEntry.formDepth = form[PACKED_HEADER_BYTES + 4];
        }
      }
    }
    return [...listed.values()].sort((a, b) => Buffer.compare(a.oid, b.oid)).slice(0, limit);
  }

  /**
   * The form at `offset` of a shelf (a view, valid until the next read), the shelf read through
   * the store's cache of shelves, so a walk of many forms reads each shelf once while it fits.
   */
  private shelvedForm(id: Buffer, offset: number): Buffer {
    const cacheKey = this.project * 2 ** 20 + (id.readUIntBE(0, 6) % 2 ** 32);
    const cached = this.store.shelfCache.get(cacheKey);
    if (cached && cached.project === this.project && cached.id.equals(id)) return cached.bytes.subarray(offset);
    const open = this.parent.openShelfValue(this.project, id, offset);
    if (open) return open;
    const bytes = this.store.dbs.shelves.getBinary(Buffer.concat([this.prefix, id]));
    if (!bytes) throw new Error(`shelf ${id.toString('hex')} is missing (corrupt store)`);
    this.store.shelfCache.set(cacheKey, { project: this.project, id, bytes });
    return bytes.subarray(offset);
  }

  describeStored(oids: readonly Oid[]): Array<StoredEntry | undefined> {
    return this.describeKeys(oids.map((oid) => this.objectKey(oid)));
  }

  listJournal(after: Oid | null, limit: number): Oid[] {
    return this.keysAfter(this.store.dbs.journal, after, limit).map((key) => key.subarray(PROJECT_PREFIX_BYTES));
  }

  /** Keys of the project in `db` after the id `after` (copies), at most `limit`. */
  private keysAfter(db: Database<Buffer, Buffer>, after: Oid | null, limit: number): Buffer[] {
    const start = after ? this.objectKey(after) : this.prefix;
    const out: Buffer[] = [];
    for (const key of db.getKeys({ start, end: prefixEnd(this.prefix), exclusiveStart: after !== null, limit } as Parameters<typeof db.getKeys>[0])) {
      out.push(Buffer.from(key as Buffer));
    }
    return out;
  }

  /** What is kept under each key: sizes and types, so raw bodies are read (a collection asks only of its candidates). */
  private describeKeys(keys: readonly Buffer[]): Array<StoredEntry | undefined> {
    const { objects, deflated, commits, introduced } = this.store.dbs;
    const out: Array<StoredEntry | undefined> = [];
    for (const key of keys) {
      const entry: StoredEntry = { oid: Buffer.from(key.subarray(PROJECT_PREFIX_BYTES)), type: undefined, rawBytes: 0, formBytes: 0, formBase: null, formDepth: 0, indexBytes: 0 };
      // getBinaryFast's buffer is reused by the next read: each value is used before the next get.
      const raw = objects.getBinaryFast(key) ?? this.store.recent.get(key, true);
      if (raw) {
        entry.rawBytes = raw.length;
        entry.type = TYPE_NAMES[valueTypeCode(raw)];
      }
      entry.indexBytes = (commits.getBinaryFast(key)?.length ?? 0) + (introduced.getBinaryFast(key)?.length ?? 0);
      const form = deflated.getBinaryFast(key);
      if (form && form[0] === SHELF_POINTER) {
        entry.formBytes = form.length + form.readUInt32BE(1 + SHELF_ID_BYTES + 4);
        const id = Buffer.from(form.subarray(1, 1 + SHELF_ID_BYTES));
        describeForm(entry, this.shelvedForm(id, form.readUInt32BE(1 + SHELF_ID_BYTES)), 0);
      } else if (form) {
        entry.formBytes = form.length;
        describeForm(entry, form, 0);
      }
      out.push(entry.rawBytes + entry.formBytes + entry.indexBytes > 0 ? entry : undefined);
    }
    return out;
  }

  beginCollection(state: CollectionState): void {
    this.parent.putRecord(COLLECTION_RECORD_PREFIX + this.project, state);
    this.parent.putRecord(COLLECTIONS_BEGUN_PREFIX + this.project, this.collectionsBegun() + 1);
    this.journalling = true;
    // The collection lists `objects`: the project's log goes there first, and its writes go there
    // until the collection ends (storeObject).
    const { objects } = this.store.dbs;
    this.parent.recentMoved.push(...this.store.recent.move(Infinity, (key, value) => putIfAbsent(objects, key, value), RecentObjects.inProject(this.prefix)));
  }

  endCollection(): void {
    this.parent.deleteRecord(COLLECTION_RECORD_PREFIX + this.project);
    this.journalling = false;
    const { journal } = this.store.dbs;
    for (const key of journal.getKeys({ start: this.prefix, end: prefixEnd(this.prefix), limit: JOURNAL_CLEAR_MAX })) journal.removeSync(key);
  }

  forgetJournal(oids: readonly Oid[]): void {
    this.parent.assertWritable();
    for (const oid of oids) this.store.dbs.journal.removeSync(this.objectKey(oid));
  }

  removeStored(oids: readonly Oid[]): number {
    this.parent.assertWritable();
    const { objects, deflated, commits, introduced } = this.store.dbs;
    let removed = 0;
    const names = new Set<string>();
    for (const oid of oids) {
      const key = this.objectKey(oid);
      for (const db of [objects, deflated, commits, introduced]) if (db.removeSync(key)) removed++;
      names.add(key.toString('latin1'));
    }
    const gone = this.store.recent.remove(names);
    this.parent.recentMoved.push(...gone);
    return removed + gone.length;
  }

  replaceFormWhole(oid: Oid, base: Oid, deflated: Buffer): boolean {
    this.parent.assertWritable();
    const key = this.objectKey(oid);
    const current = this.readPacked(key);
    if (!current || (current[0] & DELTA_FLAG) === 0) return false;
    if (current.compare(base, 0, OID_BYTES, PACKED_HEADER_BYTES + 5, PACKED_DELTA_HEADER_BYTES) !== 0) return false;
    const value = packedValue(current[0] & ~DELTA_FLAG, current.readUInt32BE(1), deflated, null);
    // A value of its own: the shelf it pointed into keeps dead bytes until compacted (compactShelves).
    this.store.dbs.deflated.putSync(key, value);
    return true;
  }

  keepCompact(objects: ReadonlyArray<{ oid: Oid; dropRaw: boolean }>): { rawDropped: number; formsMoved: number } {
    this.parent.assertWritable();
    const { objects: raws, deflated } = this.store.dbs;
    let rawDropped = 0;
    let formsMoved = 0;
    const recentDropped = new Set<string>();
    for (const { oid, dropRaw } of objects) {
      const key = this.objectKey(oid);
      // A copy: the shelf keeps it until the transaction writes the shelf.
      const form = deflated.getBinary(key);
      if (!form) continue;
      if (form[0] !== SHELF_POINTER && form.length <= SHELF_VALUE_BYTES_MAX) {
        this.parent.putForm(this.project, key, form);
        formsMoved++;
      }
      if (!dropRaw) continue;
      const raw = raws.getBinaryFast(key);
      if (raw && valueTypeCode(raw) !== TYPE_CODES.commit && raws.removeSync(key)) rawDropped++;
      else if (!raw) {
        const logged = this.store.recent.get(key, true);
        if (logged && valueTypeCode(logged) !== TYPE_CODES.commit) recentDropped.add(key.toString('latin1'));
      }
    }
    const gone = this.store.recent.remove(recentDropped);
    this.parent.recentMoved.push(...gone);
    return { rawDropped: rawDropped + gone.length, formsMoved };
  }

  replaceForms(changes: readonly FormChange[]): boolean {
    this.parent.assertWritable();
    const values: Array<{ key: Buffer; value: Buffer }> = [];
    for (const { oid, was, form } of changes) {
      const key = this.objectKey(oid);
      const current = this.readPacked(key);
      if (!current) return false;
      const delta = (current[0] & DELTA_FLAG) !== 0;
      if (delta !== (was.base !== null)) return false;
      if (delta && (current[PACKED_HEADER_BYTES + 4] !== was.depth || current.compare(was.base!, 0, OID_BYTES, PACKED_HEADER_BYTES + 5, PACKED_DELTA_HEADER_BYTES) !== 0)) return false;
      if (form.delta && (form.delta.base.equals(oid) || form.delta.depth < 1 || form.delta.depth > PACKED_DEPTH_MAX)) return false;
      // Built now: `current` is a view the next read reuses.
      values.push({ key, value: packedValue(current[0] & ~DELTA_FLAG, current.readUInt32BE(1), form.deflated, form.delta ?? null) });
    }
    for (const { key, value } of values) this.parent.putForm(this.project, key, value);
    return true;
  }

  bumpVersion(): number {
    const version = this.getVersion() + 1;
    this.parent.putRecord(VERSION_RECORD_PREFIX + this.project, version);
    return version;
  }
}
