/**
 * The batch write: every entry is checked before anything is stored, and the batch is applied in
 * one transaction, so it lands whole or not at all. Deletes apply before writes, so one batch can
 * replace a file by a directory of the same name.
 */
import { TreehouseError } from '../errors.js';
import { packNameHash } from '../git/nameHash.js';
import { pathProblem } from '../git/path.js';
import type { Oid } from '../git/oid.js';
import { MODE_FILE, MODE_GITLINK } from '../git/tree.js';
import { specialFileProblem } from './worktree/specialFiles.js';
import { decodeContent, type ContentEncoding } from './fileContent.js';
import { branchHead, inWriteTx, type Repo, type RepoLimits, type WriteTx } from './repo.js';
import { WorkingTree } from './worktree/workingTree.js';

export interface FileWrite {
  path: string;
  content: string;
  encoding?: ContentEncoding;
  locked?: boolean;
}

export interface WriteFilesInput {
  branch: string;
  files: FileWrite[];
  deletes?: string[];
}

export interface PreparedWrite {
  path: string;
  bytes: Buffer;
  locked: boolean | undefined;
}

/** A batch checked where no storage is needed (prepareBatch): the contents decoded. */
export interface PreparedBatch {
  branch: string;
  writes: PreparedWrite[];
  deletes: string[];
}

/** `version`: the project's version after the write. */
export async function writeFiles(repo: Repo, input: WriteFilesInput): Promise<{ written: number; version: number }> {
  const batch = prepareBatch(repo.limits, input);
  return inWriteTx(repo, (tx) => writeFilesInTx(tx, batch));
}

/** The batch applied in the caller's transaction: all of it, or (throwing) none. */
export async function writeFilesInTx(tx: WriteTx, batch: PreparedBatch): Promise<{ written: number; version: number }> {
  const { deletes, writes: prepared, branch } = batch;
  await branchHead(tx, branch);
  const tree = await WorkingTree.open(tx, branch);
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

  const conflicts: string[] = [];
  prepared.forEach((write) => {
    const found = tree.lookup(write.path);
    // The file's previous version is the likely delta base of the new one, and its path sorts it
    // beside files of its name for the delta search of the others (src/service/deflateCache.ts).
    const blob = tx.putObject('blob', write.bytes, undefined, found.kind === 'file' ? found.entry.oid : null, packNameHash(write.path));
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
    tree.setFile(write.path, { oid: blob, size: write.bytes.length, locked: write.locked ?? keepLock });
  });
  throwIfLocked(locked);
  if (conflicts.length > 0) {
    throw new TreehouseError('path_conflict', `A file and a directory would share a path: ${conflicts.join(', ')}.`, { paths: conflicts });
  }
  tree.save();
  return { written: prepared.length, version: await tx.bumpVersion() };
}

function throwIfLocked(paths: string[]): void {
  if (paths.length > 0) throw new TreehouseError('file_locked', `Locked: ${paths.join(', ')}.`, { paths });
}

/** Checks that need no storage: count, paths, duplicates, sizes, encodings. */
export function prepareBatch(limits: RepoLimits, input: WriteFilesInput): PreparedBatch {
  const deletes = input.deletes ?? [];
  return { branch: input.branch, writes: prepareWrites(limits, input.files, deletes), deletes };
}

function prepareWrites(limits: RepoLimits, files: FileWrite[], deletes: string[]): PreparedWrite[] {
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
    const bytes = decodeContent(file.content, file.encoding, `files.${index}.content`);
    if (bytes.length > limits.fileBytesMax) {
      throw new TreehouseError('payload_too_large', `${file.path} is larger than ${limits.fileBytesMax} bytes.`, {
        limit: limits.fileBytesMax,
        path: file.path,
      });
    }
    const special = specialFileProblem(file.path, MODE_FILE, { type: 'blob', body: bytes });
    if (special) throw new TreehouseError('invalid_request', `${file.path} would fail git fsck: ${special}.`, { issues: [{ path: `files.${index}.content`, message: special }] });
    return { path: file.path, bytes, locked: file.locked };
  });
}
