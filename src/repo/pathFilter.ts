/**
 * The `paths` filter of compare and search: each entry names a file or a directory, matched by whole
 * path components (`src` matches `src` and `src/a.ts`, never `srcx/a.ts`), as git pathspecs without
 * wildcards match. No entries: everything matches.
 */
import { TreehouseError } from '../errors.js';
import { pathProblem } from '../git/path.js';

/** At most this many entries in one filter; more is a 400. */
export const PATH_FILTER_ENTRIES_MAX = 100;

export class PathFilter {
  private constructor(private readonly prefixes: readonly string[]) {}

  static all(): PathFilter {
    return new PathFilter([]);
  }

  /**
   * Checks and normalises the entries (one trailing "/" is dropped: `src/` names the directory);
   * each must be a valid project path. Throws invalid_request naming the field.
   */
  static parse(entries: readonly string[] | undefined, field: string): PathFilter {
    if (!entries || entries.length === 0) return PathFilter.all();
    if (entries.length > PATH_FILTER_ENTRIES_MAX) {
      throw new TreehouseError('invalid_request', `At most ${PATH_FILTER_ENTRIES_MAX} ${field} entries are accepted.`, {
        issues: [{ path: field, message: `more than ${PATH_FILTER_ENTRIES_MAX} entries` }],
      });
    }
    const prefixes = entries.map((entry, index) => {
      const path = entry.endsWith('/') ? entry.slice(0, -1) : entry;
      const problem = pathProblem(path);
      if (problem) throw new TreehouseError('invalid_request', `Invalid ${field} entry: ${problem}.`, { issues: [{ path: `${field}.${index}`, message: problem }] });
      return path;
    });
    return new PathFilter([...new Set(prefixes)]);
  }

  get isAll(): boolean {
    return this.prefixes.length === 0;
  }

  /** Is the file at `path` selected? */
  matchesFile(path: string): boolean {
    if (this.prefixes.length === 0) return true;
    return this.prefixes.some((prefix) => path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 0x2f));
  }

  /** Can anything at or below the directory `dir` ("" is the root) be selected? */
  reachesDirectory(dir: string): boolean {
    if (this.prefixes.length === 0 || dir === '') return true;
    return this.prefixes.some(
      (prefix) =>
        prefix === dir ||
        (prefix.startsWith(dir) && prefix.charCodeAt(dir.length) === 0x2f) ||
        (dir.startsWith(prefix) && dir.charCodeAt(prefix.length) === 0x2f),
    );
  }
}
