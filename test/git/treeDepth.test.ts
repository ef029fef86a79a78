import { OidTable } from '../../src/git/oidTable.js';
import { describe, expect, it } from 'vitest';
import { hashObject, oidToHex, type Oid } from '../../src/git/oid.js';
import { encodeTree } from '../../src/git/tree.js';
import { pathDepth, TREE_DEPTH_MAX, treeHeight } from '../../src/git/treeDepth.js';

/** An in-memory object set: trees by hex id. */
function trees() {
  const stored = new Map<string, Buffer>();
  const blob = hashObject('blob', Buffer.from('x'));
  const put = (entries: Parameters<typeof encodeTree>[0]): Oid => {
    const body = encodeTree(entries);
    const oid = hashObject('tree', body);
    stored.set(oidToHex(oid), body);
    return oid;
  };
  /** A chain of `depth` directories "a/a/…" with one file at the bottom: height depth + 1. */
  const chain = (depth: number): Oid => {
    let tree = put([{ name: 'f', mode: '100644', oid: blob }]);
    for (let i = 0; i < depth; i++) tree = put([{ name: 'a', mode: '40000', oid: tree }]);
    return tree;
  };
  const reads: string[] = [];
  const read = (oid: Oid) => {
    reads.push(oidToHex(oid));
    return stored.get(oidToHex(oid));
  };
  return { put, chain, read, reads, blob };
}

describe('pathDepth', () => {
  it('counts components as core.maxTreeDepth does ("a/b/cde/f" is 4)', () => {
    expect(pathDepth('a/b/cde/f')).toBe(4);
    expect(pathDepth('f')).toBe(1);
    expect(pathDepth('')).toBe(0);
    expect(TREE_DEPTH_MAX).toBe(4096);
  });
});

describe('treeHeight', () => {
  it('is the components of the deepest path, 0 for the empty tree', () => {
    const { put, chain, read, blob } = trees();
    expect(treeHeight(put([]), read)).toBe(0);
    expect(treeHeight(put([{ name: 'f', mode: '100644', oid: blob }]), read)).toBe(1);
    const empty = put([]);
    // An empty subdirectory is itself a path: "e" has depth 1, and nothing lies below it.
    expect(treeHeight(put([{ name: 'e', mode: '40000', oid: empty }]), read)).toBe(1);
    const mixed = put([
      { name: 'shallow', mode: '40000', oid: chain(1) },
      { name: 'deep', mode: '40000', oid: chain(5) },
      { name: 'g', mode: '120000', oid: blob },
      { name: 'sub', mode: '160000', oid: blob },
    ]);
    expect(treeHeight(mixed, read)).toBe(7);
  });

  it('walks a 100,000-deep chain without recursion, and stops early past a limit', () => {
    const { chain, read, reads } = trees();
    const deep = chain(100_000);
    expect(treeHeight(deep, read)).toBe(100_001);
    reads.length = 0;
    expect(treeHeight(deep, read, TREE_DEPTH_MAX)).toBe(TREE_DEPTH_MAX + 1);
    expect(reads.length).toBeLessThanOrEqual(TREE_DEPTH_MAX + 1);
    expect(treeHeight(chain(TREE_DEPTH_MAX - 1), read, TREE_DEPTH_MAX)).toBe(TREE_DEPTH_MAX);
  });

  it('reads a shared subtree once and remembers heights across calls', () => {
    const { put, chain, read, reads } = trees();
    const shared = chain(50);
    const root = put([
      { name: 'x', mode: '40000', oid: shared },
      { name: 'y', mode: '40000', oid: shared },
    ]);
    const memo = new OidTable();
    expect(treeHeight(root, read, Infinity, memo)).toBe(52);
    expect(reads.filter((hex) => hex === oidToHex(shared))).toHaveLength(1);
    reads.length = 0;
    const other = put([{ name: 'z', mode: '40000', oid: root }]);
    expect(treeHeight(other, read, Infinity, memo)).toBe(53);
    expect(reads).toEqual([oidToHex(other)]);
    // A remembered subtree still counts against the limit where it is used.
    expect(treeHeight(put([{ name: 'w', mode: '40000', oid: other }]), read, 53, memo)).toBe(54);
  });
});
