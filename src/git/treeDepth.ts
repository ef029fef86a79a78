/**
 * How deep a tree goes, without recursion (README "Tree depth").
 *
 * git 2.47 added core.maxTreeDepth (Documentation/config/core.txt): "The maximum depth Git is
 * willing to recurse while traversing a tree (e.g., "a/b/cde/f" has a depth of 4)", 4096 by default.
 * Deeper trees make git refuse to walk them (and older gits, or any recursive walker, run out of
 * stack). Treehouse keeps every path within TREE_DEPTH_MAX components: a file "a/b/cde/f" has depth
 * 4 here too, and so does a directory "a/b/cde/f".
 */
import { OID_BYTES, oidToHex, type Oid } from './oid.js';
import { OidTable } from './oidTable.js';
import { knownMode, MODE_TREE } from './tree.js';

/** git's core.maxTreeDepth default: the most components a path may have. */
export const TREE_DEPTH_MAX = 4096;

const SPACE = 0x20;
const NUL = 0;

/** Path components of a path ("" has none). */
export function pathDepth(path: string): number {
  if (path === '') return 0;
  let depth = 1;
  for (let at = path.indexOf('/'); at >= 0; at = path.indexOf('/', at + 1)) depth++;
  return depth;
}

interface Frame {
  oid: Oid;
  /** The tree's body, and where the ids of its subtrees start in it. */
  body: Buffer;
  subtrees: number[];
  next: number;
  /** Components of the deepest path inside this tree, counted from it (0 for an empty tree). */
  height: number;
}

/**
 * The height of a tree: the components of the deepest path in it (a tree holding only files has
 * height 1, the empty tree 0). `readTree` gives a tree's body, or undefined when it is not there (it
 * then counts as empty: connectivity is checked elsewhere). Stops early and returns `limit + 1` as
 * soon as a path deeper than `limit` is found. `memo` keeps the heights of finished subtrees
 * across calls, so trees shared by many commits are read once.
 */
export function treeHeight(root: Oid, readTree: (oid: Oid) => Buffer | undefined, limit = Infinity, memo = new OidTable()): number {
  const known = memo.get(root);
  if (known >= 0) return known;
  const open = (oid: Oid): Frame => {
    const body = readTree(oid);
    return { oid, body: body ?? EMPTY, subtrees: body ? subtreeOffsets(body) : [], next: 0, height: body && body.length > 0 ? 1 : 0 };
  };
  const stack: Frame[] = [open(root)];
  if (stack[0].height > limit) return limit + 1;
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    // The entries of the tree at stack level L lie at depth L; a subtree of height h adds h.
    const level = stack.length;
    if (top.next < top.subtrees.length) {
      const at = top.subtrees[top.next++];
      const childHeight = memo.get(top.body, at);
      if (childHeight >= 0) {
        top.height = Math.max(top.height, 1 + childHeight);
        if (level + childHeight > limit) return limit + 1;
        continue;
      }
      const frame = open(top.body.subarray(at, at + OID_BYTES));
      if (level + frame.height > limit) return limit + 1;
      stack.push(frame);
      continue;
    }
    stack.pop();
    memo.add(top.oid, 0, top.height);
    if (stack.length > 0) {
      const parent = stack[stack.length - 1];
      parent.height = Math.max(parent.height, 1 + top.height);
    }
  }
  return memo.get(root);
}

const EMPTY = Buffer.alloc(0);

/** Where the ids of a tree body's subtrees start in it. */
function subtreeOffsets(body: Buffer): number[] {
  const subtrees: number[] = [];
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(SPACE, offset);
    const nul = space < 0 ? -1 : body.indexOf(NUL, space + 1);
    if (nul < 0 || nul + 1 + OID_BYTES > body.length) break;
    if (knownMode(body, offset, space) === MODE_TREE) subtrees.push(nul + 1);
    offset = nul + 1 + OID_BYTES;
  }
  return subtrees;
}

/**
 * Why the trees of these commits cannot be taken, or null: the first commit whose tree has a path
 * deeper than TREE_DEPTH_MAX. Shared subtrees are measured once.
 */
export function commitTreesDepthProblem(commits: ReadonlyArray<{ commit: Oid; tree: Oid }>, readTree: (oid: Oid) => Buffer | undefined): string | null {
  const memo = new OidTable();
  for (const { commit, tree } of commits) {
    if (treeHeight(tree, readTree, TREE_DEPTH_MAX, memo) > TREE_DEPTH_MAX) return treeDepthProblem(commit);
  }
  return null;
}

/** Why a commit whose tree is deeper than TREE_DEPTH_MAX is refused. */
export function treeDepthProblem(commit: Oid): string {
  return `the tree of commit ${oidToHex(commit)} has paths deeper than ${TREE_DEPTH_MAX} components (git's core.maxTreeDepth)`;
}
