/** Every file of a branch's working tree with its blob id and mode, without contents (for lint). */
import type { TreeMode } from '../../git/tree.js';
import { branchHead, type Repo } from '../repo.js';
import { WorkingTree } from './workingTree.js';

export interface WorkingTreeFile {
  path: string;
  /** Blob id, 40 hex digits. */
  oid: string;
  mode: TreeMode;
  size: number;
}

export function workingTreeFiles(repo: Repo, input: { branch: string }): WorkingTreeFile[] {
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    branchHead(tx, input.branch);
    return new WorkingTree(tx, input.branch).filesUnder('').map((file) => ({ path: file.path, oid: file.oid, mode: file.mode, size: file.size }));
  });
}
