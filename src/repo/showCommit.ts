/** One commit with the files of its tree, optionally with their contents. */
import { oidToHex, type Oid } from '../git/oid.js';
import { joinPath } from '../git/path.js';
import { decodeTree, MODE_GITLINK, MODE_SYMLINK, MODE_TREE } from '../git/tree.js';
import { commitView, readCommit, type CommitView } from './commitView.js';
import { encodeContent } from './fileContent.js';
import { inReadTx, resolveCommit, type ReadTx, type Repo } from './repo.js';
import { MissingObjectError } from '../errors.js';

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

export async function showCommit(repo: Repo, input: { oid: string; content: boolean }): Promise<CommitDetail> {
  return inReadTx(repo, async (tx) => {
    const oid = await resolveCommit(tx, input.oid);
    const commit = await readCommit(tx, oid);
    const files = await collectFiles(tx, '', commit.tree, input.content);
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { ...commitView(oid, commit), tree_oid: oidToHex(commit.tree), files };
  });
}

/**
 * Every file of a tree, a level of directories at a time (one batched read per level, no recursion:
 * a tree may be thousands deep), then the sizes or contents of its blobs in one batch.
 */
async function collectFiles(tx: ReadTx, root: string, rootTree: Oid, withContent: boolean): Promise<CommitFile[]> {
  const out: CommitFile[] = [];
  const blobs: Array<{ path: string; oid: Oid; symlink: boolean }> = [];
  let level: Array<{ dir: string; tree: Oid }> = [{ dir: root, tree: rootTree }];
  while (level.length > 0) {
    const objects = await tx.getObjects(level.map((item) => item.tree));
    const next: Array<{ dir: string; tree: Oid }> = [];
    level.forEach(({ dir, tree }, i) => {
      const object = objects[i];
      if (!object) throw new MissingObjectError('tree', tree);
      for (const entry of decodeTree(object.body)) {
        const path = joinPath(dir, entry.name);
        if (entry.mode === MODE_TREE) next.push({ dir: path, tree: entry.oid });
        else if (entry.mode === MODE_GITLINK) out.push({ path, size: 0, type: 'submodule', commit: oidToHex(entry.oid) });
        else blobs.push({ path, oid: entry.oid, symlink: entry.mode === MODE_SYMLINK });
      }
    });
    level = next;
  }
  if (blobs.length === 0) return out;
  const oids = blobs.map((blob) => blob.oid);
  if (withContent) {
    const objects = await tx.getObjects(oids);
    blobs.forEach((blob, i) => {
      const body = objects[i]?.body ?? Buffer.alloc(0);
      out.push({ path: blob.path, size: body.length, ...typeOf(blob), ...encodeContent(body) });
    });
  } else {
    const sizes = await tx.objectSizes(oids);
    blobs.forEach((blob, i) => out.push({ path: blob.path, size: sizes[i] ?? 0, ...typeOf(blob) }));
  }
  return out;
}

function typeOf(blob: { symlink: boolean }): { type?: 'symlink' } {
  return blob.symlink ? { type: 'symlink' } : {};
}
