/**
 * Parses the regular expressions search accepts: the part of RE2's syntax (github.com/google/re2,
 * "Syntax") that needs no backtracking: literals and escapes, `.`, classes (`[a-z]`, `[^…]`,
 * `[[:alpha:]]`, `\d \w \s` and their negations), `^ $ \A \z \b \B`, alternation, groups (`(…)`,
 * `(?:…)`, `(?P<name>…)`, `(?i)` and `(?i:…)`), and `* + ? {n} {n,} {n,m}` (lazy forms too, which
 * change nothing here: search reports where a match starts, not where it ends).
 *
 * Refused, with the reason: backreferences and lookaround (they need a backtracking engine, whose
 * time can grow without bound), possessive quantifiers, Unicode classes (`\p{…}`), unknown escapes
 * and flags, repetition counts over 1000 (RE2's limit) and patterns over 1000 characters.
 */

import { foldRanges } from './caseFold.js';
import { CODE_POINT_MAX, negateRanges, normaliseRanges, type Ranges } from './ranges.js';

export const PATTERN_CHARS_MAX = 1000;
/** RE2's kMaxRepeat. */
export const REPEAT_MAX = 1000;
/** Groups nested deeper than this are refused (the parser recurses once per level). */
const NESTING_MAX = 200;

export class PatternError extends Error {
  override name = 'PatternError';
}

export type Node =
  | { type: 'empty' }
  | { type: 'chars'; ranges: Ranges; fold: boolean }
  | { type: 'concat'; items: Node[] }
  | { type: 'alt'; items: Node[] }
  | { type: 'repeat'; item: Node; min: number; max: number /* -1: unbounded */ }
  | { type: 'assert'; kind: 'line-start' | 'line-end' | 'word' | 'not-word' };

const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
/** RE2's \s: [\t\n\f\r ]. */
const SPACE: Ranges = [
  [0x09, 0x0a],
  [0x0c, 0x0d],
  [0x20, 0x20],
];
const POSIX_CLASSES: Record<string, Ranges> = {
  alnum: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  alpha: [
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  ascii: [[0x00, 0x7f]],
  blank: [
    [0x09, 0x09],
    [0x20, 0x20],
  ],
  cntrl: [
    [0x00, 0x1f],
    [0x7f, 0x7f],
  ],
  digit: DIGIT,
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [
    [0x21, 0x2f],
    [0x3a, 0x40],
    [0x5b, 0x60],
    [0x7b, 0x7e],
  ],
  space: [
    [0x09, 0x0d],
    [0x20, 0x20],
  ],
  upper: [[0x41, 0x5a]],
  word: WORD,
  xdigit: [
    [0x30, 0x39],
    [0x41, 0x46],
    [0x61, 0x66],
  ],
};

/** Parses `pattern`; `foldCase` is the search's case-insensitivity (`(?i)` can turn it on inside). */
export function parsePattern(pattern: string, foldCase: boolean): Node {
  if (pattern.length > PATTERN_CHARS_MAX) throw new PatternError(`the pattern is longer than ${PATTERN_CHARS_MAX} characters`);
  return new Parser(pattern).parse(foldCase);
}

class Parser {
  private at = 0;
  private depth = 0;
  private readonly chars: number[];

  constructor(pattern: string) {
    this.chars = Array.from(pattern, (c) => c.codePointAt(0)!);
  }

  parse(fold: boolean): Node {
    const node = this.alternation(fold);
    if (this.at < this.chars.length) throw new PatternError(`unmatched ")" at ${this.at + 1}`);
    return node;
  }

  private peek(offset = 0): string | undefined {
    const c = this.chars[this.at + offset];
    return c === undefined ? undefined : String.fromCodePoint(c);
  }

  private alternation(fold: boolean): Node {
    const items: Node[] = [];
    const flags = { fold };
    for (;;) {
      items.push(this.concatenation(flags));
      if (this.peek() !== '|') break;
      this.at++;
    }
    return items.length === 1 ? items[0] : { type: 'alt', items };
  }

  /** A sequence up to "|" or ")"; `(?i)` changes the flags for the rest of the enclosing group. */
  private concatenation(flags: { fold: boolean }): Node {
    const items: Node[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') break;
      const atom = this.atom(flags);
      if (atom === null) continue;
      items.push(this.quantified(atom));
    }
    if (items.length === 0) return { type: 'empty' };
    return items.length === 1 ? items[0] : { type: 'concat', items };
  }

  private quantified(atom: Node): Node {
    let node = atom;
    let quantified = false;
    for (;;) {
      const c = this.peek();
      let min: number;
      let max: number;
      if (c === '*') [min, max] = [0, -1];
      else if (c === '+') [min, max] = [1, -1];
      else if (c === '?') [min, max] = [0, 1];
      else if (c === '{') {
        const counted = this.counted();
        if (!counted) return node;
        [min, max] = counted;
      } else return node;
      if (quantified) throw new PatternError(`a repetition of a repetition at ${this.at + 1} ("**" and the like) is not accepted`);
      if (c !== '{') this.at++;
      if (atom.type === 'assert' || atom.type === 'empty') throw new PatternError(`nothing to repeat at ${this.at}`);
      if (this.peek() === '?') this.at++;
      else if (this.peek() === '+') throw new PatternError('possessive repetition is not accepted');
      node = { type: 'repeat', item: node, min, max };
      quantified = true;
    }
  }

  /** `{n}`, `{n,}`, `{n,m}`; null (and nothing consumed) when "{" does not start one, as RE2 reads a literal then. */
  private counted(): [number, number] | null {
    const match = /^\{(\d+)(,(\d*))?\}/.exec(String.fromCodePoint(...this.chars.slice(this.at, this.at + 16)));
    if (!match) return null;
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === '' ? -1 : Number(match[3]);
    if (min > REPEAT_MAX || max > REPEAT_MAX) throw new PatternError(`a repetition count is over ${REPEAT_MAX}`);
    if (max !== -1 && max < min) throw new PatternError(`a repetition {${min},${max}} has its bounds the wrong way round`);
    this.at += match[0].length;
    return [min, max];
  }

  private atom(flags: { fold: boolean }): Node | null {
    const c = this.peek()!;
    this.at++;
    switch (c) {
      case '.':
        return { type: 'chars', ranges: [[0, 0x09], [0x0b, CODE_POINT_MAX]], fold: false };
      case '^':
        return { type: 'assert', kind: 'line-start' };
      case '$':
        return { type: 'assert', kind: 'line-end' };
      case '[': {
        // Case-insensitive classes fold their members first, then negate (RE2: (?i)[^a] is neither a nor A).
        const { ranges, negated } = this.bracket();
        const folded = flags.fold ? foldRanges(ranges) : ranges;
        return { type: 'chars', ranges: negated ? negateRanges(folded) : folded, fold: false };
      }
      case '(':
        return this.group(flags);
      case '\\':
        return this.escape(flags.fold);
      case '*':
      case '+':
      case '?':
        throw new PatternError(`nothing to repeat at ${this.at}`);
      default:
        return { type: 'chars', ranges: [[c.codePointAt(0)!, c.codePointAt(0)!]], fold: flags.fold };
    }
  }

  private group(flags: { fold: boolean }): Node | null {
    if (++this.depth > NESTING_MAX) throw new PatternError(`groups are nested deeper than ${NESTING_MAX}`);
    let fold = flags.fold;
    if (this.peek() === '?') {
      const rest = String.fromCodePoint(...this.chars.slice(this.at, this.at + 40));
      let match: RegExpExecArray | null;
      if (/^\?[=!]/.test(rest) || /^\?<[=!]/.test(rest)) throw new PatternError('lookaround ((?=, (?!, (?<=, (?<!) is not accepted: it needs backtracking');
      if ((match = /^\?P?<[A-Za-z_][A-Za-z0-9_]*>/.exec(rest))) {
        this.at += match[0].length;
      } else if (rest.startsWith('?:')) {
        this.at += 2;
      } else if ((match = /^\?(-?)i([:)])/.exec(rest))) {
        this.at += match[0].length;
        fold = match[1] !== '-';
        if (match[2] === ')') {
          // "(?i)": the flag holds for the rest of the enclosing group; nothing to match here.
          flags.fold = fold;
          this.depth--;
          return null;
        }
      } else {
        throw new PatternError(`unsupported group syntax "(${rest.slice(0, 4)}"`);
      }
    }
    const inner = this.alternation(fold);
    if (this.peek() !== ')') throw new PatternError('missing ")"');
    this.at++;
    this.depth--;
    // A group may be repeated even when it holds only an assertion ("(?:$)*"); a bare one may not.
    return inner.type === 'assert' || inner.type === 'empty' ? { type: 'concat', items: [inner] } : inner;
  }

  private escape(fold: boolean): Node {
    const c = this.peek();
    if (c === undefined) throw new PatternError('the pattern ends with "\\"');
    this.at++;
    const classRanges = this.classEscape(c);
    if (classRanges) return { type: 'chars', ranges: classRanges, fold: false };
    switch (c) {
      case 'b':
        return { type: 'assert', kind: 'word' };
      case 'B':
        return { type: 'assert', kind: 'not-word' };
      case 'A':
        return { type: 'assert', kind: 'line-start' };
      case 'z':
        return { type: 'assert', kind: 'line-end' };
    }
    const code = this.literalEscape(c);
    return { type: 'chars', ranges: [[code, code]], fold };
  }

  /** \d \D \w \W \s \S (ASCII, as RE2), or null. */
  private classEscape(c: string): Ranges | null {
    switch (c) {
      case 'd':
        return DIGIT;
      case 'D':
        return negateRanges(DIGIT);
      case 'w':
        return WORD;
      case 'W':
        return negateRanges(WORD);
      case 's':
        return SPACE;
      case 'S':
        return negateRanges(SPACE);
    }
    return null;
  }

  /** The code point an escape stands for; refuses what RE2 refuses or needs backtracking. */
  private literalEscape(c: string): number {
    if (/[1-9]/.test(c)) throw new PatternError(`backreferences (\\${c}) are not accepted: they need backtracking`);
    switch (c) {
      case 'n':
        return 0x0a;
      case 't':
        return 0x09;
      case 'r':
        return 0x0d;
      case 'f':
        return 0x0c;
      case 'v':
        return 0x0b;
      case 'a':
        return 0x07;
      case '0':
        return 0;
      case 'x': {
        const rest = String.fromCodePoint(...this.chars.slice(this.at, this.at + 10));
        const braced = /^\{([0-9A-Fa-f]{1,6})\}/.exec(rest);
        const short = /^[0-9A-Fa-f]{2}/.exec(rest);
        const hex = braced ? braced[1] : short ? short[0] : null;
        if (hex === null) throw new PatternError('\\x needs two hex digits or {hex}');
        this.at += braced ? braced[0].length : 2;
        const code = parseInt(hex, 16);
        if (code > CODE_POINT_MAX) throw new PatternError('\\x{…} is beyond Unicode');
        return code;
      }
    }
    if (c === 'p' || c === 'P') throw new PatternError('Unicode classes (\\p{…}) are not accepted');
    if (/[A-Za-z0-9]/.test(c)) throw new PatternError(`unknown escape \\${c}`);
    return c.codePointAt(0)!;
  }

  /** A bracket expression after "[", up to and including its "]". */
  private bracket(): { ranges: Ranges; negated: boolean } {
    let negated = false;
    if (this.peek() === '^') {
      negated = true;
      this.at++;
    }
    const ranges: Ranges = [];
    let first = true;
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new PatternError('missing "]"');
      if (c === ']' && !first) {
        this.at++;
        break;
      }
      first = false;
      if (c === '[' && this.peek(1) === ':') {
        const match = /^\[:(\^?)([a-z]+):\]/.exec(String.fromCodePoint(...this.chars.slice(this.at, this.at + 12)));
        if (!match || !POSIX_CLASSES[match[2]]) throw new PatternError('unknown [:class:]');
        this.at += match[0].length;
        ranges.push(...(match[1] ? negateRanges(POSIX_CLASSES[match[2]]) : POSIX_CLASSES[match[2]]));
        continue;
      }
      const lo = this.bracketChar();
      if (typeof lo !== 'number') {
        ranges.push(...lo);
        continue;
      }
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.at++;
        const hi = this.bracketChar();
        if (typeof hi !== 'number') throw new PatternError('a class cannot end a range');
        if (hi < lo) throw new PatternError('a range runs backwards');
        ranges.push([lo, hi]);
      } else {
        ranges.push([lo, lo]);
      }
    }
    return { ranges: normaliseRanges(ranges), negated };
  }

  private bracketChar(): number | Ranges {
    const c = this.peek()!;
    this.at++;
    if (c !== '\\') return c.codePointAt(0)!;
    const e = this.peek();
    if (e === undefined) throw new PatternError('the pattern ends with "\\"');
    this.at++;
    return this.classEscape(e) ?? this.literalEscape(e);
  }
}
