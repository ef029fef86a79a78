/**
 * A push: the received pack is parsed and every object checked like `git fsck --strict` and for
 * connectivity before anything is stored; then each ref update is a compare-and-swap that must be a
 * fast-forward of a branch whose working tree is clean and whose locked files stay as they are.
 * Objects and ref moves land in one transaction; a bad pack moves no ref. With `atomic`, one refused
 * update refuses them all.
 */
import { FsckError, assertFsckClean, assertSpecialBlobsClean } from '../git/fsck.js';
import { oidToHex, type Oid } from '../git/oid.js';
import { PackFormatError, parsePack, type PackObject } from '../git/pack.js';
import { parentsFirst } from '../git/packOrder.js';
import { BRANCH_REF_PREFIX, branchNameProblem } from '../git/refname.js';
import type { RefResult, RefUpdateCommand } from '../git/smartProtocol.js';
import { decodeTree, MODE_GITLINK } from '../git/tree.js';
import { commitTreesDepthProblem } from '../git/treeDepth.js';
import type { ProjectWriteTx } from '../store/types.js';
import { isAncestor } from './ancestry.js';
import { lockedChanges, resetWorkingTree, uncommittedPaths } from './moveWorkingTree.js';
import { MAIN_BRANCH, type Repo } from './repo.js';

export interface ReceivePackInput {
  commands: RefUpdateCommand[];
  pack: Buffer | null;
  atomic: boolean;
  packLimits?: { objectsMax?: number; objectBytesMax?: number; totalBytesMax?: number };
}

export interface ReceivePackResult {
  unpackError: string | null;
  results: RefResult[];
  /** Branches that moved (created or updated). */
  updatedBranches: string[];
}

class RefusedUpdate extends Error {}

export async function receivePack(repo: Repo, input: ReceivePackInput): Promise<ReceivePackResult> {
  const refuseAll = (reason: string, unpackError: string | null): ReceivePackResult => ({
    unpackError,
    results: input.commands.map((command) => ({ ref: command.ref, ok: false, reason })),
    updatedBranches: [],
  });
  let objects: PackObject[] = [];
  if (input.pack && input.pack.length > 0) {
    try {
      objects = repo.store.read((store) => {
        const tx = store.project(repo.project);
        return parsePack(input.pack!, { ...input.packLimits, resolveExternal: (oid) => tx.getObject(oid) }).objects;
      });
      for (const object of objects) assertFsckClean(object.type, object.body, oidToHex(object.oid));
      assertReceivedSpecialBlobsClean(repo, objects);
    } catch (error) {
      if (error instanceof PackFormatError || error instanceof FsckError) return refuseAll('unpacker error', error.message);
      throw error;
    }
  }
  try {
    return await repo.store.write((store) => {
      const tx = store.project(repo.project);
      // Parents before children, so every commit's generation number is computed from indexed parents.
      for (const object of parentsFirst(objects)) tx.putObjectWithId(object.oid, object.type, object.body);
      const missing = missingReference(tx, objects);
      if (missing) throw new RefusedUpdate(`missing object ${missing}`);
      const tooDeep = receivedTreesDepthProblem(tx, objects);
      if (tooDeep) throw new RefusedUpdate(tooDeep);
      const results: RefResult[] = [];
      const updatedBranches: string[] = [];
      for (const command of input.commands) {
        try {
          const branch = applyCommand(tx, command);
          results.push({ ref: command.ref, ok: true });
          if (branch) updatedBranches.push(branch);
        } catch (error) {
          if (!(error instanceof RefusedUpdate)) throw error;
          results.push({ ref: command.ref, ok: false, reason: error.message });
        }
      }
      if (input.atomic && results.some((result) => !result.ok)) {
        throw new AtomicFailure(results.map((r) => (r.ok ? { ref: r.ref, ok: false, reason: 'atomic push failed' } : r)));
      }
      return { unpackError: null, results, updatedBranches };
    });
  } catch (error) {
    if (error instanceof AtomicFailure) return { unpackError: null, results: error.results, updatedBranches: [] };
    if (error instanceof RefusedUpdate) return refuseAll('unpacker error', error.message);
    throw error;
  }
}

class AtomicFailure extends Error {
  constructor(readonly results: RefResult[]) {
    super('atomic push failed');
  }
}

/** The first object a received commit or tree names that neither the pack nor the store has. */
function missingReference(tx: ProjectWriteTx, objects: PackObject[]): string | null {
  for (const object of objects) {
    let references: Oid[] = [];
    if (object.type === 'commit') {
      const info = tx.getCommitInfo(object.oid)!;
      references = [info.tree, ...info.parents];
    } else if (object.type === 'tree') {
      references = decodeTree(object.body).filter((entry) => entry.mode !== MODE_GITLINK).map((entry) => entry.oid);
    }
    for (const reference of references) if (!tx.hasObject(reference)) return oidToHex(reference);
  }
  return null;
}

/** Applies one update or throws RefusedUpdate with the reason git shows after "ng". */
function applyCommand(tx: ProjectWriteTx, command: RefUpdateCommand): string | null {
  if (!command.ref.startsWith(BRANCH_REF_PREFIX)) throw new RefusedUpdate('only branches (refs/heads/*) can be pushed');
  const branch = command.ref.slice(BRANCH_REF_PREFIX.length);
  if (branchNameProblem(branch)) throw new RefusedUpdate('invalid branch name');
  const current = tx.getRef(command.ref) ?? null;
  const sameAsOld = command.old === null ? current === null : current !== null && current.equals(command.old);
  if (!sameAsOld) throw new RefusedUpdate(current === null ? 'branch does not exist' : 'stale info (fetch first)');
  if (command.new === null) {
    if (branch === MAIN_BRANCH) throw new RefusedUpdate('deleting main is not allowed');
    if (uncommittedPaths(tx, branch, tx.getCommitInfo(current!)!.tree).length > 0) throw new RefusedUpdate('uncommitted changes');
    tx.casRef(command.ref, current, null);
    tx.deleteWorkingTree(branch);
    tx.bumpVersion();
    return null;
  }
  const next = tx.getCommitInfo(command.new);
  if (!next) throw new RefusedUpdate('not a commit');
  if (current === null) {
    const clash = tx.listRefs(BRANCH_REF_PREFIX).find((ref) => ref.name.startsWith(`${command.ref}/`) || command.ref.startsWith(`${ref.name}/`));
    if (clash) throw new RefusedUpdate(`conflicts with ${clash.name}`);
  } else {
    if (current.equals(command.new)) return null;
    if (!isAncestor(tx, current, command.new)) throw new RefusedUpdate('non-fast-forward (history is never rewritten)');
    if (uncommittedPaths(tx, branch, tx.getCommitInfo(current)!.tree).length > 0) throw new RefusedUpdate('uncommitted changes');
    const locked = lockedChanges(tx, branch, next.tree);
    if (locked.length > 0) throw new RefusedUpdate(`locked files would change: ${locked.join(', ')}`);
  }
  tx.casRef(command.ref, current, command.new);
  resetWorkingTree(tx, branch, next.tree);
  tx.bumpVersion();
  return branch;
}

/** git's core.maxTreeDepth on every received commit's tree, stored subtrees included (src/git/treeDepth.ts). */
function receivedTreesDepthProblem(tx: ProjectWriteTx, objects: PackObject[]): string | null {
  const received = objects.filter((object) => object.type === 'commit').map((object) => ({ commit: object.oid, tree: tx.getCommitInfo(object.oid)!.tree }));
  return commitTreesDepthProblem(received, (oid) => {
    const tree = tx.getObject(oid);
    if (!tree || tree.type !== 'tree') throw new RefusedUpdate(`${tree ? 'not a tree' : 'missing object'} ${oidToHex(oid)}`);
    return tree.body;
  });
}

/** The .gitmodules and .gitattributes blobs the received trees name, in the pack or already stored (fsck_finish()). */
function assertReceivedSpecialBlobsClean(repo: Repo, objects: PackObject[]): void {
  const received = new Map(objects.map((object) => [oidToHex(object.oid), object]));
  repo.store.read((store) => {
    const tx = store.project(repo.project);
    const trees = objects.filter((object) => object.type === 'tree').map((object) => object.body);
    assertSpecialBlobsClean(trees, (oid) => received.get(oidToHex(oid)) ?? tx.getObject(oid));
  });
}
