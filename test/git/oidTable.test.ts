import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OidList, OidTable } from '../../src/git/oidTable.js';

const oidOf = (n: number) => createHash('sha1').update(String(n)).digest();

describe('OidTable', () => {
  it('holds 100,000 ids with their values through growth, and reads ids at an offset in a larger buffer', () => {
    const table = new OidTable();
    for (let n = 0; n < 100_000; n++) expect(table.add(oidOf(n), 0, n)).toBe(true);
    expect(table.size).toBe(100_000);
    expect(table.add(oidOf(5), 0, 99)).toBe(false);
    expect(table.get(oidOf(5))).toBe(5);
    for (let n = 0; n < 100_000; n += 997) expect(table.get(oidOf(n))).toBe(n);
    expect(table.has(oidOf(100_001))).toBe(false);
    expect(table.get(oidOf(100_001))).toBe(-1);
    const framed = Buffer.concat([Buffer.from('xyz'), oidOf(42), Buffer.from('!')]);
    expect(table.get(framed, 3)).toBe(42);
  });

  it('sets the value of an id it holds, and adds one it does not', () => {
    const table = new OidTable();
    for (let n = 0; n < 1_000; n++) table.add(oidOf(n), 0, n);
    table.set(oidOf(7), 0, 700);
    table.set(oidOf(5_000), 0, 0);
    expect([table.get(oidOf(7)), table.get(oidOf(8)), table.get(oidOf(5_000)), table.size]).toEqual([700, 8, 0, 1_001]);
  });

  it('tells apart ids that share their first bytes (the probe position) and the all-zero id', () => {
    const table = new OidTable();
    const a = Buffer.alloc(20, 1);
    const b = Buffer.from(a);
    b[19] = 2;
    const zero = Buffer.alloc(20);
    expect(table.has(zero)).toBe(false);
    table.add(a, 0, 1);
    table.add(zero, 0, 0);
    expect(table.has(b)).toBe(false);
    table.add(b, 0, 2);
    expect([table.get(a), table.get(b), table.get(zero)]).toEqual([1, 2, 0]);
  });
});

describe('OidList', () => {
  it('keeps ids and types in order through growth; ids read back equal and copies are independent', () => {
    const list = new OidList();
    for (let n = 0; n < 5_000; n++) list.push(oidOf(n), n % 3 === 0 ? 'commit' : n % 3 === 1 ? 'tree' : 'blob');
    expect(list.length).toBe(5_000);
    expect(list.oid(4_999).equals(oidOf(4_999))).toBe(true);
    expect(list.type(3)).toBe('commit');
    expect(list.type(4)).toBe('tree');
    expect(list.type(5)).toBe('blob');
    const copy = list.oid(7);
    copy[0] ^= 0xff;
    expect(list.oidView(7).equals(oidOf(7))).toBe(true);
    expect([...list].map((entry) => entry.type).slice(0, 3)).toEqual(['commit', 'tree', 'blob']);
  });
});
