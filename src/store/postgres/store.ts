/**
 * The PostgreSQL backend of the asynchronous store (src/store/asyncTypes.ts), for running the
 * service on several stateless nodes over one database (README "PostgreSQL"). The schema and its
 * migrations: migrations.ts, applied when the store starts. Reads: reader.ts; write transactions:
 * writeTx.ts; every statement: statements.ts.
 *
 * Two pools of connections: reads, and write transactions. A write transaction holds its
 * connection from its first locked read to its commit and reads objects meanwhile on the read
 * pool, so writers waiting for connections or locks never keep a reader from its answer, nor a
 * writer that holds a lock from the reads it needs to finish.
 *
 * Pack-ready forms are offered (packForms true, table treehouse_forms: migrations.ts), beside every
 * object's raw copy (formsAlone false): the deflate cache fills them after writes, a received pack
 * keeps its entries, and a clone copies them. Garbage collection is offered too (collection true;
 * README "Garbage collection").
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { AsyncStore, AsyncStoreReadTx, AsyncStoreWriteTx, ObjectCursor, SharedRateLimits, StoreSignals, UndeflatedPage } from '../asyncTypes.js';
import { StoreUnavailableError, type NewObject } from '../types.js';
import { CommitCache, ObjectCache } from './caches.js';
import { isRetryable, isStale, storeError } from './errors.js';
import { migrate } from './migrations.js';
import { mapped, ReadTx, type StoreContext } from './reader.js';
import { SignalListener } from './signals.js';
import { CopyFailedError, deleteProjectRows, selectStorageBytes, selectUndeflatedPage, takeRateToken } from './statements.js';
import { WriteConflict, WriteTx, type CommittedWrites } from './writeTx.js';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** Connections of the read pool (default 8). */
  readConnectionsMax?: number;
  /** Connections of the write pool: write transactions under way at once (default 8). */
  writeConnectionsMax?: number;
  /** Bytes of objects the node keeps in memory (default 64 MiB). */
  objectCacheBytes?: number;
  /** Bytes of commit index entries the node keeps in memory (default 16 MiB). */
  commitCacheBytes?: number;
  /** Seconds to wait for a connection before the store is unavailable (default 10). */
  connectTimeoutSeconds?: number;
  /**
   * A write transaction idle this long (its callback neither reading nor writing: a stuck node)
   * is ended by the server, releasing its locks (default 5 minutes).
   */
  idleInTransactionTimeoutMs?: number;
}

const OBJECT_CACHE_BYTES_DEFAULT = 64 * 1024 * 1024;
/** An object larger than this is not cached: one would push out thousands of trees. */
const OBJECT_CACHE_ENTRY_BYTES_MAX = 1024 * 1024;
const COMMIT_CACHE_BYTES_DEFAULT = 16 * 1024 * 1024;
/** Runs of a write callback that deadlocked (or whose compare-and-swap failed) before the error is reported. */
const WRITE_ATTEMPTS_MAX = 8;

/** Runs `attempt` again after a deadlock or a serialisation failure (each rolled it back whole), at most WRITE_ATTEMPTS_MAX times. */
async function retriedWhenRetryable<T>(attempt: () => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isRetryable(error) || run >= WRITE_ATTEMPTS_MAX) throw error;
    }
  }
}

/**
 * The driver's options for the store's connections: durable commits whatever the server's or the
 * database's default (a setting sent at connection start outranks both), and named connections.
 */
export function connectionOptions(options: Pick<PostgresStoreOptions, 'connectTimeoutSeconds' | 'idleInTransactionTimeoutMs'>, connectionsMax: number): postgres.Options<{}> {
  return {
    max: connectionsMax,
    connect_timeout: options.connectTimeoutSeconds ?? 10,
    onnotice: () => undefined,
    // Array parameters are sent as literals (codec.ts) and no result holds an array: the driver
    // need not fetch the server's array types on every new connection.
    fetch_types: false,
    connection: {
      application_name: 'treehouse',
      synchronous_commit: 'on',
      idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? 300_000,
    },
  };
}

export class PostgresStore implements AsyncStore {
  readonly packForms = true;
  /** Every object keeps its raw copy; its form sits beside it (README "PostgreSQL"). */
  readonly formsAlone = false;
  /** Garbage collection (README "Garbage collection"): the capability's reads and writes are in reader.ts and writeTx.ts; no compaction step. */
  readonly collection = true;
  readonly signals: StoreSignals;
  readonly rateLimits: SharedRateLimits;
  private readonly context: StoreContext;
  /** The node's LISTEN connection (signals.ts), opened when something first listens. */
  private listener: SignalListener | null = null;
  /**
   * Rate-limit buckets are updated on connections of their own that do not wait for the WAL's
   * flush (synchronous_commit off): a bucket need not survive a crash, and a request should not
   * wait for a disk sync to be let in.
   */
  private readonly counters: postgres.Sql;
  private readonly objectListeners: Array<(project: number, stored: NewObject[]) => void> = [];
  private readonly writeListeners: Array<(durationMs: number, committed: boolean) => void> = [];
  private migrated: Promise<void> | null = null;
  private closed = false;

  /** Opens the store and applies the migrations the database lacks; see PostgresStore.open. */
  constructor(options: PostgresStoreOptions) {
    this.context = {
      reads: postgres(options.url, connectionOptions(options, options.readConnectionsMax ?? 8)),
      writes: postgres(options.url, connectionOptions(options, options.writeConnectionsMax ?? 8)),
      objects: new ObjectCache(options.objectCacheBytes ?? OBJECT_CACHE_BYTES_DEFAULT, OBJECT_CACHE_ENTRY_BYTES_MAX),
      commits: new CommitCache(options.commitCacheBytes ?? COMMIT_CACHE_BYTES_DEFAULT),
      collecting: new Set(),
      node: randomBytes(8).toString('hex'),
    };
    const counterOptions = connectionOptions(options, 2);
    this.counters = postgres(options.url, { ...counterOptions, connection: { ...counterOptions.connection, synchronous_commit: 'off' } });
    this.signals = {
      listen: (channel, listener) => {
        this.assertOpen();
        this.listener ??= new SignalListener(options.url, connectionOptions(options, 1), this.context.node);
        return this.listener.listen(channel, listener);
      },
      hears: (channel) => this.listener?.hears(channel) ?? false,
    };
    this.rateLimits = {
      takeToken: async (key, ratePerSecond, burst) => {
        this.assertOpen();
        await this.ready();
        return mapped(() => takeRateToken(this.counters, key, ratePerSecond, burst));
      },
    };
    void this.ready().catch(() => undefined);
  }

  /** Resolves once every channel listened to is listened on the server (tests). */
  async signalsReady(): Promise<void> {
    await this.listener?.ready();
  }

  /** A store whose schema is up to date, or the reason it cannot be (unreachable, a schema newer than this build). */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const store = new PostgresStore(options);
    try {
      await store.ready();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /** The migrations, once; tried again by the next call when the database could not be reached. */
  private ready(): Promise<void> {
    this.migrated ??= migrate(this.context.writes).then(
      () => undefined,
      (error: unknown) => {
        this.migrated = null;
        throw storeError(error);
      },
    );
    return this.migrated;
  }

  async read<T>(action: (tx: AsyncStoreReadTx) => Promise<T>): Promise<T> {
    this.assertOpen();
    await this.ready();
    return action(new ReadTx(this.context));
  }

  /** Every write, committed or not, timed from its callback's start to its commit's durability. */
  async write<T>(action: (tx: AsyncStoreWriteTx) => Promise<T>): Promise<T> {
    this.assertOpen();
    const started = performance.now();
    let committed = false;
    try {
      await this.ready();
      const result = await this.runWrite(action);
      committed = true;
      return result;
    } finally {
      const durationMs = performance.now() - started;
      for (const listener of this.writeListeners) listener(durationMs, committed);
    }
  }

  private async runWrite<T>(action: (tx: AsyncStoreWriteTx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const tx = new WriteTx(this.context, attempt);
      let result: T;
      let written: CommittedWrites;
      try {
        result = await action(tx);
        written = await tx.commit();
      } catch (error) {
        const rolledBack = await tx.rollback();
        const failure = storeError(error);
        // It may have committed: whoever keeps a cache on the word of its signals forgets all the same.
        if (failure instanceof StoreUnavailableError && failure.commitUnknown) this.hearOwn(tx.signalsPut);
        // A connection error on a connection that is still alive is postgres.js's stale error of one
        // that closed before (errors.ts isStale): the write was rolled back whole, and runs again.
        const stale = failure instanceof StoreUnavailableError && !failure.commitUnknown && rolledBack && isStale(error);
        if ((error instanceof WriteConflict || error instanceof CopyFailedError || isRetryable(error) || stale) && attempt < WRITE_ATTEMPTS_MAX) continue;
        throw failure;
      }
      this.hearOwn(tx.signalsPut);
      this.afterCommit(written);
      return result;
    }
  }

  /** This node's own signals, heard at the commit (signals.ts). */
  private hearOwn(signals: WriteTx['signalsPut']): void {
    for (const { channel, message } of signals) this.listener?.deliverOwn(channel, message);
  }

  private afterCommit(written: CommittedWrites): void {
    for (const { project, oids } of written.removed) {
      this.context.objects.forget(project, oids);
      this.context.commits.forget(project, oids);
    }
    for (const { project, oid, object } of written.objects) this.context.objects.adopt(project, oid, object);
    for (const { project, oid, info } of written.commits) this.context.commits.adopt(project, oid, info);
    for (const [project, stored] of written.stored) for (const listener of this.objectListeners) listener(project, stored);
  }

  /** Objects of every project without a form, a page at a time (the deflate cache's scan at start). */
  async listUndeflated(after: ObjectCursor | null, limit: number): Promise<UndeflatedPage> {
    this.assertOpen();
    await this.ready();
    const rows = limit >= 1 ? Math.floor(Math.min(limit, 100_000)) : 0;
    if (rows === 0) return { undeflated: [], next: after && { project: after.project, oid: Buffer.from(after.oid) } };
    const page = await mapped(() => selectUndeflatedPage(this.context.reads, after, rows));
    const last = page[page.length - 1];
    return {
      undeflated: page.filter((row) => !row.formed).map((row) => ({ project: row.project_id, oid: row.oid })),
      next: page.length < rows ? null : { project: last.project_id, oid: Buffer.from(last.oid) },
    };
  }

  async dropProjectKeys(project: number, keysMax: number): Promise<number> {
    this.assertOpen();
    await this.ready();
    // A deadlock with a writer of the same rows (the deflate cache's forms of a project just
    // imported take key-share locks on its objects) rolls the drop back whole: it runs again.
    const removed = await mapped(() => retriedWhenRetryable(() => this.context.writes.begin((tx) => deleteProjectRows(tx, project, keysMax))));
    // A dropped project's objects must not be answered from this node's caches.
    this.context.objects.forgetProject(project);
    this.context.commits.forgetProject(project);
    this.context.collecting.delete(project);
    return removed;
  }

  onObjectsStored(listener: (project: number, stored: NewObject[]) => void): void {
    this.objectListeners.push(listener);
  }

  onWriteDone(listener: (durationMs: number, committed: boolean) => void): void {
    this.writeListeners.push(listener);
  }

  async storageUsedBytes(): Promise<number> {
    this.assertOpen();
    await this.ready();
    return mapped(() => selectStorageBytes(this.context.reads));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.context.reads.end({ timeout: 5 }), this.context.writes.end({ timeout: 5 }), this.counters.end({ timeout: 5 }), this.listener?.close()]);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('store is closed');
  }
}
