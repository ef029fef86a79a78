/**
 * What the tree merge (mergeTrees.ts) and its rename detection (renameDetection.ts) share: versions
 * of a path as modes and ids, the file pairs diffcore works on, and path helpers.
 */
import type { Oid } from '../../git/oid.js';
import type { TreeEntry, TreeMode } from '../../git/tree.js';

export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFLNK = 0o120000;
export const S_IFGITLINK = 0o160000;
export const MODE_DIRECTORY = 0o040000;
export const NULL_OID: Oid = Buffer.alloc(20);

/** One side's entry at a path: mode 0 means absent. */
export interface Version {
  mode: number;
  oid: Oid;
}

export const ABSENT: Version = Object.freeze({ mode: 0, oid: NULL_OID }) as Version;

export const isRegular = (mode: number) => (mode & S_IFMT) === S_IFREG;
export const isSymlink = (mode: number) => (mode & S_IFMT) === S_IFLNK;
export const isGitlink = (mode: number) => (mode & S_IFMT) === S_IFGITLINK;
export const typeOf = (mode: number) => mode & S_IFMT;
export const sameVersion = (a: Version, b: Version) => a.mode === b.mode && a.oid.equals(b.oid);

/** The five modes a tree entry can have, as numbers (a lookup: parseInt per entry was a measurable part of a merge). */
const MODE_NUMBERS: Readonly<Record<TreeMode, number>> = { '100644': 0o100644, '100755': 0o100755, '120000': 0o120000, '40000': 0o40000, '160000': 0o160000 };

export function versionOf(entry: TreeEntry | undefined): Version {
  return entry ? { mode: MODE_NUMBERS[entry.mode], oid: entry.oid } : ABSENT;
}

export function treeModeOf(mode: number): TreeMode {
  return mode.toString(8) as TreeMode;
}

/** One of the two sides being merged (merge-ort's stages 1 and 2). */
export type Side = 1 | 2;

/** A file deleted ('D'), added ('A') or renamed ('R') on one side, as diffcore's pairs. */
export interface FilePair {
  status: 'A' | 'D' | 'R';
  side: Side;
  /** Source path and version (for 'A' the path only). */
  onePath: string;
  one: Version;
  /** Destination path and version (for 'D' the path only). */
  twoPath: string;
  two: Version;
  /** A source already paired with a destination. */
  used: boolean;
}

/** Why a deleted path is a rename source worth detecting (merge-ort's relevant_sources). */
export const RELEVANT_CONTENT = 1;
export const RELEVANT_LOCATION = 2;
/** Why a removed directory matters for directory renames (dir_rename_relevance). */
export const NOT_RELEVANT = 0;
export const RELEVANT_FOR_ANCESTOR = 1;
export const RELEVANT_FOR_SELF = 2;

export function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

export function lastComponent(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** diffcore-rename basename_same(): do the two paths end in the same file name? */
export function basenameSame(a: string, b: string): boolean {
  return lastComponent(a) === lastComponent(b);
}
