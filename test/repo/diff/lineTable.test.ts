/**
 * LineTable.from numbers a version of a file from a neighbour's table (blame's walk): whatever the
 * two contents are, the result must be the table LineTable.of makes from scratch, line for line.
 * LineClasses numbers lines by their bytes alone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineTable } from '../../../src/repo/diff/lineTable.js';
import { LineClasses, splitLines } from '../../../src/repo/merge/lineDiff.js';

/** The table's lines as text, each with its class. */
function described(table: LineTable): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (let i = 0; i < table.lineCount; i++) out.push([table.content.toString('latin1', table.startOf(i), table.startOf(i + 1)), table.ids[i]]);
  return out;
}

function expectSameAsFresh(content: Buffer, near: Buffer): void {
  const classes = new LineClasses();
  const nearTable = LineTable.of(near, classes);
  const derived = LineTable.from(content, nearTable, classes);
  const fresh = LineTable.of(content, classes);
  expect(described(derived)).toEqual(described(fresh));
  expect(derived.startOf(derived.lineCount)).toBe(content.length);
  expect(described(fresh).map(([text]) => text)).toEqual(splitLines(content).map((line) => line.toString('latin1')));
}

/** Lines from a small alphabet, so that repeats (blank lines, braces) are common. */
const lineText = fc.oneof(
  fc.constantFrom('', '}', '{', '  return x;', 'a', 'b', '\r'),
  fc.string({ maxLength: 12 }),
  fc.string({ minLength: 4000, maxLength: 5000 }).map((text) => text.replace(/\n/g, ' ')),
);

/** A file (lines joined, ending in a newline or not) and an edited version of it. */
const fileAndEdit = fc
  .record({
    lines: fc.array(lineText, { maxLength: 60 }),
    trailingNewline: fc.boolean(),
    edits: fc.array(fc.record({ at: fc.nat(), remove: fc.nat({ max: 4 }), insert: fc.array(lineText, { maxLength: 4 }) }), { maxLength: 6 }),
    editedTrailingNewline: fc.boolean(),
  })
  .map(({ lines, trailingNewline, edits, editedTrailingNewline }) => {
    const edited = [...lines];
    for (const edit of edits) edited.splice(edit.at % (edited.length + 1), edit.remove, ...edit.insert);
    const join = (parts: string[], newline: boolean) => Buffer.from(parts.join('\n') + (newline && parts.length > 0 ? '\n' : ''), 'latin1');
    return { near: join(lines, trailingNewline), content: join(edited, editedTrailingNewline) };
  });

describe('LineTable.from', () => {
  it('gives the table LineTable.of gives, for edits of every shape', () => {
    fc.assert(
      fc.property(fileAndEdit, ({ near, content }) => expectSameAsFresh(content, near)),
      { numRuns: 400 },
    );
  });

  it('gives the table LineTable.of gives for unrelated contents, empty ones and lone newlines', () => {
    const cases: Array<[string, string]> = [
      ['', ''],
      ['', 'a\nb\n'],
      ['a\nb\n', ''],
      ['a', 'a\n'],
      ['a\n', 'a'],
      ['a', 'ab\n'],
      ['ab\n', 'a'],
      ['\n\n\n', '\n\n'],
      ['x\ny\nz', 'x\ny\nz\n'],
      ['one\ntwo\nthree\n', 'uno\ndos\ntres\n'],
      ['a\r\nb\r\n', 'a\nb\n'],
      // A repeated line right after an edit: the walk's first guess of its place is wrong.
      ['}\n}\nA\n}\nB\n', '}\nX\n}\nA\nB\n'],
    ];
    for (const [content, near] of cases) expectSameAsFresh(Buffer.from(content, 'latin1'), Buffer.from(near, 'latin1'));
  });

  it('takes runs longer than its compare chunk (4 KiB) and differences inside them', () => {
    const long = `${'x'.repeat(9000)}\n`;
    const base = Buffer.from(`head\n${long}middle\n${long}tail`, 'latin1');
    const edited = Buffer.from(`head\n${long}MIDDLE\n${long.slice(0, 5000)}y${long.slice(5001)}tail`, 'latin1');
    expectSameAsFresh(edited, base);
    expectSameAsFresh(base, edited);
  });
});

describe('LineClasses', () => {
  it('numbers lines by their bytes, in order of first appearance', () => {
    const classes = new LineClasses(1);
    const text = Buffer.from('b\na\nb\n\na\nc', 'latin1');
    const ids = splitLines(text).map((line) => classes.intern(line, 0, line.length));
    expect(ids).toEqual([0, 1, 0, 2, 1, 3]);
    // The same bytes anywhere (another buffer, an offset) are the same class; a prefix is not.
    const other = Buffer.from('zzb\n', 'latin1');
    expect(classes.intern(other, 2, 4)).toBe(0);
    expect(classes.intern(other, 2, 3)).toBe(4);
    expect(classes.count).toBe(5);
  });

  it('keeps its numbers when a lookup probes too far and the table gives way to a Map', () => {
    // Lines a client made to collide would make every lookup walk them all; probing past the bound
    // (here: any occupied slot) moves the classes into a Map, numbers unchanged.
    const lines = Array.from({ length: 3000 }, (_, i) => Buffer.from(i % 3 === 0 ? `same ${i % 50}\n` : `line ${i}\n`, 'latin1'));
    const table = new LineClasses(1);
    const mapped = new LineClasses(1, 0);
    const expected = lines.map((line) => table.intern(line, 0, line.length));
    expect(lines.map((line) => mapped.intern(line, 0, line.length))).toEqual(expected);
    expect(mapped.count).toBe(table.count);
    // Line tables numbered by it are as before.
    const content = Buffer.concat(lines);
    expect(LineTable.of(content, new LineClasses(1, 0)).ids).toEqual(LineTable.of(content, new LineClasses(1)).ids);
  });

  it('keeps its numbers as its table grows past its first size', () => {
    const classes = new LineClasses(1);
    const lines = Array.from({ length: 5000 }, (_, i) => Buffer.from(`line ${i % 3000}\n`, 'latin1'));
    const ids = lines.map((line) => classes.intern(line, 0, line.length));
    expect(classes.count).toBe(3000);
    expect(ids.slice(0, 3000)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(ids.slice(3000)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(classes.full).toBe(false);
  });
});
