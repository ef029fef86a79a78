/** The top-level names of a branch head's tree and the contents of chosen top-level files. */
import type { Oid } from '../git/oid.js';
import { decodeTree, MODE_TREE } from '../git/tree.js';
import { branchHead, commitTree, inReadTx, type Repo } from './repo.js';

/** `commit`: the head as the caller knows it (a commit it just made), read instead of the branch's ref. */
export async function headSnapshot(repo: Repo, input: { branch: string; read: string[]; commit?: Oid }): Promise<{ names: string[]; contents: Map<string, Buffer> }> {
  return inReadTx(repo, async (tx) => {
    const tree = await tx.getObject(await commitTree(tx, input.commit ?? (await branchHead(tx, input.branch))));
    const entries = tree ? decodeTree(tree.body) : [];
    const chosen = entries.filter((entry) => entry.mode !== MODE_TREE && input.read.includes(entry.name));
    const objects = chosen.length > 0 ? await tx.getObjects(chosen.map((entry) => entry.oid)) : [];
    const contents = new Map<string, Buffer>();
    chosen.forEach((entry, i) => {
      const body = objects[i]?.body;
      if (body) contents.set(entry.name, body);
    });
    return { names: entries.map((entry) => entry.name), contents };
  });
}
