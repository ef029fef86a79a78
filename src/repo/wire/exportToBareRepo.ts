/**
 * Writes every object and ref of a project into a bare git repository on disk as loose objects,
 * so the real git CLI can check what the store holds (`git fsck --strict`, `git cat-file`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { encodeLooseObject, looseObjectPath } from '../../git/loose.js';
import { oidToHex, type Oid } from '../../git/oid.js';
import { decodeTree } from '../../git/tree.js';
import type { ProjectReadTx } from '../../store/types.js';
import type { Repo } from '../repo.js';

export function exportToBareRepo(repo: Repo, gitDir: string): { objects: number; refs: number } {
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    const refs = tx.listRefs('refs/');
    const written = new Set<string>();
    for (const ref of refs) {
      const path = join(gitDir, ref.name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, `${oidToHex(ref.oid)}\n`);
      writeReachable(tx, ref.oid, gitDir, written);
    }
    return { objects: written.size, refs: refs.length };
  });
}

function writeReachable(tx: ProjectReadTx, start: Oid, gitDir: string, written: Set<string>): void {
  const pending: Oid[] = [start];
  while (pending.length > 0) {
    const oid = pending.pop()!;
    const hex = oidToHex(oid);
    if (written.has(hex)) continue;
    const object = tx.getObject(oid);
    if (!object) continue;
    written.add(hex);
    const path = join(gitDir, looseObjectPath(oid));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, encodeLooseObject(object.type, object.body));
    if (object.type === 'commit') {
      const info = tx.getCommitInfo(oid);
      if (info) pending.push(info.tree, ...info.parents);
    } else if (object.type === 'tree') {
      for (const entry of decodeTree(object.body)) if (entry.mode !== '160000') pending.push(entry.oid);
    }
  }
}

