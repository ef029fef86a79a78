/** The top-level names of a branch head's tree and the contents of chosen top-level files. */
import { decodeTree, MODE_TREE } from '../git/tree.js';
import { branchHead, commitTree, type Repo } from './repo.js';

export function headSnapshot(repo: Repo, input: { branch: string; read: string[] }): { names: string[]; contents: Map<string, Buffer> } {
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    const tree = tx.getObject(commitTree(tx, branchHead(tx, input.branch)));
    const entries = tree ? decodeTree(tree.body) : [];
    const contents = new Map<string, Buffer>();
    for (const entry of entries) {
      if (entry.mode !== MODE_TREE && input.read.includes(entry.name)) {
        const body = tx.getObject(entry.oid)?.body;
        if (body) contents.set(entry.name, body);
      }
    }
    return { names: entries.map((entry) => entry.name), contents };
  });
}
