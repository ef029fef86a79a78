import { afterAll, describe, expect, it } from 'vitest';
import { hashObject, oidFromHex, oidToHex } from '../../src/git/oid.js';
import { decodeTree, encodeTree, type TreeEntry } from '../../src/git/tree.js';
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
    expect(() => decodeTree(encodeTree(entries).subarray(0, 10))).toThrow();
    expect(() => decodeTree(Buffer.from('99999 x\0' + 'a'.repeat(20), 'latin1'))).toThrow(/mode/);
  });
});
