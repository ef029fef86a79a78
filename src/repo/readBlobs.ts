/**
 * The contents of blobs named by id, in one read transaction. Blobs are immutable, so a caller may
 * list a tree in one transaction and read the blobs it needs in a later one.
 */
import { oidFromHex } from '../git/oid.js';
import type { Repo } from './repo.js';

export function readBlobs(repo: Repo, oids: Iterable<string>): Map<string, Buffer> {
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    const out = new Map<string, Buffer>();
    for (const oid of oids) {
      if (out.has(oid)) continue;
      const object = tx.getObject(oidFromHex(oid));
      if (!object || object.type !== 'blob') throw new Error(`blob ${oid} is missing`);
      out.set(oid, object.body);
    }
    return out;
  });
}
