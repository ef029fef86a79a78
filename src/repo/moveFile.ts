/** Moves a file or a whole directory to a path that does not exist yet. */
import { TreehouseError } from '../errors.js';
import type { Oid } from '../git/oid.js';
import { isWithin } from '../git/path.js';
import { pathDepth, TREE_DEPTH_MAX, treeHeight } from '../git/treeDepth.js';
import type { ProjectReadTx, ProjectWriteTx } from '../store/types.js';
import { branchHead, inWriteTx, type Repo } from './repo.js';
import { requireValidPath } from './paths.js';
import { specialFileProblem } from './worktree/specialFiles.js';
import { WorkingTree } from './worktree/workingTree.js';

export interface MoveFileInput {
  branch: string;
  from: string;
  to: string;
}

export async function moveFile(repo: Repo, input: MoveFileInput): Promise<{ from: string; to: string; version: number }> {
  return inWriteTx(repo, (tx) => moveFileInTx(tx, input));
}

export function moveFileInTx(tx: ProjectWriteTx, input: MoveFileInput): { from: string; to: string; version: number } {
  requireValidPath(input.from, 'from');
  requireValidPath(input.to, 'to');
  if (input.from === input.to || isWithin(input.to, input.from)) {
  throw new TreehouseError('invalid_request', 'A path cannot be moved onto or into itself.', {
    issues: [{ path: 'to', message: 'must not be "from" or lie inside it' }],
  });
  }
  branchHead(tx, input.branch);
  const tree = new WorkingTree(tx, input.branch);
  const source = tree.lookup(input.from);
  if (source.kind === 'missing' || source.kind === 'blocked' || input.from === '') {
    throw new TreehouseError('not_found', `${input.from} not found.`);
  }
  const target = tree.lookup(input.to);
  if (target.kind === 'file' || target.kind === 'directory') {
    throw new TreehouseError('already_exists', `${input.to} already exists.`, { paths: [input.to] });
  }
  if (target.kind === 'blocked') {
    throw new TreehouseError('path_conflict', `${target.at} is a file, so ${input.to} cannot be created.`, { paths: [target.at] });
  }
  if (source.kind === 'directory') requireDepthAfterMove(tx, source.entry!.oid!, input.from, input.to);
  // A name git checks by content (.gitmodules, .gitattributes) must get content git accepts.
  const moved = source.entry!;
  const special = specialFileProblem(input.to, moved.mode, moved.oid ? tx.getObject(moved.oid) : undefined);
  if (special) throw new TreehouseError('invalid_request', `${input.to} would fail git fsck: ${special}.`, { issues: [{ path: 'to', message: special }] });
  const locked = tree.lockedUnder(input.from);
  if (locked.length > 0) throw new TreehouseError('file_locked', `Locked: ${locked.join(', ')}.`, { paths: locked });
  // The entry moves whole: a file keeps its blob and mode, a directory its tree (every directory
  // has a current tree id at the start of a transaction).
  tree.remove(input.from);
  tree.setEntry(input.to, source.entry!);
  tree.save();
  return { from: input.from, to: input.to, version: tx.bumpVersion() };
}


/**
 * A directory moved deeper carries its whole subtree down: refused when its deepest path would
 * then have more than TREE_DEPTH_MAX components. Moving up or sideways cannot make it deeper than
 * it was, so only a deeper target reads the subtree (and only as far as the limit).
 */
function requireDepthAfterMove(tx: ProjectReadTx, tree: Oid, from: string, to: string): void {
  const toDepth = pathDepth(to);
  if (toDepth <= pathDepth(from)) return;
  const height = treeHeight(tree, (oid) => tx.getObject(oid)?.body, TREE_DEPTH_MAX - toDepth);
  if (toDepth + height > TREE_DEPTH_MAX) {
    const message = `moving ${from} there would make paths deeper than ${TREE_DEPTH_MAX} components (git's core.maxTreeDepth)`;
    throw new TreehouseError('invalid_request', `Invalid to: ${message}.`, { issues: [{ path: 'to', message }] });
  }
}
