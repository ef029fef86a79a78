/**
 * What every operation on one project needs: the store, the project's number in it, and the limits.
 * Also the lookups most verbs share (a branch's head, a commit named by id or prefix).
 */
import { TreehouseError, MissingObjectError } from '../errors.js';
import { isOidHex, isOidHexPrefix, oidFromHex, oidToHex, type Oid } from '../git/oid.js';
import { branchRef } from '../git/refname.js';
import type { AsyncStore, PackFormReads, PackFormWrites, ProjectReads, ProjectWrites } from '../store/asyncTypes.js';
import type { CommitInfo } from '../store/types.js';
import type { SearchThreads } from './search/threads.js';
import type { ClonePacks } from './wire/clonePacks.js';

export interface RepoLimits {
  /** One file's content, decoded. */
  fileBytesMax: number;
  /** Entries (writes plus deletes) in one batch. */
  batchFilesMax: number;
  /** Snippet edits in one batch entry. */
  editsPerFileMax: number;
  /** Bytes of text one batch's snippet edits may scan in all (each edit scans the file as the edits before it left it). */
  editScanBytesMax: number;
}

export const DEFAULT_REPO_LIMITS: RepoLimits = {
  fileBytesMax: 25 * 1024 * 1024,
  batchFilesMax: 10_000,
  editsPerFileMax: 1000,
  editScanBytesMax: 256 * 1024 * 1024,
};

export interface Repo {
  store: AsyncStore;
  project: number;
  limits: RepoLimits;
  /** Threads a search may read and scan blobs on (src/repo/search/threads.ts); without them it runs on this one. */
  searchThreads?: SearchThreads;
  /** Packs of clones kept for the next clone of the same tips and depth (src/repo/wire/clonePacks.ts); without it every clone is planned. */
  clonePacks?: ClonePacks;
}

/** A read of one project, pack-ready forms included when the store offers them. */
export type ReadTx = ProjectReads & Partial<PackFormReads>;
/** A write transaction of one project, as verb cores take it. */
export type WriteTx = ProjectWrites & Partial<PackFormWrites>;

/**
 * Runs a verb's transaction-level core (`<verb>InTx`) in a write transaction of its own: the thin
 * wrapper each write verb is. A caller that must commit something with the change (an idempotency
 * record, an event) opens the transaction itself and calls the core inside it.
 */
export function inWriteTx<T>(repo: Repo, core: (tx: WriteTx) => Promise<T>): Promise<T> {
  return repo.store.write((store) => core(store.project(repo.project)));
}

/** Runs `read` in a read of the project. */
export function inReadTx<T>(repo: Repo, read: (tx: ReadTx) => Promise<T>): Promise<T> {
  return repo.store.read((store) => read(store.project(repo.project)));
}

/** One commit's index entry (the store's reads are batched). */
export async function commitInfo(tx: ProjectReads, oid: Oid): Promise<CommitInfo | undefined> {
  return (await tx.getCommitInfos([oid]))[0];
}

export async function hasObject(tx: ProjectReads, oid: Oid): Promise<boolean> {
  return (await tx.hasObjects([oid]))[0];
}

export async function objectSize(tx: ProjectReads, oid: Oid): Promise<number | undefined> {
  return (await tx.objectSizes([oid]))[0];
}

/** A stored object of the given type, or an error naming it (a broken invariant: `internal`). */
export async function requireObject(tx: ProjectReads, oid: Oid, type: 'tree' | 'blob' | 'commit'): Promise<Buffer> {
  return bodyOf(await tx.getObject(oid), type, oid);
}

/**
 * The body of `object`, read for `oid`, when it is the `type` something named it as; else the error
 * naming it (`context`: where it was named).
 */
export function bodyOf(object: { type: string; body: Buffer } | undefined, type: 'tree' | 'blob' | 'commit', oid: Oid | string, context?: string): Buffer {
  if (!object || object.type !== type) throw new MissingObjectError(type, oid, context);
  return object.body;
}

export const MAIN_BRANCH = 'main';
/** Commit ids given by clients may be abbreviated to this many hex digits, and no fewer. */
export const OID_PREFIX_HEX_MIN = 7;

export async function branchHead(tx: ProjectReads, branch: string): Promise<Oid> {
  const head = await tx.getRef(branchRef(branch));
  if (!head) throw new TreehouseError('not_found', `Branch ${JSON.stringify(branch)} not found.`);
  return head;
}

/** A commit named by its full id or a unique prefix of at least seven hex digits. */
export async function resolveCommit(tx: ProjectReads, text: string): Promise<Oid> {
  const hex = text.toLowerCase();
  if (hex.length < OID_PREFIX_HEX_MIN || !isOidHexPrefix(hex)) {
    throw new TreehouseError('not_found', `Commit ${JSON.stringify(text)} not found.`);
  }
  // Blobs and trees may share the prefix; only commits count, so look past a few of them.
  const candidates = await tx.findObjectsByPrefix(hex, 64);
  const infos = await tx.getCommitInfos(candidates);
  const matches = candidates.filter((_, i) => infos[i] !== undefined);
  if (matches.length !== 1) {
    const why = matches.length === 0 ? 'not found' : 'is ambiguous';
    throw new TreehouseError('not_found', `Commit ${JSON.stringify(text)} ${why}.`);
  }
  return matches[0];
}

/** Whether `expected` (a full commit id or a unique prefix) names `head`. */
export async function headMatches(tx: ProjectReads, expected: string, head: Oid): Promise<boolean> {
  try {
    return (await resolveCommit(tx, expected)).equals(head);
  } catch {
    return false;
  }
}

export async function commitTree(tx: ProjectReads, commit: Oid): Promise<Oid> {
  const info = await commitInfo(tx, commit);
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
export async function resolveRef(tx: ProjectReads, text: string): Promise<ResolvedRef> {
  if (text.startsWith(WORKTREE_REF_PREFIX)) {
    const branch = text.slice(WORKTREE_REF_PREFIX.length);
    const commit = await branchHead(tx, branch);
    // Every branch has its working tree record; the head's tree stands in should one be missing.
    const tree = (await tx.getWorkingTree(branch))?.tree ?? (await commitTree(tx, commit));
    return { kind: 'worktree', branch, commit, tree };
  }
  const lower = text.toLowerCase();
  if (isOidHex(lower)) {
    const info = await commitInfo(tx, oidFromHex(lower));
    if (info) return { kind: 'commit', commit: oidFromHex(lower), tree: info.tree };
  }
  const head = text.length > 0 ? await tx.getRef(branchRef(text)) : undefined;
  if (head) return { kind: 'commit', commit: head, tree: await commitTree(tx, head) };
  if (lower.length < OID_PREFIX_HEX_MIN || !isOidHexPrefix(lower)) {
    throw new TreehouseError('not_found', `Ref ${JSON.stringify(text)} names no branch, commit or working tree.`);
  }
  const commit = await resolveCommit(tx, text);
  return { kind: 'commit', commit, tree: await commitTree(tx, commit) };
}
