/** Every branch with its head commit, sorted by name. */
import { oidToHex } from '../git/oid.js';
import { BRANCH_REF_PREFIX } from '../git/refname.js';
import { inReadTx, type Repo } from './repo.js';

export async function listBranches(repo: Repo): Promise<Array<{ name: string; oid: string }>> {
  const refs = await inReadTx(repo, (tx) => tx.listRefs(BRANCH_REF_PREFIX));
  return refs
    .map((ref) => ({ name: ref.name.slice(BRANCH_REF_PREFIX.length), oid: oidToHex(ref.oid) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
