/**
 * What every operation on one project needs: the store, the project's number in it, and the limits.
 * Also the lookups most verbs share (a branch's head, a commit named by id or prefix).
 */
import { TreehouseError } from '../errors.js';
import { isOidHexPrefix, oidToHex, type Oid } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import type { ProjectReadTx, Store } from '../store/types.js';

export interface RepoLimits {
  /** One file's content, decoded. */
  fileBytesMax: number;
  /** Entries (writes plus deletes) in one batch. */
  batchFilesMax: number;
}

export const DEFAULT_REPO_LIMITS: RepoLimits = {
  fileBytesMax: 25 * 1024 * 1024,
  batchFilesMax: 10_000,
};

export interface Repo {
  store: Store;
  project: number;
  limits: RepoLimits;
}

export const MAIN_BRANCH = 'main';
/** Commit ids given by clients may be abbreviated to this many hex digits, and no fewer. */
export const OID_PREFIX_HEX_MIN = 7;

export function branchHead(tx: ProjectReadTx, branch: string): Oid {
  const head = tx.getRef(branchRef(branch));
  if (!head) throw new TreehouseError('not_found', `Branch ${JSON.stringify(branch)} not found.`);
  return head;
}

/** A commit named by its full id or a unique prefix of at least seven hex digits. */
export function resolveCommit(tx: ProjectReadTx, text: string): Oid {
  const hex = text.toLowerCase();
  if (hex.length < OID_PREFIX_HEX_MIN || !isOidHexPrefix(hex)) {
    throw new TreehouseError('not_found', `Commit ${JSON.stringify(text)} not found.`);
  }
  // Blobs and trees may share the prefix; only commits count, so look past a few of them.
  const matches = tx.findObjectsByPrefix(hex, 64).filter((oid) => tx.getCommitInfo(oid) !== undefined);
  if (matches.length !== 1) {
    const why = matches.length === 0 ? 'not found' : 'is ambiguous';
    throw new TreehouseError('not_found', `Commit ${JSON.stringify(text)} ${why}.`);
  }
  return matches[0];
}

export function commitTree(tx: ProjectReadTx, commit: Oid): Oid {
  const info = tx.getCommitInfo(commit);
  if (!info) throw new TreehouseError('not_found', `Commit ${oidToHex(commit)} not found.`);
  return info.tree;
}
