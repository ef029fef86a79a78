/**
 * The search automata against JavaScript's own RegExp on ASCII: for random patterns of the
 * accepted syntax and random lines, the set of matching lines and each line's leftmost match start
 * must agree (where a match starts does not depend on leftmost-first or leftmost-longest rules).
 * Also the refusals and limits, case folding, and the DFA's cache starting over.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AutomatonMatcher, LiteralMatcher, type LineMatch } from '../../../src/repo/search/matcher.js';
import { parsePattern, PatternError } from '../../../src/repo/search/pattern.js';
import { compile, requiredLiteral } from '../../../src/repo/search/program.js';

function automaton(pattern: string, fold = false): AutomatonMatcher {
  const node = parsePattern(pattern, fold);
  return new AutomatonMatcher(compile(node), fold ? null : requiredLiteral(node));
}

function matches(matcher: { scan: AutomatonMatcher['scan'] }, text: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  matcher.scan(Buffer.from(text, 'utf8'), (match: LineMatch) => {
    out.push([match.line, match.matchOffset]);
    return true;
  });
  return out;
}

function expected(regexp: RegExp, text: string): Array<[number, number]> {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const out: Array<[number, number]> = [];
  lines.forEach((line, i) => {
    const found = regexp.exec(line);
    if (found) out.push([i + 1, found.index]);
  });
  return out;
}

const atom = fc.oneof(
  fc.constantFrom('a', 'b', 'c', 'x', ' ', '\\.', '.', '[abc]', '[^a ]', '[a-c]', '\\d', '\\w', '\\s', '\\W', '[[:alpha:]]', '\\b', '\\B', '^', '$'),
  fc.constantFrom('ab', 'ba', 'abc', '1', '42'),
);
const pattern: fc.Arbitrary<string> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    fc.tuple(tie('node'), tie('node')).map(([x, y]) => `${x}${y}`),
    fc.tuple(tie('node'), tie('node')).map(([x, y]) => `(?:${x}|${y})`),
    fc.tuple(tie('node'), fc.constantFrom('*', '+', '?', '{2}', '{1,3}', '{0,2}', '{2,}', '*?')).map(([x, q]) => `(?:${x})${q}`),
  ),
})).node as fc.Arbitrary<string>;
const lineText = fc.array(fc.constantFrom('a', 'b', 'c', 'x', ' ', '.', '1', '4', '2', '_', '-', 'A'), { maxLength: 14 }).map((chars) => chars.join(''));
const text = fc.array(lineText, { maxLength: 8 }).map((lines) => lines.join('\n'));

describe('AutomatonMatcher against RegExp', () => {
  it('finds the same lines and leftmost starts for random patterns and texts', () => {
    fc.assert(
      fc.property(pattern, text, fc.boolean(), (source, body, fold) => {
        const ours = matches(automaton(source, fold), body);
        // JavaScript needs (?:) where RE2 has it, and knows [[:alpha:]] as [A-Za-z].
        const js = new RegExp(source.replace(/\[\[:alpha:\]\]/g, '[A-Za-z]'), fold ? 'i' : '');
        expect(ours).toEqual(expected(js, body));
      }),
      { seed: 99, numRuns: 3000 },
    );
  });

  it('takes the leftmost start even when a later one ends first', () => {
    expect(matches(automaton('abcd|c'), 'xabcd\nxc')).toEqual([
      [1, 1],
      [2, 1],
    ]);
    expect(matches(automaton('a*'), 'bbb\n\nx')).toEqual([
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
  });

  it('matches by UTF-8 characters and folds case by Unicode orbits', () => {
    expect(matches(automaton('^.x'), '\u00e9x\n\u{1f600}x\nxx')).toEqual([
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
    expect(matches(automaton('caf\u00c9', true), 'un CAF\u00e9 noir')).toEqual([[1, 3]]);
    expect(matches(automaton('k', true), '\u212a')).toEqual([[1, 0]]);
    expect(matches(automaton('(?i)[^a]'), 'a\nA\nb')).toEqual([[3, 0]]);
    expect(matches(automaton('[\u00e0-\u00ff]+'), 'plain\nna\u00efve')).toEqual([[2, 2]]);
  });

  it('keeps working when the DFA cache starts over', () => {
    // (a|b)*a(a|b){9} needs thousands of DFA states on a long random text.
    const random = fc.sample(fc.array(fc.constantFrom('a', 'b'), { minLength: 20000, maxLength: 20000 }), { seed: 3, numRuns: 1 })[0].join('');
    const body = `${random}\n${random.slice(0, 9)}\nab`;
    expect(matches(automaton('(?:a|b)*a(?:a|b){9}'), body)).toEqual(expected(/(?:a|b)*a(?:a|b){9}/, body));
  });
});

describe('LiteralMatcher', () => {
  it('reports each matching line once, at its first occurrence', () => {
    const literal = new LiteralMatcher(Buffer.from('ab'));
    expect(matches(literal, 'xxab ab\nnone\nab\n\nzab')).toEqual([
      [1, 2],
      [3, 0],
      [5, 1],
    ]);
  });
});

describe('parsePattern refusals', () => {
  it.each([
    ['(a)\\1', /backreferences/],
    ['(?=a)', /lookaround/],
    ['(?!a)', /lookaround/],
    ['(?<=a)b', /lookaround/],
    ['(?<!a)b', /lookaround/],
    ['a*+', /possessive/],
    ['a**', /repetition of a repetition/],
    ['a{1001}', /over 1000/],
    ['a{3,2}', /wrong way/],
    ['\\p{L}', /Unicode classes/],
    ['\\y', /unknown escape/],
    ['(?x)a', /unsupported group/],
    ['(a', /missing "\)"/],
    ['a)', /unmatched/],
    ['[a', /missing "\]"/],
    ['[z-a]', /backwards/],
    ['*a', /nothing to repeat/],
    ['x'.repeat(1001), /longer than 1000/],
    ['((a{1000}){1000})', /too large/],
    ['('.repeat(300) + ')'.repeat(300), /nested deeper/],
  ])('refuses %s', (source, reason) => {
    let caught: unknown;
    try {
      compile(parsePattern(source, false));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(PatternError);
    expect((caught as Error).message).toMatch(reason);
  });

  it('either compiles or refuses with a PatternError, for arbitrary input', () => {
    const piece = fc.oneof(fc.constantFrom('(', ')', '[', ']', '{', '}', '\\', '|', '*', '+', '?', '^', '$', '.', '-', ',', '?:', '?i', '?P<', '>', ':', '1', 'a', 'é', '\u{1f600}', '[:', ':]', 'x{', '99999'), fc.string({ maxLength: 3 }));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), fc.boolean(), (pieces, fold) => {
        const source = pieces.join('');
        try {
          const matcher = new AutomatonMatcher(compile(parsePattern(source, fold)), null);
          matcher.scan(Buffer.from('abc é 1 x{\n()[]\n'), () => true);
        } catch (error) {
          if (!(error instanceof PatternError)) throw error;
        }
      }),
      { seed: 17, numRuns: 3000 },
    );
  });

  it('accepts the RE2 forms of groups and escapes', () => {
    for (const source of ['(?P<n>a)', '(?<n>a)', '(?i:a)b', '\\x41\\x{1F600}', '[\\]\\-x]', '[]a]', 'a{', 'a{,2}', '\\A\\z']) {
      expect(() => compile(parsePattern(source, false)), source).not.toThrow();
    }
  });
});
