/**
 * The contents of blobs named by id, in one read transaction. Blobs are immutable, so a caller may
 * list a tree in one transaction and read the blobs it needs in a later one.
 */
import { oidFromHex } from '../git/oid.js';
import { bodyOf, inReadTx, type Repo } from './repo.js';

export async function readBlobs(repo: Repo, oids: Iterable<string>): Promise<Map<string, Buffer>> {
  const wanted = [...new Set(oids)];
  const objects = await inReadTx(repo, (tx) => tx.getObjects(wanted.map(oidFromHex)));
  const out = new Map<string, Buffer>();
  wanted.forEach((oid, i) => {
    out.set(oid, bodyOf(objects[i], 'blob', oid));
  });
  return out;
}
