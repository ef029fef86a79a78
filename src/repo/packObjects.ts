/**
 * What upload-pack sends: the objects reachable from the client's wants and not from what it has,
 * cut at a shallow boundary when it asked for a depth. Only commits reachable from the project's
 * own refs may be wanted, so nothing else in the store is ever served.
 *
 * The walk reads the commit index for history and decodes trees only for the commits it sends;
 * a subtree whose id the client already has is skipped whole.
 */
import { oidToHex, type Oid } from '../git/oid.js';
import { BRANCH_REF_PREFIX } from '../git/refname.js';
import { decodeTree, MODE_GITLINK, MODE_TREE, type TreeEntry } from '../git/tree.js';
import type { ObjectType } from '../git/oid.js';
import type { ProjectReadTx } from '../store/types.js';

export interface PackPlan {
  /** Objects to send, commits first, then trees and blobs in walk order. */
  objects: Array<{ oid: Oid; type: ObjectType }>;
  /** Commits sent without their parents (depth reached): "shallow" lines for the client. */
  shallow: Oid[];
  /** Client shallow commits that now have their parents sent: "unshallow" lines. */
  unshallow: Oid[];
}

export class WantError extends Error {
  override name = 'WantError';
}

/** Ref tips the server advertises: every branch. */
export function advertisedTips(tx: ProjectReadTx): Array<{ name: string; oid: Oid }> {
  return tx.listRefs(BRANCH_REF_PREFIX);
}

/** Throws WantError unless every want is a commit reachable from a branch (or a branch tip). */
export function checkWants(tx: ProjectReadTx, wants: Oid[]): void {
  const tips = advertisedTips(tx).map((ref) => ref.oid);
  const tipSet = new Set(tips.map(oidToHex));
  const pending = wants.filter((want) => !tipSet.has(oidToHex(want)));
  if (pending.length === 0) return;
  // Walk down from the tips, never below the lowest generation wanted, until every want is seen.
  let floor = Infinity;
  for (const want of pending) {
    const info = tx.getCommitInfo(want);
    if (!info) throw new WantError(`not our ref ${oidToHex(want)}`);
    floor = Math.min(floor, info.generation);
  }
  const missing = new Set(pending.map(oidToHex));
  const seen = new Set<string>();
  const stack = [...tips];
  while (stack.length > 0 && missing.size > 0) {
    const oid = stack.pop()!;
    const key = oidToHex(oid);
    if (seen.has(key)) continue;
    seen.add(key);
    missing.delete(key);
    const info = tx.getCommitInfo(oid);
    if (!info || info.generation <= floor) continue;
    stack.push(...info.parents);
  }
  if (missing.size > 0) throw new WantError(`not our ref ${[...missing][0]}`);
}

/** The haves the store knows as commits: the common base of a negotiation. */
export function commonHaves(tx: ProjectReadTx, haves: Oid[]): Oid[] {
  return haves.filter((have) => tx.getCommitInfo(have) !== undefined);
}

export function planPack(
  tx: ProjectReadTx,
  input: { wants: Oid[]; haves: Oid[]; clientShallows: Oid[]; depth: number | null },
  options: { objects: boolean } = { objects: true },
): PackPlan {
  const clientShallow = new Set(input.clientShallows.map(oidToHex));
  const uninteresting = ancestors(tx, commonHaves(tx, input.haves), clientShallow);
  const { commits, shallow, edges } = commitsToSend(tx, input.wants, uninteresting, clientShallow, input.depth);
  const unshallow = input.depth === null ? [] : input.clientShallows.filter((oid) => commits.some((c) => c.equals(oid)) && !shallow.some((s) => s.equals(oid)));

  if (!options.objects) return { objects: [], shallow, unshallow };
  const excluded = new Set<string>();
  for (const edge of edges) markTree(tx, tx.getCommitInfo(edge)!.tree, excluded);
  const objects: PackPlan['objects'] = commits.map((oid) => ({ oid, type: 'commit' as const }));
  const added = new Set<string>();
  for (const commit of commits) addTree(tx, tx.getCommitInfo(commit)!.tree, excluded, added, objects);
  return { objects, shallow, unshallow };
}

/** Every commit reachable from `starts` (inclusive), not crossing client shallow commits. */
function ancestors(tx: ProjectReadTx, starts: Oid[], clientShallow: Set<string>): Set<string> {
  const seen = new Set<string>();
  const stack = [...starts];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    const key = oidToHex(oid);
    if (seen.has(key)) continue;
    seen.add(key);
    if (clientShallow.has(key)) continue;
    const info = tx.getCommitInfo(oid);
    if (info) stack.push(...info.parents);
  }
  return seen;
}

function commitsToSend(tx: ProjectReadTx, wants: Oid[], uninteresting: Set<string>, clientShallow: Set<string>, depth: number | null) {
  const commits: Oid[] = [];
  const shallow: Oid[] = [];
  const edges: Oid[] = [];
  const edgeKeys = new Set<string>();
  const depthOf = new Map<string, number>();
  // Breadth first, so with a depth each commit is reached by its shortest path from a want.
  let frontier = wants.filter((want) => tx.getCommitInfo(want));
  for (const want of frontier) depthOf.set(oidToHex(want), 1);
  const sent = new Set<string>();
  while (frontier.length > 0) {
    const next: Oid[] = [];
    for (const oid of frontier) {
      const key = oidToHex(oid);
      if (sent.has(key)) continue;
      if (uninteresting.has(key)) {
        if (!edgeKeys.has(key)) {
          edgeKeys.add(key);
          edges.push(oid);
        }
        continue;
      }
      sent.add(key);
      commits.push(oid);
      const info = tx.getCommitInfo(oid)!;
      const level = depthOf.get(key)!;
      if (depth !== null && level >= depth) {
        if (info.parents.length > 0) shallow.push(oid);
        continue;
      }
      // Without a new depth, a commit the client holds shallow keeps its parents unsent.
      if (depth === null && clientShallow.has(key)) continue;
      for (const parent of info.parents) {
        const parentKey = oidToHex(parent);
        if (!tx.getCommitInfo(parent)) continue;
        if (!depthOf.has(parentKey)) depthOf.set(parentKey, level + 1);
        next.push(parent);
      }
    }
    frontier = next;
  }
  return { commits, shallow, edges };
}

/** Marks every tree and blob reachable from `tree` as held by the client (an explicit stack: trees may be thousands deep). */
function markTree(tx: ProjectReadTx, tree: Oid, excluded: Set<string>): void {
  const pending: Oid[] = [tree];
  while (pending.length > 0) {
    const oid = pending.pop()!;
    const key = oidToHex(oid);
    if (excluded.has(key)) continue;
    excluded.add(key);
    const object = tx.getObject(oid);
    if (!object) continue;
    for (const entry of decodeTree(object.body)) {
      if (entry.mode === MODE_TREE) pending.push(entry.oid);
      else if (entry.mode !== MODE_GITLINK) excluded.add(oidToHex(entry.oid));
    }
  }
}

/**
 * Appends the trees and blobs reachable from `tree` that are neither excluded nor added yet, each
 * tree before its entries in tree order (a depth-first walk, kept on an explicit stack).
 */
function addTree(tx: ProjectReadTx, tree: Oid, excluded: Set<string>, added: Set<string>, out: PackPlan['objects']): void {
  const open = (oid: Oid): TreeEntry[] | null => {
    const key = oidToHex(oid);
    if (excluded.has(key) || added.has(key)) return null;
    added.add(key);
    out.push({ oid, type: 'tree' });
    const object = tx.getObject(oid);
    if (!object) throw new Error(`tree ${key} is missing`);
    return decodeTree(object.body);
  };
  const root = open(tree);
  if (!root) return;
  const stack: Array<{ entries: TreeEntry[]; next: number }> = [{ entries: root, next: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    if (top.next >= top.entries.length) {
      stack.pop();
      continue;
    }
    const entry = top.entries[top.next++];
    if (entry.mode === MODE_TREE) {
      const entries = open(entry.oid);
      if (entries) stack.push({ entries, next: 0 });
    } else if (entry.mode !== MODE_GITLINK) {
      const blobKey = oidToHex(entry.oid);
      if (excluded.has(blobKey) || added.has(blobKey)) continue;
      added.add(blobKey);
      out.push({ oid: entry.oid, type: 'blob' });
    }
  }
}
