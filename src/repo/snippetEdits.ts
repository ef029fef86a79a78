/**
 * Snippet edits of a batch entry (../shared/API.md "Workspace additions", README "Snippet edits"):
 * each `old` must occur exactly once in the text the previous edits left, and is replaced by `new`.
 *
 * Matching is on UTF-8 bytes. Both the file and the edit strings are valid UTF-8 (the file is
 * checked, the strings hold no lone surrogate), and UTF-8 is self-synchronising, so a byte match
 * always starts and ends on character boundaries: it is matching by code points, with no Unicode
 * normalisation (`e` + U+0301 is not `é`) and no line-ending conversion (`\n` does not match `\r\n`).
 */
import { isUtf8 } from 'node:buffer';
import { TreehouseError } from '../errors.js';
import { Slicer } from './slices.js';

export interface SnippetEdit {
  old: Buffer;
  new: Buffer;
}

/** The most occurrences a mismatch counts: enough to tell "add context", bounded for a hostile `old`. */
export const OCCURRENCES_COUNTED_MAX = 1000;

/**
 * What one batch's edits may cost, shared by its entries: every edit scans the text its previous
 * edits left, so `scanBytesMax` bounds the bytes scanned in all.
 */
export class EditBudget {
  private scannedBytes = 0;
  readonly slicer = new Slicer();

  constructor(readonly scanBytesMax: number) {}

  charge(bytes: number): void {
    this.scannedBytes += bytes;
    if (this.scannedBytes > this.scanBytesMax) {
      throw new TreehouseError('payload_too_large', `The batch's edits would scan more than ${this.scanBytesMax} bytes of text; write the file whole instead.`, {
        limit: this.scanBytesMax,
      });
    }
  }
}

/**
 * The text of the entry's file after its edits, in order (`field` names the entry in errors, as
 * `files.3`). Throws `edit_mismatch` naming the first edit whose `old` does not occur exactly once,
 * `invalid_request` for a file that is not UTF-8 text.
 */
export async function applySnippetEdits(entry: { path: string; field: string }, text: Buffer, edits: readonly SnippetEdit[], budget: EditBudget): Promise<Buffer> {
  const { path } = entry;
  if (!isUtf8(text)) {
    throw new TreehouseError('invalid_request', `${path} is not UTF-8 text; write it whole with content (base64).`, {
      path,
      issues: [{ path: `${entry.field}.edits`, message: 'the file is not valid UTF-8, so it has no text to edit' }],
    });
  }
  let current = text;
  for (const [index, edit] of edits.entries()) {
    budget.charge(current.length);
    const at = current.indexOf(edit.old);
    // Overlapping occurrences count: "aa" occurs twice in "aaa", so which one is meant is unclear.
    if (at < 0 || current.indexOf(edit.old, at + 1) >= 0) {
      const occurrences = at < 0 ? 0 : countOccurrences(current, edit.old, at);
      throw new TreehouseError('edit_mismatch', `Edit ${index} of ${path}: old text occurs ${occurrences === 0 ? 'nowhere' : `${occurrences}${occurrences === OCCURRENCES_COUNTED_MAX ? ' or more' : ''} times`}; it must occur exactly once. Nothing was written.`, {
        path,
        index,
        occurrences,
      });
    }
    current = Buffer.concat([current.subarray(0, at), edit.new, current.subarray(at + edit.old.length)]);
    await budget.slicer.pause();
  }
  return current;
}

/** Occurrences of `needle` (overlapping ones too) from the first at `first`, up to OCCURRENCES_COUNTED_MAX. */
function countOccurrences(haystack: Buffer, needle: Buffer, first: number): number {
  let count = 0;
  for (let at = first; at >= 0 && count < OCCURRENCES_COUNTED_MAX; at = haystack.indexOf(needle, at + 1)) count++;
  return count;
}
