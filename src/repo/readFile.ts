/** Reads one file of a branch's working tree. */
import { TreehouseError, MissingObjectError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { MODE_GITLINK } from '../git/tree.js';
import { encodeContent } from './fileContent.js';
import { requireValidPath } from './paths.js';
import { branchHead, inReadTx, type Repo } from './repo.js';
import { WorkingTree } from './worktree/workingTree.js';

export interface FileRead {
  path: string;
  content: string;
  encoding?: 'base64';
  locked: boolean;
  size: number;
  oid: string;
}

export async function readFile(repo: Repo, input: { branch: string; path: string }): Promise<FileRead> {
  requireValidPath(input.path, 'path');
  return inReadTx(repo, async (tx) => {
    await branchHead(tx, input.branch);
    const tree = await WorkingTree.open(tx, input.branch);
    await tree.load([input.path]);
    const found = tree.lookup(input.path);
    if (found.kind !== 'file' || !found.entry.oid) throw new TreehouseError('not_found', `${input.path} not found.`);
    if (found.entry.mode === MODE_GITLINK) {
      // A gitlink names a commit of another repository: there is no blob to read here.
      const commit = oidToHex(found.entry.oid);
      throw new TreehouseError('not_found', `${input.path} is a submodule (commit ${commit}); its content is not in this repository.`, {
        path: input.path,
        type: 'submodule',
        commit,
      });
    }
    const body = (await tx.getObject(found.entry.oid))?.body;
    if (!body) throw new MissingObjectError('blob', found.entry.oid);
    return { path: input.path, ...encodeContent(body), locked: found.entry.locked, size: body.length, oid: oidToHex(found.entry.oid) };
  });
}
