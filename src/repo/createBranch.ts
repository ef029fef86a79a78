/** Creates a branch at another branch's head or at a commit; its working tree is that commit's tree. */
import { TreehouseError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { BRANCH_REF_PREFIX, branchNameProblem, branchRef } from '../git/refname.js';
import { commitTree, inWriteTx, MAIN_BRANCH, resolveCommit, type ReadTx, type Repo, type WriteTx } from './repo.js';
import { resetWorkingTree } from './worktree/moveWorkingTree.js';

export interface CreateBranchInput {
  name: string;
  from?: string;
}

export async function createBranch(repo: Repo, input: CreateBranchInput): Promise<{ name: string; oid: string }> {
  return inWriteTx(repo, (tx) => createBranchInTx(tx, input));
}

export async function createBranchInTx(tx: WriteTx, input: CreateBranchInput): Promise<{ name: string; oid: string }> {
  const problem = branchNameProblem(input.name);
  if (problem) throw new TreehouseError('invalid_request', `Invalid branch name: ${problem}.`, { issues: [{ path: 'name', message: problem }] });
  const from = input.from ?? MAIN_BRANCH;
  const start = (await tx.getRef(branchRef(from))) ?? (await resolveCommit(tx, from));
  if (await tx.getRef(branchRef(input.name))) throw new TreehouseError('branch_exists', `Branch ${input.name} already exists.`);
  const clash = await refNameClash(tx, input.name);
  if (clash) {
    throw new TreehouseError('branch_exists', `Branch ${input.name} cannot exist beside branch ${clash} (git keeps refs as paths).`);
  }
  await tx.casRef(branchRef(input.name), null, start);
  await resetWorkingTree(tx, input.name, await commitTree(tx, start));
  await tx.bumpVersion();
  return { name: input.name, oid: oidToHex(start) };
}

/** A branch that is a path prefix of `name` or has `name` as one ("a" and "a/b" cannot both exist). */
async function refNameClash(tx: ReadTx, name: string): Promise<string | null> {
  const components = name.split('/');
  for (let i = 1; i < components.length; i++) {
    const ancestor = components.slice(0, i).join('/');
    if (await tx.getRef(branchRef(ancestor))) return ancestor;
  }
  const below = await tx.listRefs(branchRef(`${name}/`));
  return below.length > 0 ? below[0].name.slice(BRANCH_REF_PREFIX.length) : null;
}
