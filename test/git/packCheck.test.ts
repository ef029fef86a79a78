import { describe, expect, it } from 'vitest';
import { hashObject, type ObjectType, type Oid } from '../../src/git/oid.js';
import type { PackObject } from '../../src/git/pack.js';
import { historyGaps, receivedCommitObjects } from '../../src/git/packCheck.js';
import { encodeTree, MODE_FILE, MODE_GITLINK } from '../../src/git/tree.js';

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
