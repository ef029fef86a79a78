import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DiffLimitError, diffLines, splitLines, type LineHunk } from '../../../src/repo/merge/lineDiff.js';
import { git, initBareRepo, scratchDir } from '../../support/git.js';
import { importCommits } from '../../support/memoryObjects.js';

const lines = (text: string) => splitLines(Buffer.from(text, 'utf8'));
const diff = (a: string, b: string) => diffLines(lines(a), lines(b));

describe('splitLines', () => {
  it('keeps each line with its newline and a last line without one', () => {
    expect(lines('a\nb\nc').map(String)).toEqual(['a\n', 'b\n', 'c']);
    expect(lines('a\n\n').map(String)).toEqual(['a\n', '\n']);
    expect(lines('')).toEqual([]);
    expect(lines('\r\n').map(String)).toEqual(['\r\n']);
  });
});

describe('diffLines', () => {
  it('finds no change between equal sequences', () => {
    expect(diff('a\nb\n', 'a\nb\n')).toEqual([]);
    expect(diff('', '')).toEqual([]);
  });

  it('reports insertions, deletions and replacements with 0-based positions', () => {
    expect(diff('a\nb\n', 'a\nx\nb\n')).toEqual([{ oldStart: 1, oldCount: 0, newStart: 1, newCount: 1 }]);
    expect(diff('a\nb\nc\n', 'a\nc\n')).toEqual([{ oldStart: 1, oldCount: 1, newStart: 1, newCount: 0 }]);
    expect(diff('a\nb\nc\n', 'a\nB\nc\n')).toEqual([{ oldStart: 1, oldCount: 1, newStart: 1, newCount: 1 }]);
  });

  it('treats a last line without newline as different from the same text with one', () => {
    expect(diff('a\nb', 'a\nb\n')).toEqual([{ oldStart: 1, oldCount: 1, newStart: 1, newCount: 1 }]);
  });

  it('slides an ambiguous insertion down, as git compacts change groups', () => {
    // Inserting one more "x" into a run of them: git reports it after the run.
    expect(diff('a\nx\nx\nb\n', 'a\nx\nx\nx\nb\n')).toEqual([{ oldStart: 3, oldCount: 0, newStart: 3, newCount: 1 }]);
  });

  it('fails where git fails: more than 64 distinct lines in one histogram bucket', () => {
    // Lines whose class numbers all land in bucket 0 of a 128-slot table (XDL_HASHLONG).
    const first = Array.from({ length: 128 * 66 }, (_, i) => `d${i}\n`);
    const region = Array.from({ length: 65 }, (_, k) => first[128 * k + ((128 - (k % 128)) % 128)]);
    expect(() => diff([...first, ...region].join(''), [...first, 'other\n'].join(''))).toThrow(DiffLimitError);
  });
});

describe('diffLines against git diff --histogram', () => {
  const scratch = scratchDir('treehouse-linediff-');
  initBareRepo(scratch.path);
  afterAll(() => scratch.remove());

  /** Runs one `git diff` over many file pairs and returns each file's hunks. */
  function gitHunks(pairs: ReadonlyArray<[string, string]>): LineHunk[][] {
    const files = (side: 0 | 1) => new Map(pairs.map((pair, i) => [`f${i}`, { mode: '100644' as const, content: Buffer.from(pair[side], 'utf8') }]));
    const [before, after] = importCommits(scratch.path, [
      { files: files(0), parents: [], time: 1 },
      { files: files(1), parents: [], time: 2 },
    ]);
    const out = git(['diff', '--histogram', '--no-indent-heuristic', '--no-renames', '--no-color', '-U0', before.toString('hex'), after.toString('hex')], {
      cwd: scratch.path,
    });
    const result: LineHunk[][] = pairs.map(() => []);
    let current: LineHunk[] | null = null;
    for (const line of out.split('\n')) {
      const file = /^diff --git a\/f(\d+) /.exec(line);
      if (file) current = result[Number(file[1])];
      const hunk = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
      if (hunk && current) {
        const oldCount = hunk[2] === undefined ? 1 : Number(hunk[2]);
        const newCount = hunk[4] === undefined ? 1 : Number(hunk[4]);
        // git prints the line before an empty range, and 1-based starts otherwise.
        current.push({
          oldStart: oldCount === 0 ? Number(hunk[1]) : Number(hunk[1]) - 1,
          oldCount,
          newStart: newCount === 0 ? Number(hunk[3]) : Number(hunk[3]) - 1,
          newCount,
        });
      }
    }
    return result;
  }

  it('gives git hunks for random edits, repetitive text and Myers fall-back regions', () => {
    const line = fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom('a', 'b', 'c', '', '}', 'x') },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 40 }).map((n) => `line ${n}`) },
    );
    const text = fc.record({ body: fc.array(line, { maxLength: 60 }), finalNewline: fc.boolean() });
    const render = ({ body, finalNewline }: { body: string[]; finalNewline: boolean }) => {
      const joined = body.join('\n');
      return body.length > 0 && finalNewline ? `${joined}\n` : joined;
    };
    const pairs: Array<[string, string]> = fc
      .sample(fc.tuple(text, text), { seed: 4242, numRuns: 150 })
      .map(([a, b]) => [render(a), render(b)]);
    // Regions whose only common lines repeat more than 64 times go to git's Myers diff,
    // including its cost cut-off for large differences.
    const repetitive = (seed: number, length: number) =>
      fc.sample(fc.array(fc.constantFrom('x\n', 'x\n', 'y\n'), { minLength: length, maxLength: length }), { seed, numRuns: 1 })[0].join('');
    pairs.push([repetitive(1, 400), repetitive(2, 420)]);
    pairs.push([repetitive(3, 3000), repetitive(4, 3000)]);
    pairs.push([`u1\n${repetitive(5, 200)}u2\n`, `u1\n${repetitive(6, 150)}u2\n`]);

    const expected = gitHunks(pairs);
    pairs.forEach(([a, b], i) => {
      expect(diff(a, b), `pair ${i}: ${JSON.stringify([a, b]).slice(0, 200)}`).toEqual(expected[i]);
    });
  });
});
