/**
 * The storage interface every backend implements. The repo layer sees only these types; LMDB
 * (src/store/lmdb.ts) is the one implementation today, and test/store/contract.ts is the suite a
 * second backend must pass.
 *
 * Transactions are synchronous callbacks: a write callback runs alone (writers are serialised), sees
 * its own writes, and either commits whole or, when it throws, leaves nothing behind. `write`
 * resolves only once the commit is durable, so a caller may acknowledge the work it did.
 */
import type { ObjectType, Oid } from '../git/oid.js';
import type { TreeMode } from '../git/tree.js';

/** Parents, tree, committer time and generation number of one commit, kept so walks never inflate. */
export interface CommitInfo {
  tree: Oid;
  parents: Oid[];
  /** Committer time, seconds since the epoch. */
  commitTime: number;
  /** 1 for a root commit, else 1 + the largest generation of its parents. */
  generation: number;
}

export interface DeflatedObject {
  type: ObjectType;
  inflatedBytes: number;
  deflated: Buffer;
}

export interface StoredObject {
  type: ObjectType;
  body: Buffer;
}

/**
 * One entry of a working-tree directory. For a file `oid` is its blob. For a directory `oid` is the
 * id of the tree the subdirectory holds now, or null when a change below it has not been hashed yet.
 */
export interface WorkingEntry {
  name: string;
  mode: TreeMode;
  oid: Oid | null;
  /** Bytes of the blob (-1: not read yet, see src/repo/workingTree.ts); 0 for directories and gitlinks. */
  size: number;
  locked: boolean;
  /**
   * Directories only: the subdirectory has a node of its own (see DirNode). Without one it is
   * exactly the tree `oid`, untouched since it came from a commit.
   */
  materialised?: boolean;
}

/** A materialised working-tree directory. `tree` caches its tree id; a write below it clears it. */
export interface DirNode {
  tree: Oid | null;
  /** Sorted by name (JavaScript string order); names are unique. */
  entries: WorkingEntry[];
  /** Root node only: every locked path of the branch, sorted, so lock checks never walk the tree. */
  locks?: string[];
}

export interface ProjectReadTx {
  readonly project: number;
  getObject(oid: Oid): StoredObject | undefined;
  hasObject(oid: Oid): boolean;
  /** Size in bytes of a stored object's body, without copying it. */
  objectSize(oid: Oid): number | undefined;
  /** Every stored object whose id starts with the given hex digits, at most `limit` of them. */
  findObjectsByPrefix(hexPrefix: string, limit: number): Oid[];
  getCommitInfo(oid: Oid): CommitInfo | undefined;
  getRef(name: string): Oid | undefined;
  /** Refs whose name starts with `prefix`, sorted by name. */
  listRefs(prefix: string): Array<{ name: string; oid: Oid }>;
  getDirNode(branch: string, dir: string): DirNode | undefined;
  /** Every materialised directory of a branch's working tree, sorted by directory path. */
  listDirNodes(branch: string): Array<{ dir: string; node: DirNode }>;
  /** +1 on every change to the project's files, refs or settings. */
  getVersion(): number;
  /**
   * The object as a pack-ready zlib stream with its type and inflated size, when the deflate cache
   * has it. `deflated` may be a view into storage that the next read reuses: copy it before reading again.
   */
  peekDeflated(oid: Oid): DeflatedObject | undefined;
}

export interface ProjectWriteTx extends ProjectReadTx {
  /** Stores an object (idempotent) and, for commits, indexes it; returns its id. */
  putObject(type: ObjectType, body: Buffer): Oid;
  /** Stores an object whose id the caller already computed (received packs, imports). */
  putObjectWithId(oid: Oid, type: ObjectType, body: Buffer): void;
  /**
   * The one way a ref moves: `expected` null means "must not exist", `next` null deletes.
   * A mismatch throws RefChangedError and leaves the ref as it was.
   */
  casRef(name: string, expected: Oid | null, next: Oid | null): void;
  putDirNode(branch: string, dir: string, node: DirNode): void;
  deleteDirNode(branch: string, dir: string): void;
  deleteWorkingTree(branch: string): void;
  bumpVersion(): number;
  /** Caches the zlib-deflated body of a stored object, so packs copy it instead of compressing. */
  putDeflated(oid: Oid, deflated: Buffer): void;
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
  /** Removes every object, commit, ref and working tree of a project. */
  dropProject(project: number): void;
}

export interface Store {
  read<T>(action: (tx: StoreReadTx) => T): T;
  /**
   * Called after each committed write transaction with the objects it stored, per project, so work
   * that follows a write (the deflate cache) need not scan for it.
   */
  onObjectsStored(listener: (project: number, oids: Oid[]) => void): void;
  /** Stored objects that have no deflated form yet, across projects, at most `limit` of them. */
  listUndeflated(limit: number): Array<{ project: number; oid: Oid }>;
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
