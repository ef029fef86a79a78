/**
 * Writes a commit object on top of a branch head and moves the branch by compare-and-swap, inside
 * the caller's transaction. Shared by commit, restore and merge.
 */
import { encodeCommit } from '../git/commit.js';
import { assertFsckClean } from '../git/fsck.js';
import type { Oid } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import type { ProjectWrites } from '../store/asyncTypes.js';
import { messageForGit, signatureNow, type Person } from './signature.js';

export interface CommitAuthors {
  author: Person;
  committer: Person;
}

export async function writeCommit(
  tx: ProjectWrites,
  input: { branch: string; tree: Oid; parents: Oid[]; message: string; people: CommitAuthors },
): Promise<Oid> {
  const now = Date.now();
  const body = encodeCommit({
    tree: input.tree,
    parents: input.parents,
    author: signatureNow(input.people.author, now),
    committer: signatureNow(input.people.committer, now),
    extraHeaders: [],
    message: messageForGit(input.message),
  });
  // Every object the service writes must pass git fsck --strict (../shared/API.md "Git"); the API
  // checks what it is given, and this makes a slip an error instead of a commit clones would refuse.
  assertFsckClean('commit', body);
  const oid = tx.putObject('commit', body);
  await tx.casRef(branchRef(input.branch), input.parents[0] ?? null, oid);
  await tx.bumpVersion();
  return oid;
}
