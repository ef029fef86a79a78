/** A commit as the API shows it (../shared/API.md "Git"). */
import { decodeCommit, type Commit } from '../git/commit.js';
import { oidToHex, type Oid } from '../git/oid.js';
import type { ProjectReadTx } from '../store/types.js';
import { messageForClient } from './signature.js';

/** Commits made through the API carry the key id in the author's email: KEY_ID@users.treehouse.invalid. */
export const AUTHOR_EMAIL_DOMAIN = 'users.treehouse.invalid';

export interface CommitView {
  oid: string;
  message: string;
  author_id: string | null;
  committed_at: string;
  parent_oids: string[];
}

export function readCommit(tx: ProjectReadTx, oid: Oid): Commit {
  const object = tx.getObject(oid);
  if (!object || object.type !== 'commit') throw new Error(`commit ${oidToHex(oid)} is missing`);
  return decodeCommit(object.body);
}

export function commitView(oid: Oid, commit: Commit): CommitView {
  const suffix = `@${AUTHOR_EMAIL_DOMAIN}`;
  const email = commit.author.email;
  return {
    oid: oidToHex(oid),
    message: messageForClient(commit.message),
    author_id: email.endsWith(suffix) ? email.slice(0, -suffix.length) : null,
    committed_at: new Date(commit.committer.timestamp * 1000).toISOString(),
    parent_oids: commit.parents.map(oidToHex),
  };
}
