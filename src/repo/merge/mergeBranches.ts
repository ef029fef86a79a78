/**
 * POST git/merge: merges the committed head of `source` into `target`. Already contained: nothing
 * changes (up to date). Target behind source: the target ref and working tree move to the source
 * head (fast-forward). Otherwise a three-way merge (src/repo/merge/) computed in memory; clean, it
 * becomes a merge commit with parents [target head, source head]; conflicted, nothing changes and the
 * conflicts are reported. A dirty target working tree, or a locked file the result would change,
 * refuses the merge before anything is written.
 */
import { TreehouseError } from '../../errors.js';
import { oidToHex, type Oid } from '../../git/oid.js';
import { branchRef } from '../../git/refname.js';
import { decodeTree, encodeTree, MODE_GITLINK, MODE_TREE } from '../../git/tree.js';
import { TREE_DEPTH_MAX } from '../../git/treeDepth.js';
import type { ProjectReadTx, ProjectWriteTx } from '../../store/types.js';
import { isAncestor } from '../ancestry.js';
import { computeMerge, type CommitGraph } from './mergeBase.js';
import type { MergeObjects, StagedObjects, TreeMergeOutcome } from './mergeTrees.js';
import { requireCleanWorkingTree, requireUnlockedChanges, resetWorkingTree } from '../worktree/moveWorkingTree.js';
import { branchHead, commitTree, inWriteTx, type Repo } from '../repo.js';
import { specialFileProblem } from '../worktree/specialFiles.js';
import { writeCommit, type CommitAuthors } from '../writeCommit.js';

export interface MergeResult {
  oid: string;
  fastForward: boolean;
  upToDate?: true;
  /** True when a merge commit was written. */
  created: boolean;
}

export interface MergeInput {
  source: string;
  target: string;
  message?: string;
  people: CommitAuthors;
}

export async function mergeBranches(repo: Repo, input: MergeInput): Promise<MergeResult> {
  return inWriteTx(repo, (tx) => mergeBranchesInTx(tx, input));
}

export function mergeBranchesInTx(tx: ProjectWriteTx, input: MergeInput): MergeResult {
  const plan = planMerge(tx, input, mergeObjects(tx));
  const { targetHead, sourceHead } = plan;
  if (plan.kind === 'up-to-date') return { oid: oidToHex(targetHead), fastForward: false, upToDate: true, created: false };
  if (plan.kind === 'fast-forward') {
    tx.casRef(branchRef(input.target), targetHead, sourceHead);
    resetWorkingTree(tx, input.target, plan.tree);
    tx.bumpVersion();
    return { oid: oidToHex(sourceHead), fastForward: true, created: false };
  }
  const { outcome, staged } = plan;
  if (!outcome.clean) {
    const conflicts = outcome.conflicts.map(({ path, kind }) => ({ path, kind }));
    throw new TreehouseError('merge_conflict', `Merging ${input.source} into ${input.target} conflicts in ${conflicts.length} path(s); nothing was changed.`, { conflicts });
  }
  staged.flush(outcome.tree);
  const oid = writeCommit(tx, {
    branch: input.target,
    tree: outcome.tree,
    parents: [targetHead, sourceHead],
    message: input.message ?? `Merge branch '${input.source}' into ${input.target}`,
    people: input.people,
  });
  resetWorkingTree(tx, input.target, outcome.tree);
  return { oid: oidToHex(oid), fastForward: false, created: true };
}

/** What merging `source` into `target` would do, computed in memory; nothing is written. */
export type MergePlan = { targetHead: Oid; sourceHead: Oid; bases: Oid[] } & (
  | { kind: 'up-to-date' }
  | { kind: 'fast-forward'; tree: Oid }
  /** A three-way merge: the outcome's tree and objects live in `staged` until flushed. */
  | { kind: 'merge'; outcome: TreeMergeOutcome; staged: StagedObjects }
);

/**
 * The one computation behind POST git/merge and its preview: the refusals the merge makes before
 * anything is written (unknown branches, a dirty target working tree, locked files the result
 * would change) and its outcome. Conflicted content carries git's markers labelled with the
 * target and source branch names.
 */
export function planMerge(tx: ProjectReadTx, input: { source: string; target: string }, objects: MergeObjects): MergePlan {
  const targetHead = branchHead(tx, input.target);
  const sourceHead = branchHead(tx, input.source);
  requireCleanWorkingTree(tx, input.target, commitTree(tx, targetHead));
  if (isAncestor(tx, sourceHead, targetHead)) return { kind: 'up-to-date', targetHead, sourceHead, bases: [sourceHead] };
  if (isAncestor(tx, targetHead, sourceHead)) {
    const tree = commitTree(tx, sourceHead);
    requireUnlockedChanges(tx, input.target, tree);
    return { kind: 'fast-forward', targetHead, sourceHead, bases: [targetHead], tree };
  }
  const { outcome, staged, bases } = computeMerge(objects, commitGraph(tx), targetHead, sourceHead, { ours: input.target, theirs: input.source });
  // A conflicted merge changes nothing, so only a clean one can make a tree git refuses or touch a locked file.
  if (outcome.clean) {
    requireStorableResult(outcome, staged);
    requireUnlockedChanges(tx, input.target, outcome.tree, staged);
  }
  return { kind: 'merge', targetHead, sourceHead, bases, outcome, staged };
}

/** Refuses a clean result git would not store: a path deeper than core.maxTreeDepth, or a .gitmodules/.gitattributes fsck refuses. */
function requireStorableResult(outcome: TreeMergeOutcome, staged: StagedObjects): void {
  if (outcome.pathDepthMax > TREE_DEPTH_MAX) {
    const message = `The merge would make a path ${outcome.pathDepthMax} components deep; at most ${TREE_DEPTH_MAX} are allowed (git's core.maxTreeDepth). Nothing was changed.`;
    throw new TreehouseError('invalid_request', message, { issues: [{ path: 'source', message }] });
  }
  for (const entry of outcome.specialFiles) {
    // A directory or submodule by that name is refused for what it is; a blob is read where the merge keeps it.
    const object = entry.mode === MODE_TREE ? { type: 'tree' as const, body: Buffer.alloc(0) } : entry.mode === MODE_GITLINK ? undefined : { type: 'blob' as const, body: staged.readBlob(entry.oid) };
    const problem = specialFileProblem(entry.path, entry.mode, object);
    if (problem) {
      const message = `The merge would give ${entry.path} content git fsck refuses (${problem}). Nothing was changed.`;
      throw new TreehouseError('invalid_request', message, { issues: [{ path: 'source', message }], paths: [entry.path] });
    }
  }
}

/**
 * Merge object access inside the transaction; a refused merge rolls its writes back. Reads need
 * only a read transaction (a merge writes through StagedObjects, which holds what it makes until
 * flush()), so a preview passes one and never flushes.
 */
export function mergeObjects(tx: ProjectReadTx): MergeObjects {
  const read = (oid: Oid, type: 'tree' | 'blob') => {
    const object = tx.getObject(oid);
    if (!object || object.type !== type) throw new Error(`${type} ${oidToHex(oid)} is missing`);
    return object.body;
  };
  return {
    // getObject returns a copy, so the entries' ids may be views into it.
    readTree: (oid) => decodeTree(read(oid, 'tree'), true),
    readBlob: (oid) => read(oid, 'blob'),
    writeBlob: (body) => (tx as ProjectWriteTx).putObject('blob', body),
    writeTree: (entries) => (tx as ProjectWriteTx).putObject('tree', encodeTree(entries)),
    putEncodedTree: (oid, body) => (tx as ProjectWriteTx).putObjectWithId(oid, 'tree', body),
  };
}

export function commitGraph(tx: ProjectReadTx): CommitGraph {
  const info = (oid: Oid) => {
    const found = tx.getCommitInfo(oid);
    if (!found) throw new Error(`commit ${oidToHex(oid)} is missing`);
    return found;
  };
  return {
    parents: (oid) => info(oid).parents,
    generation: (oid) => info(oid).generation,
    commitTime: (oid) => info(oid).commitTime,
    tree: (oid) => info(oid).tree,
  };
}
