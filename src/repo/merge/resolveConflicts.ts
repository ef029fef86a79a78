/**
 * Conflict resolutions of POST git/merge (../shared/API.md "Workspace additions", README "Merge
 * resolutions"): every conflict the merge reports gets exactly one resolution, which replaces every
 * entry the merged tree holds for it (the file at its path, and the versions git moved aside to
 * `<path>~<branch>`) by one file with the given content, or by nothing (`delete: true`). The content
 * goes to the conflict's path, or where the merge keeps a directory there (file/directory), to the
 * path the file was moved aside to. The result is still in memory (StagedObjects) until the merge
 * commits it.
 */
import { TreehouseError } from '../../errors.js';
import type { Oid } from '../../git/oid.js';
import { pathProblem } from '../../git/path.js';
import { MODE_EXECUTABLE, MODE_FILE, MODE_GITLINK, MODE_SYMLINK, type TreeMode } from '../../git/tree.js';
import { pathDepth } from '../../git/treeDepth.js';
import { decodeContent, type ContentEncoding } from '../fileContent.js';
import type { RepoLimits } from '../repo.js';
import { specialFileProblem } from '../worktree/specialFiles.js';
import type { DecidedEntry, MergeConflict, StagedObjects, TreeMergeOutcome } from './mergeTrees.js';
import { TreeEdit } from './treeEdit.js';

export type MergeResolution = { path: string; content: string; encoding?: ContentEncoding } | { path: string; delete: true };

/** A resolution checked where no storage is needed: `bytes` decoded, null to delete; `index` its place in the request. */
export interface PreparedResolution {
  path: string;
  index: number;
  bytes: Buffer | null;
}

/** The merged tree with every conflict resolved, and what its checks need (as TreeMergeOutcome gives them). */
export interface ResolvedMerge {
  tree: Oid;
  pathDepthMax: number;
  /** Entries of the merge itself that git checks by name; the resolutions' own files are checked here. */
  specialFiles: DecidedEntry[];
}

/** Checks that need no storage: count, paths, duplicates, encodings, sizes. */
export function prepareResolutions(limits: RepoLimits, resolutions: readonly MergeResolution[]): PreparedResolution[] {
  if (resolutions.length > limits.batchFilesMax) {
    throw new TreehouseError('payload_too_large', `A merge takes at most ${limits.batchFilesMax} resolutions.`, { limit: limits.batchFilesMax });
  }
  const issues: Array<{ path: string; message: string }> = [];
  const seen = new Set<string>();
  const twice = new Set<string>();
  resolutions.forEach((resolution, index) => {
    const problem = pathProblem(resolution.path);
    if (problem) issues.push({ path: `resolutions.${index}.path`, message: problem });
    else if (seen.has(resolution.path)) {
      issues.push({ path: `resolutions.${index}.path`, message: 'path has two resolutions' });
      twice.add(resolution.path);
    }
    seen.add(resolution.path);
  });
  if (issues.length > 0) throw new TreehouseError('invalid_request', 'The resolutions have invalid or repeated paths.', { issues, paths: [...twice] });
  return resolutions.map((resolution, index) => {
    if ('delete' in resolution) return { path: resolution.path, index, bytes: null };
    const bytes = decodeContent(resolution.content, resolution.encoding, `resolutions.${index}.content`);
    if (bytes.length > limits.fileBytesMax) {
      throw new TreehouseError('payload_too_large', `The resolution of ${resolution.path} is larger than ${limits.fileBytesMax} bytes.`, {
        limit: limits.fileBytesMax,
        path: resolution.path,
      });
    }
    return { path: resolution.path, index, bytes };
  });
}

/** Refuses resolutions given to a merge in which nothing conflicts (up to date, fast-forward, clean). */
export function requireNoResolutions(resolutions: readonly PreparedResolution[] | undefined, why: string): void {
  if (!resolutions || resolutions.length === 0) return;
  const paths = resolutions.map((resolution) => resolution.path);
  const issues = resolutions.map((resolution) => ({ path: `resolutions.${resolution.index}.path`, message: 'did not conflict' }));
  throw new TreehouseError('invalid_request', `Nothing conflicts (${why}), so there is nothing to resolve: ${paths.join(', ')}.`, { paths, issues });
}

/** Applies one resolution per conflict to the merge's conflicted tree. */
export async function resolveConflicts(objects: StagedObjects, outcome: TreeMergeOutcome, resolutions: readonly PreparedResolution[]): Promise<ResolvedMerge> {
  const pairs = matchResolutions(outcome.conflicts, resolutions);
  const edit = await TreeEdit.open(objects, outcome.tree);
  await edit.load(pairs.flatMap(({ conflict }) => [conflict.path, ...(conflict.placed ?? []).map((side) => side.path)]));
  const replaced = new Set<string>();
  for (const { conflict } of pairs) {
    for (const side of conflict.placed ?? []) {
      edit.remove(side.path);
      replaced.add(side.path);
    }
  }
  let pathDepthMax = outcome.pathDepthMax;
  const written = new Set<string>();
  for (const { conflict, resolution } of pairs) {
    if (resolution.bytes === null) continue;
    const path = contentPath(edit, conflict, written);
    const mode = contentMode(conflict, path);
    const problem = specialFileProblem(path, mode, { type: 'blob', body: resolution.bytes });
    if (problem) {
      const message = `The resolution of ${conflict.path} would give ${path} content git fsck refuses (${problem}). Nothing was changed.`;
      throw new TreehouseError('invalid_request', message, { issues: [{ path: `resolutions.${resolution.index}.content`, message: problem }] });
    }
    edit.set(path, { mode, oid: objects.writeBlob(resolution.bytes) });
    written.add(path);
    replaced.add(path);
    pathDepthMax = Math.max(pathDepthMax, pathDepth(path));
  }
  return { tree: edit.write(), pathDepthMax, specialFiles: outcome.specialFiles.filter((entry) => !replaced.has(entry.path)) };
}

/** Each conflict with its resolution; a missing one, or one of a path that did not conflict, is a 400. */
function matchResolutions(conflicts: readonly MergeConflict[], resolutions: readonly PreparedResolution[]): Array<{ conflict: MergeConflict; resolution: PreparedResolution }> {
  const byPath = new Map(resolutions.map((resolution) => [resolution.path, resolution]));
  const conflicted = new Set(conflicts.map((conflict) => conflict.path));
  const missing = conflicts.filter((conflict) => !byPath.has(conflict.path)).map((conflict) => conflict.path);
  const extra = resolutions.filter((resolution) => !conflicted.has(resolution.path));
  if (missing.length > 0 || extra.length > 0) {
    const issues = [
      ...missing.map((path) => ({ path: 'resolutions', message: `no resolution for the conflicted path ${path}` })),
      ...extra.map((resolution) => ({ path: `resolutions.${resolution.index}.path`, message: 'did not conflict' })),
    ];
    const message =
      missing.length > 0
        ? `Every conflicted path needs one resolution; missing: ${missing.join(', ')}.`
        : `Only conflicted paths take a resolution; these did not conflict: ${extra.map((resolution) => resolution.path).join(', ')}.`;
    throw new TreehouseError('invalid_request', message, { paths: missing.length > 0 ? missing : extra.map((resolution) => resolution.path), issues });
  }
  return conflicts.map((conflict) => ({ conflict, resolution: byPath.get(conflict.path)! }));
}

/**
 * Where a resolution's content goes: the conflict's path, or, where the merged tree keeps a directory
 * there (a file/directory conflict), the path git moved the file aside to.
 */
function contentPath(edit: TreeEdit, conflict: MergeConflict, written: ReadonlySet<string>): string {
  let path = conflict.path;
  let found = edit.lookup(path);
  if (found.kind === 'directory') {
    const aside = (conflict.placed ?? []).find((side) => side.path !== conflict.path);
    if (aside) {
      path = aside.path;
      found = edit.lookup(path);
    }
  }
  if (found.kind === 'directory' || found.kind === 'blocked' || written.has(path)) {
    throw new TreehouseError('path_conflict', `The resolution of ${conflict.path} would put a file where the merged tree has a directory (or a file where it needs one); resolve it with delete: true.`, {
      paths: [conflict.path],
    });
  }
  return path;
}

/**
 * The mode a resolution's file gets: that of the file the merge left at the path (an executable
 * stays one, a symlink stays a symlink whose target is the content, as a batch write keeps a
 * file's mode), else a regular file. A submodule cannot be written as a file (as in a batch).
 */
function contentMode(conflict: MergeConflict, path: string): TreeMode {
  const left = (conflict.placed ?? []).find((side) => side.path === path);
  if (left?.mode === MODE_GITLINK) {
    throw new TreehouseError('path_conflict', `${path} is a submodule in the merged tree; the API cannot write one, so resolve ${conflict.path} with delete: true.`, {
      paths: [conflict.path],
    });
  }
  return left && (left.mode === MODE_EXECUTABLE || left.mode === MODE_SYMLINK) ? left.mode : MODE_FILE;
}
