/** Creates a branch at another branch's head or at a commit; its working tree is that commit's tree. */
import { TreehouseError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { BRANCH_REF_PREFIX, branchNameProblem, branchRef } from '../git/refname.js';
import { commitTree, inWriteTx, MAIN_BRANCH, resolveCommit, type Repo } from './repo.js';
import { resetWorkingTree } from './worktree/moveWorkingTree.js';
import type { ProjectReadTx, ProjectWriteTx } from '../store/types.js';

export interface CreateBranchInput {
  name: string;
  from?: string;
}

export async function createBranch(repo: Repo, input: CreateBranchInput): Promise<{ name: string; oid: string }> {
  return inWriteTx(repo, (tx) => createBranchInTx(tx, input));
}

export function createBranchInTx(tx: ProjectWriteTx, input: CreateBranchInput): { name: string; oid: string } {
  const problem = branchNameProblem(input.name);
  if (problem) throw new TreehouseError('invalid_request', `Invalid branch name: ${problem}.`, { issues: [{ path: 'name', message: problem }] });
  const from = input.from ?? MAIN_BRANCH;
  const start = tx.getRef(branchRef(from)) ?? resolveCommit(tx, from);
  if (tx.getRef(branchRef(input.name))) throw new TreehouseError('branch_exists', `Branch ${input.name} already exists.`);
  const clash = refNameClash(tx, input.name);
  if (clash) {
    throw new TreehouseError('branch_exists', `Branch ${input.name} cannot exist beside branch ${clash} (git keeps refs as paths).`);
  }
  tx.casRef(branchRef(input.name), null, start);
  resetWorkingTree(tx, input.name, commitTree(tx, start));
  tx.bumpVersion();
  return { name: input.name, oid: oidToHex(start) };
}

/** A branch that is a path prefix of `name` or has `name` as one ("a" and "a/b" cannot both exist). */
function refNameClash(tx: ProjectReadTx, name: string): string | null {
  const components = name.split('/');
  for (let i = 1; i < components.length; i++) {
    const ancestor = components.slice(0, i).join('/');
    if (tx.getRef(branchRef(ancestor))) return ancestor;
  }
  const below = tx.listRefs(branchRef(`${name}/`));
  return below.length > 0 ? below[0].name.slice(BRANCH_REF_PREFIX.length) : null;
}
