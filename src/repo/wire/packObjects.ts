/**
 * What upload-pack sends: the objects reachable from the client's wants and not from what it has,
 * cut at a shallow boundary. Only commits reachable from the project's own refs may be wanted, so
 * nothing else in the store is ever served.
 *
 * Shallow fetches follow git's upload-pack.c and shallow.c, so a client sees what git would send:
 * - `deepen <n>` cuts the history n commits below the wants (shallow.c get_shallow_commits: a
 *   commit n deep by its shortest path is a boundary, a root commit included); with
 *   `deepen-relative` the n commits count from the client's shallow commits instead;
 *   INFINITE_DEPTH unshallows every shallow commit of the client;
 * - `deepen-since` / `deepen-not` keep the commits a `rev-list --max-age=<t> --not <refs>` of
 *   the wants lists; the boundary is each kept commit with a parent that is not kept
 *   (get_shallow_commits_by_rev_list);
 * - a client shallow commit the new boundary lies below is "unshallowed": its parents are sent.
 * The client's shallow commits, and the new boundary, count as commits without parents for the
 * walk that chooses objects (git registers them as grafts): a `have` of a shallow client stands
 * only for the history it really holds.
 *
 * The walk reads the commit index for history and decodes trees only for the commits it sends;
 * a subtree whose id the client already has is skipped whole.
 */
import { oidToHex, type Oid } from '../../git/oid.js';
import { BRANCH_REF_PREFIX } from '../../git/refname.js';
import { INFINITE_DEPTH } from '../../git/smartProtocol.js';
import { OBJECT_RECORD_BYTES } from '../../git/introducedObjects.js';
import { OidList, OidTable } from '../../git/oidTable.js';
import { OBJ_TREE } from '../../git/pack.js';
import { decodeTree, ENTRY_FILE, ENTRY_GITLINK, ENTRY_TREE, MODE_GITLINK, MODE_TREE, TreeCursor } from '../../git/tree.js';
import type { ObjectType } from '../../git/oid.js';
import type { ProjectReadTx } from '../../store/types.js';
import { MAIN_BRANCH } from '../repo.js';
import { whole, type Steps } from '../slices.js';

export interface PackPlan {
  /** Objects to send, commits first, then trees and blobs in walk order. */
  objects: OidList;
  /** Trees and blobs the client is known to hold: what a thin pack's deltas may name. */
  clientHas: OidTable;
  /**
   * For a fetch into a clone: per object (by index), the tree or blob at the same path in a commit
   * the client holds, a delta base to try when the object has none in the pack (git's --thin).
   */
  thinBases: Map<number, Oid>;
}

/** Fetches planning more objects than this get no thin bases (their deltas would be computed while the client waits). */
export const THIN_BASE_OBJECTS_MAX = 20_000;

/** What a shallow request settles before any object is chosen. */
export interface ShallowPlan {
  /** Commits the client will hold without their parents: "shallow" lines. */
  shallow: Oid[];
  /** Client shallow commits whose parents are now sent: "unshallow" lines. */
  unshallow: Oid[];
  /** Commits the object walk treats as parentless (hex): the client's shallow commits and `shallow`. */
  grafted: Set<string>;
}

export const NO_SHALLOW: ShallowPlan = { shallow: [], unshallow: [], grafted: new Set() };

/** What the client asked for, as upload-pack reads it (src/git/smartProtocol.ts FetchRequest). */
export interface ShallowRequest {
  clientShallows: Oid[];
  depth: number | null;
  deepenRelative: boolean;
  deepenSince: number | null;
  deepenNot: string[];
}

/** A request upload-pack refuses; the message is what git shows after "remote error:". */
export class UploadRequestError extends Error {
  override name = 'UploadRequestError';
}

/** Ref tips the server advertises: every branch. */
export function advertisedTips(tx: ProjectReadTx): Array<{ name: string; oid: Oid }> {
  return tx.listRefs(BRANCH_REF_PREFIX);
}

/** Throws UploadRequestError unless every want is a commit reachable from a branch (or a branch tip). */
export function checkWants(tx: ProjectReadTx, wants: Oid[]): void {
  const unreachable = unreachableFromTips(tx, wants);
  if (unreachable.length > 0) throw new UploadRequestError(`upload-pack: not our ref ${oidToHex(unreachable[0])}`);
}

/** The given commits that no branch reaches (unknown ids included). */
function unreachableFromTips(tx: ProjectReadTx, oids: Oid[]): Oid[] {
  const tips = advertisedTips(tx).map((ref) => ref.oid);
  const tipSet = new Set(tips.map(oidToHex));
  const unknown: Oid[] = [];
  const pending: Oid[] = [];
  // Walk down from the tips, never below the lowest generation asked about, until every one is seen.
  let floor = Infinity;
  for (const oid of oids) {
    if (tipSet.has(oidToHex(oid))) continue;
    const info = tx.getCommitInfo(oid);
    if (!info) unknown.push(oid);
    else {
      pending.push(oid);
      floor = Math.min(floor, info.generation);
    }
  }
  if (pending.length === 0) return unknown;
  const missing = new Map(pending.map((oid) => [oidToHex(oid), oid]));
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
  return [...unknown, ...missing.values()];
}

/** The haves the store knows as commits: the common base of a negotiation. */
export function commonHaves(tx: ProjectReadTx, haves: Oid[]): Oid[] {
  return haves.filter((have) => tx.getCommitInfo(have) !== undefined);
}

/**
 * The ref a `deepen-not` line names, resolved as git's dwim_ref does (`x`, `refs/x`,
 * `refs/tags/x`, `refs/heads/x`, `refs/remotes/x`, `refs/remotes/x/HEAD`) over the refs we
 * advertise: exactly one must match.
 */
export function resolveDeepenNot(tx: ProjectReadTx, name: string): Oid {
  const candidates = [name, `refs/${name}`, `refs/tags/${name}`, `refs/heads/${name}`, `refs/remotes/${name}`, `refs/remotes/${name}/HEAD`];
  const found: Oid[] = [];
  for (const candidate of candidates) {
    const oid = candidate === 'HEAD' ? tx.getRef(`${BRANCH_REF_PREFIX}${MAIN_BRANCH}`) : candidate.startsWith(BRANCH_REF_PREFIX) ? tx.getRef(candidate) : undefined;
    if (oid) found.push(oid);
  }
  if (found.length === 1) return found[0];
  throw new UploadRequestError(
    found.length === 0 ? `upload-pack: deepen-not names no branch: ${name}` : `upload-pack: ambiguous deepen-not: ${name}`,
  );
}

/** The shallow and unshallow lines of a request, and the commits its walks treat as parentless. */
export function planShallow(tx: ProjectReadTx, wants: Oid[], request: ShallowRequest): ShallowPlan {
  // A shallow line naming a commit we do not have is ignored, as git does. Commits that no branch
  // reaches still cut the walks (the client does not hold their parents), but are never unshallowed:
  // that would send their parents, which no branch may reach either.
  const clientShallow = new Map<string, Oid>();
  for (const oid of request.clientShallows) if (tx.getCommitInfo(oid)) clientShallow.set(oidToHex(oid), oid);
  const grafted = new Set(clientShallow.keys());
  const deepen = request.depth !== null || request.deepenSince !== null || request.deepenNot.length > 0;
  if (!deepen) return { shallow: [], unshallow: [], grafted };

  const unreachable = new Set(unreachableFromTips(tx, [...clientShallow.values()]).map(oidToHex));
  const ours = [...clientShallow.values()].filter((oid) => !unreachable.has(oidToHex(oid)));
  let cut: { boundary: Oid[]; kept: Set<string> };
  if (request.depth === INFINITE_DEPTH) {
    cut = { boundary: [], kept: new Set(ours.map(oidToHex)) };
  } else if (request.depth !== null) {
    cut = request.deepenRelative ? cutByDepth(tx, ours, request.depth + 1) : cutByDepth(tx, wants, request.depth);
  } else {
    const excluded = request.deepenNot.map((name) => resolveDeepenNot(tx, name));
    cut = cutByRevList(tx, wants, request.deepenSince, excluded);
  }
  const shallow = cut.boundary.filter((oid) => !clientShallow.has(oidToHex(oid)));
  for (const oid of shallow) grafted.add(oidToHex(oid));
  const unshallow = ours.filter((oid) => cut.kept.has(oidToHex(oid)));
  return { shallow, unshallow, grafted };
}

/**
 * shallow.c get_shallow_commits: breadth first from `starts` (each at depth 1), so every commit
 * gets its shortest depth; one at `depth` is on the boundary, one above it is kept whole.
 */
function cutByDepth(tx: ProjectReadTx, starts: Oid[], depth: number): { boundary: Oid[]; kept: Set<string> } {
  const boundary: Oid[] = [];
  const kept = new Set<string>();
  const seen = new Set<string>();
  let frontier = starts;
  for (let level = 1; frontier.length > 0; level++) {
    const next: Oid[] = [];
    for (const oid of frontier) {
      const key = oidToHex(oid);
      if (seen.has(key)) continue;
      seen.add(key);
      const info = tx.getCommitInfo(oid);
      if (!info) continue;
      if (level >= depth) {
        boundary.push(oid);
        continue;
      }
      kept.add(key);
      next.push(...info.parents);
    }
    frontier = next;
  }
  return { boundary, kept };
}

/**
 * shallow.c get_shallow_commits_by_rev_list over `rev-list --max-age=<since> --not <excluded>
 * --not <wants>`: the kept commits are those reachable from the wants through commits no older
 * than `since` and not reachable from `excluded`; a kept commit with a parent that is not kept
 * is on the boundary. (rev-list limited by --not also treats an old commit's ancestors as
 * excluded; the two differ only when a parent is younger than its child.)
 */
function cutByRevList(tx: ProjectReadTx, wants: Oid[], since: number | null, excluded: Oid[]): { boundary: Oid[]; kept: Set<string> } {
  const hidden = reachable(tx, excluded, new Set());
  const kept = new Set<string>();
  const keptOids: Oid[] = [];
  const stack = [...wants];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    const key = oidToHex(oid);
    if (kept.has(key) || hidden.has(key)) continue;
    const info = tx.getCommitInfo(oid);
    if (!info || (since !== null && info.commitTime < since)) continue;
    kept.add(key);
    keptOids.push(oid);
    stack.push(...info.parents);
  }
  if (kept.size === 0) throw new UploadRequestError('upload-pack: no commits selected for shallow requests');
  const boundary = keptOids.filter((oid) => tx.getCommitInfo(oid)!.parents.some((parent) => !kept.has(oidToHex(parent))));
  for (const oid of boundary) kept.delete(oidToHex(oid));
  return { boundary, kept };
}

/** Every commit reachable from `starts` (inclusive), treating `grafted` commits as parentless. */
function reachable(tx: ProjectReadTx, starts: Oid[], grafted: Set<string>): Set<string> {
  return whole(reachableSteps(tx, starts, grafted));
}

function* reachableSteps(tx: ProjectReadTx, starts: Oid[], grafted: Set<string>): Steps<Set<string>> {
  const seen = new Set<string>();
  const stack = [...starts];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    const key = oidToHex(oid);
    if (seen.has(key)) continue;
    const info = tx.getCommitInfo(oid);
    if (!info) continue;
    seen.add(key);
    if (!grafted.has(key)) stack.push(...info.parents);
    yield;
  }
  return seen;
}

/**
 * The objects for `wants` that `haves` do not reach. Unshallowed commits are held by the client
 * (their parents become wants, they themselves count as haves), and every grafted commit stops
 * both walks, as upload-pack's registered shallow commits stop pack-objects' rev-list.
 */
export function planPack(tx: ProjectReadTx, input: PackInput): PackPlan {
  return whole(planPackSteps(tx, input));
}

export interface PackInput {
  wants: Oid[];
  haves: Oid[];
  shallow?: ShallowPlan;
}

/** planPack as a walk that may pause after each commit and tree (src/repo/slices.ts). */
export function* planPackSteps(tx: ProjectReadTx, input: PackInput): Steps<PackPlan> {
  const shallow = input.shallow ?? NO_SHALLOW;
  const unshallowParents = shallow.unshallow.flatMap((oid) => tx.getCommitInfo(oid)?.parents ?? []);
  const uninteresting = yield* reachableSteps(tx, [...commonHaves(tx, input.haves), ...shallow.unshallow], shallow.grafted);
  const { commits, edges } = yield* commitsToSend(tx, [...input.wants, ...unshallowParents], uninteresting, shallow.grafted);
  const excluded = new OidTable();
  for (const edge of [...edges, ...shallow.unshallow]) yield* markTree(tx, tx.getCommitInfo(edge)!.tree, excluded);
  const objects = new OidList();
  for (const commit of commits) objects.push(commit, 'commit');
  const added = new OidTable(commits.length);
  // Paths are followed only for a fetch into a clone, where they find thin bases.
  const paths: string[] | null = edges.length > 0 ? commits.map(() => '') : null;
  // With every ancestor sent (a clone: no haves, nothing cut), a commit's indexed object list
  // stands for the walk of its tree (src/git/introducedObjects.ts): no tree is read.
  const wholeHistory = edges.length === 0 && shallow.grafted.size === 0 && shallow.unshallow.length === 0;
  for (const commit of commits) {
    const list = wholeHistory ? tx.getCommitObjects(commit) : undefined;
    if (list) yield* addListed(list, added, objects);
    else yield* addTree(tx, tx.getCommitInfo(commit)!.tree, excluded, added, objects, paths);
  }
  const thinBases = new Map<number, Oid>();
  if (paths && objects.length <= THIN_BASE_OBJECTS_MAX) {
    const held = yield* pathsOf(tx, tx.getCommitInfo(edges[0])!.tree);
    paths.forEach((path, index) => {
      const type = objects.type(index);
      const base = type === 'commit' ? undefined : held.get(path);
      if (base && base.type === type && !base.oid.equals(objects.oidView(index))) thinBases.set(index, base.oid);
    });
  }
  return { objects, clientHas: excluded, thinBases };
}

/** Commits reachable from `starts` and not `uninteresting`, breadth first; edges are the uninteresting ones met. */
function* commitsToSend(tx: ProjectReadTx, starts: Oid[], uninteresting: Set<string>, grafted: Set<string>): Steps<{ commits: Oid[]; edges: Oid[] }> {
  const commits: Oid[] = [];
  const edges: Oid[] = [];
  const edgeKeys = new Set<string>();
  const sent = new Set<string>();
  let frontier = starts.filter((oid) => tx.getCommitInfo(oid));
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
      yield;
      if (grafted.has(key)) continue;
      for (const parent of tx.getCommitInfo(oid)!.parents) if (tx.getCommitInfo(parent)) next.push(parent);
    }
    frontier = next;
  }
  return { commits, edges };
}

/** Marks every tree and blob reachable from `tree` as held by the client (an explicit stack: trees may be thousands deep). */
function* markTree(tx: ProjectReadTx, tree: Oid, excluded: OidTable): Steps<void> {
  const pending: Oid[] = [tree];
  while (pending.length > 0) {
    const oid = pending.pop()!;
    if (!excluded.add(oid)) continue;
    yield;
    const object = tx.getObject(oid);
    if (!object) continue;
    const cursor = new TreeCursor(object.body);
    while (cursor.next()) {
      if (cursor.kind === ENTRY_TREE) pending.push(cursor.oid());
      else if (cursor.kind === ENTRY_FILE) excluded.add(cursor.body, cursor.oidStart);
    }
  }
}

/**
 * Appends the trees and blobs reachable from `tree` that are neither excluded nor added yet, each
 * tree before its entries in tree order (a depth-first walk, kept on an explicit stack). Ids are
 * read in place from each tree's body; only `paths`, when asked for, builds strings.
 */
function* addTree(tx: ProjectReadTx, tree: Oid, excluded: OidTable, added: OidTable, out: OidList, paths: string[] | null): Steps<void> {
  const open = (oid: Uint8Array, offset: number, path: string): TreeCursor | null => {
    if (excluded.has(oid, offset) || !added.add(oid, offset)) return null;
    const index = out.push(oid, 'tree', offset);
    paths?.push(path);
    const object = tx.getObject(out.oidView(index));
    if (!object) throw new Error(`tree ${oidToHex(out.oid(index))} is missing`);
    return new TreeCursor(object.body);
  };
  const root = open(tree, 0, '');
  if (!root) return;
  const stack: Array<{ cursor: TreeCursor; dir: string }> = [{ cursor: root, dir: '' }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const cursor = top.cursor;
    if (!cursor.next()) {
      stack.pop();
      continue;
    }
    if (cursor.kind === ENTRY_GITLINK) continue;
    const path = paths ? (top.dir === '' ? cursor.name() : `${top.dir}/${cursor.name()}`) : '';
    if (cursor.kind === ENTRY_TREE) {
      const child = open(cursor.body, cursor.oidStart, path);
      if (child) stack.push({ cursor: child, dir: path });
      yield;
    } else {
      if (excluded.has(cursor.body, cursor.oidStart) || !added.add(cursor.body, cursor.oidStart)) continue;
      out.push(cursor.body, 'blob', cursor.oidStart);
      paths?.push(path);
    }
  }
}

/** Records of a commit's object list not added yet, in the list's order. */
function* addListed(list: Buffer, added: OidTable, out: OidList): Steps<void> {
  for (let at = 0; at < list.length; at += OBJECT_RECORD_BYTES) {
    if (!added.add(list, at + 1)) continue;
    out.push(list, list[at] === OBJ_TREE ? 'tree' : 'blob', at + 1);
    if (list[at] === OBJ_TREE) yield;
  }
}

/** Every tree and blob of `tree` by path ('' for the root itself). */
function* pathsOf(tx: ProjectReadTx, tree: Oid): Steps<Map<string, { oid: Oid; type: 'tree' | 'blob' }>> {
  const out = new Map<string, { oid: Oid; type: 'tree' | 'blob' }>([['', { oid: tree, type: 'tree' }]]);
  const pending: Array<{ oid: Oid; dir: string }> = [{ oid: tree, dir: '' }];
  while (pending.length > 0) {
    const { oid, dir } = pending.pop()!;
    const object = tx.getObject(oid);
    if (!object) continue;
    for (const entry of decodeTree(object.body)) {
      if (entry.mode === MODE_GITLINK) continue;
      const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
      const isTree = entry.mode === MODE_TREE;
      out.set(path, { oid: entry.oid, type: isTree ? 'tree' : 'blob' });
      if (isTree) pending.push({ oid: entry.oid, dir: path });
    }
    yield;
  }
  return out;
}
