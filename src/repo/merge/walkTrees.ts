/** Walking three trees in step, in the order merge-ort meets their paths (tree-walk.c). */
import { byteOrderKey } from '../../git/pathBytes.js';
import type { TreeEntry } from '../../git/tree.js';

const SLASH = 0x2f;

export type Row = [TreeEntry | undefined, TreeEntry | undefined, TreeEntry | undefined];

/** git's name_compare(): bytes, then the shorter name first (keys from byteOrderKey). */
function nameCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * check_entry_match(): 0 if `b` is `a`; 1 if `a` may still come later in the tree (after `b`,
 * or hidden behind a blob "a-2" as the subtree "a"); -1 if `a` is not in the tree.
 */
function checkEntryMatch(a: string, b: string): number {
  const cmp = nameCompare(a, b);
  if (cmp === 0) return 0;
  if (cmp > 0) return 1;
  if (a.length < b.length && b.startsWith(a) && b.charCodeAt(a.length) < SLASH) return 1;
  return -1;
}

/**
 * traverse_trees() for three trees: walks their entries (each in stored tree order, where a
 * directory "t" sorts as "t/") in step, each round taking the smallest name among the trees'
 * next entries and pulling that name out of every tree, even where a subtree "t" hides behind
 * blobs such as "t-1". This is the order merge-ort meets paths in.
 */
export function walkTogether(trees: readonly TreeEntry[][]): Row[] {
  const names = [orderKeys(trees[0]), orderKeys(trees[1]), orderKeys(trees[2])];
  const positions = [0, 0, 0];
  // Entries taken out of order (a subtree "t" found behind "t-1"): rare, so made only when met.
  const returnedEarly: Array<Set<number> | null> = [null, null, null];
  const head = (t: number): number => {
    const early = returnedEarly[t];
    if (early) while (positions[t] < trees[t].length && early.has(positions[t])) positions[t]++;
    return positions[t] < trees[t].length ? positions[t] : -1;
  };
  const found = [-1, -1, -1];
  const rows: Row[] = [];
  for (;;) {
    let first: string | null = null;
    for (let t = 0; t < 3; t++) {
      const h = head(t);
      if (h >= 0 && (first === null || nameCompare(names[t][h], first) < 0)) first = names[t][h];
    }
    if (first === null) break;
    for (let t = 0; t < 3; t++) {
      found[t] = -1;
      for (let probe = head(t); probe >= 0 && probe < trees[t].length; probe++) {
        const match = checkEntryMatch(first, names[t][probe]);
        if (match === 0) found[t] = probe;
        if (match !== 1) break;
      }
    }
    rows.push([found[0] >= 0 ? trees[0][found[0]] : undefined, found[1] >= 0 ? trees[1][found[1]] : undefined, found[2] >= 0 ? trees[2][found[2]] : undefined]);
    for (let t = 0; t < 3; t++) {
      if (found[t] < 0) continue;
      if (found[t] === positions[t]) positions[t]++;
      else (returnedEarly[t] ??= new Set()).add(found[t]);
    }
  }
  return rows;
}

/** Each entry's name as a byte-order key, made once per tree read (a merge walks a directory's trees twice: readAhead and collect). */
const keysOfTree = new WeakMap<readonly TreeEntry[], string[]>();

function orderKeys(entries: readonly TreeEntry[]): string[] {
  let keys = keysOfTree.get(entries);
  if (!keys) {
    keys = entries.map((entry) => byteOrderKey(entry.name));
    keysOfTree.set(entries, keys);
  }
  return keys;
}
