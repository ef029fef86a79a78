/**
 * Reads one path of a branch's head commit: the committed tree, never the working tree (the public
 * site serves what was committed). Symlinks and submodules are reported as missing: they have no
 * content of their own to serve.
 */
import { oidToHex, type Oid } from '../git/oid.js';
import { pathProblem } from '../git/path.js';
import { decodeTree, MODE_EXECUTABLE, MODE_FILE, MODE_TREE } from '../git/tree.js';
import { bodyOf, branchHead, commitTree, inReadTx, objectSize, type Repo } from './repo.js';
import { MissingObjectError } from '../errors.js';

export type CommitPathLookup =
  | {
      kind: 'file';
      /** Blob id, 40 hex digits. */
      oid: string;
      size: number;
      /** Absent when the caller's wantContent said no (for example a conditional request that matched). */
      body?: Buffer;
    }
  | { kind: 'directory' }
  | { kind: 'missing' };

export async function readCommitFile(
  repo: Repo,
  input: { branch: string; path: string; wantContent?: (oid: string) => boolean },
): Promise<CommitPathLookup> {
  if (input.path !== '' && pathProblem(input.path) !== null) return { kind: 'missing' };
  return inReadTx(repo, async (tx): Promise<CommitPathLookup> => {
    let tree: Oid = await commitTree(tx, await branchHead(tx, input.branch));
    const components = input.path === '' ? [] : input.path.split('/');
    for (let i = 0; i < components.length; i++) {
      const entry = decodeTree(bodyOf(await tx.getObject(tree), 'tree', tree)).find((candidate) => candidate.name === components[i]);
      if (!entry) return { kind: 'missing' };
      const last = i === components.length - 1;
      if (entry.mode === MODE_TREE) {
        tree = entry.oid;
        continue;
      }
      if (!last || (entry.mode !== MODE_FILE && entry.mode !== MODE_EXECUTABLE)) return { kind: 'missing' };
      const oid = oidToHex(entry.oid);
      if (input.wantContent && !input.wantContent(oid)) return { kind: 'file', oid, size: (await objectSize(tx, entry.oid)) ?? 0 };
      const blob = await tx.getObject(entry.oid);
      if (!blob) throw new MissingObjectError('blob', oid);
      return { kind: 'file', oid, size: blob.body.length, body: blob.body };
    }
    return { kind: 'directory' };
  });
}
