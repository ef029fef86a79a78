import { afterAll, describe, expect, it } from 'vitest';
import { EMPTY_BLOB_OID, EMPTY_TREE_OID, hashObject, oidFromHex, oidToHex } from '../../src/git/oid.js';
import { git, initBareRepo, scratchDir } from '../support/git.js';

const scratch = scratchDir();
initBareRepo(scratch.path);
afterAll(() => scratch.remove());

describe('hashObject', () => {
  it('gives git the ids of the empty blob and the empty tree', () => {
    expect(hashObject('blob', Buffer.alloc(0)).equals(EMPTY_BLOB_OID)).toBe(true);
    expect(hashObject('tree', Buffer.alloc(0)).equals(EMPTY_TREE_OID)).toBe(true);
  });

  it.each([
    ['text', Buffer.from('hello\n')],
    ['non-UTF-8 bytes', Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x0a])],
    ['unicode', Buffer.from('héllo wörld ✓\n')],
    ['no trailing newline', Buffer.from('abc')],
  ])('equals git hash-object for %s', (_label, content) => {
    const expected = git(['hash-object', '-w', '--stdin'], { cwd: scratch.path, input: content }).trim();
    expect(oidToHex(hashObject('blob', content))).toBe(expected);
  });

  it('round-trips hex', () => {
    const hex = '0123456789abcdef0123456789abcdef01234567';
    expect(oidToHex(oidFromHex(hex))).toBe(hex);
    expect(() => oidFromHex('XYZ')).toThrow();
    expect(() => oidFromHex(hex.toUpperCase())).toThrow();
  });
});
