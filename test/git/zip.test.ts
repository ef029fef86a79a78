import { describe, expect, it } from 'vitest';
import { dosDateTime, ZipWriter } from '../../src/git/zip.js';
import { readZip } from '../support/zipReader.js';

describe('ZipWriter', () => {
  it('converts the archive time to an MS-DOS date and time (UTC, two-second steps)', () => {
    expect(dosDateTime(Date.UTC(2023, 10, 14, 22, 13, 21) / 1000)).toEqual({ date: 14 + 11 * 32 + 43 * 512, time: 10 + 13 * 32 + 22 * 2048 });
  });

  it('stores what does not compress, deflates what does, and flags text and executables', () => {
    const zip = new ZipWriter(1_700_000_000, 'c'.repeat(40));
    const parts = [
      ...zip.add({ path: Buffer.from('dir/'), mode: 0o040000, content: Buffer.alloc(0) }),
      ...zip.add({ path: Buffer.from('dir/text'), mode: 0o100755, content: Buffer.from('abc\n'.repeat(100)) }),
      ...zip.add({ path: Buffer.from('dir/bin'), mode: 0o100644, content: Buffer.from([0, 1]) }),
      ...zip.add({ path: Buffer.from('caf\u00e9'), mode: 0o120000, content: Buffer.from('dir/text') }),
      zip.finish(),
    ];
    const read = readZip(Buffer.concat(parts));
    expect(read.comment).toBe('c'.repeat(40));
    expect(read.records.map((r) => [r.name, r.central.method, r.central.internal, r.central.external >>> 16, r.central.creator, r.central.flags])).toEqual([
      ['dir/', 0, 0, 0, 0, 0],
      ['dir/text', 8, 1, 0o100755, 0x0317, 0],
      ['dir/bin', 0, 0, 0, 0, 0],
      ['caf\u00e9', 0, 1, 0o120777, 0x0317, 0x800],
    ]);
    expect(read.records[1].content.toString()).toBe('abc\n'.repeat(100));
    expect(read.records[0].central.external).toBe(16);
  });

  it('writes zip64 end records past 65,535 entries', () => {
    const zip = new ZipWriter(0, null);
    const parts: Buffer[] = [];
    for (let i = 0; i < 65_537; i++) parts.push(...zip.add({ path: Buffer.from(`f${i}`), mode: 0o100644, content: Buffer.alloc(0) }));
    parts.push(zip.finish());
    const read = readZip(Buffer.concat(parts));
    expect(read.zip64).toBe(true);
    expect(read.records).toHaveLength(65_537);
    expect(read.records[65_536].name).toBe('f65536');
  });

  it("keeps copies of what it needs for the central directory, not the buffers it was given", () => {
    // A writer that kept a path buffer until finish() would keep what shares its memory too (a
    // pool slab of Node's, with the entries' data): hundreds of MB over 100,000 entries.
    const zip = new ZipWriter(0, null);
    const paths = Array.from({ length: 2000 }, (_, i) => Buffer.from(`dir/file-${i}.txt`));
    const parts: Buffer[] = [];
    for (const path of paths) parts.push(...zip.add({ path, mode: 0o100644, content: Buffer.from(`content of ${path}\n`) }).map((part) => Buffer.from(part)));
    for (const path of paths) path.fill(0x5f);
    parts.push(zip.finish());
    const read = readZip(Buffer.concat(parts));
    expect(read.records.map((record) => record.name)).toEqual(Array.from({ length: 2000 }, (_, i) => `dir/file-${i}.txt`));
    expect(read.records[1999].content.toString()).toBe('content of dir/file-1999.txt\n');
  });

  it('refuses a path longer than a zip header can say', () => {
    expect(() => new ZipWriter(0, null).add({ path: Buffer.alloc(65_536, 0x61), mode: 0o100644, content: Buffer.alloc(0) })).toThrow(RangeError);
  });
});
