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
 * The walk reads one file at a time and gives the event loop a turn between slices, and it stops
 * at the limit (one match past it tells `truncated`).
 */
import { TreehouseError } from '../errors.js';
import { oidToHex, type Oid } from '../git/oid.js';
import { MODE_EXECUTABLE, MODE_FILE, MODE_TREE, decodeTree, type TreeEntry } from '../git/tree.js';
import type { ProjectReadTx } from '../store/types.js';
import { PathFilter } from './pathFilter.js';
import { resolveRef, type Repo } from './repo.js';
import { AutomatonMatcher, LiteralMatcher, type LineMatcher } from './search/matcher.js';
import { parsePattern, PatternError } from './search/pattern.js';
import { compile, requiredLiteral } from './search/program.js';
import { readInSlices, readProject } from './slices.js';

/** Files over this size are not searched (the contract's 1 MiB). */
export const SEARCH_FILE_BYTES_MAX = 1024 * 1024;
/** git's FIRST_FEW_BYTES: a NUL within them makes a file binary. */
const BINARY_PROBE_BYTES = 8000;
export const SEARCH_LIMIT_MAX = 1000;

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

export interface SearchInput {
  q: string;
  regex: boolean;
  /** Case-sensitive (the default). */
  case: boolean;
  ref: string;
  paths?: readonly string[];
  limit: number;
}

/** The matcher for a query; a pattern the engine refuses is a 400 naming `q`. */
export function matcherFor(input: { q: string; regex: boolean; case: boolean }): LineMatcher {
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

export async function search(repo: Repo, input: SearchInput): Promise<SearchResult> {
  const matcher = matcherFor(input);
  const filter = PathFilter.parse(input.paths, 'paths');
  const root = readProject(repo, (tx) => resolveRef(tx, input.ref).tree);
  const matches: SearchMatch[] = [];
  const want = input.limit + 1;
  // Depth-first in stored (git) order, which is path order.
  const frames: Array<{ dir: string; entries: TreeEntry[]; next: number }> = [];
  let started = false;
  await readInSlices(repo, (tx) => {
    if (!started) {
      frames.push({ dir: '', entries: readTree(tx, root), next: 0 });
      started = true;
    }
    const frame = frames[frames.length - 1];
    if (!frame) return false;
    if (frame.next >= frame.entries.length) {
      frames.pop();
      return frames.length > 0;
    }
    const entry = frame.entries[frame.next++];
    const path = frame.dir === '' ? entry.name : `${frame.dir}/${entry.name}`;
    if (entry.mode === MODE_TREE) {
      if (filter.reachesDirectory(path)) frames.push({ dir: path, entries: readTree(tx, entry.oid), next: 0 });
      return true;
    }
    if ((entry.mode !== MODE_FILE && entry.mode !== MODE_EXECUTABLE) || !filter.matchesFile(path)) return true;
    searchFile(tx, entry.oid, path, matcher, matches, want);
    return matches.length < want;
  });
  const truncated = matches.length > input.limit;
  return { matches: truncated ? matches.slice(0, input.limit) : matches, truncated };
}

function readTree(tx: ProjectReadTx, oid: Oid): TreeEntry[] {
  const object = tx.getObject(oid);
  if (!object || object.type !== 'tree') throw new Error(`tree ${oidToHex(oid)} is missing`);
  return decodeTree(object.body, true);
}

function searchFile(tx: ProjectReadTx, oid: Oid, path: string, matcher: LineMatcher, matches: SearchMatch[], want: number): void {
  // A view into storage, not a copy: it is read here and now, and only matched lines are copied out.
  const object = tx.peekObject(oid);
  if (!object) throw new Error(`blob ${oidToHex(oid)} is missing`);
  const blob = object.body;
  if (blob.length > SEARCH_FILE_BYTES_MAX) return;
  // The cheap test first: most files do not match, and only those that may need the binary test.
  if (!matcher.mayMatch(blob)) return;
  if (blob.subarray(0, BINARY_PROBE_BYTES).includes(0)) return;
  matcher.scan(blob, (match) => {
    matches.push({
      path,
      line: match.line,
      // Columns in UTF-16 code units: the line's bytes before the match, decoded.
      column: blob.toString('utf8', match.lineStart, match.lineStart + match.matchOffset).length + 1,
      text: blob.toString('utf8', match.lineStart, match.lineEnd),
    });
    return matches.length < want;
  });
}
