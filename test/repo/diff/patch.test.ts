/**
 * buildPatch() against `git diff`: random pairs of files (code-like lines with indentation, blank
 * lines, repeated lines, function-like lines, files without a final newline, CRLF) are committed
 * with one `git fast-import`, diffed by git once per context size, and every hunk (header, lines,
 * the "\ No newline at end of file" markers) must be git's. The histogram runs use git's default
 * indent heuristic; the Myers runs are what `git blame` diffs with.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { oidToHex } from '../../../src/git/oid.js';
import { BLAME_DIFF, buildPatch, HISTOGRAM_DIFF, trimCommonTail, type FilePatch } from '../../../src/repo/diff/patch.js';
import { git, initBareRepo, scratchDir } from '../../support/git.js';
import { importCommits } from '../../support/memoryObjects.js';
import { parseGitPatch } from '../../support/gitDiff.js';

const scratch = scratchDir('treehouse-patch-');
initBareRepo(scratch.path);
afterAll(() => scratch.remove());

const VOCABULARY = ['', '', '}', '  }', '    return x;', 'function f() {', 'def g():', '\tif (a) {', '\t\tb();', '_private = 1', '$var', '# comment', '    ', 'x', 'y'];

function sampleFiles(seed: number, runs: number): Array<[Buffer, Buffer]> {
  const line = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...VOCABULARY) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 60 }).map((n) => `${' '.repeat(n % 9)}line ${n}`) },
  );
  const file = fc.record({ body: fc.array(line, { maxLength: 70 }), finalNewline: fc.boolean(), crlf: fc.boolean() });
  const edit = fc.array(fc.record({ at: fc.nat(), remove: fc.nat({ max: 4 }), insert: fc.array(line, { maxLength: 5 }) }), { maxLength: 4 });
  const render = (body: string[], finalNewline: boolean, crlf: boolean) => {
    const eol = crlf ? '\r\n' : '\n';
    const text = body.join(eol);
    return Buffer.from(body.length > 0 && finalNewline ? text + eol : text, 'utf8');
  };
  return fc.sample(fc.tuple(file, edit, fc.boolean()), { seed, numRuns: runs }).map(([f, edits, flip]) => {
    const after = [...f.body];
    for (const e of edits) after.splice(e.at % (after.length + 1), e.remove, ...e.insert);
    return [render(f.body, f.finalNewline, f.crlf), render(after, flip ? !f.finalNewline : f.finalNewline, f.crlf)];
  });
}

function gitPatches(pairs: ReadonlyArray<[Buffer, Buffer]>, args: string[]): Map<string, FilePatch> {
  const files = (side: 0 | 1) => new Map(pairs.map((pair, i) => [`f${String(i).padStart(4, '0')}`, { mode: '100644' as const, content: pair[side] }]));
  const [before, after] = importCommits(scratch.path, [
    { files: files(0), parents: [], time: 1 },
    { files: files(1), parents: [], time: 2 },
  ]);
  const out = git(['diff', '--no-renames', '--no-color', ...args, oidToHex(before), oidToHex(after)], { cwd: scratch.path });
  return new Map(parseGitPatch(out).map((file) => [file.path, file.patch]));
}

const strip = (patch: FilePatch) => ({ hunks: patch.hunks, additions: patch.additions, deletions: patch.deletions, old: patch.oldMissingNewline, new: patch.newMissingNewline });

describe('buildPatch against git diff', () => {
  const pairs = sampleFiles(7, 220);
  for (const context of [0, 1, 3, 7]) {
    it(`gives git diff --histogram -U${context}'s hunks`, () => {
      const expected = gitPatches(pairs, ['--histogram', `-U${context}`]);
      pairs.forEach(([a, b], i) => {
        const path = `f${String(i).padStart(4, '0')}`;
        const ours = buildPatch(a, b, context, HISTOGRAM_DIFF);
        const theirs = expected.get(path) ?? { hunks: [], additions: 0, deletions: 0, oldMissingNewline: false, newMissingNewline: false, bytes: 0 };
        expect(strip(ours), `${path} ${JSON.stringify([a.toString(), b.toString()])}`).toEqual(strip(theirs));
      });
    });
  }

  it("gives git diff's default (Myers, indent heuristic) hunks, what git blame diffs with", () => {
    const expected = gitPatches(pairs, ['--diff-algorithm=myers', '-U0']);
    pairs.forEach(([a, b], i) => {
      const path = `f${String(i).padStart(4, '0')}`;
      const theirs = expected.get(path) ?? { hunks: [], additions: 0, deletions: 0, oldMissingNewline: false, newMissingNewline: false, bytes: 0 };
      expect(strip(buildPatch(a, b, 0, BLAME_DIFF)), path).toEqual(strip(theirs));
    });
  });

  it('takes the common tail off in 1 KiB blocks for -U0, keeping the rest of the last line', () => {
    const tail = Buffer.from('z\n'.repeat(1024));
    const [a, b] = trimCommonTail(Buffer.concat([Buffer.from('a\n'), tail]), Buffer.concat([Buffer.from('b\n'), tail]));
    // Two blocks of the 2050-byte files are equal; the first newline of the dropped part comes back.
    expect(a.toString()).toBe('a\nz\n');
    expect(b.toString()).toBe('b\nz\n');
    const different = Buffer.from('q');
    expect(trimCommonTail(different, Buffer.from('r'))).toEqual([different, Buffer.from('r')]);
  });

  it("diffs with the classic algorithm where git's histogram index overflows", () => {
    // Lines whose class numbers all land in one bucket of the histogram's table (see lineDiff.test.ts).
    const first = Array.from({ length: 128 * 66 }, (_, i) => `d${i}\n`);
    const region = Array.from({ length: 65 }, (_, k) => first[128 * k + ((128 - (k % 128)) % 128)]);
    const patch = buildPatch(Buffer.from([...first, ...region].join('')), Buffer.from([...first, 'other\n'].join('')), 0);
    expect(patch.deletions).toBe(65);
    expect(patch.additions).toBe(1);
  });

  it('keeps the function line of an earlier hunk when none lies between (git remembers it)', () => {
    const before = ['fn a', ...Array.from({ length: 12 }, (_, i) => ` ${i}`), ''].join('\n');
    const after = before.replace(' 1\n', ' one\n').replace(' 10\n', ' ten\n');
    const patch = buildPatch(Buffer.from(before), Buffer.from(after), 1);
    expect(patch.hunks.map((h) => h.header)).toEqual(['@@ -2,3 +2,3 @@ fn a', '@@ -11,3 +11,3 @@ fn a']);
  });
});
