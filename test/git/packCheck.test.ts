import { describe, expect, it } from 'vitest';
import { hashObject, type ObjectType, type Oid } from '../../src/git/oid.js';
import type { PackObject } from '../../src/git/pack.js';
import { checkParsedPack, historyGaps, receivedCommitObjects } from '../../src/git/packCheck.js';
import { encodeTree, MODE_FILE, MODE_GITLINK, MODE_TREE } from '../../src/git/tree.js';
import { commitTreesDepthProblem, TREE_DEPTH_MAX } from '../../src/git/treeDepth.js';

function object(type: ObjectType, body: Buffer): PackObject {
  return { type, body, oid: hashObject(type, body), offset: 0, deltaDepth: 0 };
}

function commit(tree: Oid, parents: Oid[], message: string): PackObject {
  const lines = [`tree ${tree.toString('hex')}`, ...parents.map((parent) => `parent ${parent.toString('hex')}`)];
  return object('commit', Buffer.from(`${lines.join('\n')}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\n${message}\n`));
}

const hex = (oid: Oid) => oid.toString('hex');

describe('historyGaps', () => {
  const stored = object('commit', Buffer.from('stands for a commit the store has'));
  const absentParent = hashObject('commit', Buffer.from('a parent nobody has'));
  const blob = object('blob', Buffer.from('content\n'));
  const submodule = hashObject('commit', Buffer.from('a submodule commit, kept elsewhere'));
  const tree = object('tree', encodeTree([
    { name: 'file', mode: MODE_FILE, oid: blob.oid },
    { name: 'module', mode: MODE_GITLINK, oid: submodule },
  ]));
  const has = (oid: Oid) => oid.equals(stored.oid);

  it('finds nothing missing in a history that reaches the store, submodule commits aside', () => {
    const top = commit(tree.oid, [stored.oid], 'on what the store has');
    expect(historyGaps([top, tree, blob], has, new Set()).size).toBe(0);
  });

  it('gives every object above a missing one that gap, and says when a shallow clone cut it', () => {
    const cut = commit(tree.oid, [absentParent], 'shallow in the client');
    const above = commit(tree.oid, [cut.oid], 'on top');
    const objects = [above, cut, tree, blob];
    const plain = historyGaps(objects, has, new Set());
    expect([...plain.keys()].sort()).toEqual([hex(above.oid), hex(cut.oid)].sort());
    expect(plain.get(hex(above.oid))).toEqual({ missing: hex(absentParent), shallow: false });
    const shallow = historyGaps(objects, has, new Set([hex(cut.oid)]));
    expect(shallow.get(hex(above.oid))).toEqual({ missing: hex(absentParent), shallow: true });
    // The tree and blob are complete and may be stored.
    expect(shallow.has(hex(tree.oid))).toBe(false);
  });

  it('finds a tree entry that neither the pack nor the store has', () => {
    const lacking = object('tree', encodeTree([{ name: 'gone', mode: MODE_FILE, oid: hashObject('blob', Buffer.from('gone')) }]));
    const top = commit(lacking.oid, [stored.oid], 'names a missing blob');
    const gaps = historyGaps([top, lacking], has, new Set());
    expect([...gaps.keys()].sort()).toEqual([hex(top.oid), hex(lacking.oid)].sort());
  });

  it('walks a long history without recursion', () => {
    let parent = stored.oid;
    const commits: PackObject[] = [];
    for (let i = 0; i < 50_000; i++) {
      const next = commit(tree.oid, [parent], `commit ${i}`);
      commits.push(next);
      parent = next.oid;
    }
    expect(historyGaps([...commits.reverse(), tree, blob], has, new Set()).size).toBe(0);
  });
});

describe('checkParsedPack: tree depth measured during the history walk', () => {
  const blob = object('blob', Buffer.from('leaf\n'));

  /** A chain of `height` trees (the deepest holds the blob), each level also holding a file; from the bottom up. */
  function chain(height: number, salt: string): PackObject[] {
    const trees: PackObject[] = [];
    let below = object('tree', encodeTree([{ name: `f-${salt}`, mode: MODE_FILE, oid: blob.oid }]));
    trees.push(below);
    for (let level = 1; level < height; level++) {
      below = object('tree', encodeTree([{ name: 'd', mode: MODE_TREE, oid: below.oid }, { name: 'f', mode: MODE_FILE, oid: blob.oid }]));
      trees.push(below);
    }
    return trees;
  }

  /**
   * Commits on chains whose lower `storedLevels` trees the store holds and whose upper ones come in
   * the pack; the verdict must be what commitTreesDepthProblem says of the same trees.
   */
  function verdicts(cases: Array<{ height: number; storedLevels: number }>) {
    const stored = new Map<string, PackObject>([[hex(blob.oid), blob]]);
    const received: PackObject[] = [];
    const commits: Array<{ commit: Oid; tree: Oid }> = [];
    cases.forEach(({ height, storedLevels }, i) => {
      const trees = chain(height, String(i));
      trees.forEach((tree, level) => (level < storedLevels ? stored.set(hex(tree.oid), tree) : received.push(tree)));
      const top = commit(trees[trees.length - 1].oid, [], `case ${i}`);
      received.push(top);
      commits.push({ commit: top.oid, tree: trees[trees.length - 1].oid });
    });
    const lookups = { object: (oid: Oid) => stored.get(hex(oid)), has: (oid: Oid) => stored.has(hex(oid)) };
    const all = new Map([...stored, ...received.map((found) => [hex(found.oid), found] as const)]);
    // Tops first, as a pack lists them; the first commit in that order is the one named.
    const objects = received.reverse();
    const inPackOrder = objects.filter((found) => found.type === 'commit').map((top) => commits.find((entry) => entry.commit.equals(top.oid))!);
    const expected = commitTreesDepthProblem(inPackOrder, (oid) => all.get(hex(oid))?.body);
    const result = checkParsedPack(objects, lookups);
    return { expected, actual: result.ok ? null : result.message, gaps: result.ok ? result.gaps.size : -1 };
  }

  it('takes trees exactly TREE_DEPTH_MAX deep, received whole or on stored subtrees, and refuses one a level deeper', () => {
    for (const storedLevels of [0, 1, TREE_DEPTH_MAX - 1, 2048]) {
      const fits = verdicts([{ height: TREE_DEPTH_MAX, storedLevels }]);
      expect(fits).toEqual({ expected: null, actual: null, gaps: 0 });
      const over = verdicts([{ height: TREE_DEPTH_MAX + 1, storedLevels }]);
      expect(over.expected).toMatch(/deeper than 4096 components/);
      expect(over.actual).toBe(over.expected);
    }
  });

  it('names the same first commit as measuring each tree alone, whatever the mix', () => {
    const mixed = verdicts([
      { height: 3, storedLevels: 0 },
      { height: TREE_DEPTH_MAX + 2, storedLevels: 100 },
      { height: TREE_DEPTH_MAX + 1, storedLevels: 0 },
      { height: TREE_DEPTH_MAX, storedLevels: 4000 },
    ]);
    expect(mixed.expected).not.toBeNull();
    expect(mixed.actual).toBe(mixed.expected);
  });
});

describe('receivedCommitObjects', () => {
  const blob = object('blob', Buffer.from('content\n'));
  const tree = object('tree', encodeTree([{ name: 'file', mode: MODE_FILE, oid: blob.oid }]));
  const read = (objects: PackObject[]) => (oid: Oid) => objects.find((found) => found.oid.equals(oid));

  it('lists a root commit whole, and gives no list (without throwing) where a tree or a parent tree is not there or not a tree', () => {
    const root = commit(tree.oid, [], 'root');
    const treeless = commit(hashObject('tree', Buffer.from('absent')), [], 'names an absent tree');
    const onBlob = commit(tree.oid, [blob.oid], 'a parent that is a blob');
    const onAbsent = commit(tree.oid, [hashObject('commit', Buffer.from('absent'))], 'a parent nobody has');
    const objects = [root, treeless, onBlob, onAbsent, tree, blob];
    const lists = receivedCommitObjects(objects, new Map(), read(objects));
    expect([...lists.keys()]).toEqual([0]);
    expect(lists.get(0)).toEqual(Buffer.concat([Buffer.from([2]), tree.oid, Buffer.from([3]), blob.oid]));
  });

  it('diffs a pair of trees once however many commits repeat it, and stops listing past its budget of tree bytes', () => {
    const files = (tag: string) => Array.from({ length: 200 }, (_, i) => ({ name: `f${i}`, mode: MODE_FILE, oid: hashObject('blob', Buffer.from(`${tag} ${i}`)) }));
    const left = object('tree', encodeTree(files('left')));
    const right = object('tree', encodeTree(files('right')));
    // A hostile chain: 2,000 commits alternating two large trees, each diffed against the other.
    const chain: PackObject[] = [commit(left.oid, [], 'root')];
    for (let i = 1; i < 2000; i++) chain.push(commit(i % 2 ? right.oid : left.oid, [chain[i - 1].oid], `commit ${i}`));
    const objects = [...chain, left, right];
    let treeReads = 0;
    const counting = (oid: Oid) => {
      const found = read(objects)(oid);
      if (found?.type === 'tree') treeReads++;
      return found;
    };
    const lists = receivedCommitObjects(objects, new Map(), counting);
    expect(lists.size).toBe(2000);
    // The root's tree, then each of the two pairs: five tree reads in all, not 4,000.
    expect(treeReads).toBe(5);
    expect(lists.get(2)).toBe(lists.get(4));
    // A budget of about one tree: the root is listed, the rest get none (and are walked when cloned).
    const small = receivedCommitObjects(objects, new Map(), read(objects), left.body.length + 10);
    expect([...small.keys()]).toEqual([0]);
  });

  it('gives no list to a commit with a gap', () => {
    const root = commit(tree.oid, [], 'root');
    const objects = [root, tree, blob];
    expect(receivedCommitObjects(objects, new Map([[hex(root.oid), { missing: 'x', shallow: false }]]), read(objects)).size).toBe(0);
  });
});
