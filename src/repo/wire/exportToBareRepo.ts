/**
 * Writes every object and ref of a project into a bare git repository on disk as loose objects,
 * so the real git CLI can check what the store holds (`git fsck --strict`, `git cat-file`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { encodeLooseObject, looseObjectPath } from '../../git/loose.js';
import { oidToHex, type Oid } from '../../git/oid.js';
import { decodeTree } from '../../git/tree.js';
import type { ProjectReads } from '../../store/asyncTypes.js';
import { inReadTx, type Repo } from '../repo.js';

export function exportToBareRepo(repo: Repo, gitDir: string): Promise<{ objects: number; refs: number }> {
  return inReadTx(repo, async (tx) => {
    const refs = await tx.listRefs('refs/');
    const written = new Set<string>();
    for (const ref of refs) {
      const path = join(gitDir, ref.name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, `${oidToHex(ref.oid)}\n`);
      await writeReachable(tx, ref.oid, gitDir, written);
    }
    return { objects: written.size, refs: refs.length };
  });
}

/** Objects read per call of the walk below, which reads a level of it at a time. */
const OBJECTS_PER_READ = 256;

async function writeReachable(tx: ProjectReads, start: Oid, gitDir: string, written: Set<string>): Promise<void> {
  let pending: Oid[] = [start];
  while (pending.length > 0) {
    const level: Oid[] = [];
    const levelKeys = new Set<string>();
    for (const oid of pending) {
      const hex = oidToHex(oid);
      if (written.has(hex) || levelKeys.has(hex)) continue;
      levelKeys.add(hex);
      level.push(oid);
    }
    pending = [];
    for (let from = 0; from < level.length; from += OBJECTS_PER_READ) {
      const batch = level.slice(from, from + OBJECTS_PER_READ);
      const objects = await tx.getObjects(batch);
      const infos = await tx.getCommitInfos(batch.filter((_, i) => objects[i]?.type === 'commit'));
      let commit = 0;
      batch.forEach((oid, i) => {
        const object = objects[i];
        if (!object) return;
        written.add(oidToHex(oid));
        const path = join(gitDir, looseObjectPath(oid));
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, encodeLooseObject(object.type, object.body));
        if (object.type === 'commit') {
          const info = infos[commit++];
          if (info) pending.push(info.tree, ...info.parents);
        } else if (object.type === 'tree') {
          for (const entry of decodeTree(object.body)) if (entry.mode !== '160000') pending.push(entry.oid);
        }
      });
    }
  }
}
