/** A commit as the API shows it (../shared/API.md "Git"). */
import { CommitFormatError, decodeCommit, parseHeaders, parseSignature, type Commit } from '../git/commit.js';
import { oidToHex, type Oid } from '../git/oid.js';
import type { CommitInfo, ProjectReadTx } from '../store/types.js';
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
  return view(oid, commit.message, commit.author.email, commit.committer.timestamp, commit.parents);
}

/**
 * The view of a commit whose index entry the caller holds (a history walk): parents come from the
 * index, and of the body only the author, committer and message are parsed.
 */
export function indexedCommitView(tx: ProjectReadTx, oid: Oid, info: CommitInfo): CommitView {
  const object = tx.getObject(oid);
  if (!object || object.type !== 'commit') throw new Error(`commit ${oidToHex(oid)} is missing`);
  const { headers, message } = parseHeaders(object.body.toString('utf8'));
  let author: string | undefined;
  let committer: string | undefined;
  for (const [key, value] of headers) {
    if (key === 'author') author ??= value;
    else if (key === 'committer') {
      committer = value;
      break;
    }
  }
  if (author === undefined || committer === undefined) throw new CommitFormatError(`commit ${oidToHex(oid)} lacks an author or committer`);
  return view(oid, message, parseSignature(author).email, parseSignature(committer).timestamp, info.parents);
}

function view(oid: Oid, message: string, authorEmail: string, committerTime: number, parents: Oid[]): CommitView {
  const suffix = `@${AUTHOR_EMAIL_DOMAIN}`;
  return {
    oid: oidToHex(oid),
    message: messageForClient(message),
    author_id: authorEmail.endsWith(suffix) ? authorEmail.slice(0, -suffix.length) : null,
    committed_at: new Date(committerTime * 1000).toISOString(),
    parent_oids: parents.map(oidToHex),
  };
}
