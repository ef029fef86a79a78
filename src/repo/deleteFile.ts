/** Deletes a file or a directory with everything below it from a branch's working tree. */
import { TreehouseError } from '../errors.js';
import { branchHead, inWriteTx, type Repo, type WriteTx } from './repo.js';
import { requireValidPath } from './paths.js';
import { WorkingTree } from './worktree/workingTree.js';

/** `version`: the project's version after the change. */
export async function deleteFile(repo: Repo, input: { branch: string; path: string }): Promise<{ path: string; version: number }> {
  return inWriteTx(repo, (tx) => deleteFileInTx(tx, input));
}

export async function deleteFileInTx(tx: WriteTx, input: { branch: string; path: string }): Promise<{ path: string; version: number }> {
  requireValidPath(input.path, 'path');
  await branchHead(tx, input.branch);
  const tree = await WorkingTree.open(tx, input.branch);
  await tree.load([input.path]);
  const found = tree.lookup(input.path);
  if (found.kind === 'missing' || found.kind === 'blocked') throw new TreehouseError('not_found', `${input.path} not found.`);
  const locked = tree.lockedUnder(input.path);
  if (locked.length > 0) throw new TreehouseError('file_locked', `Locked: ${locked.join(', ')}.`, { paths: locked });
  tree.remove(input.path);
  tree.save();
  return { path: input.path, version: await tx.bumpVersion() };
}
