/**
 * The first commit of a new project: its seed files (or an empty tree) on main, with main's working
 * tree at that commit. Seeds that bring their own history (git) use importHistory instead.
 */
import { packNameHash } from '../git/nameHash.js';
import { encodeTree, MODE_FILE, type FileMode } from '../git/tree.js';
import { specialFileProblem } from './worktree/specialFiles.js';
import { oidToHex, type Oid } from '../git/oid.js';
import { TreehouseError } from '../errors.js';
import { inWriteTx, MAIN_BRANCH, type Repo, type WriteTx } from './repo.js';
import { resetWorkingTree } from './worktree/moveWorkingTree.js';
import { WorkingTree } from './worktree/workingTree.js';
import { writeCommit, type CommitAuthors } from './writeCommit.js';

export interface SeedFile {
  path: string;
  bytes: Buffer;
  mode?: FileMode;
}

export const INITIAL_COMMIT_MESSAGE = 'Initial commit';

export interface InitProjectInput {
  files: SeedFile[];
  people: CommitAuthors;
}

export async function initProject(repo: Repo, input: InitProjectInput): Promise<{ oid: string }> {
  return inWriteTx(repo, async (tx) => ({ oid: oidToHex(await initProjectInTx(tx, input)) }));
}

/** The initial commit inside the caller's transaction, so a project record and its history land together. */
export async function initProjectInTx(tx: WriteTx, input: InitProjectInput): Promise<Oid> {
  // An empty root node first, so the branch has a working tree to write into.
  const emptyTree = tx.putObject('tree', encodeTree([]));
  await resetWorkingTree(tx, MAIN_BRANCH, emptyTree);
  const tree = await WorkingTree.open(tx, MAIN_BRANCH);
  const conflicts: string[] = [];
  input.files.forEach((file, index) => {
    const special = specialFileProblem(file.path, file.mode ?? MODE_FILE, { type: 'blob', body: file.bytes });
    if (special) throw new TreehouseError('invalid_request', `${file.path} would fail git fsck: ${special}.`, { issues: [{ path: `source.files.${index}`, message: special }] });
  });
  await tree.load(input.files.map((file) => file.path));
  for (const file of input.files) {
    const found = tree.lookup(file.path);
    if (found.kind !== 'missing') {
      conflicts.push(file.path);
      continue;
    }
    tree.setFile(file.path, { oid: tx.putObject('blob', file.bytes, undefined, null, packNameHash(file.path)), size: file.bytes.length, mode: file.mode, locked: false });
  }
  if (conflicts.length > 0) {
    throw new TreehouseError('path_conflict', `Seed paths collide: ${conflicts.join(', ')}.`, { paths: conflicts });
  }
  const treeOid = tree.writeTree();
  tree.save();
  return writeCommit(tx, { branch: MAIN_BRANCH, tree: treeOid, parents: [], message: INITIAL_COMMIT_MESSAGE, people: input.people });
}
