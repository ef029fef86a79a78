/**
 * Compiles a parsed pattern (pattern.ts) into a Thompson NFA over UTF-8 bytes: each instruction
 * consumes one byte in a range, splits, asserts a position, or matches. Code point classes become
 * alternatives of byte-range sequences (ranges.ts utf8Sequences()); case-insensitive literals become
 * classes of their case variants. Programs are small and bounded, and the automata that run them
 * (matcher.ts) take time linear in the text.
 */
import { foldRanges } from './caseFold.js';
import { PatternError, type Node } from './pattern.js';
import { utf8Sequences } from './ranges.js';

export const OP_BYTE = 0;
export const OP_SPLIT = 1;
export const OP_MATCH = 2;
export const OP_ASSERT = 3;

export const ASSERT_LINE_START = 0;
export const ASSERT_LINE_END = 1;
export const ASSERT_WORD = 2;
export const ASSERT_NOT_WORD = 3;

/**
 * Programs larger than this are refused (`(a{1000}){1000}` and the like): the automata's time is
 * linear in the text but proportional to the program too, so the program must stay small.
 */
export const PROGRAM_SIZE_MAX = 20_000;

/**
 * Instructions as parallel arrays. BYTE: consumes a byte in [a, b], goes to next. SPLIT: goes to
 * a and b. ASSERT: goes to next if position kind `a` holds. MATCH: done. `start` is the entry.
 */
export interface Program {
  op: Uint8Array;
  a: Int32Array;
  b: Int32Array;
  next: Int32Array;
  start: number;
  size: number;
}

const ASSERT_KIND: Record<string, number> = { 'line-start': ASSERT_LINE_START, 'line-end': ASSERT_LINE_END, word: ASSERT_WORD, 'not-word': ASSERT_NOT_WORD };

export function compile(node: Node): Program {
  const builder = new Builder();
  const match = builder.add(OP_MATCH, 0, 0, -1);
  const start = builder.compile(node, match);
  return builder.finish(start);
}

class Builder {
  private readonly ops: number[] = [];
  private readonly as: number[] = [];
  private readonly bs: number[] = [];
  private readonly nexts: number[] = [];

  add(op: number, a: number, b: number, next: number): number {
    if (this.ops.length >= PROGRAM_SIZE_MAX) throw new PatternError('the pattern compiles to too large a program');
    this.ops.push(op);
    this.as.push(a);
    this.bs.push(b);
    this.nexts.push(next);
    return this.ops.length - 1;
  }

  /** Compiles `node` to run and then continue at `next`; returns its entry (continuation style). */
  compile(node: Node, next: number): number {
    switch (node.type) {
      case 'empty':
        return next;
      case 'assert':
        return this.add(OP_ASSERT, ASSERT_KIND[node.kind], 0, next);
      case 'chars':
        return this.chars(node.fold ? foldRanges(node.ranges) : node.ranges, next);
      case 'concat': {
        let entry = next;
        for (let i = node.items.length - 1; i >= 0; i--) entry = this.compile(node.items[i], entry);
        return entry;
      }
      case 'alt':
        return this.alternatives(node.items.map((item) => this.compile(item, next)));
      case 'repeat':
        return this.repeat(node.item, node.min, node.max, next);
    }
  }

  private repeat(item: Node, min: number, max: number, next: number): number {
    let entry: number;
    if (max === -1) {
      // A loop: a split that either runs the item once more (back to the split) or goes on.
      const loop = this.add(OP_SPLIT, -1, next, -1);
      const body = this.compile(item, loop);
      this.as[loop] = body;
      entry = min === 0 ? loop : body;
      for (let i = 1; i < min; i++) entry = this.compile(item, entry);
      return entry;
    }
    entry = next;
    for (let i = 0; i < max - min; i++) entry = this.add(OP_SPLIT, this.compile(item, entry), next, -1);
    for (let i = 0; i < min; i++) entry = this.compile(item, entry);
    return entry;
  }

  private chars(ranges: Array<[number, number]>, next: number): number {
    const alternatives: number[] = [];
    for (const [lo, hi] of ranges) {
      for (const sequence of utf8Sequences(lo, hi)) {
        let entry = next;
        for (let i = sequence.length - 1; i >= 0; i--) entry = this.add(OP_BYTE, sequence[i][0], sequence[i][1], entry);
        alternatives.push(entry);
      }
    }
    if (alternatives.length === 0) {
      // A class that matches nothing: a byte range no byte is in.
      return this.add(OP_BYTE, 1, 0, next);
    }
    return this.alternatives(alternatives);
  }

  private alternatives(entries: number[]): number {
    let entry = entries[entries.length - 1];
    for (let i = entries.length - 2; i >= 0; i--) entry = this.add(OP_SPLIT, entries[i], entry, -1);
    return entry;
  }

  finish(start: number): Program {
    return {
      op: Uint8Array.from(this.ops),
      a: Int32Array.from(this.as),
      b: Int32Array.from(this.bs),
      next: Int32Array.from(this.nexts),
      start,
      size: this.ops.length,
    };
  }
}

/**
 * A byte string every match contains, for skipping files cheaply: the longest run of single
 * (case-sensitive) characters in the pattern's top-level sequence; null when there is none.
 */
export function requiredLiteral(node: Node): Buffer | null {
  const items = node.type === 'concat' ? node.items : [node];
  let best = '';
  let run = '';
  for (const item of items) {
    const single = item.type === 'chars' && !item.fold && item.ranges.length === 1 && item.ranges[0][0] === item.ranges[0][1];
    if (single) {
      run += String.fromCodePoint(item.ranges[0][0]);
      if (run.length > best.length) best = run;
    } else if (item.type === 'repeat' && item.min > 0 && item.item.type === 'chars' && !item.item.fold && item.item.ranges.length === 1 && item.item.ranges[0][0] === item.item.ranges[0][1]) {
      // x+ and x{2,} contain at least one x, then the run is broken.
      run += String.fromCodePoint(item.item.ranges[0][0]);
      if (run.length > best.length) best = run;
      run = '';
    } else if (item.type !== 'assert') {
      run = '';
    }
  }
  return best.length > 0 ? Buffer.from(best, 'utf8') : null;
}
