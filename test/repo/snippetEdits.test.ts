/**
 * applySnippetEdits (src/repo/snippetEdits.ts) against a reference written on JavaScript strings:
 * for text and edits without lone surrogates, matching UTF-8 bytes must be matching the text (no
 * match starts or ends inside a character), with the same occurrence counts (overlapping ones
 * included) and the same result, whatever mix of ASCII, accents, combining marks, astral
 * characters, CRLF and NUL the text holds. Also the budget and the occurrence count's cap.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TreehouseError } from '../../src/errors.js';
import { applySnippetEdits, EditBudget, OCCURRENCES_COUNTED_MAX } from '../../src/repo/snippetEdits.js';

interface Edit {
  old: string;
  new: string;
}

/** The contract's rule on strings: each old must occur exactly once (overlaps count) in the text so far. */
function reference(text: string, edits: readonly Edit[]): { text: string } | { index: number; occurrences: number } {
  let current = text;
  for (const [index, edit] of edits.entries()) {
    const at: number[] = [];
    for (let i = current.indexOf(edit.old); i >= 0; i = current.indexOf(edit.old, i + 1)) at.push(i);
    if (at.length !== 1) return { index, occurrences: at.length };
    current = current.slice(0, at[0]) + edit.new + current.slice(at[0] + edit.old.length);
  }
  return { text: current };
}

async function applied(text: string, edits: readonly Edit[], budget = new EditBudget(Number.MAX_SAFE_INTEGER)) {
  try {
    const bytes = await applySnippetEdits(
      { path: 'f.txt', field: 'files.0' },
      Buffer.from(text, 'utf8'),
      edits.map((edit) => ({ old: Buffer.from(edit.old, 'utf8'), new: Buffer.from(edit.new, 'utf8') })),
      budget,
    );
    return { text: bytes.toString('utf8') };
  } catch (error) {
    if (error instanceof TreehouseError && error.code === 'edit_mismatch') return { index: error.details!.index as number, occurrences: error.details!.occurrences as number };
    throw error;
  }
}

/** Characters whose UTF-8 forms share bytes in ways a byte search could confuse. */
const PIECES = ['a', 'b', 'e', '\u00e9', '\u0301', '\u00e8', '\u0100', '\u{1F600}', '\u{1F601}', '\u20ac', '\r\n', '\n', '\r', '\u0000', ' '];
const piece = fc.constantFrom(...PIECES);
const textOf = (min: number, max: number) => fc.array(piece, { minLength: min, maxLength: max }).map((pieces) => pieces.join(''));

describe('applySnippetEdits', () => {
  it('matches UTF-8 bytes exactly as the text matches, with the same counts and result', async () => {
    await fc.assert(
      fc.asyncProperty(
        textOf(0, 40),
        fc.array(fc.record({ old: textOf(1, 3), new: textOf(0, 3) }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
        async (text, randomEdits, picks) => {
          // Half the edits take their old text from the text itself, so that single matches happen.
          const edits = randomEdits.map((edit, i) => {
            if (picks[i] % 2 === 0 || text.length === 0) return edit;
            const start = picks[i] % text.length;
            const slice = text.slice(start, start + 1 + (picks[i] % 4));
            return /[\ud800-\udfff]/.test(slice.slice(-1)) || /[\udc00-\udfff]/.test(slice[0]) || slice.length === 0 ? edit : { old: slice, new: edit.new };
          });
          expect(await applied(text, edits)).toEqual(reference(text, edits));
        },
      ),
      { seed: 4242, numRuns: 2000 },
    );
  });

  it('counts overlapping occurrences, up to a cap', async () => {
    expect(await applied('aaa', [{ old: 'aa', new: 'b' }])).toEqual({ index: 0, occurrences: 2 });
    const many = 'x'.repeat(OCCURRENCES_COUNTED_MAX * 3);
    expect(await applied(many, [{ old: 'x', new: 'y' }])).toEqual({ index: 0, occurrences: OCCURRENCES_COUNTED_MAX });
    expect(await applied(many.slice(0, 11), [{ old: 'x', new: 'y' }])).toEqual({ index: 0, occurrences: 11 });
  });

  it('charges every edit the text it scans, across entries, and refuses past the budget', async () => {
    const budget = new EditBudget(100);
    const text = 'abcdefghij0123456789klmnopqrst';
    expect(await applied(text, [{ old: 'ghij0', new: 'x' }, { old: '345', new: 'y' }], budget)).toEqual({ text: 'abcdefx12y6789klmnopqrst' });
    // 30 + 26 bytes scanned so far; 40 more fit, then 5 more pass 100.
    expect(await applied('z'.repeat(40), [{ old: 'z'.repeat(40), new: 'a' }], budget)).toEqual({ text: 'a' });
    await expect(applied('abcde', [{ old: 'a', new: 'b' }], budget)).rejects.toMatchObject({ code: 'payload_too_large', details: { limit: 100 } });
  });

  it('refuses a file that is not UTF-8 before scanning it', async () => {
    const budget = new EditBudget(1000);
    await expect(applySnippetEdits({ path: 'f', field: 'files.2' }, Buffer.from([0x61, 0xff]), [{ old: Buffer.from('a'), new: Buffer.from('b') }], budget)).rejects.toMatchObject({
      code: 'invalid_request',
      details: { path: 'f', issues: [{ path: 'files.2.edits' }] },
    });
  });
});
