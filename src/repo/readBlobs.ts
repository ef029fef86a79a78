/**
 * The contents of blobs named by id, in one read transaction. Blobs are immutable, so a caller may
 * list a tree in one transaction and read the blobs it needs in a later one.
 */
import { oidFromHex } from '../git/oid.js';
import { inReadTx, type Repo } from './repo.js';
import { MissingObjectError } from '../errors.js';

export async function readBlobs(repo: Repo, oids: Iterable<string>): Promise<Map<string, Buffer>> {
  const wanted = [...new Set(oids)];
  const objects = await inReadTx(repo, (tx) => tx.getObjects(wanted.map(oidFromHex)));
  const out = new Map<string, Buffer>();
  wanted.forEach((oid, i) => {
    const object = objects[i];
    if (!object || object.type !== 'blob') throw new MissingObjectError('blob', oid);
    out.set(oid, object.body);
  });
  return out;
}
