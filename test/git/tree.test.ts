import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { hashObject, oidFromHex, oidToHex } from '../../src/git/oid.js';
import { compareTreeNames, decodeTree, encodeTree, encodeTreeSorted, ENTRY_FILE, ENTRY_GITLINK, ENTRY_TREE, knownMode, TreeCursor, TreeFormatError, type TreeEntry } from '../../src/git/tree.js';
import { treeHeight } from '../../src/git/treeDepth.js';
import { git, initBareRepo, scratchDir } from '../support/git.js';

const scratch = scratchDir();
initBareRepo(scratch.path);
afterAll(() => scratch.remove());

function blob(content: string) {
  const hex = git(['hash-object', '-w', '--stdin'], { cwd: scratch.path, input: content }).trim();
  return oidFromHex(hex);
}

function mktree(entries: TreeEntry[]): string {
  const typeOf = (mode: string) => (mode === '40000' ? 'tree' : 'blob');
  const input = entries.map((e) => `${e.mode} ${typeOf(e.mode)} ${oidToHex(e.oid)}\t${e.name}\n`).join('');
  return git(['mktree'], { cwd: scratch.path, input }).trim();
}

describe('encodeTree', () => {
  it('writes the empty tree', () => {
    expect(oidToHex(hashObject('tree', encodeTree([])))).toBe('4b825dc642cb6eb9a060e54bf8d69288fbee4904');
  });

  it('sorts directories as if their name ended in "/" and equals git mktree', () => {
    const file = blob('x\n');
    const subtree = oidFromHex(mktree([{ name: 'inner', mode: '100644', oid: file }]));
    const entries: TreeEntry[] = [
      { name: 'a', mode: '40000', oid: subtree },
      { name: 'a-b', mode: '100644', oid: file },
      { name: 'a.b', mode: '100755', oid: file },
      { name: 'a0', mode: '120000', oid: blob('target') },
      { name: 'Zeta', mode: '100644', oid: file },
      { name: 'ünïcødé', mode: '100644', oid: file },
      { name: 'b', mode: '100644', oid: file },
    ];
    const ours = hashObject('tree', encodeTree(entries));
    expect(oidToHex(ours)).toBe(mktree(entries));
    const decodedNames = decodeTree(encodeTree(entries)).map((e) => e.name);
    expect(decodedNames).toEqual(['Zeta', 'a-b', 'a.b', 'a', 'a0', 'b', 'ünïcødé']);
  });

  it('round-trips through decodeTree and refuses duplicates and truncation', () => {
    const file = blob('y\n');
    const entries: TreeEntry[] = [{ name: 'x', mode: '100644', oid: file }];
    expect(decodeTree(encodeTree(entries))).toEqual(entries);
    expect(() => encodeTree([...entries, ...entries])).toThrow(/duplicate/);
    // A file and a directory of one name are not neighbours in git order, and still duplicates.
    const dir = oidFromHex(mktree(entries));
    const apart: TreeEntry[] = [{ name: 'a', mode: '100644', oid: file }, { name: 'a-b', mode: '100644', oid: file }, { name: 'a', mode: '40000', oid: dir }];
    expect(() => encodeTree(apart)).toThrow(/duplicate/);
    expect(() => decodeTree(encodeTree(entries).subarray(0, 10))).toThrow();
    expect(() => decodeTree(Buffer.from('99999 x\0' + 'a'.repeat(20), 'latin1'))).toThrow(/mode/);
  });
});

describe('encodeTreeSorted', () => {
  // Names from a small alphabet so that prefixes, '-', '.', '0' (around '/') and non-ASCII
  // (2-, 3- and 4-byte UTF-8, where UTF-16 order and byte order disagree) collide often.
  const name = fc
    .array(fc.constantFrom('a', 'b', '-', '.', '0', 'é', '\uffef', '\u{1f600}'), { minLength: 1, maxLength: 4 })
    .map((parts) => parts.join(''));
  const oid = hashObject('blob', Buffer.from('same'));

  it('orders entries as compareTreeNames does, ASCII or not, and the body holds that order', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.record({ name, tree: fc.boolean() }), { selector: (e) => e.name, maxLength: 12 }), (picked) => {
        const entries: TreeEntry[] = picked.map((e) => ({ name: e.name, mode: e.tree ? '40000' : '100644', oid }));
        const expected = [...entries].sort((a, b) =>
          compareTreeNames(Buffer.from(a.name), a.mode === '40000', Buffer.from(b.name), b.mode === '40000'),
        );
        const { body, sorted } = encodeTreeSorted(entries);
        expect(sorted.map((e) => e.name)).toEqual(expected.map((e) => e.name));
        expect(decodeTree(body).map((e) => e.name)).toEqual(expected.map((e) => e.name));
      }),
      { numRuns: 500 },
    );
  });

  // Input already in git order skips the sort (asciiInGitOrder): it must give what any other order gives.
  it('gives one body for every order of the same entries, and refuses a repeated name in any order', () => {
    const gitOrder = (entries: TreeEntry[]) =>
      [...entries].sort((a, b) => compareTreeNames(Buffer.from(a.name), a.mode === '40000', Buffer.from(b.name), b.mode === '40000'));
    // ASCII names alone too: one non-ASCII name anywhere sends the whole tree to the sort.
    const asciiName = fc.array(fc.constantFrom('a', 'b', '-', '.', '0'), { minLength: 1, maxLength: 4 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.array(fc.record({ name: fc.oneof(name, asciiName, asciiName), tree: fc.boolean() }), { maxLength: 12 }), (picked) => {
        const entries: TreeEntry[] = picked.map((e) => ({ name: e.name, mode: e.tree ? '40000' : '100644', oid }));
        const repeated = new Set(entries.map((e) => e.name)).size !== entries.length;
        const orders = [entries, gitOrder(entries), gitOrder(entries).reverse()];
        if (repeated) {
          for (const order of orders) expect(() => encodeTree(order)).toThrow(/duplicate/);
          return;
        }
        const bodies = orders.map((order) => encodeTree(order).toString('hex'));
        expect(new Set(bodies).size).toBe(1);
        expect(encodeTreeSorted(gitOrder(entries)).sorted.map((e) => e.name)).toEqual(gitOrder(entries).map((e) => e.name));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('TreeCursor', () => {
  const entries: TreeEntry[] = [
    { name: 'a.txt', mode: '100644', oid: Buffer.alloc(20, 1) },
    { name: 'bin', mode: '100755', oid: Buffer.alloc(20, 2) },
    { name: 'dir', mode: '40000', oid: Buffer.alloc(20, 3) },
    { name: 'link', mode: '120000', oid: Buffer.alloc(20, 4) },
    { name: 'sub', mode: '160000', oid: Buffer.alloc(20, 5) },
    { name: 'é', mode: '100644', oid: Buffer.alloc(20, 6) },
  ];

  it('reads the entries decodeTree reads, in place', () => {
    const body = encodeTree(entries);
    const cursor = new TreeCursor(body);
    const seen: Array<{ name: string; kind: number; oid: string }> = [];
    while (cursor.next()) seen.push({ name: cursor.name(), kind: cursor.kind, oid: oidToHex(cursor.oid()) });
    const kindOf = (mode: string) => (mode === '40000' ? ENTRY_TREE : mode === '160000' ? ENTRY_GITLINK : ENTRY_FILE);
    expect(seen).toEqual(decodeTree(body).map((entry) => ({ name: entry.name, kind: kindOf(entry.mode), oid: oidToHex(entry.oid) })));
    expect(cursor.next()).toBe(false);
  });

  it('refuses what decodeTree refuses: truncation and unknown modes', () => {
    const body = encodeTree(entries);
    const walk = (bytes: Buffer) => {
      const cursor = new TreeCursor(bytes);
      while (cursor.next());
    };
    expect(() => walk(body.subarray(0, body.length - 3))).toThrow(TreeFormatError);
    expect(() => walk(Buffer.concat([Buffer.from('100600 x\0'), Buffer.alloc(20)]))).toThrow(TreeFormatError);
    expect(() => walk(Buffer.from('100644 name-without-end'))).toThrow(TreeFormatError);
  });
  it('reads a zero-padded mode as git reads it ("040000" is a tree), as decodeTree, knownMode and treeHeight do', () => {
    const entry = (mode: string, name: string, fill: number) => Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.alloc(20, fill)]);
    const body = Buffer.concat([entry('0100644', 'a.txt', 1), entry('040000', 'dir', 2), entry('00100755', 'run', 3)]);
    const cursor = new TreeCursor(body);
    const seen: Array<[string, number, string]> = [];
    while (cursor.next()) seen.push([cursor.name(), cursor.kind, cursor.mode()]);
    expect(seen).toEqual([
      ['a.txt', ENTRY_FILE, '100644'],
      ['dir', ENTRY_TREE, '40000'],
      ['run', ENTRY_FILE, '100755'],
    ]);
    expect(decodeTree(body).map((e) => e.mode)).toEqual(['100644', '40000', '100755']);
    expect(knownMode(Buffer.from('040000'), 0, 6)).toBe('40000');
    // A mode of zeros alone, or a padded mode git does not know, is still unknown.
    expect(knownMode(Buffer.from('000000'), 0, 6)).toBeNull();
    expect(() => decodeTree(entry('0100600', 'x', 1))).toThrow(TreeFormatError);
    // The padded directory counts in a tree's height: root -> dir -> a file.
    const trees = new Map([
      ['root', entry('040000', 'dir', 7)],
      [Buffer.alloc(20, 7).toString('hex'), entry('100644', 'file', 8)],
    ]);
    const root = Buffer.alloc(20, 9);
    expect(treeHeight(root, (oid) => (oid.equals(root) ? trees.get('root') : trees.get(oid.toString('hex'))))).toBe(2);
  });
});
