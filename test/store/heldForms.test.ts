/** HeldForms (src/store/heldForms.ts): pointers a seed holds back, given back in key order. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HeldForms } from '../../src/store/heldForms.js';

const PREFIX = Buffer.from([0, 0, 0, 7]);

describe('HeldForms', () => {
  it('gives back every key once, in key order, in runs of at least the length asked, ties on the first 9 id bytes included', () => {
    const held = new HeldForms();
    const keys = Array.from({ length: 10_000 }, () => Buffer.concat([PREFIX, randomBytes(20)]));
    // Ids equal in their first 9 bytes, which the numeric comparison does not tell apart.
    const shared = randomBytes(9);
    for (let i = 0; i < 50; i++) keys.push(Buffer.concat([PREFIX, shared, randomBytes(11)]));
    held.take(keys.map((key, index) => ({ key, value: Buffer.from([index & 0xff]), depth: index % 3 })));
    // Taken twice (a write that stored one again): kept once, with its first depth.
    held.take([{ key: keys[5], value: Buffer.from('again'), depth: 9 }]);
    expect(held.size).toBe(keys.length);
    expect(held.depths.get(keys[5], PREFIX.length)).toBe(5 % 3);
    const runs = [...held.drain(1_000)];
    expect(runs.slice(0, -1).every((run) => run.length >= 1_000)).toBe(true);
    const given = runs.flat().map((entry) => entry.key);
    expect(given).toEqual([...keys].sort(Buffer.compare));
    expect(runs.flat().find((entry) => entry.key.equals(keys[5]))!.value).toEqual(Buffer.from([5]));
    expect(held.size).toBe(0);
    expect([...held.drain(1_000)]).toEqual([]);
  });
});
