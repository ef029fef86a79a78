/**
 * Search on other threads. Most of a search over a large tree is reading its blobs from the store
 * (about 2 µs each on LMDB, half the time) and scanning them; one thread does both at a time, where
 * `git grep` reads and scans on several. A search walks the tree on the request thread, as before,
 * and hands the files to SearchThreads a batch at a time, several batches at once; a worker thread
 * opens the same store itself (AsyncStore.threadAccess), reads the batch's blobs where the store
 * holds them and scans them, and answers the batch's matches. The request thread puts the answers
 * together in order and stops once it has enough, so what a search answers does not depend on
 * where it ran (test/interop/search.test.ts runs through the server, which has the threads;
 * test/repo/search/ runs the verb without them).
 */
import { OID_BYTES } from '../../git/oid.js';
import type { AsyncStore, StoreThreadAccess } from '../../store/asyncTypes.js';
import { openStoreInThread } from '../../store/open.js';
import { matcherFor, scanBlob, type SearchQuery } from '../search.js';
import type { LineMatcher } from './matcher.js';

/** A batch of one project's files to search on another thread. */
export interface SearchJob {
  access: StoreThreadAccess;
  project: number;
  query: SearchQuery;
  /** The files' blob ids, 20 bytes each, in the order their matches are wanted. */
  oids: Uint8Array;
  /** Matches the search still wants: the batch stops at this many. */
  want: number;
}

/** A batch's matches in file order: per match its file's index in the batch, line, column, text. */
export interface SearchJobResult {
  files: number[];
  lines: number[];
  columns: number[];
  texts: string[];
  /** The first file whose blob the store lacks (the matches are those of the files before it), or -1. */
  missing: number;
}

/** Runs search jobs on threads other than the request's (src/service/searchThreads.ts). */
export interface SearchThreads {
  /** Whether batches can run now; the first call may start the threads (false until they are ready). */
  available(): boolean;
  run(job: SearchJob): Promise<SearchJobResult>;
  /** Batches worth having under way at once. */
  readonly parallelism: number;
}

/** Stores and matchers a thread keeps between jobs. */
const stores = new Map<string, AsyncStore>();
const matchers = new Map<string, LineMatcher>();
const MATCHERS_KEPT = 16;

/** A job, run on this thread: the worker's side of SearchThreads. */
export async function runSearchJob(job: SearchJob): Promise<SearchJobResult> {
  let store = stores.get(job.access.path);
  if (!store) stores.set(job.access.path, (store = openStoreInThread(job.access)));
  const key = JSON.stringify(job.query);
  let matcher = matchers.get(key);
  if (!matcher) {
    if (matchers.size >= MATCHERS_KEPT) matchers.clear();
    matchers.set(key, (matcher = matcherFor(job.query)));
  }
  const oids = Array.from({ length: job.oids.length / OID_BYTES }, (_, i) => Buffer.from(job.oids.buffer, job.oids.byteOffset + i * OID_BYTES, OID_BYTES));
  const result: SearchJobResult = { files: [], lines: [], columns: [], texts: [], missing: -1 };
  const found = matcher;
  await store.read(async (tx) => {
    const reads = tx.project(job.project);
    const visit = (object: { type: string; body: Buffer } | undefined, index: number): boolean => {
      if (!object || object.type !== 'blob') {
        result.missing = index;
        return false;
      }
      scanBlob(object.body, found, (line, column, text) => {
        result.files.push(index);
        result.lines.push(line);
        result.columns.push(column);
        result.texts.push(text);
        return result.files.length < job.want;
      });
      return result.files.length < job.want;
    };
    if (reads.visitObjects) return reads.visitObjects(oids, visit);
    const objects = await reads.getObjects(oids);
    objects.every((object, index) => visit(object, index));
  });
  return result;
}
