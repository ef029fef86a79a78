import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { oidFromHex, oidToHex } from '../../../src/git/oid.js';
import { isBinary, mergeContent } from '../../../src/repo/merge/mergeContent.js';
import { initBareRepo, scratchDir } from '../../support/git.js';
import { gitMergeTrees, importCommits, MemoryObjects, type ImportCommit } from '../../support/memoryObjects.js';
import { AsyncObjects } from './asyncObjects.js';

const b = (text: string) => Buffer.from(text, 'utf8');
const merge = (base: string, ours: string, theirs: string) => mergeContent(b(base), b(ours), b(theirs), { oursLabel: 'ours', theirsLabel: 'theirs' });

describe('mergeContent', () => {
  it('takes the changed side verbatim when the other kept the base', () => {
    expect(merge('a\nb\n', 'a\nb\n', 'a\nB')).toEqual({ clean: true, content: b('a\nB') });
    expect(merge('a\nb\n', 'A\nb\n', 'a\nb\n')).toEqual({ clean: true, content: b('A\nb\n') });
  });

  it('merges changes to disjoint line ranges', () => {
    const result = merge('1\n2\n3\n4\n5\n', 'one\n2\n3\n4\n5\n', '1\n2\n3\n4\nfive\n');
    expect(result).toEqual({ clean: true, content: b('one\n2\n3\n4\nfive\n') });
  });

  it('accepts identical changes on both sides', () => {
    expect(merge('a\nb\nc\n', 'a\nX\nc\n', 'a\nX\nc\n')).toEqual({ clean: true, content: b('a\nX\nc\n') });
    // Partly identical overlapping changes: the shared part is not a conflict.
    expect(merge('a\nb\nc\nd\n', 'a\nX\nY\nd\n', 'a\nX\nc\nd\n').clean).toBe(false);
  });

  it('conflicts on overlapping changes and writes git markers', () => {
    const result = merge('a\nb\nc\n', 'a\nours\nc\n', 'a\ntheirs\nc\n');
    expect(result.clean).toBe(false);
    expect(result.content.toString()).toBe('a\n<<<<<<< ours\nours\n=======\ntheirs\n>>>>>>> theirs\nc\n');
  });

  it('conflicts on adjacent changes, as git does', () => {
    expect(merge('a\nb\nc\nd\n', 'A\nb\nc\nd\n', 'a\nB\nc\nd\n').clean).toBe(false);
    // One unchanged line between the changes is enough.
    expect(merge('a\nb\nc\nd\n', 'A\nb\nc\nd\n', 'a\nb\nC\nd\n').clean).toBe(true);
  });

  it('narrows a conflict to the lines that differ and joins conflicts fewer than 4 lines apart', () => {
    const base = '0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n';
    const ours = 'A\n1\n2\n3\n4\n5\n6\n7\n8\nJ\n';
    const theirs = 'B\n1\n2\n3\n4\n5\n6\n7\n8\nK\n';
    const apart = merge(base, ours, theirs);
    expect(apart.clean).toBe(false);
    expect(apart.content.toString().match(/<<<<<<</g)).toHaveLength(2);
    const close = merge('0\n1\n2\n3\n', 'A\n1\n2\nD\n', 'B\n1\n2\nE\n');
    expect(close.content.toString()).toBe('<<<<<<< ours\nA\n1\n2\nD\n=======\nB\n1\n2\nE\n>>>>>>> theirs\n');
  });

  it('follows CRLF line endings in markers and adds a newline to a last line without one', () => {
    const result = merge('a\r\nb\r\n', 'a\r\nx', 'a\r\ny');
    expect(result.content.toString()).toBe('a\r\n<<<<<<< ours\r\nx\r\n=======\r\ny\r\n>>>>>>> theirs\r\n');
  });

  it('does not merge binary files: conflict, keeping ours; a virtual base keeps the base', () => {
    const base = b('a\0b');
    const ours = b('ours\0');
    const theirs = b('theirs\0');
    expect(isBinary(base)).toBe(true);
    expect(isBinary(Buffer.concat([Buffer.alloc(8000, 0x61), Buffer.from([0])]))).toBe(false);
    expect(mergeContent(base, ours, theirs)).toEqual({ clean: false, kind: 'binary', content: ours, conflicts: 1 });
    expect(mergeContent(base, ours, theirs, { virtualAncestor: true })).toEqual({ clean: true, content: base });
    // A binary base makes the merge binary even if both sides are text.
    expect(mergeContent(base, b('x\n'), b('y\n')).clean).toBe(false);
  });

  it('uses longer markers when asked (merge-ort does for virtual bases)', () => {
    const result = mergeContent(b('a\n'), b('x\n'), b('y\n'), { markerSize: 9, oursLabel: 'Temporary merge branch 1' });
    expect(result.content.toString()).toBe('<<<<<<<<< Temporary merge branch 1\nx\n=========\ny\n>>>>>>>>>\n');
  });
});

describe('mergeContent against git merge-tree', () => {
  const scratch = scratchDir('treehouse-mergecontent-');
  initBareRepo(scratch.path);
  afterAll(() => scratch.remove());

  it('gives git bytes, conflict markers included, for random three-way merges', async () => {
    const line = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('a', 'b', 'c', 'd', '', '}', 'x') },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 1_000_000 }).map((n) => `u${n}`) },
    );
    const edit = fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.array(line, { maxLength: 3 })), { maxLength: 4 });
    const format = fc.record({ finalNewline: fc.boolean(), crlf: fc.boolean() });
    const caseArbitrary = fc.record({ base: fc.array(line, { maxLength: 14 }), ours: edit, theirs: edit, format, oursFormat: format, theirsFormat: format });
    const apply = (lines: string[], edits: Array<[number, number, string[]]>) => {
      const out = [...lines];
      for (const [at, remove, insert] of edits) out.splice(at % (out.length + 1), remove, ...insert);
      return out;
    };
    const render = (lines: string[], { finalNewline, crlf }: { finalNewline: boolean; crlf: boolean }, baseCrlf: boolean) => {
      const eol = crlf && baseCrlf ? '\r\n' : '\n';
      const text = lines.map((l) => l + eol).join('');
      return b(finalNewline || text === '' ? text : text.slice(0, -eol.length));
    };
    const cases = fc.sample(caseArbitrary, { seed: 777, numRuns: 400 }).map((c) => ({
      base: render(c.base, c.format, c.format.crlf),
      ours: render(apply(c.base, c.ours), c.oursFormat, c.format.crlf),
      theirs: render(apply(c.base, c.theirs), c.theirsFormat, c.format.crlf),
    }));
    const commits: ImportCommit[] = [];
    cases.forEach((c, i) => {
      const file = (content: Buffer) => new Map([['f', { mode: '100644' as const, content }]]);
      commits.push({ files: file(c.base), parents: [], time: 1000 + 3 * i });
      commits.push({ files: file(c.ours), parents: [3 * i], time: 1001 + 3 * i });
      commits.push({ files: file(c.theirs), parents: [3 * i], time: 1002 + 3 * i });
    });
    const oids = importCommits(scratch.path, commits);
    const pairs = cases.map((_, i) => [oids[3 * i + 1], oids[3 * i + 2]] as const);
    const outcomes = gitMergeTrees(scratch.path, pairs);
    const objects = new AsyncObjects(MemoryObjects.fromRepository(scratch.path));
    let conflicted = 0;
    for (const [i, c] of cases.entries()) {
      const outcome = outcomes[i];
      if (outcome.failed) throw new Error(outcome.error);
      const entry = (await objects.readTree(oidFromHex(outcome.tree))).find((e) => e.name === 'f')!;
      // merge-tree labels conflicts with the branch arguments, here the commit ids.
      const ours = mergeContent(c.base, c.ours, c.theirs, { oursLabel: oidToHex(pairs[i][0]), theirsLabel: oidToHex(pairs[i][1]) });
      const context = JSON.stringify({ base: c.base.toString(), ours: c.ours.toString(), theirs: c.theirs.toString() });
      expect(ours.clean, context).toBe(outcome.clean);
      expect(ours.content.toString('latin1'), context).toBe((await objects.readBlob(entry.oid)).toString('latin1'));
      if (!ours.clean) conflicted++;
    }
    expect(conflicted).toBeGreaterThan(50);
  });
});
