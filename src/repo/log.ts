/**
 * History of a branch, newest first, in git log's default order: a walk that always takes the
 * pending commit with the latest committer time (ties in the order they were reached). It reads
 * only the commit index, and the stored commit bodies for the page it returns.
 *
 * With a path, the history is `git log -- <path>` (logByPath): git's default history
 * simplification (revision.c try_to_simplify_commit()). A commit is TREESAME to a parent when the
 * path (a file, or a directory and everything below it) is the same in both; a commit TREESAME to
 * a parent is not shown and the walk follows only the first such parent, dropping the others; a
 * commit that differs from every parent is shown and all its parents are followed; a root commit
 * is shown when it has the path.
 *
 * The cursor pins the head the first page started from plus an offset, so paging stays consistent
 * while the branch moves on.
 */
import { TreehouseError } from '../errors.js';
import { isOidHex, oidFromHex, oidToHex, type Oid } from '../git/oid.js';
import { pathProblem } from '../git/path.js';
import type { TreeEntry } from '../git/tree.js';
import type { CommitInfo } from '../store/types.js';
import { indexedCommitViews, type CommitView } from './commitView.js';
import { MaxHeap } from './maxHeap.js';
import { branchHead, commitInfo, inReadTx, type ReadTx, type Repo } from './repo.js';
import { readInSlices } from './slices.js';
import { sameEntry, TreeLookup } from './treeLookup.js';

export interface LogPage {
  commits: CommitView[];
  next_cursor: string | null;
}

export async function log(repo: Repo, input: { branch: string; limit: number; cursor?: string }): Promise<LogPage> {
  return inReadTx(repo, async (tx) => {
    const liveHead = await branchHead(tx, input.branch);
    const { head, offset } = input.cursor ? decodeCursor(input.cursor) : { head: liveHead, offset: 0 };
    if (!(await commitInfo(tx, head))) throw invalidCursor();
    const walked = await walkHistory(tx, head, offset + input.limit + 1);
    const page = walked.slice(offset, offset + input.limit);
    const more = walked.length > offset + input.limit;
    return {
      commits: await indexedCommitViews(tx, page),
      next_cursor: more ? encodeCursor(head, offset + input.limit) : null,
    };
  });
}

/** The first `count` commits reachable from `head`, in log order. */
export async function walkHistory(tx: ReadTx, head: Oid, count: number): Promise<Array<{ oid: Oid; info: CommitInfo }>> {
  const out: Array<{ oid: Oid; info: CommitInfo }> = [];
  const headInfo = await commitInfo(tx, head);
  if (!headInfo) return out;
  const seen = new Set<string>([oidToHex(head)]);
  const queue = new CommitQueue();
  queue.push(head, headInfo);
  while (out.length < count && queue.size > 0) {
    const { oid, info } = queue.pop();
    out.push({ oid, info });
    if (out.length === count) break;
    const parents = info.parents.filter((parent) => {
      const key = oidToHex(parent);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (parents.length === 0) continue;
    // The next pop may be any of them, so a commit's new parents are read (in one batch) before it.
    const infos = await tx.getCommitInfos(parents);
    parents.forEach((parent, i) => {
      // A parent beyond a shallow boundary is not in the store; the walk stops there.
      if (infos[i]) queue.push(parent, infos[i]);
    });
  }
  return out;
}

/** The commits of `git log -- <path>` on a branch, paged like log(). */
export async function logByPath(repo: Repo, input: { branch: string; limit: number; cursor?: string; path: string }): Promise<LogPage> {
  const path = input.path.endsWith('/') ? input.path.slice(0, -1) : input.path;
  const problem = pathProblem(path);
  if (problem) throw new TreehouseError('invalid_request', `Invalid path: ${problem}.`, { issues: [{ path: 'path', message: problem }] });
  const head = await inReadTx(repo, async (tx) => {
    const liveHead = await branchHead(tx, input.branch);
    const pinned = input.cursor ? decodeCursor(input.cursor) : { head: liveHead, offset: 0 };
    if (!(await commitInfo(tx, pinned.head))) throw invalidCursor();
    return pinned;
  });
  const want = head.offset + input.limit + 1;
  const walk = new PathHistoryWalk(path.split('/'));
  const found: Array<{ oid: Oid; info: CommitInfo }> = [];
  let started = false;
  await readInSlices(repo, async (tx) => {
    if (!started) {
      await walk.start(tx, head.head);
      started = true;
    }
    const next = await walk.step(tx);
    if (next) found.push(next);
    return next !== undefined && found.length < want;
  });
  const page = found.slice(head.offset, head.offset + input.limit);
  return inReadTx(repo, async (tx) => ({
    commits: await indexedCommitViews(tx, page),
    next_cursor: found.length > head.offset + input.limit ? encodeCursor(head.head, head.offset + input.limit) : null,
  }));
}

/**
 * The simplified walk of `git log -- <path>`, one popped commit per step: step() returns the next
 * commit to show, null for a commit that is not shown, or undefined when the walk is over.
 */
class PathHistoryWalk {
  private readonly queue = new CommitQueue();
  private readonly seen = new Set<string>();
  private readonly trees = new TreeLookup();

  constructor(private readonly components: readonly string[]) {}

  async start(tx: ReadTx, head: Oid): Promise<void> {
    const info = await commitInfo(tx, head);
    if (!info) return;
    this.seen.add(oidToHex(head));
    this.queue.push(head, info);
  }

  async step(tx: ReadTx): Promise<{ oid: Oid; info: CommitInfo } | null | undefined> {
    if (this.queue.size === 0) return undefined;
    const { oid, info } = this.queue.pop();
    const mine = await this.entryAt(tx, info.tree);
    // A parent beyond a shallow boundary is not in the store; like git, the commit is then a root.
    const infos = info.parents.length > 0 ? await tx.getCommitInfos(info.parents) : [];
    const parents = info.parents.map((parent, i) => ({ oid: parent, info: infos[i] })).filter((p): p is { oid: Oid; info: CommitInfo } => p.info !== undefined);
    if (parents.length === 0) return mine ? { oid, info } : null;
    for (const parent of parents) {
      if (sameEntry(await this.entryAt(tx, parent.info.tree), mine)) {
        // TREESAME: the history of the path continues through this parent alone.
        this.follow(parent.oid, parent.info);
        return null;
      }
    }
    for (const parent of parents) this.follow(parent.oid, parent.info);
    return { oid, info };
  }

  private follow(oid: Oid, info: CommitInfo): void {
    const key = oidToHex(oid);
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.queue.push(oid, info);
  }

  private entryAt(tx: ReadTx, root: Oid): Promise<TreeEntry | null> {
    return this.trees.entryAt(tx, root, this.components);
  }
}

interface Queued {
  oid: Oid;
  info: CommitInfo;
  order: number;
}

/** Commits ordered by commit time (latest first), then by arrival. */
class CommitQueue {
  private readonly heap = new MaxHeap<Queued>((x, y) => (x.info.commitTime !== y.info.commitTime ? x.info.commitTime - y.info.commitTime : y.order - x.order));
  private arrivals = 0;

  get size(): number {
    return this.heap.size;
  }

  push(oid: Oid, info: CommitInfo): void {
    this.heap.push({ oid, info, order: this.arrivals++ });
  }

  /** The next commit; the queue must not be empty. */
  pop(): Queued {
    return this.heap.pop()!;
  }
}

function encodeCursor(head: Oid, offset: number): string {
  return Buffer.from(`${oidToHex(head)}:${offset}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { head: Oid; offset: number } {
  const [hex, offsetText] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  const offset = Number(offsetText);
  if (!hex || !isOidHex(hex) || !Number.isSafeInteger(offset) || offset < 0) throw invalidCursor();
  return { head: oidFromHex(hex), offset };
}

function invalidCursor(): TreehouseError {
  return new TreehouseError('invalid_request', 'The cursor is not valid.', { issues: [{ path: 'cursor', message: 'not a cursor this endpoint issued' }] });
}
