/**
 * The batches test/support/crashWriter.ts writes and test/repo/crash.test.ts checks, defined once.
 * Batch `index` of round `round` has the token "r<round>-<index>". It writes its own files under
 * batches/<token>/ and overwrites every shared/ file with the token, so a batch that is half
 * visible shows up either as an incomplete batches/<token>/ or as shared/ files that disagree.
 */
import type { FileWrite } from '../../src/repo/writeFiles.js';

export const CRASH_PROJECT = 1;
export const SHARED_FILES = 8;
/** Every fifth batch is large, so the kill has a fair chance of landing inside a big commit. */
const LARGE_BATCH_EVERY = 5;
const LARGE_BATCH_EXTRA_FILES = 30;
const PADDING = 'x'.repeat(64);

export function crashToken(round: number, index: number): string {
  return `r${round}-${index}`;
}

export function parseCrashToken(token: string): { round: number; index: number } {
  const match = /^r(\d+)-(\d+)$/.exec(token);
  if (!match) throw new Error(`not a crash token: ${token}`);
  return { round: Number(match[1]), index: Number(match[2]) };
}

/** How many files batch `index` puts under batches/<token>/. */
export function ownFileCount(index: number): number {
  return index % LARGE_BATCH_EVERY === LARGE_BATCH_EVERY - 1 ? 3 + LARGE_BATCH_EXTRA_FILES : 3;
}

export function ownFileContent(token: string, file: number): string {
  return `${token} ${file}\n${PADDING}`;
}

export function crashBatch(round: number, index: number): FileWrite[] {
  const token = crashToken(round, index);
  const files: FileWrite[] = [];
  for (let file = 0; file < ownFileCount(index); file++) {
    files.push({ path: `batches/${token}/f${String(file).padStart(3, '0')}.txt`, content: ownFileContent(token, file) });
  }
  for (let file = 0; file < SHARED_FILES; file++) files.push({ path: `shared/f${file}.txt`, content: token });
  return files;
}

/** Every third batch is followed by a commit. */
export function commitsAfter(index: number): boolean {
  return index % 3 === 2;
}
