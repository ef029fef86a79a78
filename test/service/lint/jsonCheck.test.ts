import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JSON_DEPTH_MAX, JSON_WITH_COMMENTS, jsonProblem } from '../../../src/service/lint/jsonCheck.js';

describe('jsonProblem', () => {
  it('accepts exactly what JSON.parse accepts (property test)', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        expect(jsonProblem(text)).toBeNull();
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        // A leading byte order mark is tolerated (npm and Prettier strip it); JSON.parse refuses it.
        if (!text.startsWith('\ufeff')) expect(jsonProblem(text) === null).toBe(parses);
      }),
    );
  });

  it('names the first problem and where it is', () => {
    const cases: Array<[string, number, string]> = [
      ['{"a": 1,}', 7, 'Trailing commas are not allowed in JSON'],
      ['[1, 2,]', 5, 'Trailing commas are not allowed in JSON'],
      ['{"a" 1}', 5, 'Expected ":" after the property name but found "1"'],
      ['{"a": tru}', 6, 'Unexpected "t"; expected a JSON value'],
      ['"abc', 0, 'Unterminated string'],
      ['"a\\x"', 2, 'Invalid escape "\\\\x" in a string'],
      ['01', 0, 'Invalid number'],
      ['1 2', 2, 'Unexpected "2" after the end of the JSON value'],
      ['// c\n{}', 0, 'Comments are not allowed in JSON'],
      ['  ', 2, 'The file is empty; expected a JSON value'],
      ['{"a": "x\ny"}', 8, 'Unterminated string (a line break must be written \\n)'],
    ];
    for (const [text, offset, message] of cases) expect(jsonProblem(text), text).toEqual({ offset, message });
  });

  it('allows comments and trailing commas in JSON with comments, and still finds real errors', () => {
    expect(jsonProblem('{\n  // why\n  "a": [1, 2,], /* more */\n}', JSON_WITH_COMMENTS)).toBeNull();
    expect(jsonProblem('{ /* open', JSON_WITH_COMMENTS)).toEqual({ offset: 2, message: 'Unterminated comment' });
    expect(jsonProblem('{ "a": }', JSON_WITH_COMMENTS)?.offset).toBe(7);
  });

  it('refuses nesting deeper than its limit instead of overflowing the stack', () => {
    const deep = '['.repeat(JSON_DEPTH_MAX + 5) + ']'.repeat(JSON_DEPTH_MAX + 5);
    expect(jsonProblem(deep)?.message).toBe(`Nesting is deeper than ${JSON_DEPTH_MAX} levels`);
    const fine = '['.repeat(JSON_DEPTH_MAX) + ']'.repeat(JSON_DEPTH_MAX);
    expect(jsonProblem(fine)).toBeNull();
  });
});
