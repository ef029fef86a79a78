import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EMPTY_BLOB_OID, EMPTY_TREE_OID, hashFramedObject, hashObject, objectHeaderLength, oidFromHex, oidToHex, writeObjectHeader, type ObjectType } from '../../src/git/oid.js';
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

  it('gives the same id when the header is written in front of the body and both hashed at once (hashFramedObject)', () => {
    const types: ObjectType[] = ['blob', 'tree', 'commit', 'tag'];
    fc.assert(
      fc.property(fc.constantFrom(...types), fc.uint8Array({ maxLength: 20_000 }), fc.nat({ max: 64 }), (type, body, before) => {
        // Anywhere in a larger buffer, as parsePack's slabs place bodies.
        const headerBytes = objectHeaderLength(type, body.length);
        expect(headerBytes).toBe(Buffer.from(`${type} ${body.length}\0`).length);
        const buffer = Buffer.alloc(before + headerBytes + body.length + 7, 0xaa);
        writeObjectHeader(buffer, before, type, body.length);
        buffer.set(body, before + headerBytes);
        const framed = buffer.subarray(before + headerBytes, before + headerBytes + body.length);
        expect(hashFramedObject(framed, headerBytes).equals(hashObject(type, body))).toBe(true);
      }),
    );
    // Sizes of every length of decimal digits.
    for (const bytes of [0, 9, 10, 99, 100, 999_999, 1_000_000]) expect(objectHeaderLength('blob', bytes)).toBe(`blob ${bytes}\0`.length);
  });

  it('round-trips hex', () => {
    const hex = '0123456789abcdef0123456789abcdef01234567';
    expect(oidToHex(oidFromHex(hex))).toBe(hex);
    expect(() => oidFromHex('XYZ')).toThrow();
    expect(() => oidFromHex(hex.toUpperCase())).toThrow();
  });
});
