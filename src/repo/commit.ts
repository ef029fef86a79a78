/** Records a branch's working tree as a commit on top of its head (nothing when the tree is unchanged). */
import { TreehouseError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { branchHead, commitTree, headMatches, inWriteTx, type Repo, type WriteTx } from './repo.js';
import { WorkingTree } from './worktree/workingTree.js';
import { writeCommit, type CommitAuthors } from './writeCommit.js';

export const DEFAULT_COMMIT_MESSAGE = 'Update files';

export interface CommitInput {
  branch: string;
  message?: string;
  expectedHead?: string;
  people: CommitAuthors;
}

export interface CommitResult {
  oid: string;
  branch: string;
  created: boolean;
}

export async function commit(repo: Repo, input: CommitInput): Promise<CommitResult> {
  return inWriteTx(repo, (tx) => commitInTx(tx, input));
}

export async function commitInTx(tx: WriteTx, input: CommitInput): Promise<CommitResult> {
  // Read together: on PostgreSQL one round trip, after the project's lock, instead of two.
  const [head, tree] = await Promise.all([branchHead(tx, input.branch), WorkingTree.open(tx, input.branch)]);
  if (input.expectedHead !== undefined && !(await headMatches(tx, input.expectedHead, head))) {
    throw new TreehouseError('ref_changed', `The head of ${input.branch} is ${oidToHex(head)}.`, { head: oidToHex(head) });
  }
  const treeOid = tree.writeTree();
  tree.save();
  if (treeOid.equals(await commitTree(tx, head))) return { oid: oidToHex(head), branch: input.branch, created: false };
  const oid = await writeCommit(tx, {
    branch: input.branch,
    tree: treeOid,
    parents: [head],
    message: input.message ?? DEFAULT_COMMIT_MESSAGE,
    people: input.people,
  });
  return { oid: oidToHex(oid), branch: input.branch, created: true };
}
