/**
 * GET search: the lines of a tree's files that hold a literal or match a regular expression, as
 * `git grep -n --column [-F] [-i] <pattern> <tree> [-- <paths>]` lists them: regular files only
 * (git grep skips symlinks and submodules), files git calls binary (a NUL in the first 8000 bytes)
 * and files over 1 MiB skipped, one answer per matching line with the column of its first match,
 * sorted by path and line. Columns count UTF-16 code units (as editors do), lines from 1; `text` is
 * the line without its "\n".
 *
 * Regular expressions take the RE2 syntax of search/pattern.ts and run on automata whose time is
 * linear in the text (search/matcher.ts); patterns that would need backtracking are refused (400).
 * The walk reads files a batch at a time (their sizes first, from the trees' annexes where they
 * record them, so files over the limit are never read), searches each blob where the store holds
 * it (ProjectReads.visitObjects: no copy of 100,000 files on LMDB), gives the event loop a turn
 * between slices, and stops at the limit (one match past it tells `truncated`).
 */
import { TreehouseError, MissingObjectError } from '../errors.js';
import { OID_BYTES, type Oid } from '../git/oid.js';
import { MODE_EXECUTABLE, MODE_FILE } from '../git/tree.js';
import { BLOB_BATCH_BYTES, BLOB_BATCH_MAX, nextWalked, visitBlobs, walkTreeChunks, type WalkedEntry } from './diff/batchedReads.js';
import { PathFilter } from './pathFilter.js';
import { inReadTx, resolveRef, type ReadTx, type Repo } from './repo.js';
import { AutomatonMatcher, LiteralMatcher, type LineMatcher } from './search/matcher.js';
import { parsePattern, PatternError } from './search/pattern.js';
import { compile, requiredLiteral } from './search/program.js';
import type { SearchJobResult } from './search/threads.js';
import { projectReads, Slicer } from './slices.js';

/** Files over this size are not searched (the contract's 1 MiB). */
export const SEARCH_FILE_BYTES_MAX = 1024 * 1024;
/** git's FIRST_FEW_BYTES: a NUL within them makes a file binary. */
const BINARY_PROBE_BYTES = 8000;
export const SEARCH_LIMIT_MAX = 1000;
/** Files in one batch for another thread (about 3.5 MB of source files: a few milliseconds there). */
const THREAD_BATCH_FILES = 1024;

export interface SearchMatch {
  path: string;
  line: number;
  column: number;
  text: string;
}

export interface SearchResult {
  matches: SearchMatch[];
  truncated: boolean;
}

/** What to look for. */
export interface SearchQuery {
  q: string;
  regex: boolean;
  /** Case-sensitive (the default). */
  case: boolean;
}

export interface SearchInput extends SearchQuery {
  ref: string;
  paths?: readonly string[];
  limit: number;
}

/** The matcher for a query; a pattern the engine refuses is a 400 naming `q`. */
export function matcherFor(input: SearchQuery): LineMatcher {
  if (input.q.includes('\n')) throw invalidQuery('the query must be one line');
  if (!input.regex && input.case) return new LiteralMatcher(Buffer.from(input.q, 'utf8'));
  try {
    // A literal searched case-insensitively is a pattern of escaped characters.
    const source = input.regex ? input.q : Array.from(input.q, (c) => (/[A-Za-z0-9\s]/.test(c) || c.codePointAt(0)! > 0x7f ? c : `\\${c}`)).join('');
    const node = parsePattern(source, !input.case);
    return new AutomatonMatcher(compile(node), input.case ? requiredLiteral(node) : null);
  } catch (error) {
    if (error instanceof PatternError) throw invalidQuery(error.message);
    throw error;
  }
}

function invalidQuery(message: string): TreehouseError {
  return new TreehouseError('invalid_request', `The query cannot be searched: ${message}.`, { issues: [{ path: 'q', message }] });
}

/** A file the walk gave: its path, blob and size (undefined where the store has no such blob). */
interface WalkedFile {
  path: string;
  oid: Oid;
  size: number | undefined;
}

export async function search(repo: Repo, input: SearchInput): Promise<SearchResult> {
  const matcher = matcherFor(input);
  const filter = PathFilter.parse(input.paths, 'paths');
  const root = await inReadTx(repo, async (tx) => (await resolveRef(tx, input.ref)).tree);
  const matches: SearchMatch[] = [];
  const want = input.limit + 1;
  const slicer = new Slicer();
  const reads = projectReads(repo);
  const access = repo.store.threadAccess;
  const threads = access && repo.searchThreads?.available() ? { pool: repo.searchThreads, access } : null;
  // Depth-first in stored (git) order, which is path order, a chunk of entries at a time.
  const walk = walkTreeChunks(reads, root, (path) => filter.reachesDirectory(path));
  let chunk: WalkedEntry[] = [];
  let inChunk = 0;
  // What the walk failed on (a tree the store lacks), reported once the files before it are searched.
  let failure: { error: unknown } | undefined;
  // Batches searching on other threads, oldest first: their matches are taken in this order.
  const underWay: Array<{ files: WalkedFile[]; answer: Promise<SearchJobResult> }> = [];
  const takeOldest = async () => {
    const { files, answer } = underWay.shift()!;
    const result = await answer;
    for (let i = 0; i < result.files.length && matches.length < want; i++) {
      matches.push({ path: files[result.files[i]].path, line: result.lines[i], column: result.columns[i], text: result.texts[i] });
    }
    if (result.missing >= 0 && matches.length < want) throw missingBlob(files[result.missing].oid);
  };
  for (let done = false; !done && matches.length < want; ) {
    // The next files to search, with the sizes their trees record.
    const files: WalkedFile[] = [];
    while (files.length < (threads ? THREAD_BATCH_FILES : BLOB_BATCH_MAX)) {
      if (inChunk === chunk.length) {
        if (slicer.due) await slicer.pause();
        const next = await nextWalked(walk);
        if ('end' in next) {
          if (next.error) failure = { error: next.error.cause };
          done = true;
          break;
        }
        chunk = next.entry;
        inChunk = 0;
      }
      const { path, entry, size } = chunk[inChunk++];
      if ((entry.mode === MODE_FILE || entry.mode === MODE_EXECUTABLE) && filter.matchesFile(path)) files.push({ path, oid: entry.oid, size });
    }
    // The sizes they do not record, in one read: files over the limit are skipped unread.
    const unsized = files.filter((file) => file.size === undefined);
    if (unsized.length > 0) {
      const sizes = await reads.objectSizes(unsized.map((file) => file.oid));
      unsized.forEach((file, i) => (file.size = sizes[i]));
    }
    if (threads) {
      // The batch to a thread (a file the store lacks goes too: the thread reports it in its
      // place); at most `parallelism` batches under way, so the walk stays only a little ahead.
      const searched = files.filter((file) => file.size === undefined || file.size <= SEARCH_FILE_BYTES_MAX);
      if (searched.length > 0) {
        const oids = new Uint8Array(searched.length * OID_BYTES);
        searched.forEach((file, i) => oids.set(file.oid, i * OID_BYTES));
        const answer = threads.pool.run({ access: threads.access, project: repo.project, query: { q: input.q, regex: input.regex, case: input.case }, oids, want: want - matches.length });
        // Answers of batches no longer wanted (the limit was reached) are dropped, failures too.
        answer.catch(() => undefined);
        underWay.push({ files: searched, answer });
      }
      while (underWay.length > 0 && (underWay.length >= threads.pool.parallelism || done) && matches.length < want) await takeOldest();
      continue;
    }
    await searchHere(reads, files, matcher, matches, want, slicer);
  }
  if (failure && matches.length < want) throw failure.error;
  const truncated = matches.length > input.limit;
  return { matches: truncated ? matches.slice(0, input.limit) : matches, truncated };
}

/**
 * Searches `files` on this thread, a read at a time (at most BLOB_BATCH_BYTES of them where a
 * store copies), each blob where the store holds it, until `matches` has `want` (a pause whenever
 * the slice's time is up).
 */
async function searchHere(reads: ReadTx, files: WalkedFile[], matcher: LineMatcher, matches: SearchMatch[], want: number, slicer: Slicer): Promise<void> {
  for (let first = 0; first < files.length && matches.length < want; ) {
    const reading: number[] = [];
    let end = first;
    let bytes = 0;
    for (; end < files.length; end++) {
      const size = files[end].size;
      // A file that is not stored is reported when the walk reaches it.
      if (size === undefined) {
        if (reading.length === 0) throw missingBlob(files[end].oid);
        break;
      }
      if (size > SEARCH_FILE_BYTES_MAX) continue;
      if (reading.length > 0 && bytes + size > BLOB_BATCH_BYTES) break;
      bytes += size;
      reading.push(end);
    }
    const visited = await visitBlobs(
      reads,
      reading.map((i) => files[i].oid),
      (blob, k) => {
        const { path } = files[reading[k]];
        scanBlob(blob, matcher, (line, column, text) => {
          matches.push({ path, line, column, text });
          return matches.length < want;
        });
        return matches.length < want && !slicer.due;
      },
    );
    first = visited < reading.length ? reading[visited - 1] + 1 : end;
    if (slicer.due) await slicer.pause();
  }
}

function missingBlob(oid: Oid): Error {
  return new MissingObjectError('blob', oid);
}

/**
 * The matching lines of a blob, in order, each as its number (from 1), the column of its first
 * match (UTF-16 code units, from 1) and its text, until `found` returns false. Binary blobs (a NUL
 * in the first BINARY_PROBE_BYTES) have none.
 */
export function scanBlob(blob: Buffer, matcher: LineMatcher, found: (line: number, column: number, text: string) => boolean): void {
  // The cheap test first: most files do not match, and only those that may need the binary test.
  if (!matcher.mayMatch(blob)) return;
  if (blob.subarray(0, BINARY_PROBE_BYTES).includes(0)) return;
  matcher.scan(blob, (match) =>
    found(
      match.line,
      // Columns in UTF-16 code units: the line's bytes before the match, decoded.
      blob.toString('utf8', match.lineStart, match.lineStart + match.matchOffset).length + 1,
      blob.toString('utf8', match.lineStart, match.lineEnd),
    ),
  );
}
