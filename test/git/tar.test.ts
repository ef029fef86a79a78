import { describe, expect, it } from 'vitest';
import { oidFromHex } from '../../src/git/oid.js';
import { paxRecord, TAR_BLOCK_BYTES, TAR_RECORD_BYTES, tarEntry, tarGlobalHeader, tarTrailer } from '../../src/git/tar.js';

const oid = oidFromHex('0123456789abcdef0123456789abcdef01234567');
const field = (block: Buffer, offset: number, length: number) => {
  const raw = block.subarray(offset, offset + length);
  const nul = raw.indexOf(0);
  return raw.subarray(0, nul < 0 ? length : nul).toString('latin1');
};
const checksumOk = (block: Buffer) => {
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i];
  return parseInt(field(block, 148, 8), 8) === sum;
};

describe('pax records', () => {
  it('count their own length, across a change in the number of digits', () => {
    for (const valueLength of [0, 1, 80, 87, 88, 89, 90, 986, 987, 988, 5000]) {
      const record = paxRecord('path', Buffer.alloc(valueLength, 0x61));
      expect(Number(record.toString('latin1').split(' ')[0]), `value of ${valueLength}`).toBe(record.length);
      expect(record[record.length - 1]).toBe(0x0a);
    }
  });
});

describe('tar entries', () => {
  it('writes a path of exactly 100 bytes in the name field, with no pax header', () => {
    const path = Buffer.from('a'.repeat(100));
    const [header] = tarEntry({ path, mode: 0o100644, oid, content: Buffer.alloc(0) }, 0);
    expect(header.subarray(0, 100).equals(path)).toBe(true);
    expect(checksumOk(header)).toBe(true);
  });

  it('splits a longer path into prefix and name at a slash, or uses a pax path record', () => {
    const split = tarEntry({ path: Buffer.from(`${'p'.repeat(80)}/${'n'.repeat(90)}`), mode: 0o100755, oid, content: Buffer.from('x') }, 0);
    expect(split).toHaveLength(2);
    expect(field(split[0], 345, 155)).toBe('p'.repeat(80));
    expect(field(split[0], 0, 100)).toBe('n'.repeat(90));
    expect(field(split[0], 100, 8)).toBe('0000775');
    const noSlash = tarEntry({ path: Buffer.from('q'.repeat(101)), mode: 0o100644, oid, content: Buffer.alloc(0) }, 0);
    expect(field(noSlash[0], 0, 100)).toBe(`${oid.toString('hex')}.paxheader`);
    expect(noSlash[0][156]).toBe('x'.charCodeAt(0));
    expect(noSlash[1].toString('latin1')).toContain(`path=${'q'.repeat(101)}\n`);
    expect(field(noSlash[2], 0, 100)).toBe(`${oid.toString('hex')}.data`);
  });

  it('puts a long link target in a pax linkpath record, a short one in the header', () => {
    const short = tarEntry({ path: Buffer.from('l'), mode: 0o120000, oid, content: Buffer.from('t'.repeat(100)) }, 0);
    expect(short).toHaveLength(1);
    expect(short[0].subarray(157, 257).toString()).toBe('t'.repeat(100));
    expect(field(short[0], 100, 8)).toBe('0000777');
    expect(field(short[0], 124, 12)).toBe('00000000000');
    const long = tarEntry({ path: Buffer.from('l'), mode: 0o120000, oid, content: Buffer.from('t'.repeat(101)) }, 0);
    expect(field(long[2], 157, 100)).toBe(`see ${oid.toString('hex')}.paxheader`);
    expect(long[1].toString('latin1')).toContain(`linkpath=${'t'.repeat(101)}\n`);
  });

  it('pads content to whole records and refuses modes tar has no type for', () => {
    const parts = tarEntry({ path: Buffer.from('f'), mode: 0o100644, oid, content: Buffer.alloc(513, 1) }, 1234);
    expect(parts[1].length).toBe(1024);
    expect(field(parts[0], 136, 12)).toBe((1234).toString(8).padStart(11, '0'));
    expect(() => tarEntry({ path: Buffer.from('s'), mode: 0o160000, oid, content: Buffer.alloc(0) }, 0)).toThrow(RangeError);
  });

  it('writes the global header only with a commit, and ends in whole blocks with two zero records at least', () => {
    expect(tarGlobalHeader(null, 0).length).toBe(0);
    const global = tarGlobalHeader('a'.repeat(40), 7);
    expect(global.length).toBe(1024);
    expect(global.subarray(512).toString('latin1')).toMatch(/^52 comment=a{40}\n\0+$/);
    for (const written of [0, 512, TAR_BLOCK_BYTES - 1024, TAR_BLOCK_BYTES - 512, TAR_BLOCK_BYTES + 512]) {
      const trailer = tarTrailer(written);
      expect((written + trailer.length) % TAR_BLOCK_BYTES).toBe(0);
      expect(trailer.length).toBeGreaterThanOrEqual(2 * TAR_RECORD_BYTES);
    }
  });
});
