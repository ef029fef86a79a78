/** A commit as the API shows it (../shared/API.md "Git"). */
import { CommitFormatError, decodeCommit, parseHeaders, parseSignature, type Commit } from '../git/commit.js';
import { oidToHex, type Oid } from '../git/oid.js';
import type { ProjectReads } from '../store/asyncTypes.js';
import type { CommitInfo } from '../store/types.js';
import { bodyOf, requireObject } from './repo.js';
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

export async function readCommit(tx: ProjectReads, oid: Oid): Promise<Commit> {
  return decodeCommit(await requireObject(tx, oid, 'commit'));
}

export function commitView(oid: Oid, commit: Commit): CommitView {
  return view(oid, commit.message, commit.author.email, commit.committer.timestamp, commit.parents);
}

/**
 * The views of commits whose index entries the caller holds (a page of a history walk), their
 * bodies read in one batch: parents come from the index, and of each body only the author,
 * committer and message are parsed.
 */
export async function indexedCommitViews(tx: ProjectReads, commits: ReadonlyArray<{ oid: Oid; info: CommitInfo }>): Promise<CommitView[]> {
  if (commits.length === 0) return [];
  const objects = await tx.getObjects(commits.map((commit) => commit.oid));
  return commits.map(({ oid, info }, i) => {
    return indexedView(oid, bodyOf(objects[i], 'commit', oid), info);
  });
}

function indexedView(oid: Oid, body: Buffer, info: CommitInfo): CommitView {
  const { headers, message } = parseHeaders(body.toString('utf8'));
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
