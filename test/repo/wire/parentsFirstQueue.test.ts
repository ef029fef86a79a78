/** ParentsFirstQueue (src/repo/wire/parentsFirstQueue.ts): commits released each after its parents, across runs, whatever a pack sends. */
import { describe, expect, it } from 'vitest';
import { encodeCommit } from '../../../src/git/commit.js';
import { EMPTY_TREE_OID, hashObject, oidToHex, type Oid } from '../../../src/git/oid.js';
import type { PackObject } from '../../../src/git/pack.js';
import { ParentsFirstQueue } from '../../../src/repo/wire/parentsFirstQueue.js';

const signature = { name: 'Q', email: 'q@example.com', timestamp: 1_700_000_000, timezone: '+0000' };

/** A commit as a parse gives it (only its id and body are read). */
function commit(parents: Oid[], message: string): PackObject {
  const body = encodeCommit({ tree: EMPTY_TREE_OID, parents, author: signature, committer: signature, extraHeaders: [], message: `${message}\n` });
  return { type: 'commit', body, oid: hashObject('commit', body), offset: 0, deltaDepth: 0 };
}

const hexes = (commits: PackObject[]) => commits.map((c) => oidToHex(c.oid));

describe('ParentsFirstQueue', () => {
  it('releases a history sent newest first, in runs, each commit after all its parents, each once', async () => {
    // A line with merges: c[i] has c[i-1], and every fifth also c[i-3].
    const line: PackObject[] = [];
    for (let i = 0; i < 60; i++) line.push(commit(i === 0 ? [] : i % 5 === 0 && i > 3 ? [line[i - 1].oid, line[i - 3].oid] : [line[i - 1].oid], `c${i}`));
    const sent = [...line].reverse();
    const queue = new ParentsFirstQueue();
    const released: PackObject[] = [];
    for (let start = 0; start < sent.length; start += 7) released.push(...(await queue.release(sent.slice(start, start + 7))));
    // Sent again (a commit twice in a pack, or a run told twice): not released again.
    expect(await queue.release(sent.slice(0, 10))).toEqual([]);
    expect(new Set(hexes(released)).size).toBe(line.length);
    const at = new Map(hexes(released).map((hex, index) => [hex, index]));
    for (const [i, c] of line.entries()) {
      const parents = i === 0 ? [] : i % 5 === 0 && i > 3 ? [line[i - 1], line[i - 3]] : [line[i - 1]];
      for (const parent of parents) expect(at.get(oidToHex(parent.oid))!).toBeLessThan(at.get(oidToHex(c.oid))!);
    }
  });

  it('releases a commit naming one parent several times once that parent is released', async () => {
    const root = commit([], 'root');
    const twice = commit([root.oid, root.oid, root.oid], 'the same parent three times');
    const queue = new ParentsFirstQueue();
    expect(await queue.release([twice])).toEqual([]);
    expect(hexes(await queue.release([root]))).toEqual(hexes([root, twice]));
  });

  it('never releases what waits on a commit that does not parse, on an object that never comes, or on a stored parent', async () => {
    const root = commit([], 'root');
    const broken: PackObject = { ...root, body: Buffer.from('tree not-an-id\n\nbroken\n'), oid: hashObject('commit', Buffer.from('broken')) };
    const onBroken = commit([broken.oid], 'child of a broken commit');
    const absent = hashObject('blob', Buffer.from('never sent'));
    const onAbsent = commit([absent], 'child of an absent parent');
    const grandchild = commit([onAbsent.oid], 'grandchild of an absent parent');
    const queue = new ParentsFirstQueue();
    // The broken one is skipped (the pack's check refuses it), and nothing waiting on it or on an absent id comes out.
    expect(hexes(await queue.release([grandchild, onAbsent, onBroken, broken, root]))).toEqual(hexes([root]));
    expect(await queue.release([])).toEqual([]);
  });

  it('releases a long chain sent backwards in one run without recursion', async () => {
    const chain: PackObject[] = [];
    for (let i = 0; i < 20_000; i++) chain.push(commit(i === 0 ? [] : [chain[i - 1].oid], `link ${i}`));
    const released = await new ParentsFirstQueue().release([...chain].reverse());
    expect(hexes(released)).toEqual(hexes(chain));
  }, 60_000);
});
