/** One commit with the files of its tree, optionally with their contents. */
import { oidToHex, type Oid } from '../git/oid.js';
import { joinPath } from '../git/path.js';
import { decodeTree, MODE_GITLINK, MODE_SYMLINK, MODE_TREE, type TreeEntry } from '../git/tree.js';
import type { ProjectReadTx } from '../store/types.js';
import { commitView, readCommit, type CommitView } from './commitView.js';
import { encodeContent } from './fileContent.js';
import { resolveCommit, type Repo } from './repo.js';

export interface CommitFile {
  path: string;
  size: number;
  /** Absent for regular files; a submodule carries the commit it pins and no content. */
  type?: 'symlink' | 'submodule';
  commit?: string;
  content?: string;
  encoding?: 'base64';
}

export interface CommitDetail extends CommitView {
  tree_oid: string;
  files: CommitFile[];
}

export function showCommit(repo: Repo, input: { oid: string; content: boolean }): CommitDetail {
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    const oid = resolveCommit(tx, input.oid);
    const commit = readCommit(tx, oid);
    const files: CommitFile[] = [];
    collectFiles(tx, '', commit.tree, input.content, files);
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { ...commitView(oid, commit), tree_oid: oidToHex(commit.tree), files };
  });
}

/** Every file of a tree, with an explicit stack of directories (a tree may be thousands deep). */
function collectFiles(tx: ProjectReadTx, root: string, rootTree: Oid, withContent: boolean, out: CommitFile[]): void {
  const pending: Array<{ dir: string; tree: Oid }> = [{ dir: root, tree: rootTree }];
  while (pending.length > 0) {
    const { dir, tree } = pending.pop()!;
    const object = tx.getObject(tree);
    if (!object) throw new Error(`tree ${oidToHex(tree)} is missing`);
    for (const entry of decodeTree(object.body)) collectEntry(tx, joinPath(dir, entry.name), entry, withContent, out, pending);
  }
}

function collectEntry(tx: ProjectReadTx, path: string, entry: TreeEntry, withContent: boolean, out: CommitFile[], pending: Array<{ dir: string; tree: Oid }>): void {
  if (entry.mode === MODE_TREE) {
    pending.push({ dir: path, tree: entry.oid });
  } else if (entry.mode === MODE_GITLINK) {
    out.push({ path, size: 0, type: 'submodule', commit: oidToHex(entry.oid) });
  } else {
    const type = entry.mode === MODE_SYMLINK ? { type: 'symlink' as const } : {};
    if (withContent) {
      const body = tx.getObject(entry.oid)?.body ?? Buffer.alloc(0);
      out.push({ path, size: body.length, ...type, ...encodeContent(body) });
    } else {
      out.push({ path, size: tx.objectSize(entry.oid) ?? 0, ...type });
    }
  }
}
