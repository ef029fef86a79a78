/**
 * Finds the lines of a blob that match, and where in each line the first match starts, as
 * `git grep -n --column` reports it (one answer per matching line; the column of the leftmost
 * match). Three ways, each linear in the blob's size:
 *   - a literal, case-sensitive: Buffer.indexOf, jumping from match to match;
 *   - otherwise a lazily built DFA over the program (program.ts) decides, byte by byte, whether a
 *     line has a match, with states built on demand and the cache started over past a bound (as
 *     RE2 does); a line it accepts then runs through a Pike VM (a breadth-first NFA simulation)
 *     for the leftmost start.
 * Lines end at "\n" (a "\r" before it is part of the line, as for git); the last line may lack it.
 */
import {
  ASSERT_LINE_END,
  ASSERT_LINE_START,
  ASSERT_NOT_WORD,
  ASSERT_WORD,
  OP_ASSERT,
  OP_BYTE,
  OP_MATCH,
  OP_SPLIT,
  type Program,
} from './program.js';

const NEWLINE = 0x0a;

/** A matching line: its byte range in the blob, its number (from 1), and the match's start in bytes. */
export interface LineMatch {
  lineStart: number;
  lineEnd: number;
  line: number;
  /** Offset of the leftmost match from the start of the line, in bytes. */
  matchOffset: number;
}

export interface LineMatcher {
  /** Calls `found` for each matching line in order; stops when it returns false. */
  scan(blob: Buffer, found: (match: LineMatch) => boolean): void;
  /** A cheap test that rules a blob out (it cannot match); true when unsure. */
  mayMatch(blob: Buffer): boolean;
}

/** Case-sensitive literal search. */
export class LiteralMatcher implements LineMatcher {
  constructor(private readonly needle: Buffer) {}

  mayMatch(blob: Buffer): boolean {
    return blob.indexOf(this.needle) >= 0;
  }

  scan(blob: Buffer, found: (match: LineMatch) => boolean): void {
    let lineStart = 0;
    let line = 1;
    let at = blob.indexOf(this.needle);
    while (at >= 0) {
      // Count the lines up to the match.
      for (let newline = blob.indexOf(NEWLINE, lineStart); newline >= 0 && newline < at; newline = blob.indexOf(NEWLINE, lineStart)) {
        lineStart = newline + 1;
        line++;
      }
      const end = blob.indexOf(NEWLINE, at);
      const lineEnd = end < 0 ? blob.length : end;
      // A needle holding a newline would span lines; git matches within a line only.
      if (at + this.needle.length <= lineEnd) {
        if (!found({ lineStart, lineEnd, line, matchOffset: at - lineStart })) return;
        if (end < 0) return;
        lineStart = end + 1;
        line++;
        at = blob.indexOf(this.needle, lineStart);
      } else {
        at = blob.indexOf(this.needle, at + 1);
      }
    }
  }
}

/** ASCII word characters, as RE2's \b sees them. */
const WORD_BYTE = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  WORD_BYTE[c] = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f ? 1 : 0;
}

/** Where an assertion is looked at: the line start and end, and the word-ness of the bytes around. */
interface Context {
  atStart: boolean;
  atEnd: boolean;
  prevWord: boolean;
  nextWord: boolean;
}

function assertionHolds(kind: number, context: Context): boolean {
  switch (kind) {
    case ASSERT_LINE_START:
      return context.atStart;
    case ASSERT_LINE_END:
      return context.atEnd;
    case ASSERT_WORD:
      return context.prevWord !== context.nextWord;
    case ASSERT_NOT_WORD:
      return context.prevWord === context.nextWord;
  }
  return false;
}

/** DFA states kept before the cache starts over, and program counters held in all their kernels. */
const DFA_STATES_MAX = 4096;
const DFA_KERNEL_ENTRIES_MAX = 2_000_000;
const TRANSITION_UNKNOWN = 0;
const TRANSITION_MATCH = -1;

interface DfaState {
  /** Program counters reached by the last byte, before the closure (sorted). */
  kernel: Int32Array;
  atStart: boolean;
  prevWord: boolean;
  /** 0 unknown, 1 a match can end at the end of the line here, 2 it cannot. */
  endsMatch: number;
}

export class AutomatonMatcher implements LineMatcher {
  private states: DfaState[] = [];
  private kernelEntries = 0;
  private index = new Map<string, number>();
  private transitions = new Int32Array(64 * 256);
  private readonly startState: number;
  // Scratch for closures: a sparse set of program counters.
  private readonly mark: Int32Array;
  private generation = 1;
  private readonly stack: Int32Array;

  constructor(
    private readonly program: Program,
    private readonly prefilter: Buffer | null,
  ) {
    this.mark = new Int32Array(program.size);
    this.stack = new Int32Array(program.size * 2 + 4);
    this.startState = this.state(new Int32Array(0), true, false);
  }

  mayMatch(blob: Buffer): boolean {
    return this.prefilter === null || blob.indexOf(this.prefilter) >= 0;
  }

  scan(blob: Buffer, found: (match: LineMatch) => boolean): void {
    let state = this.startState;
    let lineStart = 0;
    let line = 1;
    const length = blob.length;
    for (let i = 0; i < length; i++) {
      const byte = blob[i];
      if (byte === NEWLINE) {
        if (this.endsMatch(state) && !this.report(blob, lineStart, i, line, found)) return;
        state = this.startState;
        lineStart = i + 1;
        line++;
        continue;
      }
      let next = this.transitions[state * 256 + byte];
      if (next === TRANSITION_UNKNOWN) next = this.computeTransition(state, byte);
      if (next === TRANSITION_MATCH) {
        const end = blob.indexOf(NEWLINE, i);
        const lineEnd = end < 0 ? length : end;
        if (!this.report(blob, lineStart, lineEnd, line, found)) return;
        if (end < 0) return;
        i = end;
        state = this.startState;
        lineStart = end + 1;
        line++;
        continue;
      }
      state = next - 1;
    }
    if (lineStart < length && this.endsMatch(state)) this.report(blob, lineStart, length, line, found);
  }

  private report(blob: Buffer, lineStart: number, lineEnd: number, line: number, found: (match: LineMatch) => boolean): boolean {
    const offset = this.leftmostStart(blob, lineStart, lineEnd);
    // The DFA and the Pike VM run the same program; they cannot disagree on whether a line matches.
    if (offset < 0) throw new Error('search automata disagree on a line');
    return found({ lineStart, lineEnd, line, matchOffset: offset });
  }

  // -------------------------------------------------------------------------------------------
  // The DFA.

  private state(kernel: Int32Array, atStart: boolean, prevWord: boolean): number {
    const key = `${atStart ? 1 : 0}${prevWord ? 1 : 0}:${kernel.join(',')}`;
    const known = this.index.get(key);
    if (known !== undefined) return known;
    const id = this.states.length;
    this.states.push({ kernel, atStart, prevWord, endsMatch: 0 });
    this.kernelEntries += kernel.length;
    this.index.set(key, id);
    if ((id + 1) * 256 > this.transitions.length) {
      const grown = new Int32Array(this.transitions.length * 2);
      grown.set(this.transitions);
      this.transitions = grown;
    }
    return id;
  }

  /** Follows splits and assertions from the kernel and the start (a match may begin anywhere). */
  private closure(kernel: Int32Array, context: Context, onByte: (pc: number) => void): boolean {
    const { op, a, b, next, start } = this.program;
    const gen = ++this.generation;
    let top = 0;
    let matched = false;
    const stack = this.stack;
    const push = (pc: number) => {
      if (this.mark[pc] === gen) return;
      this.mark[pc] = gen;
      stack[top++] = pc;
    };
    for (let i = 0; i < kernel.length; i++) push(kernel[i]);
    push(start);
    while (top > 0) {
      const pc = stack[--top];
      switch (op[pc]) {
        case OP_BYTE:
          onByte(pc);
          break;
        case OP_SPLIT:
          push(a[pc]);
          push(b[pc]);
          break;
        case OP_ASSERT:
          if (assertionHolds(a[pc], context)) push(next[pc]);
          break;
        case OP_MATCH:
          matched = true;
          break;
      }
    }
    return matched;
  }

  private computeTransition(stateId: number, byte: number): number {
    const full = this.states.length >= DFA_STATES_MAX || this.kernelEntries >= DFA_KERNEL_ENTRIES_MAX;
    const id = full ? this.resetCache(stateId) : stateId;
    const current = this.states[id];
    const { a, b, next } = this.program;
    const reached: number[] = [];
    const context: Context = { atStart: current.atStart, atEnd: false, prevWord: current.prevWord, nextWord: WORD_BYTE[byte] === 1 };
    const matched = this.closure(current.kernel, context, (pc) => {
      if (byte >= a[pc] && byte <= b[pc]) reached.push(next[pc]);
    });
    let result: number;
    if (matched) {
      result = TRANSITION_MATCH;
    } else {
      const kernel = Int32Array.from(new Set(reached)).sort();
      result = this.state(kernel, false, WORD_BYTE[byte] === 1) + 1;
    }
    this.transitions[id * 256 + byte] = result;
    return result;
  }

  private endsMatch(stateId: number): boolean {
    const state = this.states[stateId];
    if (state.endsMatch === 0) {
      const context: Context = { atStart: state.atStart, atEnd: true, prevWord: state.prevWord, nextWord: false };
      state.endsMatch = this.closure(state.kernel, context, () => undefined) ? 1 : 2;
    }
    return state.endsMatch === 1;
  }

  /** Drops every state but the start (id 0 again) and the current one, whose new id it returns. */
  private resetCache(currentId: number): number {
    const start = this.states[this.startState];
    const current = this.states[currentId];
    this.states = [];
    this.kernelEntries = 0;
    this.index = new Map();
    this.transitions = new Int32Array(64 * 256);
    const startId = this.state(start.kernel, start.atStart, start.prevWord);
    if (startId !== this.startState) throw new Error('search DFA start state moved');
    return this.state(current.kernel, current.atStart, current.prevWord);
  }

  // -------------------------------------------------------------------------------------------
  // The Pike VM: threads in priority order, each with the offset its match would start at.

  /** The leftmost offset (from lineStart) where a match starts, or -1. */
  leftmostStart(blob: Buffer, lineStart: number, lineEnd: number): number {
    const { op, a, b, next, start } = this.program;
    const size = this.program.size;
    let current = { pcs: new Int32Array(size), starts: new Int32Array(size), count: 0 };
    let following = { pcs: new Int32Array(size), starts: new Int32Array(size), count: 0 };
    const seen = new Int32Array(size);
    let generation = 0;
    const stack = new Int32Array(size * 2 + 4);
    let best = -1;
    const context = (pos: number): Context => ({
      atStart: pos === lineStart,
      atEnd: pos === lineEnd,
      prevWord: pos > lineStart && WORD_BYTE[blob[pos - 1]] === 1,
      nextWord: pos < lineEnd && WORD_BYTE[blob[pos]] === 1,
    });
    // Adds a thread and everything its splits and assertions reach, to the end of `list`.
    const add = (list: typeof current, pc: number, startAt: number, where: Context, gen: number) => {
      let top = 0;
      stack[top++] = pc;
      while (top > 0) {
        const at = stack[--top];
        if (seen[at] === gen) continue;
        seen[at] = gen;
        if (op[at] === OP_SPLIT) {
          // b first on the stack, so a is taken first (priority order).
          stack[top++] = b[at];
          stack[top++] = a[at];
        } else if (op[at] === OP_ASSERT) {
          if (assertionHolds(a[at], where)) stack[top++] = next[at];
        } else {
          list.pcs[list.count] = at;
          list.starts[list.count] = startAt;
          list.count++;
        }
      }
    };
    generation++;
    add(current, start, 0, context(lineStart), generation);
    for (let pos = lineStart; ; pos++) {
      following.count = 0;
      generation++;
      const where = context(pos + 1);
      for (let t = 0; t < current.count; t++) {
        const pc = current.pcs[t];
        if (op[pc] === OP_MATCH) {
          // Threads after this one started no earlier; they cannot give a more leftmost match.
          best = best < 0 ? current.starts[t] : Math.min(best, current.starts[t]);
          break;
        }
        if (pos < lineEnd && op[pc] === OP_BYTE && blob[pos] >= a[pc] && blob[pos] <= b[pc]) add(following, next[pc], current.starts[t], where, generation);
      }
      if (pos >= lineEnd) break;
      // A new thread may start at the next position while no match is known.
      if (best < 0) add(following, start, pos + 1 - lineStart, where, generation);
      if (following.count === 0 && best >= 0) break;
      [current, following] = [following, current];
    }
    return best;
  }
}
