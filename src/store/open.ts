/**
 * The store a configuration names: PostgreSQL when a database URL is given (TREEHOUSE_DATABASE_URL,
 * README "PostgreSQL"), else the embedded LMDB environment in the data directory. The service never
 * knows which backend it runs on.
 */
import { mkdirSync } from 'node:fs';
import { LmdbStore } from './lmdb.js';
import type { AsyncStore, StoreThreadAccess } from './asyncTypes.js';
import { PostgresStore } from './postgres/store.js';

export interface StoreLocation {
  dataDir: string;
  /** postgres://…: the PostgreSQL backend; null or absent: LMDB in `dataDir`. */
  databaseUrl?: string | null;
  /** Connections of each of the PostgreSQL store's pools (reads, write transactions). */
  databaseConnections?: { reads: number; writes: number };
}

/**
 * Opens the store; on PostgreSQL, connects and applies the migrations the database lacks (rejecting
 * with StoreUnavailableError when it cannot be reached, SchemaTooNewError when its schema is newer
 * than this build).
 */
export async function openStore(location: StoreLocation): Promise<AsyncStore> {
  if (location.databaseUrl) {
    return PostgresStore.open({
      url: location.databaseUrl,
      readConnectionsMax: location.databaseConnections?.reads,
      writeConnectionsMax: location.databaseConnections?.writes,
    });
  }
  mkdirSync(location.dataDir, { recursive: true });
  return new LmdbStore({ path: location.dataDir }).async;
}

/** Which backend a location names, for messages and the backup tool. */
export function storeKind(location: StoreLocation): 'lmdb' | 'postgres' {
  return location.databaseUrl ? 'postgres' : 'lmdb';
}

/**
 * The store `access` describes (AsyncStore.threadAccess), opened for reading on this thread: a
 * worker thread's view of the store the main thread opened. lmdb-js shares one environment between
 * the threads of a process.
 */
export function openStoreInThread(access: StoreThreadAccess): AsyncStore {
  return new LmdbStore({ path: access.path, readOnly: true }).async;
}
