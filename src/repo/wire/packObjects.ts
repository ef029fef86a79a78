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
 * a subtree whose id the client already has is skipped whole. Reads are batched: the commits of a
 * walk's level, or a level of trees, in one call.
 */
import { oidToHex, type Oid } from '../../git/oid.js';
import { BRANCH_REF_PREFIX } from '../../git/refname.js';
import { INFINITE_DEPTH } from '../../git/smartProtocol.js';
import { OBJECT_RECORD_BYTES } from '../../git/introducedObjects.js';
import { OidList, OidTable } from '../../git/oidTable.js';
import { OBJ_TREE } from '../../git/pack.js';
import { filterKeepsTrees, type ObjectFilter } from '../../git/objectFilter.js';
import { decodeTree, ENTRY_FILE, ENTRY_GITLINK, ENTRY_TREE, MODE_GITLINK, MODE_TREE, TreeCursor } from '../../git/tree.js';
import type { ObjectType } from '../../git/oid.js';
import type { ProjectReads } from '../../store/asyncTypes.js';
import type { CommitInfo } from '../../store/types.js';
import { MaxHeap } from '../maxHeap.js';
import { MAIN_BRANCH } from '../repo.js';
import { whole, type Steps } from '../slices.js';
import { MissingObjectError } from '../../errors.js';

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

/** Trees one read asks for, in the walks that read a level of trees at a time. */
const TREES_PER_READ = 256;

/**
 * Commit index entries as a walk reads them, a batch at a time (`load`), then looked up without a
 * read (`get`); entries never change once stored.
 */
class CommitInfos {
  private readonly known = new Map<string, CommitInfo | null>();

  constructor(private readonly tx: ProjectReads) {}

  /** Reads the entries of `oids` not read yet, in one call. */
  async load(oids: readonly Oid[]): Promise<void> {
    const missing: Oid[] = [];
    const asked = new Set<string>();
    for (const oid of oids) {
      const key = oidToHex(oid);
      if (this.known.has(key) || asked.has(key)) continue;
      asked.add(key);
      missing.push(oid);
    }
    if (missing.length === 0) return;
    const infos = await this.tx.getCommitInfos(missing);
    missing.forEach((oid, i) => this.known.set(oidToHex(oid), infos[i] ?? null));
  }

  /** Whether `oid`'s entry was read (stored or not). */
  has(oid: Oid): boolean {
    return this.known.has(oidToHex(oid));
  }

  /** A loaded entry; undefined when the id is not a stored commit. */
  get(oid: Oid): CommitInfo | undefined {
    const info = this.known.get(oidToHex(oid));
    if (info === undefined) throw new Error(`commit ${oidToHex(oid)} was not read`);
    return info ?? undefined;
  }
}

/** Ref tips the server advertises: every branch. */
export function advertisedTips(tx: ProjectReads): Promise<Array<{ name: string; oid: Oid }>> {
  return tx.listRefs(BRANCH_REF_PREFIX);
}

/** A want that names a tree or a blob (a partial clone fetching what its filter left out). */
export interface ProvidedObject {
  oid: Oid;
  type: 'tree' | 'blob';
}

/**
 * Throws UploadRequestError unless every want is a commit reachable from a branch (or a branch
 * tip), or, with `anyObject` (protocol v2, where "wants can be anything": gitprotocol-v2.txt), a
 * tree or blob the project stores. Answers the wants split into those two kinds.
 */
export async function checkWants(tx: ProjectReads, wants: Oid[], anyObject = false): Promise<{ commits: Oid[]; provided: ProvidedObject[] }> {
  const unreachable = await unreachableFromTips(tx, wants);
  if (unreachable.length === 0) return { commits: wants, provided: [] };
  const types = anyObject ? await tx.objectTypes(unreachable) : [];
  const provided: ProvidedObject[] = [];
  const byId = new OidTable(unreachable.length);
  unreachable.forEach((oid, index) => {
    const type = types[index];
    if (type !== 'tree' && type !== 'blob') throw new UploadRequestError(`upload-pack: not our ref ${oidToHex(oid)}`);
    provided.push({ oid, type });
    byId.add(oid);
  });
  return { commits: wants.filter((want) => !byId.has(want)), provided };
}

/** The given commits that no branch reaches (unknown ids included). */
async function unreachableFromTips(tx: ProjectReads, oids: Oid[]): Promise<Oid[]> {
  const tips = (await advertisedTips(tx)).map((ref) => ref.oid);
  const tipSet = new Set(tips.map(oidToHex));
  const unknown: Oid[] = [];
  const pending: Oid[] = [];
  // Walk down from the tips, never below the lowest generation asked about, until every one is seen.
  let floor = Infinity;
  const asked = oids.filter((oid) => !tipSet.has(oidToHex(oid)));
  const askedInfos = await tx.getCommitInfos(asked);
  asked.forEach((oid, i) => {
    const info = askedInfos[i];
    if (!info) unknown.push(oid);
    else {
      pending.push(oid);
      floor = Math.min(floor, info.generation);
    }
  });
  if (pending.length === 0) return unknown;
  const missing = new Map(pending.map((oid) => [oidToHex(oid), oid]));
  const seen = new Set<string>();
  let stack = [...tips];
  // A level of the walk at a time, its commits read in one call (what it reaches does not depend on the order).
  while (stack.length > 0 && missing.size > 0) {
    const level: Oid[] = [];
    for (const oid of stack) {
      const key = oidToHex(oid);
      if (seen.has(key)) continue;
      seen.add(key);
      missing.delete(key);
      level.push(oid);
    }
    stack = [];
    const infos = await tx.getCommitInfos(level);
    for (const info of infos) if (info && info.generation > floor) stack.push(...info.parents);
  }
  return [...unknown, ...missing.values()];
}

/** The haves the store knows as commits: the common base of a negotiation. */
export async function commonHaves(tx: ProjectReads, haves: Oid[]): Promise<Oid[]> {
  const infos = await tx.getCommitInfos(haves);
  return haves.filter((_, i) => infos[i] !== undefined);
}

/**
 * The ref a `deepen-not` line names, resolved as git's dwim_ref does (`x`, `refs/x`,
 * `refs/tags/x`, `refs/heads/x`, `refs/remotes/x`, `refs/remotes/x/HEAD`) over the refs we
 * advertise: exactly one must match.
 */
export async function resolveDeepenNot(tx: ProjectReads, name: string): Promise<Oid> {
  const candidates = [name, `refs/${name}`, `refs/tags/${name}`, `refs/heads/${name}`, `refs/remotes/${name}`, `refs/remotes/${name}/HEAD`];
  const found: Oid[] = [];
  for (const candidate of candidates) {
    const oid = candidate === 'HEAD' ? await tx.getRef(`${BRANCH_REF_PREFIX}${MAIN_BRANCH}`) : candidate.startsWith(BRANCH_REF_PREFIX) ? await tx.getRef(candidate) : undefined;
    if (oid) found.push(oid);
  }
  if (found.length === 1) return found[0];
  throw new UploadRequestError(
    found.length === 0 ? `upload-pack: deepen-not names no branch: ${name}` : `upload-pack: ambiguous deepen-not: ${name}`,
  );
}

/** The shallow and unshallow lines of a request, and the commits its walks treat as parentless. */
export async function planShallow(tx: ProjectReads, wants: Oid[], request: ShallowRequest): Promise<ShallowPlan> {
  // A shallow line naming a commit we do not have is ignored, as git does. Commits that no branch
  // reaches still cut the walks (the client does not hold their parents), but are never unshallowed:
  // that would send their parents, which no branch may reach either.
  const clientShallow = new Map<string, Oid>();
  const infos = new CommitInfos(tx);
  await infos.load(request.clientShallows);
  for (const oid of request.clientShallows) if (infos.get(oid)) clientShallow.set(oidToHex(oid), oid);
  const grafted = new Set(clientShallow.keys());
  const deepen = request.depth !== null || request.deepenSince !== null || request.deepenNot.length > 0;
  if (!deepen) return { shallow: [], unshallow: [], grafted };

  const unreachable = new Set((await unreachableFromTips(tx, [...clientShallow.values()])).map(oidToHex));
  const ours = [...clientShallow.values()].filter((oid) => !unreachable.has(oidToHex(oid)));
  let cut: { boundary: Oid[]; kept: Set<string> };
  if (request.depth === INFINITE_DEPTH) {
    cut = { boundary: [], kept: new Set(ours.map(oidToHex)) };
  } else if (request.depth !== null) {
    cut = request.deepenRelative ? await cutByDepth(infos, ours, request.depth + 1) : await cutByDepth(infos, wants, request.depth);
  } else {
    const excluded: Oid[] = [];
    for (const name of request.deepenNot) excluded.push(await resolveDeepenNot(tx, name));
    cut = await cutByRevList(tx, infos, wants, request.deepenSince, excluded);
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
async function cutByDepth(infos: CommitInfos, starts: Oid[], depth: number): Promise<{ boundary: Oid[]; kept: Set<string> }> {
  const boundary: Oid[] = [];
  const kept = new Set<string>();
  const seen = new Set<string>();
  let frontier = starts;
  for (let level = 1; frontier.length > 0; level++) {
    await infos.load(frontier.filter((oid) => !seen.has(oidToHex(oid))));
    const next: Oid[] = [];
    for (const oid of frontier) {
      const key = oidToHex(oid);
      if (seen.has(key)) continue;
      seen.add(key);
      const info = infos.get(oid);
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
async function cutByRevList(tx: ProjectReads, infos: CommitInfos, wants: Oid[], since: number | null, excluded: Oid[]): Promise<{ boundary: Oid[]; kept: Set<string> }> {
  const hidden = await reachable(tx, excluded, new Set());
  const admits = (info: CommitInfo | undefined): info is CommitInfo => info !== undefined && (since === null || info.commitTime >= since);
  // The entries the walk below meets, read first a level at a time: its depth-first order sets the boundary's.
  const read = new Set<string>();
  for (let level = wants; level.length > 0; ) {
    const fresh = level.filter((oid) => {
      const key = oidToHex(oid);
      if (read.has(key) || hidden.has(key)) return false;
      read.add(key);
      return true;
    });
    await infos.load(fresh);
    level = fresh.flatMap((oid) => {
      const info = infos.get(oid);
      return admits(info) ? info.parents : [];
    });
  }
  const kept = new Set<string>();
  const keptOids: Oid[] = [];
  const stack = [...wants];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    const key = oidToHex(oid);
    if (kept.has(key) || hidden.has(key)) continue;
    const info = infos.get(oid);
    if (!admits(info)) continue;
    kept.add(key);
    keptOids.push(oid);
    stack.push(...info.parents);
  }
  if (kept.size === 0) throw new UploadRequestError('upload-pack: no commits selected for shallow requests');
  const boundary = keptOids.filter((oid) => infos.get(oid)!.parents.some((parent) => !kept.has(oidToHex(parent))));
  for (const oid of boundary) kept.delete(oidToHex(oid));
  return { boundary, kept };
}

/** Every commit reachable from `starts` (inclusive), treating `grafted` commits as parentless. */
function reachable(tx: ProjectReads, starts: Oid[], grafted: Set<string>): Promise<Set<string>> {
  return whole(reachableSteps(tx, starts, grafted));
}

/** A level of the walk at a time, its commits read in one call (the set reached does not depend on the order). */
async function* reachableSteps(tx: ProjectReads, starts: Oid[], grafted: Set<string>): Steps<Set<string>> {
  const seen = new Set<string>();
  let stack = [...starts];
  while (stack.length > 0) {
    const level: Oid[] = [];
    const levelKeys = new Set<string>();
    for (const oid of stack) {
      const key = oidToHex(oid);
      if (seen.has(key) || levelKeys.has(key)) continue;
      levelKeys.add(key);
      level.push(oid);
    }
    stack = [];
    const infos = await tx.getCommitInfos(level);
    for (let i = 0; i < level.length; i++) {
      const info = infos[i];
      if (!info) continue;
      const key = oidToHex(level[i]);
      seen.add(key);
      if (!grafted.has(key)) stack.push(...info.parents);
      yield;
    }
  }
  return seen;
}

/**
 * The objects for `wants` that `haves` do not reach. Unshallowed commits are held by the client
 * (their parents become wants, they themselves count as haves), and every grafted commit stops
 * both walks, as upload-pack's registered shallow commits stop pack-objects' rev-list.
 */
export function planPack(tx: ProjectReads, input: PackInput): Promise<PackPlan> {
  return whole(planPackSteps(tx, input));
}

export interface PackInput {
  /** Commits. */
  wants: Oid[];
  haves: Oid[];
  shallow?: ShallowPlan;
  /** What a partial clone leaves out of the trees and blobs (src/git/objectFilter.ts). */
  filter?: ObjectFilter | null;
  /** Trees and blobs asked for by id: sent whatever the filter (a tree's entries are filtered). */
  provided?: ProvidedObject[];
}

/** Blob sizes asked per read when a blob:limit filter looks at them. */
const SIZES_PER_READ = 1024;

/** planPack as a walk that may pause after each commit and tree (src/repo/slices.ts). */
export async function* planPackSteps(tx: ProjectReads, input: PackInput): Steps<PackPlan> {
  const shallow = input.shallow ?? NO_SHALLOW;
  const infos = new CommitInfos(tx);
  await infos.load(shallow.unshallow);
  const unshallowParents = shallow.unshallow.flatMap((oid) => infos.get(oid)?.parents ?? []);
  const starts = [...input.wants, ...unshallowParents];
  const uninteresting = yield* uninterestingSteps(infos, starts, [...(await commonHaves(tx, input.haves)), ...shallow.unshallow], shallow.grafted);
  const { commits, edges } = yield* commitsToSend(infos, starts, uninteresting, shallow.grafted);
  const excluded = new OidTable();
  for (const edge of [...edges, ...shallow.unshallow]) yield* markTree(tx, infos.get(edge)!.tree, excluded);
  let objects = new OidList();
  for (const commit of commits) objects.push(commit, 'commit');
  const added = new OidTable(commits.length);
  // Paths are followed only for a fetch into a clone, where they find thin bases; not into a
  // partial clone, which may lack the object at the same path (a thin base it would have to fetch).
  let paths: string[] | null = edges.length > 0 && !input.filter ? commits.map(() => '') : null;
  // With every ancestor sent (a clone: no haves, nothing cut), a commit's indexed object list
  // stands for the walk of its tree (src/git/introducedObjects.ts): no tree is read.
  const wholeHistory = edges.length === 0 && shallow.grafted.size === 0 && shallow.unshallow.length === 0;
  const filter = input.filter ?? null;
  const blobs = filter?.kind !== 'blob:none';
  const byDepth = filter?.kind === 'tree:depth' ? { limit: filter.depth, seenAt: new OidTable() } : null;
  if (byDepth) {
    for (const commit of commits) yield* addTreeToDepth(tx, infos.get(commit)!.tree, excluded, added, objects, paths, byDepth);
  } else if (filterKeepsTrees(filter)) {
    for (const commit of commits) {
      const list = wholeHistory ? await tx.getCommitObjects(commit) : undefined;
      if (list) yield* addListed(list, added, objects, blobs);
      else yield* addTree(tx, infos.get(commit)!.tree, excluded, added, objects, paths, blobs);
    }
  }
  // Asked for by id: sent whatever the filter, a tree with its entries as the filter keeps them.
  const provided = new OidTable();
  for (const { oid, type } of input.provided ?? []) {
    // A lazy fetch may ask for up to WANTS_PER_REQUEST_MAX ids: the walk pauses between them.
    yield;
    provided.add(oid);
    if (type === 'blob') {
      if (added.add(oid)) {
        objects.push(oid, 'blob');
        paths?.push('');
      }
    } else if (excluded.has(oid) || !filterKeepsTrees(filter)) {
      // The client holds it and what it reaches, or tree:0 leaves out its entries: sent on its own.
      if (added.add(oid)) {
        objects.push(oid, 'tree');
        paths?.push('');
      }
    } else if (byDepth) {
      // Its own root: its entries count their depth from it (git's tree:<depth> of a given tree).
      yield* addTreeToDepth(tx, oid, excluded, added, objects, paths, byDepth);
    } else {
      yield* addTree(tx, oid, excluded, added, objects, paths, blobs);
    }
  }
  if (filter?.kind === 'blob:limit') ({ objects, paths } = yield* withoutLargeBlobs(tx, objects, paths, filter.bytes, provided));
  const thinBases = new Map<number, Oid>();
  if (paths && objects.length <= THIN_BASE_OBJECTS_MAX) {
    const held = yield* pathsOf(tx, infos.get(edges[0])!.tree, new Set(paths));
    paths.forEach((path, index) => {
      const type = objects.type(index);
      const base = type === 'commit' ? undefined : held.get(path);
      if (base && base.type === type && !base.oid.equals(objects.oidView(index))) thinBases.set(index, base.oid);
    });
  }
  return { objects, clientHas: excluded, thinBases };
}

/** Queued commits whose unread parents the walk below reads with those of the commit it takes. */
const WALK_READ_AHEAD = 512;

/** Flags of the walk below. */
const WANTED = 1;
const HELD = 2;
const QUEUED = 4;
const TAKEN = 8;

/**
 * The commits reachable from `held` that the walk from `wants` may meet (with others reachable
 * from `held`): what commitsToSend needs to know of the client's history, without walking all of
 * it. As git's revision walk with its "everybody uninteresting" stop, but ordered by generation
 * number (a commit's parents have smaller ones): commits are taken from a max-heap, a commit
 * reachable from `held` passes that on to its parents, and the walk ends once every commit still
 * queued is held. A commit taken is complete then, for every commit that could reach it was taken
 * before it; and whatever the wants reach below a queued held commit is held too. So an
 * incremental fetch reads the commits it sends and those beside them, not the whole history.
 */
async function* uninterestingSteps(infos: CommitInfos, wants: Oid[], held: Oid[], grafted: Set<string>): Steps<Set<string>> {
  const uninteresting = new Set<string>();
  if (held.length === 0) return uninteresting;
  interface Entry {
    oid: Oid;
    key: string;
    info: CommitInfo;
  }
  const flags = new Map<string, number>();
  const queue = new MaxHeap<Entry>((a, b) => a.info.generation - b.info.generation);
  // Queued commits not known to be held: the walk goes on while there are any.
  let wantedQueued = 0;
  const mark = (oid: Oid, flag: number) => {
    const info = infos.get(oid);
    if (!info) return;
    const key = oidToHex(oid);
    const before = flags.get(key) ?? 0;
    const after = before | flag;
    if (after === before) return;
    flags.set(key, after);
    if ((before & QUEUED) === 0) {
      flags.set(key, after | QUEUED);
      queue.push({ oid, key, info });
      if ((after & HELD) === 0) wantedQueued++;
    } else if ((before & HELD) === 0 && (after & HELD) !== 0) {
      // Queued as wanted, now known held (a commit already taken is not counted any more).
      if ((before & TAKEN) === 0) wantedQueued--;
    }
  };
  await infos.load([...wants, ...held]);
  for (const oid of held) mark(oid, HELD);
  for (const oid of wants) mark(oid, WANTED);
  while (wantedQueued > 0) {
    const entry = queue.pop()!;
    const flag = flags.get(entry.key)!;
    flags.set(entry.key, flag | TAKEN);
    if ((flag & HELD) === 0) wantedQueued--;
    if (grafted.has(entry.key)) continue;
    if (entry.info.parents.some((parent) => !infos.has(parent))) {
      // This commit's parents and the unread ones of up to WALK_READ_AHEAD others queued, in one read.
      const ahead: Oid[] = [...entry.info.parents];
      const queued = queue.peekAll();
      for (let i = 0; i < queued.length && i < WALK_READ_AHEAD; i++) {
        if (grafted.has(queued[i].key)) continue;
        for (const parent of queued[i].info.parents) if (!infos.has(parent)) ahead.push(parent);
      }
      await infos.load(ahead);
    }
    for (const parent of entry.info.parents) mark(parent, (flag & HELD) !== 0 ? HELD : WANTED);
    yield;
  }
  for (const [key, flag] of flags) if ((flag & HELD) !== 0) uninteresting.add(key);
  return uninteresting;
}

/**
 * Commits reachable from `starts` and not `uninteresting`, breadth first; edges are the uninteresting
 * ones met. Leaves every commit it returns, and each edge, read in `infos`.
 */
async function* commitsToSend(infos: CommitInfos, starts: Oid[], uninteresting: Set<string>, grafted: Set<string>): Steps<{ commits: Oid[]; edges: Oid[] }> {
  const commits: Oid[] = [];
  const edges: Oid[] = [];
  const edgeKeys = new Set<string>();
  const sent = new Set<string>();
  await infos.load(starts);
  let frontier = starts.filter((oid) => infos.get(oid));
  while (frontier.length > 0) {
    // The parents of the level's commits to send, read in one call: only stored commits join the next level.
    await infos.load(
      frontier.flatMap((oid) => {
        const key = oidToHex(oid);
        return sent.has(key) || uninteresting.has(key) || grafted.has(key) ? [] : infos.get(oid)!.parents;
      }),
    );
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
      for (const parent of infos.get(oid)!.parents) if (infos.get(parent)) next.push(parent);
    }
    frontier = next;
  }
  return { commits, edges };
}

/** Marks every tree and blob reachable from `tree` as held by the client, a level of trees at a time (trees may be thousands deep). */
async function* markTree(tx: ProjectReads, tree: Oid, excluded: OidTable): Steps<void> {
  for (let level = [tree]; level.length > 0; ) {
    const fresh = level.filter((oid) => excluded.add(oid));
    const next: Oid[] = [];
    for (let start = 0; start < fresh.length; start += TREES_PER_READ) {
      for (const object of await tx.getObjects(fresh.slice(start, start + TREES_PER_READ))) {
        if (!object) continue;
        const cursor = new TreeCursor(object.body);
        while (cursor.next()) {
          if (cursor.kind === ENTRY_TREE) next.push(cursor.oid());
          else if (cursor.kind === ENTRY_FILE) excluded.add(cursor.body, cursor.oidStart);
        }
      }
      yield;
    }
    level = next;
  }
}

/** Tree bodies read ahead of a walk, by id, each given up when the walk takes it. */
class TreeBodies {
  private readonly index = new OidTable();
  private readonly bodies: Array<Buffer | undefined> = [];

  /** Reserves a place for `oid`'s body; false when it has one already. */
  expect(oid: Uint8Array, offset = 0): boolean {
    if (!this.index.add(oid, offset, this.bodies.length)) return false;
    this.bodies.push(undefined);
    return true;
  }

  set(oid: Uint8Array, body: Buffer): void {
    this.bodies[this.index.get(oid)] = body;
  }

  take(oid: Uint8Array, offset = 0): Buffer | undefined {
    const at = this.index.get(oid, offset);
    if (at < 0) return undefined;
    const body = this.bodies[at];
    this.bodies[at] = undefined;
    return body;
  }
}

/** The bodies of `root` and the trees under it that `enters` admits (a tree it refuses is not entered), a level at a time. */
async function* readTrees(tx: ProjectReads, root: Oid, enters: (oid: Uint8Array, offset: number) => boolean): Steps<TreeBodies> {
  const trees = new TreeBodies();
  for (let level = enters(root, 0) && trees.expect(root) ? [root] : []; level.length > 0; ) {
    const next: Oid[] = [];
    for (let start = 0; start < level.length; start += TREES_PER_READ) {
      const batch = level.slice(start, start + TREES_PER_READ);
      const objects = await tx.getObjects(batch);
      for (let i = 0; i < batch.length; i++) {
        const body = objects[i]?.body;
        if (!body) continue;
        trees.set(batch[i], body);
        const cursor = new TreeCursor(body);
        while (cursor.next()) {
          if (cursor.kind === ENTRY_TREE && enters(cursor.body, cursor.oidStart) && trees.expect(cursor.body, cursor.oidStart)) next.push(cursor.oid());
        }
      }
      yield;
    }
    level = next;
  }
  return trees;
}

/**
 * `objects` without the blobs of `bytes` or more (git's blob:limit), those asked for by id kept;
 * sizes are read in batches.
 */
async function* withoutLargeBlobs(tx: ProjectReads, objects: OidList, paths: string[] | null, bytes: number, provided: OidTable): Steps<{ objects: OidList; paths: string[] | null }> {
  const blobIndexes: number[] = [];
  for (let index = 0; index < objects.length; index++) if (objects.type(index) === 'blob' && !provided.has(objects.oidView(index))) blobIndexes.push(index);
  const dropped = new Set<number>();
  for (let at = 0; at < blobIndexes.length; at += SIZES_PER_READ) {
    const batch = blobIndexes.slice(at, at + SIZES_PER_READ);
    const sizes = await tx.objectSizes(batch.map((index) => objects.oid(index)));
    batch.forEach((index, i) => {
      const size = sizes[i];
      if (size === undefined) throw new MissingObjectError('blob', objects.oid(index));
      if (size >= bytes) dropped.add(index);
    });
    yield;
  }
  if (dropped.size === 0) return { objects, paths };
  const kept = new OidList();
  const keptPaths: string[] | null = paths ? [] : null;
  for (let index = 0; index < objects.length; index++) {
    if (dropped.has(index)) continue;
    kept.push(objects.oidView(index), objects.type(index));
    keptPaths?.push(paths![index]);
  }
  return { objects: kept, paths: keptPaths };
}

/**
 * Appends the trees and blobs (unless `blobs` is false: a blob:none filter) reachable from `tree`
 * that are neither excluded nor added yet, each tree before its entries in tree order (a
 * depth-first walk, kept on an explicit stack). The trees it opens are read first, a level at a
 * time. Ids are read in place from each tree's body; only `paths`, when asked for, builds strings.
 */
async function* addTree(tx: ProjectReads, tree: Oid, excluded: OidTable, added: OidTable, out: OidList, paths: string[] | null, blobs = true): Steps<void> {
  // Exactly the trees the walk below opens: those not excluded, nor added before this call.
  const bodies = yield* readTrees(tx, tree, (oid, offset) => !excluded.has(oid, offset) && !added.has(oid, offset));
  const open = (oid: Uint8Array, offset: number, path: string): TreeCursor | null => {
    if (excluded.has(oid, offset) || !added.add(oid, offset)) return null;
    const index = out.push(oid, 'tree', offset);
    paths?.push(path);
    const body = bodies.take(out.oidView(index));
    if (!body) throw new MissingObjectError('tree', out.oid(index));
    return new TreeCursor(body);
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
      if (!blobs || excluded.has(cursor.body, cursor.oidStart) || !added.add(cursor.body, cursor.oidStart)) continue;
      out.push(cursor.body, 'blob', cursor.oidStart);
      paths?.push(path);
    }
  }
}

/**
 * git's tree:<depth> filter from one root tree (depth 0): the trees and blobs above `limit` levels
 * below it, breadth first, a level's trees read in one call. An object counts at the shallowest
 * place it is found in any commit (`seenAt`, shared by the plan's walks), so a tree met again
 * higher up than before is walked again from there (at most `limit` times).
 */
async function* addTreeToDepth(
  tx: ProjectReads,
  root: Oid,
  excluded: OidTable,
  added: OidTable,
  out: OidList,
  paths: string[] | null,
  byDepth: { limit: number; seenAt: OidTable },
): Steps<void> {
  let level: Array<{ oid: Oid; path: string }> = [{ oid: root, path: '' }];
  for (let depth = 0; depth < byDepth.limit && level.length > 0; depth++) {
    const walked = level.filter(({ oid }) => {
      const seen = byDepth.seenAt.get(oid);
      if (excluded.has(oid) || (seen >= 0 && seen <= depth)) return false;
      byDepth.seenAt.set(oid, 0, depth);
      return true;
    });
    const next: Array<{ oid: Oid; path: string }> = [];
    for (let start = 0; start < walked.length; start += TREES_PER_READ) {
      const batch = walked.slice(start, start + TREES_PER_READ);
      const bodies = await tx.getObjects(batch.map(({ oid }) => oid));
      batch.forEach(({ oid, path }, i) => {
        const body = bodies[i]?.body;
        if (!body) throw new MissingObjectError('tree', oid);
        if (added.add(oid)) {
          out.push(oid, 'tree');
          paths?.push(path);
        }
        if (depth + 1 >= byDepth.limit) return;
        const cursor = new TreeCursor(body);
        while (cursor.next()) {
          if (cursor.kind === ENTRY_GITLINK) continue;
          const entryPath = paths ? (path === '' ? cursor.name() : `${path}/${cursor.name()}`) : '';
          if (cursor.kind === ENTRY_TREE) next.push({ oid: cursor.oid(), path: entryPath });
          else if (!excluded.has(cursor.body, cursor.oidStart) && added.add(cursor.body, cursor.oidStart)) {
            out.push(cursor.body, 'blob', cursor.oidStart);
            paths?.push(entryPath);
          }
        }
      });
      yield;
    }
    level = next;
  }
}

/** Records of a commit's object list not added yet, in the list's order (its blobs only when `blobs`). */
async function* addListed(list: Buffer, added: OidTable, out: OidList, blobs = true): Steps<void> {
  for (let at = 0; at < list.length; at += OBJECT_RECORD_BYTES) {
    if (!blobs && list[at] !== OBJ_TREE) continue;
    if (!added.add(list, at + 1)) continue;
    out.push(list, list[at] === OBJ_TREE ? 'tree' : 'blob', at + 1);
    if (list[at] === OBJ_TREE) yield;
  }
}

/**
 * The trees and blobs of `tree` at the `wanted` paths ('' for the root itself), a level of trees at
 * a time: only directories on the way to a wanted path are read (a fetch sends a few paths of a
 * large tree).
 */
async function* pathsOf(tx: ProjectReads, tree: Oid, wanted: ReadonlySet<string>): Steps<Map<string, { oid: Oid; type: 'tree' | 'blob' }>> {
  const out = new Map<string, { oid: Oid; type: 'tree' | 'blob' }>();
  if (wanted.has('')) out.set('', { oid: tree, type: 'tree' });
  // Every directory a wanted path lies in (a directory's own directories are added with it).
  const entered = new Set<string>(['']);
  for (const path of wanted) {
    for (let at = path.lastIndexOf('/'); at > 0; at = path.lastIndexOf('/', at - 1)) {
      const dir = path.slice(0, at);
      if (entered.has(dir)) break;
      entered.add(dir);
    }
  }
  for (let level: Array<{ oid: Oid; dir: string }> = [{ oid: tree, dir: '' }]; level.length > 0; ) {
    const next: Array<{ oid: Oid; dir: string }> = [];
    for (let start = 0; start < level.length; start += TREES_PER_READ) {
      const batch = level.slice(start, start + TREES_PER_READ);
      const objects = await tx.getObjects(batch.map((pending) => pending.oid));
      batch.forEach(({ dir }, i) => {
        const object = objects[i];
        if (!object) return;
        for (const entry of decodeTree(object.body)) {
          if (entry.mode === MODE_GITLINK) continue;
          const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
          const isTree = entry.mode === MODE_TREE;
          if (wanted.has(path)) out.set(path, { oid: entry.oid, type: isTree ? 'tree' : 'blob' });
          if (isTree && entered.has(path)) next.push({ oid: entry.oid, dir: path });
        }
      });
      yield;
    }
    level = next;
  }
  return out;
}
