/**
 * GET git/compare: what changed from one ref to another, as `git diff --histogram -M -U<context>
 * <base> <head> [-- <paths>]` shows it (../shared/API.md "Workspace additions"): files in git's
 * order with their status (renames found as `-M` finds them, among the files the filter keeps),
 * hunks and line counts, and the best common ancestor of the two commits.
 *
 * Decisions where the contract is silent (README "Workspace additions"): a working-tree ref counts
 * as its branch head for the merge base; a change of type (file, symlink, submodule) is one
 * `type_changed` entry whose hunks are git's two patches, the old side's removal then the new side's
 * addition; a submodule's content is git's "Subproject commit <id>" line; files beyond the limits
 * keep their counts but lose their hunks.
 */
import { oidToHex, type Oid } from '../git/oid.js';
import { isBinary } from './merge/mergeContent.js';
import { mergeBases } from './merge/mergeBase.js';
import { commitGraph } from './merge/mergeBranches.js';
import { BLOB_BATCH_BYTES, BLOB_BATCH_MAX, blobReads } from './diff/batchedReads.js';
import { buildPatch, HISTOGRAM_DIFF, type FilePatch, type PatchHunk } from './diff/patch.js';
import { detectRenames, type BlobAccess } from './diff/renames.js';
import { treeChanges, type FileVersion, type TreeChange } from './diff/treeChanges.js';
import { PathFilter } from './pathFilter.js';
import { inReadTx, resolveRef, type Repo, type ResolvedRef } from './repo.js';
import { Slicer } from './slices.js';

/** Files that get hunks at most; the rest of a larger comparison is listed without them. */
export const COMPARE_FILES_WITH_HUNKS_MAX = 3000;
/** Patch text at most (as git would print it); files past it are listed without hunks. */
export const COMPARE_PATCH_BYTES_MAX = 10 * 1024 * 1024;
/** The contract's range for `context`. */
export const COMPARE_CONTEXT_MAX = 20;

export type CompareStatus = 'added' | 'modified' | 'deleted' | 'renamed' | 'copied' | 'type_changed';

export interface CompareFile {
  path: string;
  old_path?: string;
  status: CompareStatus;
  old_oid?: string;
  new_oid?: string;
  old_mode?: string;
  new_mode?: string;
  binary: boolean;
  additions: number;
  deletions: number;
  old_missing_newline: boolean;
  new_missing_newline: boolean;
  hunks?: PatchHunk[];
}

export interface CompareResult {
  /** The commit a ref named, or the `worktree:<branch>` ref as given. */
  base: string;
  head: string;
  merge_base: string | null;
  files: CompareFile[];
  truncated: boolean;
}

export interface CompareInput {
  base: string;
  head: string;
  /** Files and directories to limit the comparison to (whole path components). */
  paths?: readonly string[];
  context: number;
  patch: boolean;
}

const EMPTY = Buffer.alloc(0);
const S_IFMT = 0o170000;

/** A file compare lists: its change, and its old version and path when it was renamed. */
interface Listed {
  change: TreeChange;
  old: FileVersion | null;
  oldPath: string | undefined;
}

export async function compare(repo: Repo, input: CompareInput): Promise<CompareResult> {
  const filter = PathFilter.parse(input.paths, 'paths');
  const { base, head, mergeBase } = await inReadTx(repo, async (tx) => {
    const base = await resolveRef(tx, input.base);
    const head = await resolveRef(tx, input.head);
    const bases = await mergeBases(commitGraph(tx), base.commit, head.commit);
    return { base, head, mergeBase: bases.length > 0 ? bases[0] : null };
  });
  const slicer = new Slicer();
  const changes = await treeChanges(repo, base.tree, head.tree, filter, slicer);
  const blobs = blobReads(repo);

  // -M: deleted files are rename sources, added ones destinations.
  const sources: Array<{ index: number; path: string; version: FileVersion }> = [];
  const destinations: Array<{ index: number; path: string; version: FileVersion }> = [];
  changes.forEach((change, index) => {
    if (change.old && !change.new) sources.push({ index, path: change.path, version: change.old });
    if (!change.old && change.new) destinations.push({ index, path: change.path, version: change.new });
  });
  const renames = await detectRenames(sources, destinations, blobs, slicer);
  const renamedFrom = new Map<number, { change: TreeChange; score: number }>();
  const consumed = new Set<number>();
  for (const [d, match] of renames) {
    renamedFrom.set(destinations[d].index, { change: changes[sources[match.source].index], score: match.score });
    consumed.add(sources[match.source].index);
  }

  const result: CompareResult = { base: refText(base), head: refText(head), merge_base: mergeBase ? oidToHex(mergeBase) : null, files: [], truncated: false };
  let patchBytes = 0;
  // The files listed, each with its two versions; their blobs are read a batch at a time.
  const listed: Listed[] = [];
  changes.forEach((change, index) => {
    if (consumed.has(index)) return;
    const renamed = renamedFrom.get(index);
    listed.push({ change, old: renamed ? renamed.change.old : change.old, oldPath: renamed?.change.path });
  });
  const sizes = new Map<string, number>();
  let contents: Array<[Buffer, Buffer]> = [];
  let contentsFirst = 0;
  for (let i = 0; i < listed.length; i++) {
    if (slicer.due) await slicer.pause();
    if (i >= contentsFirst + contents.length) {
      contents = await readContents(blobs, listed, i, sizes);
      contentsFirst = i;
    }
    const { change, old, oldPath } = listed[i];
    const file = describe(change, old, oldPath);
    const { patch, binary } = diffContents(contents[i - contentsFirst], old, change.new, input.context);
    file.binary = binary;
    file.additions = patch.additions;
    file.deletions = patch.deletions;
    file.old_missing_newline = patch.oldMissingNewline;
    file.new_missing_newline = patch.newMissingNewline;
    if (input.patch && !binary) {
      const withinLimits = result.files.length < COMPARE_FILES_WITH_HUNKS_MAX && patchBytes + patch.bytes <= COMPARE_PATCH_BYTES_MAX && !result.truncated;
      if (withinLimits) {
        file.hunks = patch.hunks;
        patchBytes += patch.bytes;
      } else {
        result.truncated = true;
      }
    }
    result.files.push(file);
  }
  if (input.patch && result.files.length > COMPARE_FILES_WITH_HUNKS_MAX) result.truncated = true;
  return result;
}

function refText(ref: ResolvedRef): string {
  return ref.kind === 'commit' ? oidToHex(ref.commit) : `worktree:${ref.branch}`;
}

function describe(change: TreeChange, old: FileVersion | null, oldPath: string | undefined): CompareFile {
  const next = change.new;
  const status: CompareStatus = !old
    ? 'added'
    : !next
      ? 'deleted'
      : oldPath !== undefined
        ? 'renamed'
        : (parseInt(old.mode, 8) & S_IFMT) !== (parseInt(next.mode, 8) & S_IFMT)
          ? 'type_changed'
          : 'modified';
  const file: CompareFile = { path: change.path, status, binary: false, additions: 0, deletions: 0, old_missing_newline: false, new_missing_newline: false };
  if (oldPath !== undefined) file.old_path = oldPath;
  if (old) {
    file.old_oid = oidToHex(old.oid);
    file.old_mode = old.mode;
  }
  if (next) {
    file.new_oid = oidToHex(next.oid);
    file.new_mode = next.mode;
  }
  return file;
}

/** The patch between two versions (either may be absent), as git diff makes it; binary: no hunks. */
function diffContents([before, after]: [Buffer, Buffer], old: FileVersion | null, next: FileVersion | null, context: number): { patch: FilePatch; binary: boolean } {
  const none: FilePatch = { hunks: [], additions: 0, deletions: 0, oldMissingNewline: false, newMissingNewline: false, bytes: 0 };
  // A file is binary as git judges it (a NUL in its first 8000 bytes), whatever else changed.
  if (isBinary(before) || isBinary(after)) return { patch: none, binary: true };
  if (old && next && (parseInt(old.mode, 8) & S_IFMT) !== (parseInt(next.mode, 8) & S_IFMT)) {
    // git splits a type change into a deletion and a creation and prints both patches.
    const removal = buildPatch(before, EMPTY, context, HISTOGRAM_DIFF);
    const addition = buildPatch(EMPTY, after, context, HISTOGRAM_DIFF);
    return {
      patch: {
        hunks: [...removal.hunks, ...addition.hunks],
        additions: addition.additions,
        deletions: removal.deletions,
        oldMissingNewline: removal.oldMissingNewline,
        newMissingNewline: addition.newMissingNewline,
        bytes: removal.bytes + addition.bytes,
      },
      binary: false,
    };
  }
  if (old && next && old.oid.equals(next.oid)) return { patch: none, binary: false };
  return { patch: buildPatch(before, after, context, HISTOGRAM_DIFF), binary: false };
}

/** Files whose blobs are read together at most (two blobs each). */
const FILES_PER_READ_MAX = BLOB_BATCH_MAX / 2;

/**
 * The contents of the files from `first` on that one read holds: sizes first (those not known yet,
 * for the next FILES_PER_READ_MAX files, in one read), then the blobs of as many files as fit
 * BLOB_BATCH_BYTES (at least one), in one read. Each file's contents are [old, new].
 */
async function readContents(blobs: Required<BlobAccess>, files: readonly Listed[], first: number, sizes: Map<string, number>): Promise<Array<[Buffer, Buffer]>> {
  const stored = (version: FileVersion | null): version is FileVersion => version !== null && version.mode !== '160000';
  const ahead = files.slice(first, first + FILES_PER_READ_MAX);
  const unknown = new Map<string, Oid>();
  for (const { old, change } of ahead) {
    for (const version of [old, change.new]) if (stored(version) && !sizes.has(oidToHex(version.oid))) unknown.set(oidToHex(version.oid), version.oid);
  }
  const unknownSizes = unknown.size > 0 ? await blobs.blobSizes([...unknown.values()]) : [];
  [...unknown.keys()].forEach((key, i) => sizes.set(key, unknownSizes[i]));
  // A blob that is not stored counts 0 here; reading it reports it.
  const sizeOf = (version: FileVersion | null) => (stored(version) ? sizes.get(oidToHex(version.oid))! : 0);
  let count = 0;
  let bytes = 0;
  for (const { old, change } of ahead) {
    const fileBytes = sizeOf(old) + sizeOf(change.new);
    if (count > 0 && bytes + fileBytes > BLOB_BATCH_BYTES) break;
    bytes += fileBytes;
    count++;
  }
  const group = ahead.slice(0, count);
  const oids = group.flatMap(({ old, change }) => [old, change.new].filter(stored).map((version) => version.oid));
  const bodies = oids.length > 0 ? await blobs.readBlobs(oids) : [];
  let next = 0;
  const contentOf = (version: FileVersion | null): Buffer => {
    if (!version) return EMPTY;
    // A submodule's content as git diffs it.
    if (version.mode === '160000') return Buffer.from(`Subproject commit ${oidToHex(version.oid)}\n`, 'latin1');
    return bodies[next++];
  };
  return group.map(({ old, change }) => [contentOf(old), contentOf(change.new)]);
}
