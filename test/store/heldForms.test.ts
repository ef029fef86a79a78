/** HeldForms (src/store/heldForms.ts): pointers a seed holds back, given back in key order; a push's, by depth, then key; a push's commits in the order held. */
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
    held.take(keys.map((key, index) => ({ key, value: Buffer.from([index & 0xff]), depth: index % 3, base: null })));
    // Taken twice (a write that stored one again): kept once, with its first depth.
    held.take([{ key: keys[5], value: Buffer.from('again'), depth: 9, base: null }]);
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

  it("gives a push's pointers back by chain depth, then in key order: each run's deltas have their bases in it or before it", () => {
    const held = new HeldForms(false);
    // Chains as a pack resolves them: each delta taken after its base, some in a later write.
    const chains = Array.from({ length: 300 }, () => Array.from({ length: 1 + Math.floor(Math.random() * 12) }, () => Buffer.concat([PREFIX, randomBytes(20)])));
    const baseOf = new Map<string, string>();
    for (const chain of chains) chain.forEach((key, depth) => depth > 0 && baseOf.set(key.toString('hex'), chain[depth - 1].toString('hex')));
    const order = chains.flatMap((chain) => chain.map((key, depth) => ({ key, value: Buffer.from('p'), depth, base: depth > 0 ? chain[depth - 1] : null })));
    // Taken in writes of 100, deltas after their bases (sorted by depth, stable) as the parse gives them.
    const resolved = [...order].sort((a, b) => a.depth - b.depth);
    for (let start = 0; start < resolved.length; start += 100) held.take(resolved.slice(start, start + 100));
    const runs = [...held.drain(64)];
    const put = new Set<string>();
    for (const run of runs) {
      for (const { key } of run) {
        const base = baseOf.get(key.toString('hex'));
        if (base) expect(put.has(base)).toBe(true);
        put.add(key.toString('hex'));
      }
    }
    expect(put.size).toBe(order.length);
    // Within a depth, in key order.
    const given = runs.flat();
    const depthOf = new Map(order.map(({ key, depth }) => [key.toString('hex'), depth]));
    for (let i = 1; i < given.length; i++) {
      const [a, b] = [given[i - 1].key, given[i].key];
      const [da, db] = [depthOf.get(a.toString('hex'))!, depthOf.get(b.toString('hex'))!];
      expect(da < db || (da === db && Buffer.compare(a, b) < 0)).toBe(true);
    }
  });

  it("gives a push's commits back in the order they were held (parents first), a seed's in key order, each once, in runs", () => {
    const commit = (key: Buffer) => ({ key, value: Buffer.from('raw'), info: Buffer.from('info') });
    const held = Array.from({ length: 500 }, () => commit(Buffer.concat([PREFIX, randomBytes(20)])));
    const push = new HeldForms(false);
    for (let start = 0; start < held.length; start += 64) push.takeCommits(held.slice(start, start + 64));
    // Taken again (a write that held one twice): kept once, in its first place.
    push.takeCommits([held[3]]);
    const runs = [...push.drainCommits(100, Infinity)];
    expect(runs.map((run) => run.length)).toEqual([100, 100, 100, 100, 100]);
    expect(runs.flat().map((entry) => entry.key)).toEqual(held.map((entry) => entry.key));
    expect(push.commitCount).toBe(0);
    // Runs end at their bytes too.
    const bytes = new HeldForms(false);
    bytes.takeCommits(held.slice(0, 10));
    expect([...bytes.drainCommits(100, 3 * 7)].map((run) => run.length)).toEqual([3, 3, 3, 1]);
    const seed = new HeldForms();
    seed.takeCommits(held);
    expect([...seed.drainCommits(100, Infinity)].flat().map((entry) => entry.key)).toEqual(held.map((entry) => entry.key).sort(Buffer.compare));
  });
  it('sorted ahead (prepare) while more is taken, gives back what an unprepared drain gives; a bucket is sorted again only once its new part is an eighth of it', () => {
    // Ids spread evenly: 80 to each first byte, 20 to each first byte and depth (of 4).
    const entries = Array.from({ length: 2 * 20_480 + 1 }, (_, index) => ({
      key: Buffer.concat([PREFIX, Buffer.from([index & 0xff]), randomBytes(19)]),
      value: Buffer.from([index & 0xff]),
      depth: (index >> 8) & 3,
      base: null,
    }));
    for (const projectEmpty of [true, false]) {
      const plain = new HeldForms(projectEmpty);
      const prepared = new HeldForms(projectEmpty);
      plain.take(entries);
      prepared.take(entries.slice(0, 20_480));
      // Every bucket in use is sorted once: 256 first bytes, in each group (a push's by depth).
      const steps = [...prepared.prepare()].length;
      expect(steps).toBe(projectEmpty ? 256 : 4 * 256);
      // One more: its bucket's new part is not an eighth of it, so nothing is sorted again.
      prepared.take(entries.slice(20_480, 20_481));
      expect([...prepared.prepare()].length).toBe(0);
      // Then as many again: every bucket is sorted again, merged with what it had.
      prepared.take(entries.slice(20_481));
      expect([...prepared.prepare()].length).toBe(steps);
      expect(prepared.size).toBe(entries.length);
      const keysOf = (runs: Array<Array<{ key: Buffer }>>) => runs.flat().map((entry) => entry.key.toString('hex'));
      const plainRuns = [...plain.drain(1_000)];
      const preparedRuns = [...prepared.drain(1_000)];
      expect(keysOf(preparedRuns)).toEqual(keysOf(plainRuns));
      expect(preparedRuns.map((run) => run.length)).toEqual(plainRuns.map((run) => run.length));
      expect(prepared.size).toBe(0);
    }
  });
});
