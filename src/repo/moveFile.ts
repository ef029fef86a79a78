/** Moves a file or a whole directory to a path that does not exist yet. */
import { TreehouseError } from '../errors.js';
import { OID_BYTES, oidToHex, type Oid } from '../git/oid.js';
import { isWithin } from '../git/path.js';
import { knownMode, MODE_TREE } from '../git/tree.js';
import { pathDepth, TREE_DEPTH_MAX, treeHeight } from '../git/treeDepth.js';
import { branchHead, inWriteTx, type ReadTx, type Repo, type WriteTx } from './repo.js';
import { requireValidPath } from './paths.js';
import { isSpecialFilePath, specialFileProblem } from './worktree/specialFiles.js';
import { WorkingTree } from './worktree/workingTree.js';

export interface MoveFileInput {
  branch: string;
  from: string;
  to: string;
}

export async function moveFile(repo: Repo, input: MoveFileInput): Promise<{ from: string; to: string; version: number }> {
  return inWriteTx(repo, (tx) => moveFileInTx(tx, input));
}

export async function moveFileInTx(tx: WriteTx, input: MoveFileInput): Promise<{ from: string; to: string; version: number }> {
  requireValidPath(input.from, 'from');
  requireValidPath(input.to, 'to');
  if (input.from === input.to || isWithin(input.to, input.from)) {
  throw new TreehouseError('invalid_request', 'A path cannot be moved onto or into itself.', {
    issues: [{ path: 'to', message: 'must not be "from" or lie inside it' }],
  });
  }
  await branchHead(tx, input.branch);
  const tree = await WorkingTree.open(tx, input.branch);
  await tree.load([input.from, input.to]);
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
  if (source.kind === 'directory') await requireDepthAfterMove(tx, source.entry!.oid!, input.from, input.to);
  // A name git checks by content (.gitmodules, .gitattributes) must get content git accepts; only
  // such a name needs what the entry names read.
  const moved = source.entry!;
  const special = isSpecialFilePath(input.to) ? specialFileProblem(input.to, moved.mode, moved.oid ? await tx.getObject(moved.oid) : undefined) : null;
  if (special) throw new TreehouseError('invalid_request', `${input.to} would fail git fsck: ${special}.`, { issues: [{ path: 'to', message: special }] });
  const locked = tree.lockedUnder(input.from);
  if (locked.length > 0) throw new TreehouseError('file_locked', `Locked: ${locked.join(', ')}.`, { paths: locked });
  // The entry moves whole: a file keeps its blob and mode, a directory its tree (every directory
  // has a current tree id at the start of a transaction).
  tree.remove(input.from);
  tree.setEntry(input.to, source.entry!);
  tree.save();
  return { from: input.from, to: input.to, version: await tx.bumpVersion() };
}


/**
 * A directory moved deeper carries its whole subtree down: refused when its deepest path would
 * then have more than TREE_DEPTH_MAX components. Moving up or sideways cannot make it deeper than
 * it was, so only a deeper target reads the subtree (and only as far as the limit).
 */
async function requireDepthAfterMove(tx: ReadTx, tree: Oid, from: string, to: string): Promise<void> {
  const toDepth = pathDepth(to);
  if (toDepth <= pathDepth(from)) return;
  const limit = TREE_DEPTH_MAX - toDepth;
  const bodies = await readSubtrees(tx, tree, limit + 1);
  const height = treeHeight(tree, (oid) => bodies.get(oidToHex(oid)), limit);
  if (toDepth + height > TREE_DEPTH_MAX) {
    const message = `moving ${from} there would make paths deeper than ${TREE_DEPTH_MAX} components (git's core.maxTreeDepth)`;
    throw new TreehouseError('invalid_request', `Invalid to: ${message}.`, { issues: [{ path: 'to', message }] });
  }
}

/**
 * The bodies of the distinct trees in `root`'s subtree down to `levels` levels (the root is level
 * 1), by hex id: read a level at a time, each tree once, for treeHeight's synchronous reads (it
 * looks no deeper than one level past its limit). A tree that is not stored is left out, as
 * treeHeight counts it empty.
 */
async function readSubtrees(tx: ReadTx, root: Oid, levels: number): Promise<Map<string, Buffer>> {
  const bodies = new Map<string, Buffer>();
  let level: Oid[] = [root];
  const seen = new Set<string>([oidToHex(root)]);
  for (let depth = 1; depth <= levels && level.length > 0; depth++) {
    const objects = await tx.getObjects(level);
    const next: Oid[] = [];
    level.forEach((oid, i) => {
      const object = objects[i];
      if (!object) return;
      bodies.set(oidToHex(oid), object.body);
      for (const subtree of subtreeIds(object.body)) {
        const key = oidToHex(subtree);
        if (seen.has(key)) continue;
        seen.add(key);
        next.push(subtree);
      }
    });
    level = next;
  }
  return bodies;
}

/** The ids of a tree body's subtrees, read as leniently as treeHeight reads them (a malformed tail ends the list). */
function subtreeIds(body: Buffer): Oid[] {
  const ids: Oid[] = [];
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(0x20, offset);
    const nul = space < 0 ? -1 : body.indexOf(0, space + 1);
    if (nul < 0 || nul + 1 + OID_BYTES > body.length) break;
    if (knownMode(body, offset, space) === MODE_TREE) ids.push(body.subarray(nul + 1, nul + 1 + OID_BYTES));
    offset = nul + 1 + OID_BYTES;
  }
  return ids;
}
