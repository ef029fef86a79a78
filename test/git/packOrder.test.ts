import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCommit } from '../../src/git/commit.js';
import { EMPTY_TREE_OID, hashObject, oidToHex, type Oid } from '../../src/git/oid.js';
import type { PackObject } from '../../src/git/pack.js';
import { parentsFirst, parentsFirstSteps } from '../../src/git/packOrder.js';

const person = { name: 'T', email: 't@example.com', timestamp: 1_700_000_000, timezone: '+0000' };

function commit(parents: Oid[], message: string): PackObject {
  const body = encodeCommit({ tree: EMPTY_TREE_OID, parents, author: person, committer: person, extraHeaders: [], message });
  return { type: 'commit', body, oid: hashObject('commit', body), offset: 0, deltaDepth: 0 };
}

/** A random history: each commit has up to two parents among the earlier ones (or an outside one). */
function history(shape: number[][]): PackObject[] {
  const outside = hashObject('commit', Buffer.from('not in the pack'));
  const made: PackObject[] = [];
  shape.forEach((parents, index) => {
    const chosen = parents.filter((parent) => parent < index).map((parent) => made[parent].oid);
    made.push(commit(index === 0 ? [outside] : chosen, `c${index}`));
  });
  return made;
}

describe('parentsFirst', () => {
  it('puts non-commits first and every commit after its parents, whatever the input order', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.nat(30), { maxLength: 2 }), { minLength: 1, maxLength: 30 }), fc.array(fc.nat()), (shape, keys) => {
        const commits = history(shape);
        const blob: PackObject = { type: 'blob', body: Buffer.from('x'), oid: hashObject('blob', Buffer.from('x')), offset: 0, deltaDepth: 0 };
        const shuffled = [...commits, blob].map((object, index) => ({ object, key: keys[index] ?? index })).sort((a, b) => a.key - b.key).map((entry) => entry.object);
        const ordered = parentsFirst(shuffled);
        expect(ordered.length).toBe(shuffled.length);
        expect(ordered[0]).toBe(blob);
        const position = new Map(ordered.map((object, index) => [oidToHex(object.oid), index]));
        for (const object of commits) {
          const parents = object.body.toString('utf8').match(/^parent [0-9a-f]{40}$/gm) ?? [];
          for (const line of parents) {
            const parent = position.get(line.slice(7));
            if (parent !== undefined) expect(parent).toBeLessThan(position.get(oidToHex(object.oid))!);
          }
        }
      }),
    );
  });

  it('walks a long history in steps, each chain of parents iteratively, and places a commit listed twice once', () => {
    // 3,000 commits in a line, newest first as git writes packs: the walk goes 3,000 parents deep.
    const line: PackObject[] = [];
    for (let index = 0; index < 3_000; index++) line.push(commit(index === 0 ? [] : [line[index - 1].oid], `l${index}`));
    const newestFirst = [...line].reverse();
    const steps = parentsFirstSteps([...newestFirst, newestFirst[10]]);
    let pauses = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) pauses++;
    expect(pauses).toBeGreaterThanOrEqual(5);
    expect(step.value.map((object) => oidToHex(object.oid))).toEqual(line.map((object) => oidToHex(object.oid)));
    expect(parentsFirst(newestFirst)).toEqual(line);
  });
});
