/**
 * POST git/merge: merges the committed head of `source` into `target`. Already contained: nothing
 * changes (up to date). Target behind source: the target ref and working tree move to the source
 * head (fast-forward). Otherwise a three-way merge (src/repo/merge/) computed in memory; clean, it
 * becomes a merge commit with parents [target head, source head]; conflicted, nothing changes and the
 * conflicts are reported. A dirty target working tree, or a locked file the result would change,
 * refuses the merge before anything is written.
 */
import { TreehouseError } from '../errors.js';
import { oidToHex, type Oid } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import { decodeTree, encodeTree } from '../git/tree.js';
import type { ProjectReadTx, ProjectWriteTx } from '../store/types.js';
import { isAncestor } from './ancestry.js';
import { mergeCommits, type CommitGraph } from './merge/mergeBase.js';
import type { MergeObjects } from './merge/mergeTrees.js';
import { requireCleanWorkingTree, requireUnlockedChanges, resetWorkingTree } from './moveWorkingTree.js';
import { branchHead, commitTree, type Repo } from './repo.js';
import { writeCommit, type CommitAuthors } from './writeCommit.js';

export interface MergeResult {
  oid: string;
  fastForward: boolean;
  upToDate?: true;
  /** True when a merge commit was written. */
  created: boolean;
}

export async function mergeBranches(
  repo: Repo,
  input: { source: string; target: string; message?: string; people: CommitAuthors },
): Promise<MergeResult> {
  return repo.store.write((store) => {
    const tx = store.project(repo.project);
    const targetHead = branchHead(tx, input.target);
    const sourceHead = branchHead(tx, input.source);
    requireCleanWorkingTree(tx, input.target, commitTree(tx, targetHead));
    if (isAncestor(tx, sourceHead, targetHead)) {
      return { oid: oidToHex(targetHead), fastForward: false, upToDate: true, created: false };
    }
    if (isAncestor(tx, targetHead, sourceHead)) {
      const sourceTree = commitTree(tx, sourceHead);
      requireUnlockedChanges(tx, input.target, sourceTree);
      tx.casRef(branchRef(input.target), targetHead, sourceHead);
      resetWorkingTree(tx, input.target, sourceTree);
      tx.bumpVersion();
      return { oid: oidToHex(sourceHead), fastForward: true, created: false };
    }
    const result = mergeCommits(mergeObjects(tx), commitGraph(tx), targetHead, sourceHead);
    if (!result.clean) {
      const conflicts = result.conflicts.map(({ path, kind }) => ({ path, kind }));
      throw new TreehouseError('merge_conflict', `Merging ${input.source} into ${input.target} conflicts in ${conflicts.length} path(s); nothing was changed.`, { conflicts });
    }
    requireUnlockedChanges(tx, input.target, result.tree);
    const oid = writeCommit(tx, {
      branch: input.target,
      tree: result.tree,
      parents: [targetHead, sourceHead],
      message: input.message ?? `Merge branch '${input.source}' into ${input.target}`,
      people: input.people,
    });
    resetWorkingTree(tx, input.target, result.tree);
    return { oid: oidToHex(oid), fastForward: false, created: true };
  });
}

/** Merge object access inside the transaction; a refused merge rolls its writes back. */
export function mergeObjects(tx: ProjectWriteTx): MergeObjects {
  const read = (oid: Oid, type: 'tree' | 'blob') => {
    const object = tx.getObject(oid);
    if (!object || object.type !== type) throw new Error(`${type} ${oidToHex(oid)} is missing`);
    return object.body;
  };
  return {
    // getObject returns a copy, so the entries' ids may be views into it.
    readTree: (oid) => decodeTree(read(oid, 'tree'), true),
    readBlob: (oid) => read(oid, 'blob'),
    writeBlob: (body) => tx.putObject('blob', body),
    writeTree: (entries) => tx.putObject('tree', encodeTree(entries)),
    putEncodedTree: (oid, body) => tx.putObjectWithId(oid, 'tree', body),
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
