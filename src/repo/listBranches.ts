/** Every branch with its head commit, sorted by name. */
import { oidToHex } from '../git/oid.js';
import { BRANCH_REF_PREFIX } from '../git/refname.js';
import type { Repo } from './repo.js';

export function listBranches(repo: Repo): Array<{ name: string; oid: string }> {
  return repo.store.read((store) =>
    store
      .project(repo.project)
      .listRefs(BRANCH_REF_PREFIX)
      .map((ref) => ({ name: ref.name.slice(BRANCH_REF_PREFIX.length), oid: oidToHex(ref.oid) }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  );
}
