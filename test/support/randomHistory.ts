/**
 * Random histories with branches, merges and renames, for differential tests of history walks
 * (log by path, blame). Each commit is a whole tree; merges take each path from one parent or the
 * other, and sometimes edit the result (an "evil" merge). Files are text of numbered lines, so a
 * line's origin is easy to follow; moves keep most lines (git sees a rename) or few (it does not).
 */
import type { HistoryCommit, HistoryFile } from './history.js';

export class Random {
  private state: number;
  constructor(seed: number) {
    this.state = (seed | 1) >>> 0;
  }
  next(): number {
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return this.state & 0x7fffffff;
  }
  below(n: number): number {
    return n <= 0 ? 0 : this.next() % n;
  }
  chance(percent: number): boolean {
    return this.below(100) < percent;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.below(items.length)];
  }
}

type Tree = Map<string, string[]>;

export interface RandomHistory {
  commits: HistoryCommit[];
  /** Branch name → index of its tip commit. */
  branches: Map<string, number>;
  /** Every path any commit had, and the directories above them. */
  paths: string[];
}

const DIRS = ['', 'src', 'src/lib', 'docs', 'a b'];
const NAMES = ['main.ts', 'util.ts', 'readme.md', 'notes.txt', 'x', 'x-1', '\u00e9t\u00e9.txt'];

export function randomHistory(seed: number, options: { commits: number; rootParent: string; startTime: number }): RandomHistory {
  const random = new Random(seed);
  let counter = 0;
  // Many repeated lines, so diffs have choices to make (where the classic and histogram algorithms differ).
  const freshLines = (n: number) => Array.from({ length: n }, () => (random.chance(45) ? random.pick(['', '}', '{', '  return x;', '\tend', 'a', 'b']) : `line ${counter++}`));
  const randomPath = () => {
    const dir = random.pick(DIRS);
    const name = random.pick(NAMES);
    return dir === '' ? name : `${dir}/${name}`;
  };
  const blocked = (tree: Tree, path: string) => {
    if (tree.has(path)) return true;
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) if (tree.has(parts.slice(0, i).join('/'))) return true;
    for (const existing of tree.keys()) if (existing.startsWith(`${path}/`)) return true;
    return false;
  };
  const edit = (lines: string[]) => {
    const out = [...lines];
    for (let e = 1 + random.below(3); e > 0; e--) out.splice(random.below(out.length + 1), random.below(3), ...freshLines(random.below(4)));
    return out;
  };

  const trees: Tree[] = [];
  const commits: HistoryCommit[] = [];
  const allPaths = new Set<string>();
  let time = options.startTime;
  const add = (tree: Tree, parents: Array<number | string>) => {
    // Mostly increasing times, sometimes equal (ties keep the order commits were reached).
    time += random.chance(15) ? 0 : 1 + random.below(100);
    const files = new Map<string, HistoryFile>();
    for (const path of [...tree.keys()].sort()) {
      files.set(path, { mode: '100644', content: Buffer.from(tree.get(path)!.map((line) => `${line}\n`).join(''), 'utf8') });
      allPaths.add(path);
    }
    trees.push(tree);
    commits.push({ files, parents, time, message: `commit ${commits.length}\n` });
    return commits.length - 1;
  };

  const first: Tree = new Map();
  for (let i = 0; i < 6; i++) {
    const path = randomPath();
    if (!blocked(first, path)) first.set(path, freshLines(5 + random.below(25)));
  }
  const tips = new Map<string, number>([['main', add(first, [options.rootParent])]]);

  while (commits.length < options.commits) {
    const names = [...tips.keys()];
    const roll = random.below(100);
    if (roll < 10 && tips.size < 4) {
      tips.set(`topic-${tips.size}`, tips.get(random.pick(names))!);
      continue;
    }
    if (roll < 28 && names.length > 1) {
      // A merge of another branch into this one.
      const into = random.pick(names);
      const from = random.pick(names.filter((name) => name !== into && tips.get(name) !== tips.get(into)));
      if (from === undefined) continue;
      const ours = trees[tips.get(into)!];
      const theirs = trees[tips.get(from)!];
      const merged: Tree = new Map();
      for (const path of new Set([...ours.keys(), ...theirs.keys()])) {
        const pick = random.chance(50) ? (ours.get(path) ?? theirs.get(path)) : (theirs.get(path) ?? ours.get(path));
        if (pick && !blocked(merged, path)) merged.set(path, pick);
      }
      if (random.chance(20) && merged.size > 0) {
        const path = random.pick([...merged.keys()]);
        merged.set(path, edit(merged.get(path)!));
      }
      tips.set(into, add(merged, [tips.get(into)!, tips.get(from)!]));
      continue;
    }
    const branch = random.pick(names);
    const tree: Tree = new Map(trees[tips.get(branch)!]);
    for (let changes = 1 + random.below(3); changes > 0; changes--) {
      const paths = [...tree.keys()];
      const op = random.below(100);
      if (op < 50 && paths.length > 0) {
        const path = random.pick(paths);
        tree.set(path, edit(tree.get(path)!));
      } else if (op < 65 || paths.length === 0) {
        const path = randomPath();
        if (!blocked(tree, path)) tree.set(path, freshLines(3 + random.below(20)));
      } else if (op < 75 && paths.length > 1) {
        tree.delete(random.pick(paths));
      } else {
        // A move: mostly a rename git detects, sometimes too different to be one.
        const from = random.pick(paths);
        const lines = tree.get(from)!;
        tree.delete(from);
        const to = randomPath();
        if (blocked(tree, to)) {
          tree.set(from, lines);
          continue;
        }
        tree.set(to, random.chance(75) ? (random.chance(50) ? lines : edit(lines)) : [...lines.slice(0, 1), ...freshLines(lines.length + 3)]);
      }
    }
    tips.set(branch, add(tree, [tips.get(branch)!]));
  }
  const paths = new Set<string>();
  for (const path of allPaths) {
    paths.add(path);
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) paths.add(parts.slice(0, i).join('/'));
  }
  return { commits, branches: tips, paths: [...paths].sort() };
}
