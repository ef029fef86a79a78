import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EMPTY_BLOB_OID, EMPTY_TREE_OID, hashFramedObject, hashObject, objectHeaderLength, oidFromHex, oidToHex, sortByOid, writeObjectHeader, type ObjectType } from '../../src/git/oid.js';
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

describe('sortByOid', () => {
  it('orders ids as their bytes do, ties in the first 8 bytes and ids at an offset included', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ minLength: 20, maxLength: 20 }), { maxLength: 60 }), fc.uint8Array({ minLength: 9, maxLength: 9 }), (ids, shared) => {
        // Half the ids share their first 9 bytes, which the numeric comparison cannot tell apart.
        const all = ids.map((id, index) => (index % 2 === 0 ? Buffer.from(id) : Buffer.concat([shared, Buffer.from(id).subarray(9)])));
        const expected = [...all].sort(Buffer.compare).map((id) => id.toString('hex'));
        expect(sortByOid([...all], (id) => id).map((id) => id.toString('hex'))).toEqual(expected);
        // The same ids behind a 4-byte prefix that varies and must not count.
        const prefixed = all.map((id, index) => Buffer.concat([Buffer.from([index & 0xff, 9, 9, 9]), id]));
        expect(sortByOid(prefixed, (key) => key, 4).map((key) => key.subarray(4).toString('hex'))).toEqual(expected);
      }),
    );
  });
});
