/**
 * POST git/merge: merges the committed head of `source` into `target`. Already contained: nothing
 * changes (up to date). Target behind source: the target ref and working tree move to the source
 * head (fast-forward). Otherwise a three-way merge (src/repo/merge/) computed in memory; clean, it
 * becomes a merge commit with parents [target head, source head]; conflicted, nothing changes and the
 * conflicts are reported, unless the request resolves every one of them (resolveConflicts.ts): then the
 * resolved tree becomes the merge commit. A head that is not the one the caller expected
 * (`expectedTargetHead`, `expectedSourceHead`), a dirty target working tree, or a locked file the
 * result would change refuses the merge before anything is written.
 */
import { TreehouseError, MissingObjectError } from '../../errors.js';
import { oidToHex, type Oid } from '../../git/oid.js';
import { branchRef } from '../../git/refname.js';
import { decodeTree, encodeTree, MODE_GITLINK, MODE_TREE } from '../../git/tree.js';
import { TREE_DEPTH_MAX } from '../../git/treeDepth.js';
import type { CommitInfo, StoredObject } from '../../store/types.js';
import { isAncestor } from '../ancestry.js';
import { computeMerge, type CommitGraph } from './mergeBase.js';
import type { DecidedEntry, MergeObjects, StagedObjects, TreeMergeOutcome } from './mergeTrees.js';
import { requireCleanWorkingTree, requireUnlockedChanges, resetWorkingTree } from '../worktree/moveWorkingTree.js';
import { bodyOf, branchHead, commitTree, headMatches, inWriteTx, type ReadTx, type Repo, type WriteTx } from '../repo.js';
import { prepareResolutions, requireNoResolutions, resolveConflicts, type MergeResolution, type PreparedResolution } from './resolveConflicts.js';
import { specialFileProblem } from '../worktree/specialFiles.js';
import { writeCommit, type CommitAuthors } from '../writeCommit.js';

export interface MergeResult {
  oid: string;
  fastForward: boolean;
  upToDate?: true;
  /** True when a merge commit was written. */
  created: boolean;
}

/** A merge as requested; a head named by an expected head (full id or unique prefix) must still be it. */
export interface MergeRequest {
  source: string;
  target: string;
  message?: string;
  people: CommitAuthors;
  resolutions?: MergeResolution[];
  expectedTargetHead?: string;
  expectedSourceHead?: string;
}

/** A merge with its resolutions checked where no storage is needed (prepareResolutions). */
export type MergeInput = Omit<MergeRequest, 'resolutions'> & { resolutions?: PreparedResolution[] };

export async function mergeBranches(repo: Repo, request: MergeRequest): Promise<MergeResult> {
  const input: MergeInput = { ...request, resolutions: request.resolutions && prepareResolutions(repo.limits, request.resolutions) };
  return inWriteTx(repo, (tx) => mergeBranchesInTx(tx, input));
}

export async function mergeBranchesInTx(tx: WriteTx, input: MergeInput): Promise<MergeResult> {
  await requireExpectedHead(tx, input.target, input.expectedTargetHead);
  await requireExpectedHead(tx, input.source, input.expectedSourceHead);
  const plan = await planMerge(tx, input, mergeObjects(tx));
  const { targetHead, sourceHead } = plan;
  if (plan.kind === 'up-to-date') {
    requireNoResolutions(input.resolutions, `${input.source} is already merged into ${input.target}`);
    return { oid: oidToHex(targetHead), fastForward: false, upToDate: true, created: false };
  }
  if (plan.kind === 'fast-forward') {
    requireNoResolutions(input.resolutions, 'the merge is a fast-forward');
    await tx.casRef(branchRef(input.target), targetHead, sourceHead);
    await resetWorkingTree(tx, input.target, plan.tree);
    await tx.bumpVersion();
    return { oid: oidToHex(sourceHead), fastForward: true, created: false };
  }
  const { outcome, staged } = plan;
  let tree = outcome.tree;
  if (outcome.clean) {
    requireNoResolutions(input.resolutions, 'the merge is clean');
  } else if (!input.resolutions) {
    const conflicts = outcome.conflicts.map(({ path, kind }) => ({ path, kind }));
    throw new TreehouseError('merge_conflict', `Merging ${input.source} into ${input.target} conflicts in ${conflicts.length} path(s); nothing was changed.`, { conflicts });
  } else {
    // The resolved result passes the checks a clean one does in planMerge().
    const resolved = await resolveConflicts(staged, outcome, input.resolutions);
    await requireStorableResult(resolved, staged);
    await requireUnlockedChanges(tx, input.target, resolved.tree, staged);
    tree = resolved.tree;
  }
  staged.flush(tree);
  const oid = await writeCommit(tx, {
    branch: input.target,
    tree,
    parents: [targetHead, sourceHead],
    message: input.message ?? `Merge branch '${input.source}' into ${input.target}`,
    people: input.people,
  });
  await resetWorkingTree(tx, input.target, tree);
  return { oid: oidToHex(oid), fastForward: false, created: true };
}

/** 409 ref_changed with the branch's current head when it is not the expected one. */
async function requireExpectedHead(tx: ReadTx, branch: string, expected: string | undefined): Promise<void> {
  if (expected === undefined) return;
  const head = await branchHead(tx, branch);
  if (!(await headMatches(tx, expected, head))) {
    throw new TreehouseError('ref_changed', `The head of ${branch} is ${oidToHex(head)}, not ${expected}; nothing was changed.`, { head: oidToHex(head), branch });
  }
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
export async function planMerge(tx: ReadTx, input: { source: string; target: string }, objects: MergeObjects): Promise<MergePlan> {
  const targetHead = await branchHead(tx, input.target);
  const sourceHead = await branchHead(tx, input.source);
  await requireCleanWorkingTree(tx, input.target, await commitTree(tx, targetHead));
  if (await isAncestor(tx, sourceHead, targetHead)) return { kind: 'up-to-date', targetHead, sourceHead, bases: [sourceHead] };
  if (await isAncestor(tx, targetHead, sourceHead)) {
    const tree = await commitTree(tx, sourceHead);
    await requireUnlockedChanges(tx, input.target, tree);
    return { kind: 'fast-forward', targetHead, sourceHead, bases: [targetHead], tree };
  }
  const { outcome, staged, bases } = await computeMerge(objects, commitGraph(tx), targetHead, sourceHead, { ours: input.target, theirs: input.source });
  // A conflicted merge changes nothing, so only a clean one can make a tree git refuses or touch a locked file.
  if (outcome.clean) {
    await requireStorableResult(outcome, staged);
    await requireUnlockedChanges(tx, input.target, outcome.tree, staged);
  }
  return { kind: 'merge', targetHead, sourceHead, bases, outcome, staged };
}

/** Refuses a result git would not store: a path deeper than core.maxTreeDepth, or a .gitmodules/.gitattributes fsck refuses. */
async function requireStorableResult(outcome: Pick<TreeMergeOutcome, 'pathDepthMax' | 'specialFiles'>, staged: StagedObjects): Promise<void> {
  if (outcome.pathDepthMax > TREE_DEPTH_MAX) {
    const message = `The merge would make a path ${outcome.pathDepthMax} components deep; at most ${TREE_DEPTH_MAX} are allowed (git's core.maxTreeDepth). Nothing was changed.`;
    throw new TreehouseError('invalid_request', message, { issues: [{ path: 'source', message }] });
  }
  // A directory or submodule by that name is refused for what it is; a blob is read where the merge keeps it.
  const isBlob = (entry: DecidedEntry) => entry.mode !== MODE_TREE && entry.mode !== MODE_GITLINK;
  const bodies = await Promise.all(outcome.specialFiles.map((entry) => (isBlob(entry) ? staged.readBlob(entry.oid) : undefined)));
  for (const [i, entry] of outcome.specialFiles.entries()) {
    const object = entry.mode === MODE_TREE ? { type: 'tree' as const, body: Buffer.alloc(0) } : isBlob(entry) ? { type: 'blob' as const, body: bodies[i]! } : undefined;
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
 * flush()), so a preview passes one and never flushes. The reads the merge asks for together reach
 * the store as one batch.
 */
export function mergeObjects(tx: ReadTx): MergeObjects {
  const getObject = batchedReads<StoredObject | undefined>((oids) => tx.getObjects(oids));
  const read = async (oid: Oid, type: 'tree' | 'blob') => bodyOf(await getObject(oid), type, oid);
  return {
    // getObjects returns copies, so the entries' ids may be views into them.
    readTree: async (oid) => decodeTree(await read(oid, 'tree'), true),
    readBlob: (oid) => read(oid, 'blob'),
    writeBlob: (body) => (tx as WriteTx).putObject('blob', body),
    writeTree: (entries) => (tx as WriteTx).putObject('tree', encodeTree(entries)),
    putEncodedTree: (oid, body) => (tx as WriteTx).putObjectWithId(oid, 'tree', body),
  };
}

/**
 * The commit index as a merge reads it: each commit's entry is read once (the walk asks for a
 * commit's generation, time, parents and tree at different moments), and the entries asked for
 * together are read in one batch.
 */
export function commitGraph(tx: ReadTx): CommitGraph {
  const getInfo = batchedReads<CommitInfo | undefined>((oids) => tx.getCommitInfos(oids));
  const infos = new Map<string, Promise<CommitInfo>>();
  const info = (oid: Oid): Promise<CommitInfo> => {
    const hex = oidToHex(oid);
    let found = infos.get(hex);
    if (!found) {
      found = getInfo(oid).then((read) => {
        if (!read) throw new MissingObjectError('commit', oid);
        return read;
      });
      infos.set(hex, found);
    }
    return found;
  };
  return {
    parents: async (oid) => (await info(oid)).parents,
    generation: async (oid) => (await info(oid)).generation,
    commitTime: async (oid) => (await info(oid)).commitTime,
    tree: async (oid) => (await info(oid)).tree,
  };
}

/**
 * One id at a time on the outside, batches on the inside: the ids asked for before the pending
 * microtasks have run (the arguments of one Promise.all, say) go to `readMany` in one call.
 */
function batchedReads<T>(readMany: (oids: Oid[]) => Promise<T[]>): (oid: Oid) => Promise<T> {
  let waiting: Array<{ oid: Oid; resolve: (value: T) => void; reject: (error: unknown) => void }> | null = null;
  const flush = () => {
    const batch = waiting!;
    waiting = null;
    readMany(batch.map((item) => item.oid)).then(
      (values) => batch.forEach((item, i) => item.resolve(values[i])),
      (error: unknown) => batch.forEach((item) => item.reject(error)),
    );
  };
  return (oid) =>
    new Promise<T>((resolve, reject) => {
      if (!waiting) {
        waiting = [];
        queueMicrotask(flush);
      }
      waiting.push({ oid, resolve, reject });
    });
}
