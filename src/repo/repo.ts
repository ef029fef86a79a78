/**
 * What every operation on one project needs: the store, the project's number in it, and the limits.
 * Also the lookups most verbs share (a branch's head, a commit named by id or prefix).
 */
import { TreehouseError } from '../errors.js';
import { isOidHex, isOidHexPrefix, oidFromHex, oidToHex, type Oid } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import type { ProjectReadTx, ProjectWriteTx, Store } from '../store/types.js';

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

/**
 * Runs a verb's transaction-level core (`<verb>InTx`) in a write transaction of its own: the thin
 * wrapper each write verb is. A caller that must commit something with the change (an idempotency
 * record, an event) opens the transaction itself and calls the core inside it.
 */
export function inWriteTx<T>(repo: Repo, core: (tx: ProjectWriteTx) => T): Promise<T> {
  return repo.store.write((store) => core(store.project(repo.project)));
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

/** A ref naming a branch's working tree, uncommitted changes included (../shared/API.md "Workspace additions"). */
export const WORKTREE_REF_PREFIX = 'worktree:';

/**
 * What a ref names: a commit (branch name, full id or unique prefix), or a branch's working tree.
 * A working tree's `commit` is its branch head, the commit its changes sit on.
 */
export type ResolvedRef =
  | { kind: 'commit'; commit: Oid; tree: Oid }
  | { kind: 'worktree'; branch: string; commit: Oid; tree: Oid };

/**
 * Resolves a ref as the contract defines it: `worktree:<branch>`, else a full commit id, a branch
 * name, or a commit id prefix of at least seven hex digits (in that order, as createBranch's `from`
 * looks up a branch before a prefix). Unknown or ambiguous: 404.
 */
export function resolveRef(tx: ProjectReadTx, text: string): ResolvedRef {
  if (text.startsWith(WORKTREE_REF_PREFIX)) {
    const branch = text.slice(WORKTREE_REF_PREFIX.length);
    const commit = branchHead(tx, branch);
    // Every branch has its working tree record; the head's tree stands in should one be missing.
    const tree = tx.getWorkingTree(branch)?.tree ?? commitTree(tx, commit);
    return { kind: 'worktree', branch, commit, tree };
  }
  const lower = text.toLowerCase();
  if (isOidHex(lower) && tx.getCommitInfo(oidFromHex(lower))) {
    const commit = oidFromHex(lower);
    return { kind: 'commit', commit, tree: commitTree(tx, commit) };
  }
  const head = text.length > 0 ? tx.getRef(branchRef(text)) : undefined;
  if (head) return { kind: 'commit', commit: head, tree: commitTree(tx, head) };
  if (lower.length < OID_PREFIX_HEX_MIN || !isOidHexPrefix(lower)) {
    throw new TreehouseError('not_found', `Ref ${JSON.stringify(text)} names no branch, commit or working tree.`);
  }
  const commit = resolveCommit(tx, text);
  return { kind: 'commit', commit, tree: commitTree(tx, commit) };
}
