/**
 * The batch write: every entry is checked before anything is stored, and the batch is applied in
 * one transaction, so it lands whole or not at all. Deletes apply before writes, so one batch can
 * replace a file by a directory of the same name. An entry gives the file's content, or snippet
 * edits (src/repo/snippetEdits.ts) applied to the text the working tree holds in this same
 * transaction, so concurrent batches never edit a stale copy.
 */
import { TreehouseError } from '../errors.js';
import { packNameHash } from '../git/nameHash.js';
import { pathProblem } from '../git/path.js';
import { hasLoneSurrogate } from '../git/pathBytes.js';
import { MODE_FILE, MODE_GITLINK, type TreeMode } from '../git/tree.js';
import { specialFileProblem } from './worktree/specialFiles.js';
import { decodeContent, type ContentEncoding } from './fileContent.js';
import { bodyOf, branchHead, inWriteTx, type Repo, type RepoLimits, type WriteTx } from './repo.js';
import { applySnippetEdits, EditBudget, type SnippetEdit } from './snippetEdits.js';
import { WorkingTree } from './worktree/workingTree.js';

export interface FileWrite {
  path: string;
  content: string;
  encoding?: ContentEncoding;
  locked?: boolean;
}

/** An entry that changes a file's current text instead of giving all of it. */
export interface FileEdits {
  path: string;
  edits: Array<{ old: string; new: string }>;
  locked?: boolean;
}

export type BatchEntry = FileWrite | FileEdits;

export interface WriteFilesInput {
  branch: string;
  files: BatchEntry[];
  deletes?: string[];
}

/** An entry checked where no storage is needed; `index` is its place in `files`, for errors. */
export type PreparedWrite = { path: string; index: number; locked: boolean | undefined } & ({ bytes: Buffer } | { edits: SnippetEdit[] });

/** A batch checked where no storage is needed (prepareBatch): the contents decoded. */
export interface PreparedBatch {
  branch: string;
  writes: PreparedWrite[];
  deletes: string[];
  limits: RepoLimits;
}

/** `version`: the project's version after the write. */
export async function writeFiles(repo: Repo, input: WriteFilesInput): Promise<{ written: number; version: number }> {
  const batch = prepareBatch(repo.limits, input);
  return inWriteTx(repo, (tx) => writeFilesInTx(tx, batch));
}

/** The batch applied in the caller's transaction: all of it, or (throwing) none. */
export async function writeFilesInTx(tx: WriteTx, batch: PreparedBatch): Promise<{ written: number; version: number }> {
  const { deletes, writes: prepared, branch } = batch;
  // Read together: on PostgreSQL one round trip, after the project's lock, instead of two.
  const [, tree] = await Promise.all([branchHead(tx, branch), WorkingTree.open(tx, branch)]);
  await tree.load([...deletes, ...prepared.map((write) => write.path)]);
  const locked: string[] = [];
  const missing: string[] = [];
  for (const path of deletes) {
    const found = tree.lookup(path);
    if (found.kind === 'missing' || found.kind === 'blocked') missing.push(path);
    else locked.push(...tree.lockedUnder(path));
  }
  if (missing.length > 0) throw new TreehouseError('not_found', `Not found: ${missing.join(', ')}.`, { paths: missing });
  throwIfLocked(locked);
  for (const path of deletes) tree.remove(path);

  const contents = await contentsOf(tx, tree, prepared, batch.limits);
  const conflicts: string[] = [];
  prepared.forEach((write, i) => {
    const bytes = contents[i];
    const found = tree.lookup(write.path);
    // The file's previous version is the likely delta base of the new one, and its path sorts it
    // beside files of its name for the delta search of the others (src/service/deflateCache.ts).
    const blob = tx.putObject('blob', bytes, undefined, found.kind === 'file' ? found.entry.oid : null, packNameHash(write.path));
    // A submodule is a directory in a checkout: a file may not replace it (delete it first).
    if (found.kind === 'directory' || found.kind === 'blocked' || (found.kind === 'file' && found.entry.mode === MODE_GITLINK)) {
      conflicts.push(write.path);
      return;
    }
    if (found.kind === 'file' && found.entry.locked && write.locked !== false && !found.entry.oid?.equals(blob)) {
      locked.push(write.path);
      return;
    }
    const keepLock = found.kind === 'file' ? found.entry.locked : false;
    tree.setFile(write.path, { oid: blob, size: bytes.length, locked: write.locked ?? keepLock });
  });
  throwIfLocked(locked);
  if (conflicts.length > 0) {
    throw new TreehouseError('path_conflict', `A file and a directory would share a path: ${conflicts.join(', ')}.`, { paths: conflicts });
  }
  tree.save();
  return { written: prepared.length, version: await tx.bumpVersion() };
}

/**
 * Each entry's new content: as given, or its edits applied to the file the working tree holds now
 * (after the batch's deletes). The files are read one at a time, so a batch holds at most one
 * file it has not yet charged to its edit budget.
 */
async function contentsOf(tx: WriteTx, tree: WorkingTree, writes: readonly PreparedWrite[], limits: RepoLimits): Promise<Buffer[]> {
  const missing = writes.filter((write) => 'edits' in write && !editableFile(tree, write.path)).map((write) => write.path);
  if (missing.length > 0) throw new TreehouseError('not_found', `Not found (edits need an existing file): ${missing.join(', ')}.`, { paths: missing });
  const budget = new EditBudget(limits.editScanBytesMax);
  const contents: Buffer[] = [];
  for (const write of writes) {
    if ('bytes' in write) {
      contents.push(write.bytes);
      continue;
    }
    const file = editableFile(tree, write.path)!;
    const body = bodyOf(await tx.getObject(file.oid), 'blob', file.oid, `of ${write.path}`);
    const field = `files.${write.index}`;
    const bytes = await applySnippetEdits({ path: write.path, field }, body, write.edits, budget);
    requireWritableContent(limits, write.path, `${field}.edits`, file.mode, bytes);
    contents.push(bytes);
  }
  return contents;
}

/** The file edits would change: a blob (regular, executable or symlink); a directory or submodule has no text. */
function editableFile(tree: WorkingTree, path: string): { oid: Buffer; mode: TreeMode } | null {
  const found = tree.lookup(path);
  return found.kind === 'file' && found.entry.mode !== MODE_GITLINK ? { oid: found.entry.oid, mode: found.entry.mode } : null;
}

function throwIfLocked(paths: string[]): void {
  if (paths.length > 0) throw new TreehouseError('file_locked', `Locked: ${paths.join(', ')}.`, { paths });
}

/** Checks that need no storage: count, paths, duplicates, sizes, encodings, edits. */
export function prepareBatch(limits: RepoLimits, input: WriteFilesInput): PreparedBatch {
  const deletes = input.deletes ?? [];
  return { branch: input.branch, writes: prepareWrites(limits, input.files, deletes), deletes, limits };
}

function prepareWrites(limits: RepoLimits, files: BatchEntry[], deletes: string[]): PreparedWrite[] {
  const entryCount = files.length + deletes.length;
  if (entryCount > limits.batchFilesMax) {
    throw new TreehouseError('payload_too_large', `A batch holds at most ${limits.batchFilesMax} entries.`, {
      limit: limits.batchFilesMax,
    });
  }
  const issues: Array<{ path: string; message: string }> = [];
  const seen = new Set<string>();
  files.forEach((file, index) => {
    const problem = pathProblem(file.path);
    if (problem) issues.push({ path: `files.${index}.path`, message: problem });
    else if (seen.has(file.path)) issues.push({ path: `files.${index}.path`, message: 'path appears twice in the batch' });
    seen.add(file.path);
  });
  deletes.forEach((path, index) => {
    const problem = pathProblem(path);
    if (problem) issues.push({ path: `deletes.${index}`, message: problem });
  });
  if (issues.length > 0) throw new TreehouseError('invalid_request', 'The batch has invalid paths.', { issues });
  return files.map((file, index) => {
    if ('edits' in file) return { path: file.path, index, locked: file.locked, edits: prepareEdits(limits, file, index) };
    const bytes = decodeContent(file.content, file.encoding, `files.${index}.content`);
    requireWritableContent(limits, file.path, `files.${index}.content`, MODE_FILE, bytes);
    return { path: file.path, index, bytes, locked: file.locked };
  });
}

/** A file's content must fit the one-file limit and, for .gitmodules/.gitattributes, pass git fsck. */
function requireWritableContent(limits: RepoLimits, path: string, field: string, mode: TreeMode, bytes: Buffer): void {
  if (bytes.length > limits.fileBytesMax) {
    throw new TreehouseError('payload_too_large', `${path} is larger than ${limits.fileBytesMax} bytes.`, { limit: limits.fileBytesMax, path });
  }
  const special = specialFileProblem(path, mode, { type: 'blob', body: bytes });
  if (special) throw new TreehouseError('invalid_request', `${path} would fail git fsck: ${special}.`, { issues: [{ path: field, message: special }] });
}

function prepareEdits(limits: RepoLimits, file: FileEdits, index: number): SnippetEdit[] {
  if (file.edits.length > limits.editsPerFileMax) {
    throw new TreehouseError('payload_too_large', `An entry holds at most ${limits.editsPerFileMax} edits; ${file.path} has ${file.edits.length}.`, {
      limit: limits.editsPerFileMax,
      path: file.path,
    });
  }
  const issues: Array<{ path: string; message: string }> = [];
  file.edits.forEach((edit, at) => {
    const field = `files.${index}.edits.${at}`;
    // An empty old text occurs at every position, so it can never name one place.
    if (edit.old.length === 0) issues.push({ path: `${field}.old`, message: 'old is empty; it would occur everywhere' });
    // A lone surrogate has no UTF-8 form: it would silently become U+FFFD and match (or write) that.
    for (const side of ['old', 'new'] as const) {
      if (hasLoneSurrogate(edit[side])) issues.push({ path: `${field}.${side}`, message: 'is not valid Unicode (it holds a lone surrogate)' });
    }
  });
  if (issues.length > 0) throw new TreehouseError('invalid_request', `The edits of ${file.path} are invalid.`, { issues });
  return file.edits.map((edit) => ({ old: Buffer.from(edit.old, 'utf8'), new: Buffer.from(edit.new, 'utf8') }));
}
