/**
 * The store a configuration names. Today that is the embedded LMDB environment in the data
 * directory; a PostgreSQL backend will be chosen here too (TREEHOUSE_DATABASE_URL), so the
 * service never knows which backend it runs on.
 */
import { mkdirSync } from 'node:fs';
import { LmdbStore } from './lmdb.js';
import type { AsyncStore, StoreThreadAccess } from './asyncTypes.js';

export interface StoreLocation {
  dataDir: string;
}

export function openStore(location: StoreLocation): AsyncStore {
  mkdirSync(location.dataDir, { recursive: true });
  return new LmdbStore({ path: location.dataDir }).async;
}

/**
 * The store `access` describes (AsyncStore.threadAccess), opened for reading on this thread: a
 * worker thread's view of the store the main thread opened. lmdb-js shares one environment between
 * the threads of a process.
 */
export function openStoreInThread(access: StoreThreadAccess): AsyncStore {
  return new LmdbStore({ path: access.path, readOnly: true }).async;
}
