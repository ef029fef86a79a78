/**
 * Merge bases and commit merges, as `git merge-tree --write-tree <ours> <theirs>` does them:
 *   - the bases are the best common ancestors (`git merge-base --all`; commit-reach.c
 *     get_merge_bases()): common ancestors that are not ancestors of another common ancestor;
 *   - with several bases (criss-cross histories) merge-ort merges them first, oldest first, into
 *     a virtual merge base (merge-ort.c merge_ort_internal()): each step merges the bases with
 *     their own merge bases, recursively, at depth + 1. Conflicts inside a virtual base do not
 *     stop anything: the virtual tree keeps what merge-ort keeps there — text with conflict
 *     markers ("<<<<<<<<< Temporary merge branch 1", two more marker characters per depth), the
 *     base version for modify/delete and for binary or symlink conflicts, a file moved aside as
 *     "<path>~Temporary merge branch N" for file/directory conflicts — and the real merge then
 *     merges against that tree. No virtual object reaches the store.
 */
import { EMPTY_TREE_OID, hashObject, oidToHex, type Oid } from '../../git/oid.js';
import { mergeTreesWith, StagedObjects, type MergeLabels, type MergeObjects, type TreeMergeOutcome, type TreeMergeResult } from './mergeTrees.js';
import { MaxHeap } from '../maxHeap.js';

/**
 * What a merge needs to know about commits. `generation` must grow from parent to child. The walk
 * asks about a commit's parents together, so an implementation may gather the reads asked for at
 * one moment into one batch.
 */
export interface CommitGraph {
  parents(oid: Oid): Promise<Oid[]>;
  generation(oid: Oid): Promise<number>;
  commitTime(oid: Oid): Promise<number>;
  tree(oid: Oid): Promise<Oid>;
}

const FROM_FIRST = 1;
const FROM_SECOND = 2;
const STALE = 4;
const RESULT = 8;

interface WalkNode {
  oid: Oid;
  flags: number;
  generation: number;
  time: number;
  hex: string;
  /** How many times the node sits in the queue right now. */
  queued: number;
}

/**
 * Best common ancestors of `a` and `b`, newest commit first (git's order). The walk visits
 * commits by decreasing generation and stops as soon as every queued commit is known to be below
 * a common ancestor already found, so its cost grows with the distance to the bases, not with
 * the history.
 */
export async function mergeBases(graph: CommitGraph, a: Oid, b: Oid): Promise<Oid[]> {
  if (a.equals(b)) return [a];
  // Promises, so that a commit asked for twice before it is read is still one node.
  const nodes = new Map<string, Promise<WalkNode>>();
  const node = (oid: Oid): Promise<WalkNode> => {
    const hex = oidToHex(oid);
    let found = nodes.get(hex);
    if (!found) {
      found = Promise.all([graph.generation(oid), graph.commitTime(oid)]).then(([generation, time]) => ({ oid, hex, flags: 0, generation, time, queued: 0 }));
      nodes.set(hex, found);
    }
    return found;
  };
  const queue = new MaxHeap<WalkNode>(compareForWalk);
  let nonStaleQueued = 0;
  const addFlags = (target: WalkNode, flags: number) => {
    const wasStale = (target.flags & STALE) !== 0;
    target.flags |= flags;
    if (!wasStale && (target.flags & STALE) !== 0) nonStaleQueued -= target.queued;
  };
  const push = (target: WalkNode) => {
    queue.push(target);
    target.queued++;
    if ((target.flags & STALE) === 0) nonStaleQueued++;
  };

  const [first, second] = await Promise.all([node(a), node(b)]);
  addFlags(first, FROM_FIRST);
  addFlags(second, FROM_SECOND);
  push(first);
  push(second);
  const found: WalkNode[] = [];
  while (nonStaleQueued > 0) {
    const commit = queue.pop()!;
    commit.queued--;
    if ((commit.flags & STALE) === 0) nonStaleQueued--;
    let flags = commit.flags & (FROM_FIRST | FROM_SECOND | STALE);
    if (flags === (FROM_FIRST | FROM_SECOND)) {
      if ((commit.flags & RESULT) === 0) {
        addFlags(commit, RESULT);
        found.push(commit);
      }
      // Everything below a common ancestor is a worse one.
      flags |= STALE;
    }
    const parents = await Promise.all((await graph.parents(commit.oid)).map(node));
    for (const parent of parents) {
      if ((parent.flags & flags) === flags) continue;
      addFlags(parent, flags);
      push(parent);
    }
  }
  const bases = await removeRedundant(
    graph,
    found.filter((candidate) => (candidate.flags & STALE) === 0),
    node,
  );
  bases.sort((x, y) => y.time - x.time || y.generation - x.generation || (x.hex < y.hex ? -1 : x.hex > y.hex ? 1 : 0));
  return bases.map((base) => base.oid);
}

function compareForWalk(x: WalkNode, y: WalkNode): number {
  return x.generation - y.generation || x.time - y.time || (x.hex < y.hex ? 1 : x.hex > y.hex ? -1 : 0);
}

/** Drops candidates that are ancestors of other candidates (git's remove_redundant()). */
async function removeRedundant(graph: CommitGraph, candidates: WalkNode[], node: (oid: Oid) => Promise<WalkNode>): Promise<WalkNode[]> {
  if (candidates.length < 2) return candidates;
  const kept: WalkNode[] = [];
  for (const candidate of candidates) {
    if (!(await reachesFromNewer(graph, candidate, candidates, node))) kept.push(candidate);
  }
  return kept;
}

/** Whether `candidate` is an ancestor of one of the other, newer, candidates. */
async function reachesFromNewer(graph: CommitGraph, candidate: WalkNode, candidates: WalkNode[], node: (oid: Oid) => Promise<WalkNode>): Promise<boolean> {
  const others = candidates.filter((other) => other !== candidate && other.generation > candidate.generation);
  const seen = new Set<string>();
  const stack = others.map((other) => other.oid);
  while (stack.length > 0) {
    const current = await node(stack.pop()!);
    if (seen.has(current.hex)) continue;
    seen.add(current.hex);
    if (current === candidate) return true;
    if (current.generation <= candidate.generation) continue;
    stack.push(...(await graph.parents(current.oid)));
  }
  return false;
}

/**
 * Merges two commits like `git merge-tree --write-tree`: against their merge base, or against a
 * virtual base built from several (see the module comment), or against the empty tree when they
 * share no history. A clean result's objects are written to `objects`; a conflicted merge writes
 * nothing. `bases` are the real merge bases, newest first.
 */
export async function mergeCommits(objects: MergeObjects, graph: CommitGraph, ours: Oid, theirs: Oid): Promise<TreeMergeResult & { bases: Oid[] }> {
  const { outcome, staged, bases } = await computeMerge(objects, graph, ours, theirs);
  if (!outcome.clean) return { clean: false, conflicts: outcome.conflicts, bases };
  staged.flush(outcome.tree);
  return { clean: true, tree: outcome.tree, pathDepthMax: outcome.pathDepthMax, specialFiles: outcome.specialFiles, bases };
}

/**
 * The merge of two commits in memory, applied to nothing: the outcome (the tree git would write,
 * conflicted or not, and the conflicts), the staged objects that tree is made of (readable through
 * `staged`; flush() stores them), and the merge bases, newest first.
 */
export async function computeMerge(
  objects: MergeObjects,
  graph: CommitGraph,
  ours: Oid,
  theirs: Oid,
  labels?: MergeLabels,
): Promise<{ outcome: TreeMergeOutcome; staged: StagedObjects; bases: Oid[] }> {
  const staged = new StagedObjects(objects);
  const commits = new VirtualCommits(graph);
  const bases = await mergeBases(graph, ours, theirs);
  const outcome = await mergeRecursively(staged, commits, ours, theirs, [...bases].reverse(), 0, labels);
  return { outcome, staged, bases };
}

/** merge_ort_internal(): fold the bases (oldest first) into one, then merge at `depth`. */
async function mergeRecursively(
  objects: StagedObjects,
  commits: VirtualCommits,
  ours: Oid,
  theirs: Oid,
  basesOldestFirst: Oid[] | null,
  depth: number,
  labels?: MergeLabels,
): Promise<TreeMergeOutcome> {
  const bases = basesOldestFirst ?? (await mergeBases(commits, ours, theirs)).reverse();
  let mergedBase = bases.length > 0 ? bases[0] : await commits.create(EMPTY_TREE_OID, []);
  for (const next of bases.slice(1)) {
    const previous = mergedBase;
    const inner = await mergeRecursively(objects, commits, previous, next, null, depth + 1);
    mergedBase = await commits.create(inner.tree, [previous, next]);
  }
  const [baseTree, oursTree, theirsTree] = await Promise.all([commits.tree(mergedBase), commits.tree(ours), commits.tree(theirs)]);
  return mergeTreesWith(objects, baseTree, oursTree, theirsTree, { depth, labels });
}

/** The commit graph plus the virtual commits made for merged merge bases. */
class VirtualCommits implements CommitGraph {
  private readonly virtual = new Map<string, { tree: Oid; parents: Oid[]; generation: number }>();

  constructor(private readonly graph: CommitGraph) {}

  async create(tree: Oid, parents: Oid[]): Promise<Oid> {
    const generations = await Promise.all(parents.map((parent) => this.generation(parent)));
    const oid = hashObject('commit', Buffer.from(`virtual merge base ${this.virtual.size}\n`, 'utf8'));
    this.virtual.set(oidToHex(oid), { tree, parents, generation: 1 + Math.max(0, ...generations) });
    return oid;
  }

  async parents(oid: Oid): Promise<Oid[]> {
    return this.virtual.get(oidToHex(oid))?.parents ?? this.graph.parents(oid);
  }

  async generation(oid: Oid): Promise<number> {
    return this.virtual.get(oidToHex(oid))?.generation ?? this.graph.generation(oid);
  }

  /** git gives virtual commits the date 0. */
  async commitTime(oid: Oid): Promise<number> {
    return this.virtual.has(oidToHex(oid)) ? 0 : this.graph.commitTime(oid);
  }

  async tree(oid: Oid): Promise<Oid> {
    return this.virtual.get(oidToHex(oid))?.tree ?? this.graph.tree(oid);
  }
}
