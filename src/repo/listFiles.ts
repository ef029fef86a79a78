/** Lists a branch's working tree, optionally with contents and limited to paths with a prefix. */
import { oidFromHex } from '../git/oid.js';
import { dirname } from '../git/path.js';
import { encodePath, isUtf8Path } from '../git/pathBytes.js';
import { MODE_GITLINK, MODE_SYMLINK } from '../git/tree.js';
import { encodeContent } from './fileContent.js';
import { branchHead, inReadTx, type Repo } from './repo.js';
import { WorkingTree } from './worktree/workingTree.js';

export interface FileListing {
  path: string;
  size: number;
  locked: boolean;
  oid: string;
  /** Absent for regular files. A submodule has no content here, only the commit it pins. */
  type?: 'symlink' | 'submodule';
  commit?: string;
  content?: string;
  encoding?: 'base64';
}

export async function listFiles(repo: Repo, input: { branch: string; prefix?: string; content?: boolean }): Promise<FileListing[]> {
  return inReadTx(repo, async (tx) => {
    await branchHead(tx, input.branch);
    const tree = await WorkingTree.open(tx, input.branch);
    const prefix = input.prefix ?? '';
    // Start from the deepest directory the prefix names, then filter by the plain string prefix.
    const start = prefix === '' ? '' : prefix.endsWith('/') ? prefix.slice(0, -1) : dirname(prefix);
    await tree.load([start]);
    const found = tree.lookup(start);
    const files = found.kind === 'directory' || found.kind === 'file' ? await tree.filesUnder(start) : [];
    // A prefix that is valid UTF-8 is a prefix of the text exactly when it is one of the bytes; a
    // prefix given as other bytes (prefix_base64) may end inside a character, so bytes decide.
    const prefixBytes = isUtf8Path(prefix) ? null : encodePath(prefix);
    const matches = (path: string) => (prefixBytes ? encodePath(path).subarray(0, prefixBytes.length).equals(prefixBytes) : path.startsWith(prefix));
    const listed = files.filter((file) => matches(file.path));
    // The contents of every listed file with content, in one batched read.
    const withContent = input.content ? listed.filter((file) => file.mode !== MODE_GITLINK) : [];
    const objects = withContent.length > 0 ? await tx.getObjects(withContent.map((file) => oidFromHex(file.oid))) : [];
    const bodies = new Map(withContent.map((file, i) => [file.path, objects[i]?.body ?? Buffer.alloc(0)]));
    return listed.map((file) => {
      const listing: FileListing = { path: file.path, size: file.size, locked: file.locked, oid: file.oid };
      if (file.mode === MODE_GITLINK) return { ...listing, type: 'submodule', commit: file.oid };
      if (file.mode === MODE_SYMLINK) listing.type = 'symlink';
      if (input.content) Object.assign(listing, encodeContent(bodies.get(file.path)!));
      return listing;
    });
  });
}
