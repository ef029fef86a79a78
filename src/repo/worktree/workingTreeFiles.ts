/** Every file of a branch's working tree with its blob id and mode, without contents (for lint). */
import type { TreeMode } from '../../git/tree.js';
import { branchHead, inReadTx, type Repo } from '../repo.js';
import { WorkingTree } from './workingTree.js';

export interface WorkingTreeFile {
  path: string;
  /** Blob id, 40 hex digits. */
  oid: string;
  mode: TreeMode;
  size: number;
}

export async function workingTreeFiles(repo: Repo, input: { branch: string }): Promise<WorkingTreeFile[]> {
  return inReadTx(repo, async (tx) => {
    await branchHead(tx, input.branch);
    const files = await (await WorkingTree.open(tx, input.branch)).filesUnder('');
    return files.map((file) => ({ path: file.path, oid: file.oid, mode: file.mode, size: file.size }));
  });
}
